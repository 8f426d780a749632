"""The CudaForge authors' prompts read from a checkout (issue 35, item 3), against a stand-in with their layout
(tests/standins/cudaforge_authors: builders of the same names and signatures, written for these tests)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from cudaforge.agents.authors import AuthorsPrompts  # noqa: E402
from cudaforge.agents.templates import PromptTemplateError  # noqa: E402

STANDIN = Path(__file__).resolve().parent / "standins" / "cudaforge_authors"
GPU = "Stand-in GPU"


def test_a_missing_or_partial_checkout_or_an_unknown_gpu_is_one_clear_error(tmp_path):
    with pytest.raises(PromptTemplateError, match="agents.authors_root=PATH"):
        AuthorsPrompts(None, GPU)
    partial = tmp_path / "partial"
    shutil.copytree(STANDIN, partial)
    (partial / "prompts" / "judger_repair.py").unlink()
    (partial / "prompts" / "hardware" / "gpu_specs.py").unlink()
    with pytest.raises(PromptTemplateError, match=r"missing prompts/judger_repair.py, prompts/hardware/gpu_specs.py"):
        AuthorsPrompts(partial, GPU)
    with pytest.raises(
        PromptTemplateError, match="'H200' is not a key of the authors' GPU sheet .*Stand-in GPU, Other GPU"
    ):
        AuthorsPrompts(STANDIN, "H200")


def test_every_prompt_is_what_the_authors_builder_returns():
    from cudaforge.agents.prompts import correction_context, first_attempt_context, optimization_context, repair_context
    from cudaforge.agents.records import Backend
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalResult, EvalStatus

    prompts = AuthorsPrompts(STANDIN, GPU)
    task = find_task(selection("tiny"), "level1/1_ReLU")
    kernel = "class ModelNew: pass  # the candidate"
    failed = EvalResult(task_id=task.id, candidate_hash="h", status=EvalStatus.RUNTIME_ERROR, message="boom")
    seed = prompts.render(
        "coder/first_attempt", **first_attempt_context(task, example=None, gpu=None, backend=Backend.cuda)
    )
    assert (
        seed.startswith("STANDIN-SEED gpu=Stand-in GPU arch=Standin few=class Model: pass")
        and task.source.strip() in seed
    )
    assert prompts.render("coder/system") == "STANDIN-SYSTEM coder"
    from cudaforge.agents.records import Feedback, JudgeMode

    feedback = Feedback(mode=JudgeMode.correction, fields={"critical_issue": "x"})
    repair = prompts.render(
        "coder/repair", **repair_context(task, kernel, failed, feedback=feedback, backend=Backend.cuda)
    )
    assert repair.startswith("STANDIN-REPAIR gpu=Stand-in GPU problem={'critical_issue': 'x'}") and kernel in repair
    judged = correction_context(task, kernel, failed, gpu=None)
    assert prompts.render("judge/system", **judged) == "STANDIN-JUDGE-SYSTEM repair"
    assert prompts.render("judge/correction", **judged).startswith("STANDIN-JUDGE-REPAIR")
    optimizing = optimization_context(
        task,
        kernel,
        None,
        gpu=None,
        metrics=None,
        kernels=[{"name": "relu_kernel", "metrics": {"dram__throughput": 51.23456}}],
    )
    opt = prompts.render("judge/optimization", **{"mode": "optimization", **optimizing})
    assert opt.startswith("STANDIN-JUDGE-OPT gpu=Stand-in GPU") and kernel in opt
    assert (
        prompts.render("judge/system", **{"mode": "optimization", **optimizing}) == "STANDIN-JUDGE-SYSTEM optimization"
    )
    assert prompts.template_set.name == "cudaforge_authors" and "critical_issue" in prompts.template_set.correction_keys


def test_the_judges_json_reaches_the_authors_builders_under_the_keys_it_was_written_with():
    """Issue 54: cudaforge renamed the Judge's keys to optimisation_method and modification_plan; the authors' builder
    reads "optimisation method" and "modification plan", so every optimisation prompt lost the Judge's advice."""
    import json

    from cudaforge.agents.judge import Judge
    from cudaforge.agents.prompts import optimize_context
    from cudaforge.agents.records import Backend
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalResult, EvalStatus

    prompts = AuthorsPrompts(STANDIN, GPU)
    task = find_task(selection("tiny"), "level1/1_ReLU")
    kernel = "class ModelNew: pass  # the candidate"
    correct = EvalResult(task_id=task.id, candidate_hash="h", status=EvalStatus.CORRECT)
    advice = {"bottleneck": "DRAM", "optimisation method": "float4 loads", "modification plan": "vectorise x"}

    class Once:
        def complete(self, messages, **meta):
            from types import SimpleNamespace

            return SimpleNamespace(text=json.dumps(advice), error=None)

    verdict = Judge(Once(), prompts).optimization(task, kernel, correct)
    assert verdict.ok and verdict.feedback.raw == advice  # as the reply wrote it
    assert verdict.feedback.fields["optimisation_method"] == "float4 loads"  # and ours, for our templates
    text = prompts.render(
        "coder/optimize",
        **optimize_context(task, kernel, result=correct, feedback=verdict.feedback, gpu=None, backend=Backend.cuda),
    )
    assert "read=DRAM|float4 loads|vectorise x" in text


@pytest.mark.slow
def test_a_run_with_the_authors_prompts_sends_them_and_records_where_they_came_from(tmp_path):
    from test_graph import BAD, CORRECTION, GOOD, config, relu, scripts  # noqa: F401

    from cudaforge.config import TemplateSetName
    from cudaforge.report import make_report
    from cudaforge.report.tables import markdown
    from cudaforge.run.runner import make_context, run_one
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/1_ReLU")
    cfg = config(tmp_path, rounds=2)
    cfg.agents.template_set = TemplateSetName.cudaforge_authors
    cfg.agents.authors_root, cfg.agents.authors_gpu = str(STANDIN), GPU
    cfg.strategy.backend = type(cfg.strategy.backend)("cuda")
    scripts([BAD, GOOD], [CORRECTION])
    ctx = make_context(cfg, tmp_path / "run")
    result = run_one(ctx, task)
    assert [r.status for r in result.history] == ["incorrect", "correct"]
    first = ctx.store.task(task.id).read_json(1, "coder.json")["conversation"]["messages"]
    assert first[0]["content"] == "STANDIN-SYSTEM coder" and first[1]["content"].startswith("STANDIN-SEED")
    repair = ctx.store.task(task.id).read_json(2, "coder.json")["conversation"]["messages"]
    assert repair[1]["content"].startswith("STANDIN-REPAIR gpu=Stand-in GPU problem={'critical_issue'")
    judge = ctx.store.task(task.id).read_json(1, "judge.json")["conversation"]["messages"]
    assert judge[1]["content"].startswith("STANDIN-JUDGE-REPAIR")
    record = json.loads((tmp_path / "run" / "prompts.json").read_text())
    assert record["template_set"] == "cudaforge_authors" and record["authors_root"] == str(STANDIN.resolve())
    report, _ = make_report(runs=[str(tmp_path / "run")], out_dir=str(tmp_path / "report"), plots=False, bootstrap=0)
    assert "prompts from the CudaForge authors' own builders" in markdown(report)


def test_the_checkouts_commit_or_digest_is_recorded_and_a_checkout_past_the_paper_era_is_warned_of(tmp_path):
    """Issue 54: the checkout was read at whatever commit it was on, and a copy without .git recorded none."""
    import shutil
    import sys

    from cudaforge.agents.authors import PAPER_ERA_COMMIT, content_digest

    copy = tmp_path / "CudaForge"
    shutil.copytree(STANDIN, copy)
    loaded = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "prompts"}
    try:
        described = AuthorsPrompts(copy, GPU).describe()  # their modules imported from this copy as `prompts`
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "prompts"]:
            del sys.modules[name]
        sys.modules.update(loaded)
    assert (
        described["commit"] is None and described["digest"] == content_digest(copy) and len(described["digest"]) == 16
    )
    assert described["paper_era"] is False and PAPER_ERA_COMMIT[:7] in described["warning"]
    assert "no .git" in described["warning"] and "second task block" in described["warning"]
    (copy / "prompts" / "error.py").write_text((copy / "prompts" / "error.py").read_text() + "\n# changed\n")
    assert content_digest(copy) != described["digest"]  # the digest follows the prompt files


def _reply(body: str) -> str:
    return (
        "```python\nimport torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def __init__(self, scale):\n        super().__init__()\n        self.scale = scale\n\n"
        f"    def forward(self, x):\n        return {body}\n```"
    )


@pytest.mark.slow
def test_what_a_table1_run_sends_is_what_the_authors_builders_return_byte_for_byte(tmp_path):
    """Issue 54: `cudaforge run experiment=cudaforge_table1 agents=cudaforge_authors` against a model server that
    logs what it receives: every request's messages are, byte for byte, the strings their builders return for the
    same replies and error log (system role kept, nothing added, nothing reworded), in the order their main.py sends
    them: seed, correction Judge, repair, optimisation Judge, optimise.

    Against the stand-in builders here; with CUDAFORGE_AUTHORS_ROOT (a checkout of their repository) and
    CUDAFORGE_AUTHORS_GPU (a key of their GPU sheet), against theirs."""
    import importlib
    import subprocess
    import sys

    from conftest import problem_source
    from standins.llm_server import StandInServer

    from cudaforge.agents.prompts import error_log
    from cudaforge.agents.templates import to_json
    from cudaforge.types import EvalResult

    root = Path(os.environ.get("CUDAFORGE_AUTHORS_ROOT") or STANDIN).resolve()
    gpu = os.environ.get("CUDAFORGE_AUTHORS_GPU") or GPU
    kb = tmp_path / "KernelBench"
    (kb / "level1").mkdir(parents=True)
    (kb / "level1" / "1_ScaledRelu.py").write_text(problem_source(2.0))
    bad, good, faster = (
        _reply("torch.relu(x)"),
        _reply("torch.relu(x) * self.scale"),
        _reply("x.clamp_min(0) * self.scale"),
    )
    correction = '{"critical_issue": "the scale is not applied", "why_it_matters": "outputs are halved", "minimal_fix_hint": "multiply"}'
    advice = '{"bottleneck": "memory", "optimisation method": "fuse", "modification plan": "clamp then scale", "expected effect": "less traffic"}'
    run = tmp_path / "run"
    with StandInServer("authors-o3", replies=[bad, correction, good, advice, faster]) as server:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "cudaforge.cli",
                "run",
                "experiment=cudaforge_table1",
                "agents=cudaforge_authors",
                f"agents.authors_root={root}",
                f"agents.authors_gpu={gpu}",
                f"suite.root={kb}",
                "suite.allow_other_problem_set=true",
                "coder=openai_compatible",
                "judge=openai_compatible",
                f"coder.api_base={server.url}",
                f"judge.api_base={server.url}",
                f"coder.model={server.name}",
                f"judge.model={server.name}",
                "coder.system_messages=true",  # as openai_o3 sets it
                "judge.system_messages=true",
                "strategy.max_rounds=3",
                "eval.device=cpu",  # on purpose, as pre-flight asks of a model run on a machine without a GPU
                "tracker=disabled",
                "eval.held_out_shapes=false",  # no model call after the loop: the prompts do not reach them
                f"hydra.run.dir={run}",
            ],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
            timeout=600,
        )
    assert out.returncode in (0, 1), out.stdout[-2000:] + out.stderr[-3000:]
    assert len(server.bodies) == 5, [b["messages"][-1]["content"][:60] for b in server.bodies]

    cached = {k: sys.modules.pop(k) for k in list(sys.modules) if k == "prompts" or k.startswith("prompts.")}
    sys.path.insert(0, str(root))
    try:
        names = ("generate_custom_cuda", "error", "judger_repair", "judger_optimization", "optimization")
        theirs = {m: importlib.import_module(f"prompts.{m}") for m in names}
    finally:
        sys.path.remove(str(root))
        for k in [k for k in sys.modules if k == "prompts" or k.startswith("prompts.")]:
            del sys.modules[k]
        sys.modules.update(cached)
    arch = tmp_path / "task.py"
    arch.write_text((kb / "level1" / "1_ScaledRelu.py").read_text())
    # their main.py's kernel: the reply's code block, stripped, with one newline (utils/kernel_io.extract_code_block)
    code = lambda reply: reply.split("```python\n", 1)[1].rsplit("```", 1)[0].strip() + "\n"  # noqa: E731
    kernel_file = tmp_path / "kernel.py"
    kernel_file.write_text(code(good))
    task_dir = next((run / "tasks").iterdir())
    first = EvalResult.from_dict(json.loads((task_dir / "round_01" / "eval.json").read_text()))
    log = error_log(first, findings=False)  # their harness has no integrity findings
    assert first.guard_findings and log.startswith("ValueError: Outputs are not close (atol=") and "\n" not in log
    system = theirs["generate_custom_cuda"].default_system_prompt  # their call_llm's default: seed, repair, optimise
    judge_repair = theirs["judger_repair"].build_correctness_prompts(error_log=log, arch_path=arch, cuda_code=code(bad))
    judge_opt = theirs["judger_optimization"].build_judger_optimization_prompts(
        arch_path=arch, gpu_name=gpu, ncu_metrics_block=to_json({}, 2), cuda_code=code(good)
    )  # no profile on a CPU: the metric block is empty
    expected = [
        [system, theirs["generate_custom_cuda"].build_seed_prompt(arch_path=arch, gpu_name=gpu)],
        list(judge_repair),
        [
            system,
            theirs["error"].build_error_prompt(
                old_code=code(bad), error_log=log, problem=json.loads(correction), gpu_name=gpu
            ),
        ],
        list(judge_opt),
        [
            system,
            theirs["optimization"].build_optimization_prompt(
                arch_path=kernel_file, gpu_name=gpu, optimization_suggestion=json.loads(advice)
            ),
        ],
    ]
    expected_messages = [[{"role": "system", "content": a}, {"role": "user", "content": b}] for a, b in expected]
    sent = [body["messages"] for body in server.bodies]
    assert [b["model"] for b in server.bodies] == ["authors-o3"] * 5
    for i, (got, want) in enumerate(zip(sent, expected_messages)):
        assert json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False), f"request {i + 1}"
    if root == STANDIN.resolve():
        assert "read=memory|fuse|clamp then scale" in sent[4][1]["content"]  # the advice reached their builder
