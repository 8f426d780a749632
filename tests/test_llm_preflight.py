"""Credentials fail at once (never retried), and the pre-flight checks of a run's models.

No network: the missing-key test takes litellm's real OpenAI path, which fails before any
request; the server checks connect to ports on 127.0.0.1 only.
"""

from __future__ import annotations

import os
import socket
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402
from conftest import o3_config  # noqa: E402

from cudaforge.config import CudaforgeConfig, LLMConfig  # noqa: E402
from cudaforge.llm import (  # noqa: E402
    SERVER_ERROR,
    Backoff,
    CachedReply,
    CacheMode,
    LLMAuthError,
    LLMClient,
    ResponseCache,
    Usage,
    install_script,
    remove_script,
)
from cudaforge.llm.pricing import max_call_cost  # noqa: E402
from cudaforge.run.demo import uncovered_tasks  # noqa: E402
from cudaforge.run.preflight import check_config, check_models, connect_failure, estimate_cost  # noqa: E402
from cudaforge.tasks import load_suite, selection  # noqa: E402

FAST = Backoff(base_s=0.001, max_s=0.005)
OPENAI_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_ORGANIZATION")


def suite_ids(name: str) -> list[str]:
    return [t.id for t in load_suite(selection(name))]


@pytest.fixture
def no_openai_key(monkeypatch):
    for name in OPENAI_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def completions(monkeypatch):
    """Every ``litellm.completion`` call the client makes, counted on the way through."""
    calls = []
    original = litellm.completion
    monkeypatch.setattr(litellm, "completion", lambda **kw: calls.append(kw["model"]) or original(**kw))
    return calls


@pytest.fixture
def script_name():
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    remove_script(name)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- the client


def test_missing_openai_key_fails_at_once_through_the_real_litellm_path(no_openai_key, completions):
    llm = LLMClient(LLMConfig(model="openai/o3", max_retries=4), role="coder", backoff=FAST)
    with pytest.raises(LLMAuthError) as info:
        llm.complete([{"role": "user", "content": "write a relu kernel"}])
    err = info.value
    assert completions == ["openai/o3"]  # one attempt: litellm reports it as a 500, which is otherwise retried
    assert err.attempts == 1 and err.row.attempts == 1 and err.env_vars == ["OPENAI_API_KEY"]
    message = str(err)
    assert message.startswith("openai/o3 (coder): no API key: set OPENAI_API_KEY") and "\n" not in message


def test_a_500_saying_the_key_is_missing_is_not_retried_but_other_500s_are(script_name):
    no_key = {"error": "server_error", "message": "The api_key client option must be set (OPENAI_API_KEY)"}
    script = install_script(script_name, [no_key, SERVER_ERROR, "unused"])
    llm = LLMClient(LLMConfig(model=f"scripted/{script_name}", max_retries=4), role="judge", backoff=FAST)
    with pytest.raises(LLMAuthError, match=r"\(judge\): no API key: set OPENAI_API_KEY"):
        llm.complete([{"role": "user", "content": "x"}])
    assert len(script.calls) == 1
    assert llm.complete([{"role": "user", "content": "y"}]).text == "unused"  # the plain 500 was retried
    assert len(script.calls) == 3


def test_a_rejected_key_is_an_auth_error_that_says_check(script_name):
    install_script(script_name, [{"error": "auth", "message": "Incorrect API key provided: sk-...abcd"}])
    llm = LLMClient(LLMConfig(model=f"scripted/{script_name}"), role="coder", backoff=FAST)
    with pytest.raises(LLMAuthError, match="credentials rejected: check the provider's API key") as info:
        llm.complete([{"role": "user", "content": "x"}])
    assert info.value.attempts == 1


# --------------------------------------------------------------------------- pre-flight: keys and servers


def test_missing_key_is_reported_and_a_set_one_is_not(no_openai_key, monkeypatch):
    models = [{"role": "coder", "model": "openai/o3"}]
    [problem] = check_models(models)
    assert (problem.check, problem.role, problem.model) == ("api_key", "coder", "openai/o3")
    assert problem.message == "coder model openai/o3 needs OPENAI_API_KEY (not set)"
    assert "export OPENAI_API_KEY" in problem.fix and "\n" not in problem.line()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    assert check_models(models) == []


def test_one_model_for_both_roles_is_reported_once(no_openai_key):
    [problem] = check_models([{"role": "coder", "model": "openai/o3"}, {"role": "judge", "model": "openai/o3"}])
    assert problem.role == "coder and judge" and problem.message.startswith("coder and judge model openai/o3 needs")


def test_local_server_on_a_closed_port_is_reported():
    port = closed_port()
    models = [{"role": "judge", "model": "hosted_vllm/Qwen/QwQ-32B", "api_base": f"http://127.0.0.1:{port}/v1"}]
    [problem] = check_models(models)
    assert problem.check == "server" and problem.role == "judge"
    assert f"http://127.0.0.1:{port}/v1 not answering" in problem.message and "judge.api_base" in problem.fix


def test_local_server_that_listens_passes():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        models = [{"role": "coder", "model": "hosted_vllm/Qwen/QwQ-32B", "api_base": f"http://127.0.0.1:{port}/v1"}]
        assert check_models(models) == []
        assert connect_failure(f"127.0.0.1:{port}") is None


def test_connect_failure_is_bounded_by_its_timeout():
    assert "no host" in connect_failure("http:///v1")
    assert connect_failure(f"http://127.0.0.1:{closed_port()}", timeout_s=0.2) is not None


# --------------------------------------------------------------------------- pre-flight: demo and replay


def test_demo_transcript_covers_tiny_only():
    tiny, main = suite_ids("tiny"), suite_ids("main")
    assert uncovered_tasks(tiny) == [] and uncovered_tasks(main) == main
    demo = [{"role": "coder", "model": "scripted/demo"}, {"role": "judge", "model": "scripted/demo"}]
    assert check_models(demo, tiny) == []
    [problem] = check_models(demo, main + tiny)
    assert problem.check == "demo_coverage" and problem.role == "coder and judge" and problem.tasks == tuple(main)
    assert f"not {len(main)} of the {len(main) + len(tiny)} selected tasks" in problem.message
    assert "suite=tiny" in problem.fix


def test_check_config_refuses_the_demo_on_the_main_suite():
    cfg = CudaforgeConfig()  # coder and judge default to the demo
    [problem] = check_config(cfg, suite_ids("main"))
    assert problem.check == "demo_coverage"
    assert check_config(cfg, suite_ids("tiny")) == []


def test_replay_cache_covering_some_tasks(tmp_path):
    tiny = suite_ids("tiny")
    path = tmp_path / "llm_cache.sqlite"
    models = [{"role": "coder", "model": "scripted/x"}]
    [absent] = check_models(models, tiny, cache_mode="replay_only", cache_path=path)
    assert absent.check == "replay_cache" and "no cache at" in absent.message
    with ResponseCache(path, CacheMode.read_write) as cache:
        request = {"model": "scripted/x", "messages": [{"role": "user", "content": f"... task `{tiny[0]}` ..."}]}
        cache.put("k1", request, CachedReply("reply", Usage()))
    [problem] = check_models(models, tiny, cache_mode="replay_only", cache_path=path)
    assert problem.check == "replay_coverage" and problem.tasks == tuple(tiny[1:])
    assert check_models(models, tiny[:1], cache_mode="replay_only", cache_path=path) == []
    other = [{"role": "coder", "model": "scripted/y"}]  # recorded for another model: not covered
    assert check_models(other, tiny[:1], cache_mode="replay_only", cache_path=path)[0].tasks == tuple(tiny[:1])


def test_replay_only_skips_key_checks(no_openai_key, tmp_path):
    path = tmp_path / "llm_cache.sqlite"
    ResponseCache(path, CacheMode.read_write).close()
    assert check_models([{"role": "coder", "model": "openai/o3"}], [], cache_mode="replay_only", cache_path=path) == []


# --------------------------------------------------------------------------- cost


def test_cost_bound_by_rounds_and_by_dollars():
    call = max_call_cost("openai/o3")
    assert call is not None and call > 0  # litellm's bundled map prices o3
    by_rounds = estimate_cost(o3_config(max_rounds=10), 30)
    assert by_rounds.per_task_usd == pytest.approx(10 * 4 * call)  # 10 rounds x (2 coder + 2 judge calls)
    assert by_rounds.max_usd == pytest.approx(30 * by_rounds.per_task_usd) and "10 rounds" in by_rounds.basis
    by_dollars = estimate_cost(o3_config(max_rounds=10, max_dollars=2.0), 30)
    assert by_dollars.per_task_usd == pytest.approx(2.0 + 4 * call) and "max_dollars=2" in by_dollars.line()
    one_shot = estimate_cost(o3_config(name="one_shot"), 1)
    assert one_shot.per_task_usd == pytest.approx(2 * call)  # one round, no Judge


def test_cost_unbounded_free_and_replayed():
    cfg = CudaforgeConfig()
    cfg.coder.model = "hosted_vllm/some/unpriced-model"
    unbounded = estimate_cost(cfg, 3)
    assert unbounded.max_usd is None and unbounded.line().startswith("cost unbounded: no price")
    cfg.coder.input_cost_per_token = cfg.coder.output_cost_per_token = 0.0
    assert estimate_cost(cfg, 3).max_usd == 0.0
    demo = estimate_cost(CudaforgeConfig(), 3)
    assert demo.max_usd == 0.0
    replay = o3_config()
    replay.llm_cache.mode = CacheMode.replay_only
    assert estimate_cost(replay, 3).max_usd == 0.0


def test_the_key_table_says_what_litellm_says(monkeypatch):
    """The providers whose keys the pre-flight knows without importing litellm (which takes seconds) need exactly
    what litellm's validate_environment asks for, set or not."""
    import litellm

    from cudaforge.llm.credentials import KNOWN_KEYS, missing_keys

    for names in KNOWN_KEYS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    for provider, names in KNOWN_KEYS.items():
        model = f"{provider}/some-model"
        assert missing_keys(model) == list(names) == litellm.validate_environment(model=model)["missing_keys"]
        monkeypatch.setenv(names[0], "dummy")
        assert missing_keys(model) == [] == litellm.validate_environment(model=model)["missing_keys"]
    assert missing_keys("o3") == []  # OPENAI_API_KEY is set by now, a bare OpenAI name is OpenAI's


def test_a_recording_whose_prompts_never_name_the_task_is_covered_through_its_ledger(tmp_path):
    """The CudaForge paper's templates do not name the task; the recording run's ledger, beside its cache, says
    which tasks its calls were for (only answered calls of the model count; a torn line is skipped)."""
    import json

    tiny = suite_ids("tiny")
    path = tmp_path / "llm_cache.sqlite"
    with ResponseCache(path, CacheMode.read_write) as cache:
        cache.put(
            "k1",
            {"model": "scripted/x", "messages": [{"role": "user", "content": "a reference"}]},
            CachedReply("reply", Usage()),
        )
    rows = [
        {"model": "scripted/x", "meta": {"task_id": tiny[0]}, "error": ""},
        {"model": "scripted/x", "meta": {"task_id": tiny[1]}, "error": "APIError: boom"},
        {"model": "scripted/y", "meta": {"task_id": tiny[2]}, "error": ""},
    ]
    (tmp_path / "ledger.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + '\n{"torn')
    models = [{"role": "coder", "model": "scripted/x"}]
    [problem] = check_models(models, tiny, cache_mode="replay_only", cache_path=path)
    assert problem.tasks == tuple(tiny[1:])


@pytest.mark.slow
def test_a_python_that_cannot_import_torch_in_the_sandbox_is_refused_before_anything_is_spent(tmp_path, monkeypatch):
    """Issue 53: torch reached where the sandbox's root does not bind it: the run called the models and recorded every
    task as failed (``unsupported``). The probe starts the sandbox as evaluations do, with an ``import torch``."""
    import subprocess
    import sys
    import tempfile

    from cudaforge.eval.settings import EvalConfig
    from cudaforge.run.preflight import check_sandbox

    assert check_sandbox(EvalConfig()) == []
    bare = Path(tempfile.mkdtemp()) / "bare"  # where the sandbox's uid may read it (pytest's tmp_path is 0700)
    bare.parent.chmod(0o755)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    monkeypatch.setattr(sys, "executable", str(bare / "bin" / "python"))
    (problem,) = check_sandbox(EvalConfig())  # its interpreter is the sandbox uid's to run, or has no torch: refused
    assert problem.check == "sandbox" and "sandbox" in problem.message and problem.fix
    monkeypatch.undo()
    (missing,) = check_sandbox(EvalConfig(), probe="cudaforge_no_such_package")
    assert "cannot import cudaforge_no_such_package inside the sandbox (ModuleNotFoundError" in missing.line()
    assert check_sandbox(EvalConfig(sandbox="off")) == []


def test_run_and_doctor_refuse_on_one_verdict_of_the_sandbox(tmp_path, monkeypatch, capsys):
    from cudaforge import doctor
    from cudaforge.cli import main
    from cudaforge.run import preflight

    broken = preflight.Problem(
        "sandbox", "evaluator", "-", "the sandbox cannot be built here (no namespaces)", "fix it"
    )
    monkeypatch.setattr(preflight, "check_sandbox", lambda eval_cfg: [broken])
    monkeypatch.chdir(tmp_path)
    assert main(["run", f"hydra.run.dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"cudaforge run: error: {broken.line()}"
    assert not (tmp_path / "run" / "ledger.jsonl").exists()  # no model was called
    check = doctor._sandbox(type("C", (), {"eval": object()})())
    assert check.blocking and not check.ok and check.line == broken.line()


def test_a_run_without_litellm_is_refused_unless_it_replays(monkeypatch, tmp_path):
    """A Python without litellm: every model but a replayed one is refused before the run, in one line saying what
    to install (the GPU image lacked it once: every task then stopped on an internal error)."""
    import importlib.util

    from cudaforge.run import preflight

    found = importlib.util.find_spec
    monkeypatch.setattr(preflight.importlib.util, "find_spec", lambda name: None if name == "litellm" else found(name))
    problems = check_models([{"role": "coder", "model": "scripted/demo"}, {"role": "judge", "model": "openai/o3"}])
    assert [p.check for p in problems] == ["litellm", "litellm"]
    assert "not installed" in problems[0].message and "pip install litellm" in problems[0].fix
    replayed = check_models([{"role": "coder", "model": "openai/o3"}], cache_mode="replay_only", cache_path=None)
    assert not [p for p in replayed if p.check == "litellm"]
