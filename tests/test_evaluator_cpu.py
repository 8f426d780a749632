"""The evaluator on a CPU-only machine: verdicts, diffs and faults with CPU stand-ins.

Triton candidates run in the interpreter; faults (hang, segfault, OOM kill, exceptions) are
plain Python stand-ins for what bad kernels do on a GPU (scripts/gpu_check.py runs the real
ones there).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cudaforge.eval.evaluator import Evaluator
from cudaforge.languages import get as languages_get
from cudaforge.tasks import load_suite, selection
from cudaforge.types import EvalStatus, Phase

TRITON_KEEP = languages_get("triton").jit_keep
TILELANG_KEEP = languages_get("tilelang").jit_keep
REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "benchmarks" / "candidates"

TORCH_RELU = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        {body}
"""


def relu_candidate(body: str) -> str:
    return TORCH_RELU.format(body=body)


@pytest.fixture(scope="module")
def tiny():
    cfg = selection("tiny")
    return {t.name: t for t in load_suite(cfg)}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    # guards off: these tests use pure-PyTorch stand-ins for kernels (tests/test_guards.py covers the guards)
    cfg = {
        "device": "cpu",
        "correctness_trials": 2,
        "correctness_timeout_s": 60,
        "guards_enforce": False,
        "build_cache_dir": str(tmp_path_factory.mktemp("build")),
    }
    return Evaluator(cfg)


@pytest.mark.slow
def test_triton_candidates_are_correct_in_the_interpreter(evaluator, tiny):
    for name, file in [("ReLU", "triton_relu.py"), ("Softmax", "triton_softmax.py")]:
        result = evaluator.evaluate(tiny[name], (CANDIDATES / file).read_text())
        assert result.status is EvalStatus.CORRECT, result.report()
        hidden = result.checks["hidden"]  # the hidden distributions the reference could judge, each one trial
        assert len(hidden["kept"]) + len(hidden["dropped"]) == 5
        assert result.trials_passed == result.trials_total == 2 + len(tiny[name].input_variants) + len(hidden["kept"])
        assert result.speedup is None and "timing needs a GPU" in result.timing_unavailable_reason
        assert [p.phase for p in result.phases] == [Phase.STATIC, Phase.COMPILE, Phase.CORRECTNESS]


def test_wrong_tail_is_incorrect_with_a_readable_diff(evaluator, tiny):
    source = relu_candidate("y = torch.relu(x)\n        y.view(-1)[-100:] = 0.5\n        return y")
    result = evaluator.evaluate(tiny["ReLU"], source)
    assert result.status is EvalStatus.INCORRECT
    diff = result.diff
    assert diff.trial == 0 and diff.mismatch_count > 0 and diff.region.startswith("only in the tail")
    assert diff.worst and diff.expected_shape == diff.actual_shape
    assert "only in the tail" in result.message


@pytest.mark.slow
def test_shape_specialisation_fails_on_a_declared_second_shape(evaluator, tiny):
    source = relu_candidate("return torch.relu(x.view(256, 1024)).view(x.shape) if x.numel() == 256 * 1024 else x")
    result = evaluator.evaluate(tiny["ReLU"], source)
    assert result.status is EvalStatus.INCORRECT and result.diff.variant != "default"


@pytest.mark.slow
def test_wrong_dtype_is_incorrect(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], relu_candidate("return torch.relu(x).half()"))
    assert result.status is EvalStatus.INCORRECT and "dtype mismatch" in result.message


def test_exception_is_a_runtime_error_pointing_at_the_candidate_line(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], relu_candidate("raise IndexError('bad index 7')"))
    assert result.status is EvalStatus.RUNTIME_ERROR
    assert "IndexError: bad index 7" in result.message and "in forward" in result.message


def test_hang_is_a_timeout_in_its_phase(tiny, tmp_path):
    evaluator = Evaluator(
        {"device": "cpu", "correctness_timeout_s": 2, "guards_enforce": False, "build_cache_dir": str(tmp_path)}
    )
    result = evaluator.evaluate(tiny["ReLU"], relu_candidate("while True:\n            pass"))
    assert result.status is EvalStatus.TIMEOUT and "correctness" in result.message
    assert result.phases[-1].status == "timeout"


@pytest.mark.parametrize(
    "body, words",
    [
        ("import ctypes\n        ctypes.string_at(0)", "SIGSEGV"),
        ("import os, signal\n        os.kill(os.getpid(), signal.SIGKILL)", "out-of-memory"),
    ],
)
def test_crashes_become_results(evaluator, tiny, body, words):
    result = evaluator.evaluate(tiny["ReLU"], relu_candidate(body))
    assert result.status is EvalStatus.CRASHED and words in result.message


def test_import_time_failure_is_a_runtime_error(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], "import no_such_module_xyz\nclass ModelNew: pass\n")
    assert result.status is EvalStatus.RUNTIME_ERROR and "no_such_module_xyz" in result.message


@pytest.mark.parametrize(
    "source, words",
    [("", "empty"), ("class ModelNew(:\n", "does not parse"), ("class Other: pass\n", "defines no ModelNew")],
)
def test_static_failures_are_invalid_and_never_spawn(evaluator, tiny, source, words):
    result = evaluator.evaluate(tiny["ReLU"], source)
    assert result.status is EvalStatus.INVALID and words in result.message
    assert [p.phase for p in result.phases] == [Phase.STATIC] and result.seconds < 1


@pytest.mark.slow
def test_weights_are_shared_with_the_reference(evaluator, tiny):
    source = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))
"""
    result = evaluator.evaluate(tiny["MatmulBiasReLU"], source)
    assert result.status is EvalStatus.CORRECT, result.report()


def test_secrets_do_not_reach_the_candidate(evaluator, tiny, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-leak")
    source = relu_candidate(
        "import os\n        assert 'OPENAI_API_KEY' not in os.environ, 'leak'\n        return torch.relu(x)"
    )
    assert evaluator.evaluate(tiny["ReLU"], source).status is EvalStatus.CORRECT


@pytest.mark.slow
def test_result_round_trips_through_json(evaluator, tiny):
    from cudaforge.types import EvalResult

    result = evaluator.evaluate(tiny["ReLU"], relu_candidate("return x.clamp_min(0)"))
    again = EvalResult.from_json(result.to_json())
    assert again == result and again.status is EvalStatus.CORRECT


@pytest.mark.slow
def test_batch_keeps_order_and_survives_faults(evaluator, tiny):
    jobs = [
        (tiny["ReLU"], relu_candidate("return torch.relu(x)")),
        (tiny["ReLU"], relu_candidate("import ctypes\n        ctypes.string_at(0)")),
        (tiny["Softmax"], (CANDIDATES / "triton_softmax.py").read_text()),
    ]
    seen = []
    results = evaluator.evaluate_batch(jobs, on_result=lambda i, r: seen.append(i))
    assert [r.status for r in results] == [EvalStatus.CORRECT, EvalStatus.CRASHED, EvalStatus.CORRECT]
    assert sorted(seen) == [0, 1, 2]


def test_the_gpu_lock_wait_is_its_own_phase_and_the_lock_dir_reaches_the_worker(tmp_path, monkeypatch):
    """The worker's wait for its GPU's lock has its own timeout, and the evaluator hands its lock directory
    (the profiler's, in `cudaforge run`) to the worker."""
    import cudaforge.eval.evaluator as evaluator_module
    from cudaforge.proc.isolation import IsolatedOutcome

    captured = {}

    def fake_run_isolated(entry, payload, timeouts, gpu=None, env=None, **kwargs):
        captured.update(timeouts=timeouts, gpu=gpu, env=env)
        return IsolatedOutcome(status="crashed", error="stand-in")

    monkeypatch.setattr(evaluator_module, "run_isolated", fake_run_isolated)
    evaluator = Evaluator(
        {"gpu_wait_timeout_s": 1234.0, "build_cache_dir": str(tmp_path / "b"), "standby_workers": False},
        gpus=["3"],
        lock_dir=tmp_path / "locks",
    )
    task = next(iter(load_suite(selection("tiny"))))
    result = evaluator.evaluate(task, (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text())
    assert result.status is EvalStatus.CRASHED
    assert captured["gpu"] == "3" and captured["timeouts"]["gpu_wait"] == 1234.0
    assert captured["timeouts"][Phase.TIMING.value] == 300.0 + evaluator_module.PHASE_GRACE_S
    assert captured["env"]["CUDAFORGE_LOCK_DIR"] == str((tmp_path / "locks").resolve())


def test_each_gpu_evaluation_starts_the_next_candidates_standby(tmp_path, monkeypatch):
    """eval.standby_workers: every GPU evaluation runs in a standby (the one waiting for that GPU, or a new one)
    and starts the next one; a standby whose settings differ, or that died, is replaced; close() stops them. Off,
    every candidate starts cold. The standby's environment carries the eval settings its sandboxed worker needs."""
    import cudaforge.eval.evaluator as evaluator_module
    from cudaforge.proc.isolation import IsolatedOutcome

    log = []

    class FakeStandby:
        def __init__(self, entry, prepare, *, gpu=None, env=None, trusted=False):
            assert trusted  # the verifier's delivered result is taken at once: the candidate is behind the wall
            self.entry, self.prepare, self.gpu, self.env = entry, prepare, gpu, dict(env or {})
            self.dead = self.closed = False
            self.kind = "eval"
            log.append(("start", self.kind, gpu, self))

        def matches(self, entry, gpu, env):
            return (entry, gpu, dict(env or {})) == (self.entry, self.gpu, self.env)

        def alive(self):
            return not self.dead and not self.closed

        def run(self, payload, *, timeouts, on_phase=None):
            log.append(("run", self.kind, self.gpu, self))
            assert json.loads(self.env["CUDAFORGE_STANDBY_EVAL"])["sandbox"] == payload["eval"]["sandbox"]
            return IsolatedOutcome(status="crashed", error="stand-in")

        def kill(self):
            self.dead = True

        def close(self):
            self.closed = True

    def fake_run_isolated(entry, payload, timeouts, gpu=None, env=None, **kwargs):
        log.append(("cold", "eval", gpu, None))
        return IsolatedOutcome(status="crashed", error="stand-in")

    monkeypatch.setattr(evaluator_module, "Standby", FakeStandby)
    monkeypatch.setattr(evaluator_module, "run_isolated", fake_run_isolated)
    task = next(iter(load_suite(selection("tiny"))))
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    default = Evaluator({"build_cache_dir": str(tmp_path / "b")}, gpus=["0"])
    default.evaluate(task, source, gpu="0")
    default.close()
    assert [(a, k) for a, k, _, _ in log] == [("start", "eval"), ("start", "eval"), ("run", "eval")]
    log.clear()
    evaluator = Evaluator({"build_cache_dir": str(tmp_path / "b")}, gpus=["0", "1"])
    evaluator.evaluate(task, source, gpu="0")
    assert [(a, k, g) for a, k, g, _ in log] == [("start", "eval", "0"), ("start", "eval", "0"), ("run", "eval", "0")]
    first_eval_waiting = log[1][3]
    log.clear()
    evaluator.evaluate(task, source, gpu="0")
    runs = [entry for entry in log if entry[0] == "run"]
    assert runs == [("run", "eval", "0", first_eval_waiting)]  # the standby started by the first candidate
    log.clear()
    evaluator.evaluate(task, source, gpu="1")
    assert [(a, k, g) for a, k, g, _ in log if a == "run"] == [("run", "eval", "1")]
    waiting = evaluator._standbys[("eval", "0")]
    waiting.dead = True  # a standby that died while waiting is replaced
    log.clear()
    evaluator.evaluate(task, source, gpu="0")
    assert waiting.closed and log[-1][0] == "run" and log[-1][3] is not waiting
    mismatched = evaluator._standbys[("eval", "0")]
    evaluator.lock_dir = str(tmp_path)  # other settings: the waiting standby does not match
    evaluator.evaluate(task, source, gpu="0")
    assert mismatched.closed
    left = list(evaluator._standbys.values())
    evaluator.close()
    assert len(left) == 2 and all(s.closed for s in left) and evaluator._standbys == {}

    log.clear()
    off = Evaluator({"build_cache_dir": str(tmp_path / "b"), "standby_workers": False}, gpus=["0"])
    for _ in range(2):
        off.evaluate(task, source, gpu="0")
    assert [a for a, _, _, _ in log] == ["cold", "cold"]


@pytest.mark.slow
def test_a_standby_worker_evaluates_like_a_cold_one(tiny, tmp_path):
    """The real verifier behind a real standby (here on the CPU: Triton in the interpreter), its sandboxed worker
    started ahead: same verdict, and the fingerprint says it was prepared ahead."""
    from cudaforge.eval.evaluator import WORKER_ENTRY, WORKER_PREPARE
    from cudaforge.proc.isolation import Standby, run_isolated

    task = tiny["ReLU"]
    evaluator = Evaluator({"device": "cpu", "build_cache_dir": str(tmp_path / "b")})
    payload = {
        "task": task.to_dict(),
        "candidate": (CANDIDATES / "triton_relu.py").read_text(),
        "eval": evaluator.cfg.to_dict(),
        "build": evaluator.build_settings().to_dict(),
        "device": "cpu",
    }
    env = evaluator._env("cpu")
    warm = Standby(WORKER_ENTRY, WORKER_PREPARE, gpu=None, env=env).run(payload, timeouts=evaluator._timeouts())
    cold = run_isolated(WORKER_ENTRY, payload, timeouts=evaluator._timeouts(), gpu=None, env=env)
    assert warm.status == cold.status == "ok"
    assert warm.result["status"] == cold.result["status"] == EvalStatus.CORRECT.value
    assert warm.result["fingerprint"]["standby"]["prepare_s"] > 0
    assert warm.result["fingerprint"]["standby"]["cuda_ready"] is False  # no GPU here
    assert cold.result["fingerprint"]["standby"] is None
    assert warm.result["fingerprint"]["nvcc"] == cold.result["fingerprint"]["nvcc"]


@pytest.mark.slow
def test_a_prepared_worker_has_imported_what_the_cost_model_and_the_profiler_pull_in():
    """A first FlopCounterMode (the verifier's cost model) and a first torch.profiler session (the worker's share guard)
    import torch._inductor, torch._dynamo and sympy (seconds on a GPU node); a standby's ``prepare`` pays that before
    its candidate, so after the verifier's and the GPU worker's preparation neither imports anything of those."""
    import subprocess
    import sys

    script = f"""
import sys
import torch
from cudaforge.eval import verifier
from cudaforge.eval.worker import candidate_worker
verifier.prepare(lambda phase: None, lambda: True)
candidate_worker.prepare(torch.device("cuda"))
seen = set(sys.modules)
from cudaforge.tasks.cost import task_cost
from cudaforge.tasks.runtime import load_module
cost = task_cost(load_module(open({str(REPO / "benchmarks/suites/main/level1/1_GELU.py")!r}).read(), "ref_gelu"))
assert cost["flops"] is not None, cost
from torch.profiler import ProfilerActivity, profile
import torch
with profile(activities=[ProfilerActivity.CPU]):
    torch.ones(4).add_(1)
late = sorted(m for m in set(sys.modules) - seen if m.split(".")[0] == "sympy" or m.startswith(("torch._dynamo", "torch._inductor")))
print("LATE", late)
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "LATE []" in out.stdout, out.stdout[-2000:]


def test_under_the_launch_inclusive_protocol_every_candidate_starts_cold(tmp_path, monkeypatch):
    """eval.timing_lead_us=0: the host's jitter is in the timed calls, so no standby is used (nor started up
    during them); with a lead (the default) the evaluation starts the next one before it runs. wait_for_standbys
    says whether the waiting ones are ready."""
    import cudaforge.eval.evaluator as evaluator_module
    from cudaforge.proc.isolation import IsolatedOutcome

    log = []
    ready = {"value": True}

    class FakeStandby:
        def __init__(self, entry, prepare, *, gpu=None, env=None, trusted=False):
            self.entry, self.gpu, self.env = entry, gpu, dict(env or {})
            log.append("start")

        def matches(self, entry, gpu, env):
            return (entry, gpu, dict(env or {})) == (self.entry, self.gpu, self.env)

        def alive(self):
            return True

        def ready(self):
            return ready["value"]

        def run(self, payload, *, timeouts, on_phase=None):
            log.append("run")
            return IsolatedOutcome(status="crashed", error="stand-in")

        def close(self):
            pass

    def fake_run_isolated(entry, payload, timeouts, gpu=None, env=None, **kwargs):
        log.append("cold")
        return IsolatedOutcome(status="crashed", error="stand-in")

    monkeypatch.setattr(evaluator_module, "Standby", FakeStandby)
    monkeypatch.setattr(evaluator_module, "run_isolated", fake_run_isolated)
    task = next(iter(load_suite(selection("tiny"))))
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    inclusive = Evaluator({"build_cache_dir": str(tmp_path / "b"), "timing_lead_us": 0}, gpus=["0"])
    inclusive.evaluate(task, source, gpu="0")
    inclusive.evaluate(task, source, gpu="0")
    assert log == ["cold", "cold"]
    log.clear()
    lead = Evaluator({"build_cache_dir": str(tmp_path / "b")}, gpus=["0"])
    lead.evaluate(task, source, gpu="0")
    assert log == ["start", "start", "run"]
    assert lead.wait_for_standbys(timeout_s=1)
    ready["value"] = False
    assert not lead.wait_for_standbys(timeout_s=0.2)


@pytest.mark.slow
def test_a_candidate_whose_evaluation_died_twice_is_not_run_again(tiny, tmp_path):
    """The marker of an evaluation in flight stays when the process running it dies (kill -9, a crash). A resumed
    run evaluates that candidate once more (the run may have been killed from outside); after a second interrupted
    evaluation it reports it as crashed instead of running it again. A finished evaluation leaves no marker."""
    evaluator = Evaluator(
        {"device": "cpu", "correctness_trials": 1, "build_cache_dir": str(tmp_path / "b")},
        interrupted_dir=tmp_path / "interrupted",
    )
    source = (CANDIDATES / "triton_relu.py").read_text()
    assert evaluator.evaluate(tiny["ReLU"], source).status is EvalStatus.CORRECT
    assert list((tmp_path / "interrupted").iterdir()) == []
    marker = evaluator._interrupted_marker(tiny["ReLU"], __import__("cudaforge.types").types.source_hash(source))
    marker.write_text('{"attempts": 1}')  # as a run killed during this evaluation leaves it
    assert evaluator.evaluate(tiny["ReLU"], source).status is EvalStatus.CORRECT and not marker.exists()
    marker.write_text('{"attempts": 2}')  # interrupted twice: the candidate's doing
    again = evaluator.evaluate(tiny["ReLU"], source)
    assert again.status is EvalStatus.CRASHED and "2 evaluations of this candidate never finished" in again.message
    assert again.seconds < 1
    marker.write_text("not json")  # a marker that cannot be read cannot vouch for the candidate
    assert evaluator.evaluate(tiny["ReLU"], source).status is EvalStatus.CRASHED


def test_nothing_the_evaluator_meets_makes_it_raise(tiny, tmp_path, monkeypatch):
    """A source that breaks the analysis, a verifier result that is not a result, an internal failure: each is a
    result, never an exception."""
    import cudaforge.eval.evaluator as evaluator_module
    from cudaforge.proc.isolation import IsolatedOutcome

    evaluator = Evaluator({"device": "cpu", "build_cache_dir": str(tmp_path)})
    deep = relu_candidate("return " + " + ".join(["x"] * 3000))
    assert evaluator.evaluate(tiny["ReLU"], deep).status is EvalStatus.INVALID
    monkeypatch.setattr(
        evaluator_module,
        "run_isolated",
        lambda *a, **k: IsolatedOutcome(status="ok", result={"status": "correct", "speedup": "fast"}),
    )
    source = (CANDIDATES / "triton_relu.py").read_text()
    forged = evaluator.evaluate(tiny["ReLU"], source)
    assert forged.status is EvalStatus.CRASHED and "malformed" in forged.message

    def broken(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(evaluator_module, "run_isolated", broken)
    assert evaluator.evaluate(tiny["ReLU"], source).status is EvalStatus.CRASHED


@pytest.mark.slow
def test_a_tuple_holding_the_reference_output_is_not_the_output(tiny, tmp_path):
    """Where the reference returns a tensor, a tuple (or list) holding it is a different output: output_type."""
    cfg = {
        "device": "cpu",
        "correctness_trials": 1,
        "guards": {"no_custom_kernel": "report", "reference": "report"},
        "build_cache_dir": str(tmp_path),
    }
    result = Evaluator(cfg).evaluate(tiny["ReLU"], relu_candidate("return (torch.relu(x),)"))
    assert result.status is EvalStatus.REJECTED and "output_type" in result.message and "tuple of 1" in result.message


@pytest.mark.slow
def test_weights_from_the_seed_keep_init_time_transforms_and_copying_undoes_them(tiny, tmp_path):
    """eval.weights=seed (KernelBench's way, the default) keeps a fold done in __init__; copy_matching overwrites
    the folded weights with the reference's and the kernel is then 2x off; the message says which was used."""
    source = (REPO / "benchmarks" / "hacks" / "legit_init_time_folding.py").read_text()
    base = {"device": "cpu", "correctness_trials": 1, "check_variants": False, "build_cache_dir": str(tmp_path)}
    seeded = Evaluator(base).evaluate(tiny["MatmulBiasReLU"], source)
    assert seeded.status is EvalStatus.CORRECT and "weights from the same seed" in seeded.message, seeded.report()
    copied = Evaluator({**base, "weights": "copy_matching"}).evaluate(tiny["MatmulBiasReLU"], source)
    assert copied.status is EvalStatus.INCORRECT, copied.report()
    assert copied.fingerprint["weights"] == "copy_matching (2 tensors copied)"


def test_the_timing_crosscheck_never_shrinks_below_two_calls():
    """Call 8 of 2026-12-01 on the H200: the 1.6 GB GELU task's batch was sized to one call by the memory budget,
    so the cross-check was skipped and two timing hacks went through. Two calls always run."""
    from cudaforge.eval.verifier import crosscheck_calls

    gib = 1 << 30
    assert crosscheck_calls(int(4.8 * gib), 8, 8.0) == 2  # the GELU task: 1.6 GB in, 3.2 GB of output room
    assert crosscheck_calls(100 * gib, 8, 8.0) == 2
    assert crosscheck_calls(gib, 8, 8.0) == 8
    assert crosscheck_calls(2 * gib, 8, 8.0) == 4
    assert crosscheck_calls(1, 3, 0.0) == 2


@pytest.mark.parametrize(
    "key, value",
    [
        ("crosscheck_calls", 1),
        ("crosscheck_ratio", 0.5),
        ("crosscheck_slack_ms", -1),
        ("crosscheck_max_gb", "lots"),
        ("reference_slowdown_tolerance", True),
    ],
)
def test_bad_crosscheck_settings_are_refused(key, value):
    with pytest.raises(ValueError, match=f"eval.{key}="):
        Evaluator({"device": "cpu", key: value})


OWN_CACHE_PROBE = """
import os
import pathlib

import torch
import torch.nn as nn

# a Triton source as the evaluator tells one (triton.jit in its text): only those keep their Triton cache
CACHE = pathlib.Path(os.environ["TRITON_CACHE_DIR"])
SEEN = (CACHE / "KEY" / "kernel.cubin").exists()  # {tag}
(CACHE / "KEY").mkdir(parents=True, exist_ok=True)
(CACHE / "KEY" / "kernel.cubin").write_bytes(b"\\x7fELF compiled")
(CACHE / "KEY" / "counter.txt").write_text("1")  # not a kernel: never carried over
(CACHE / "NEWKEY").mkdir(exist_ok=True)  # Triton adds entries to a carried cache: it must stay writable
(CACHE / "NEWKEY" / "launcher.so").write_bytes(b"\\x7fELF compiled")
try:
    os.symlink("{secret}", CACHE / "leak")
except FileExistsError:
    pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) + (1.0 if SEEN else 0.0)  # wrong once the cache is carried over
"""


@pytest.mark.slow
def test_a_sources_triton_cache_is_carried_to_its_own_next_evaluation_only(tmp_path):
    """What Triton compiled in one evaluation's worker is given to the next worker of the same source (so a repeated
    evaluation does not compile again), never to another source; links in it are not followed."""
    from cudaforge.tasks import find_task, selection

    secret = tmp_path / "secret.txt"
    secret.write_text("sk-not-for-candidates")
    task = find_task(selection("tiny"), "level1/1_ReLU")
    cache = tmp_path / "build"
    evaluator = Evaluator(
        {"device": "cpu", "correctness_trials": 1, "build_cache_dir": str(cache), "guards_enforce": False}
    )  # the probe reads its environment and has no kernel
    source = OWN_CACHE_PROBE.format(tag="a", secret=secret)
    first = evaluator.evaluate(task, source)
    if not first.fingerprint["sandbox"]["namespaces"] or "pid" not in first.fingerprint["sandbox"]["namespaces"]:
        pytest.skip("the carry-over needs the sandbox's pid namespace")
    assert first.status is EvalStatus.CORRECT, first.report()
    kept = list((cache / "triton-own").rglob("*"))
    assert sorted(p.name for p in kept if p.is_file()) == ["kernel.cubin", "launcher.so"], kept  # no link followed
    assert b"sk-not-for-candidates" not in b"".join(p.read_bytes() for p in kept if p.is_file())
    second = evaluator.evaluate(task, source)
    assert second.status is EvalStatus.INCORRECT, second.report()  # it found its own kernel.bin and could write
    other = evaluator.evaluate(task, OWN_CACHE_PROBE.format(tag="b", secret=secret))
    assert other.status is EvalStatus.CORRECT, other.report()  # another source starts empty


@pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another uid needs root")
def test_a_carried_triton_cache_belongs_to_the_sandbox_uid(tmp_path):
    """Where the worker runs as its own uid (the GPU machine's sandbox does), the seeded cache is that uid's, so
    Triton can add new kernels to it (the H200 found a root-owned copy: PermissionError on the next kernel)."""
    from cudaforge.eval.jit_cache import seed_own_jit_cache

    store = tmp_path / "store"
    (store / "KEY").mkdir(parents=True)
    (store / "KEY" / "kernel.cubin").write_bytes(b"\0cubin")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    os.chown(scratch, 65534, 65534)
    seed_own_jit_cache(store, scratch / "triton")
    seeded = [scratch / "triton", scratch / "triton" / "KEY", scratch / "triton" / "KEY" / "kernel.cubin"]
    assert [(p.stat().st_uid, p.stat().st_gid) for p in seeded] == [(65534, 65534)] * 3
    assert (scratch / "triton" / "KEY" / "kernel.cubin").read_bytes() == b"\0cubin"


def test_a_kept_triton_group_file_follows_the_cache_to_its_new_path(tmp_path):
    """Triton's group files name their members by absolute path and a group whose paths are gone is a silent miss (a
    full recompile, 0.6-0.7 s on an H200): the kept copy holds a placeholder, the seeded one the new worker's path."""
    from cudaforge.eval.jit_cache import PATH_TOKEN, keep_own_jit_cache, seed_own_jit_cache

    old = tmp_path / "cand-1" / "triton"
    (old / "KEY").mkdir(parents=True)
    (old / "KEY" / "k.cubin").write_bytes(b"\x7fELFcubin")
    group = '{"child_paths": {"k.cubin": "%s/KEY/k.cubin"}}' % old  # noqa: UP031
    (old / "KEY" / "__grp__k.json").write_text(group)
    store = tmp_path / "build" / "triton-own" / "abc123"
    keep_own_jit_cache(old, store, TRITON_KEEP)
    kept = (store / "KEY" / "__grp__k.json").read_bytes()
    assert str(old).encode() not in kept and PATH_TOKEN in kept
    assert (store / "KEY" / "k.cubin").read_bytes() == b"\x7fELFcubin"  # other files are copied as they are
    new = tmp_path / "cand-2" / "triton"
    (new / "STUB").mkdir(parents=True)  # what the worker's own warm-up left there stays
    (new / "STUB" / "cuda_utils.so").write_bytes(b"ours")
    seed_own_jit_cache(store, new)
    assert (new / "KEY" / "__grp__k.json").read_text() == group.replace(str(old), str(new))
    assert (new / "STUB" / "cuda_utils.so").read_bytes() == b"ours"


def test_a_kept_cache_follows_no_link_and_a_later_keep_adds_what_the_store_lacks(tmp_path):
    """The worker's cache is the candidate's: a folder or file it made a link to a secret is never read; the GPU run
    after the CPU pool's (same source) adds its new kernels to the kept store and changes none already there."""
    from cudaforge.eval.jit_cache import count_kernels, keep_own_jit_cache

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "token.cubin").write_bytes(b"\x7fELFSECRET")
    cache = tmp_path / "cand" / "triton"
    (cache / "A").mkdir(parents=True)
    (cache / "A" / "a.cubin").write_bytes(b"\x7fELFa1")
    (cache / "LINKED").symlink_to(secret, target_is_directory=True)
    (cache / "A" / "link.cubin").symlink_to(secret / "token.cubin")
    store = tmp_path / "build" / "triton-own" / "src"
    keep_own_jit_cache(cache, store, TRITON_KEEP)
    kept = sorted(str(p.relative_to(store)) for p in store.rglob("*") if p.is_file())
    assert kept == ["A/a.cubin"] and count_kernels(cache) == 1  # the linked folder is not counted either
    assert not any(b"SECRET" in p.read_bytes() for p in store.rglob("*") if p.is_file())
    later = tmp_path / "gpu" / "triton"
    (later / "A").mkdir(parents=True)
    (later / "A" / "a.cubin").write_bytes(b"\x7fELFa2")  # already kept: left as it was
    (later / "B").mkdir()
    (later / "B" / "b.cubin").write_bytes(b"\x7fELFb")
    keep_own_jit_cache(later, store, TRITON_KEEP)
    assert (store / "A" / "a.cubin").read_bytes() == b"\x7fELFa1" and (
        store / "B" / "b.cubin"
    ).read_bytes() == b"\x7fELFb"
    assert not list(store.rglob("*.tmp")) and count_kernels(store) == 2


def test_repeated_keeps_of_one_source_cannot_grow_its_store_past_the_caps(tmp_path, monkeypatch):
    from cudaforge.eval import jit_cache

    monkeypatch.setattr(jit_cache, "OWN_CACHE_MAX_FILES", 5)
    store = tmp_path / "store"
    for run in range(4):  # each evaluation plants two new files
        cache = tmp_path / f"run{run}" / "triton"
        (cache / f"K{run}").mkdir(parents=True)
        for i in range(2):
            (cache / f"K{run}" / f"f{i}.cubin").write_bytes(b"\x7fELFx")
        jit_cache.keep_own_jit_cache(cache, store, TRITON_KEEP)
    assert len([p for p in store.rglob("*") if p.is_file()]) == 5


def test_a_tree_of_planted_folders_costs_a_bounded_read_and_keeps_nothing(tmp_path, monkeypatch):
    """A worker that fills its cache with folders (no files) cannot make the trusted side's keep or count walk
    them all: both stop after OWN_CACHE_MAX_ENTRIES entries, the keep keeping nothing."""
    from cudaforge.eval import jit_cache

    monkeypatch.setattr(jit_cache, "OWN_CACHE_MAX_ENTRIES", 50)
    cache = tmp_path / "cand" / "tilelang"
    for i in range(12):
        for j in range(12):  # 156 folders, 3 levels
            (cache / f"d{i}" / f"e{j}" / "f").mkdir(parents=True)
    (cache / "d0" / "e0" / "f" / "device_kernel.cu").write_text("__global__")
    store = tmp_path / "build" / "tilelang-own" / "src"
    jit_cache.keep_own_jit_cache(cache, store, TILELANG_KEEP)
    assert not store.exists()
    walked = []
    real_open = os.open
    monkeypatch.setattr(jit_cache.os, "open", lambda *a, **k: walked.append(a[0]) or real_open(*a, **k))
    assert jit_cache.count_kernels(cache, ("device_kernel.cu",)) <= 1 and len(walked) <= 51


def test_a_kept_cache_holds_only_the_languages_own_artefacts(tmp_path, monkeypatch):
    """What a candidate leaves in its JIT cache beside its kernels (a counter to read back at its next evaluation, a
    module, a library that is not one) is not kept: only files of the language's kinds whose content is that kind."""
    from cudaforge.eval import jit_cache
    from cudaforge.eval.jit_cache import keep_own_jit_cache

    monkeypatch.setattr(jit_cache, "JIT_FILE_MAX", 1 << 20)
    cache = tmp_path / "cand" / "triton"
    (cache / "K").mkdir(parents=True)
    (cache / "K" / "k.cubin").write_bytes(b"\x7fELF" + bytes(64))
    (cache / "K" / "k.json").write_text('{"name": "k"}')
    (cache / "K" / "k.ptx").write_text(".version 8.0\n.target sm_90\n")
    (cache / "K" / "state.ptx").write_text("counter=3")  # named like PTX, is not
    (cache / "K" / "list.json").write_text("[3]")  # Triton's metadata is an object
    (cache / "K" / "counter.txt").write_text("3")  # not a Triton artefact
    (cache / "K" / "evil.json").write_text("not json")
    (cache / "K" / "fake.so").write_bytes(b"#!/bin/sh\n")  # not an ELF object
    (cache / "K" / "huge.cubin").write_bytes(b"\x7fELF" + bytes(1 << 20))
    (cache / "K" / "helper.py").write_text("import torch")
    store = tmp_path / "store"
    keep_own_jit_cache(cache, store, TRITON_KEEP)
    assert sorted(p.name for p in store.rglob("*") if p.is_file()) == ["k.cubin", "k.json", "k.ptx"]
    keep_own_jit_cache(cache, tmp_path / "none", ())
    assert not (tmp_path / "none").exists()  # a language that names nothing to keep keeps nothing


def test_tilelang_kernels_are_counted_three_levels_down_by_their_marks(tmp_path):
    from cudaforge import languages
    from cudaforge.eval.jit_cache import count_kernels

    cache = tmp_path / "tilelang"
    for key in ("a1", "b2"):
        entry = cache / "0.1.15" / "linux-x86_64" / "kernels" / key
        entry.mkdir(parents=True)
        (entry / "device_kernel.cu").write_text("__global__ void k() {}")
    (cache / "0.1.15" / "cuda-binaries" / "c3").mkdir(parents=True)
    (cache / "0.1.15" / "cuda-binaries" / "c3" / "kernel.cubin").write_bytes(b"\x7fELF")  # shared by both
    assert count_kernels(cache, languages.get("tilelang").jit_kernel_marks) == 2
    assert count_kernels(cache) == 1  # Triton's marks: the one cubin folder


def test_only_the_trusted_sides_driver_stubs_are_seeded_into_a_worker(tmp_path):
    """The verifier's own Triton cache gives each worker its host-compiled stubs (no gcc at the first launch), never
    a kernel folder, a link or a folder with anything else in it."""
    from cudaforge.eval.jit_cache import seed_trusted_stubs

    trusted = tmp_path / "trusted"
    for folder, name in (
        ("UTILS", "cuda_utils.cpython-312-x86_64-linux-gnu.so"),
        ("LAUNCH", "__triton_launcher.so"),
        ("KERNEL", "count_not_close.cubin"),
        ("MIXED", "cuda_utils.so"),
    ):
        (trusted / folder).mkdir(parents=True)
        (trusted / folder / name).write_bytes(b"x")
    (trusted / "MIXED" / "extra.txt").write_text("y")
    (trusted / "LINKED").mkdir()
    (trusted / "LINKED" / "cuda_utils.so").symlink_to(tmp_path / "elsewhere.so")
    scratch = tmp_path / "scratch" / "triton"
    assert seed_trusted_stubs(str(trusted), scratch) == 2
    assert sorted(p.name for p in scratch.iterdir()) == ["LAUNCH", "UTILS"]
    assert seed_trusted_stubs(None, scratch) == 0 and seed_trusted_stubs(str(tmp_path / "none"), scratch) == 0


def test_seeding_never_rewrites_a_file_the_worker_already_has(tmp_path):
    """A standby worker loads the driver stub it built while warming up; the kept cache of its source holds the same
    file name: rewriting it in place under the loaded library crashed the worker (SIGSEGV on an H200)."""
    from cudaforge.eval.jit_cache import seed_own_jit_cache

    store, scratch = tmp_path / "store", tmp_path / "scratch" / "triton"
    (store / "STUB").mkdir(parents=True)
    (store / "STUB" / "cuda_utils.so").write_bytes(b"kept")
    (scratch / "STUB").mkdir(parents=True)
    (scratch / "STUB" / "cuda_utils.so").write_bytes(b"loaded")
    inode = (scratch / "STUB" / "cuda_utils.so").stat().st_ino
    seed_own_jit_cache(store, scratch)
    assert (scratch / "STUB" / "cuda_utils.so").read_bytes() == b"loaded"
    assert (scratch / "STUB" / "cuda_utils.so").stat().st_ino == inode


def test_the_exchange_path_is_measured_with_our_stand_in_before_the_candidate_is_loaded():
    """``exchange`` runs the cross-check's batch path with unwritten tensors shaped like the outputs it is given (the
    path's own cost, set beside the candidate's batch on a GPU); once a candidate is loaded the worker refuses it."""
    import torch

    from cudaforge.eval.worker.candidate_worker import Worker, _Fail
    from cudaforge.eval.worker.exchange import decode, encode, host_arena

    arena = host_arena(1 << 20)
    worker = Worker(channel=None, device=torch.device("cpu"))
    worker.op_arena({"kind": "host", "size": arena.size}, [os.dup(arena.fd)])
    arena.reset()
    shaped = encode([(torch.ones(3, 5), torch.zeros(7, dtype=torch.int64))], arena.put)
    calls = [encode([torch.randn(4)], arena.put) for _ in range(2)]
    reply = worker.op_exchange({"inputs": calls, "outputs": shaped, "out_offset": 1 << 19}, [])
    outs = [decode(enc, lambda desc: arena.view(desc).clone()) for enc in reply["outputs"]]
    assert [[tuple(t.shape) for t in out] for out in outs] == [[(3, 5), (7,)]] * 2
    assert outs[0][1].dtype == torch.int64
    worker.module = object()  # a candidate is loaded: the path can no longer be measured honestly
    with pytest.raises(_Fail, match="before the candidate is loaded"):
        worker.op_exchange({"inputs": calls, "outputs": shaped, "out_offset": 1 << 19}, [])


def test_the_worker_freezes_what_lives_before_the_timed_calls():
    """Before the main series (``trace`` ``start``), the worker moves every object alive into the collector's
    permanent generation (``gc.freeze``), so no collection inside a timed call walks torch and the model (a full
    collection with torch imported takes tens of milliseconds); on the CPU too, where nothing is traced."""
    import gc

    import torch

    from cudaforge.eval.worker.candidate_worker import Worker

    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        reply = Worker(channel=None, device=torch.device("cpu")).op_trace({"action": "start"}, [])
        assert reply["traced"] is False
        assert gc.get_freeze_count() > 10_000  # torch's own objects among them
    finally:
        gc.unfreeze()


def test_the_trusted_side_is_profiled_when_a_folder_is_named(tiny, tmp_path, monkeypatch):
    """``CUDAFORGE_PROFILE_DIR`` (eval_bench --profile): each evaluation's verifier writes a cProfile dump there."""
    import pstats

    from cudaforge.eval.verifier import PROFILE_DIR_ENV

    monkeypatch.setenv(PROFILE_DIR_ENV, str(tmp_path / "prof"))
    evaluator = Evaluator(
        {
            "device": "cpu",
            "correctness_trials": 1,
            "guards_enforce": False,
            "standby_workers": False,
            "build_cache_dir": str(tmp_path / "build"),
        }
    )
    result = evaluator.evaluate(tiny["ReLU"], relu_candidate("return torch.relu(x)"))
    assert result.status is EvalStatus.CORRECT, result.message
    dumps = list((tmp_path / "prof").glob("verifier-*.prof"))
    assert len(dumps) == 1
    functions = {name for (_file, _line, name) in pstats.Stats(str(dumps[0])).stats}
    assert "_evaluate" in functions
    # the overhead's account: the parent's static phase (a child process of its own), the verifier's own seconds,
    # its tail (the worker's end), and the rest the hand-over
    own, static = result.fingerprint["verifier_s"], result.phases[0]
    assert static.phase is Phase.STATIC and 0 <= own["tail"] <= own["total"] < result.seconds
    assert own["handover_and_exit"] == pytest.approx(result.seconds - own["total"] - static.seconds, abs=0.2)


SUBFOLDER_CPP = r"""#include <Python.h>
#include "inc/value.h"
#define CF_STR2(x) #x
#define CF_STR(x) CF_STR2(x)
#define CF_CAT2(a, b) a##b
#define CF_CAT(a, b) CF_CAT2(a, b)
static PyObject* value(PyObject*, PyObject*) { return PyLong_FromLong(CF_VALUE); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, CF_STR(TORCH_EXTENSION_NAME), NULL, -1, methods};
PyMODINIT_FUNC CF_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&def); }
"""

SUBFOLDER_LOAD = f"""
import os
import tempfile
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load

CPP = {SUBFOLDER_CPP!r}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        folder = tempfile.mkdtemp()
        os.makedirs(os.path.join(folder, "inc"))
        for name, text in (("mod.cpp", CPP), ("inc/value.h", "#define CF_VALUE 0\\n")):
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        self.zero = load(name="sub_ext", sources=[os.path.join(folder, "mod.cpp")]).value()

    def forward(self, x):
        return torch.relu(x) + self.zero
"""


def test_a_load_whose_header_sits_in_a_subfolder_builds_in_the_sandbox(evaluator, tiny):
    """A quoted include of a file that the headers beside the sources do not carry (here in a subfolder) keeps the
    sources' folder an include path, as torch's own build has it (red team: it had stopped building)."""
    result = evaluator.evaluate(tiny["ReLU"], SUBFOLDER_LOAD)
    assert result.status is EvalStatus.CORRECT, result.message
    assert result.fingerprint.get("builds_after_compile", {}).get("count") == 1


def test_a_correctness_call_waits_for_the_poison_before_the_candidate_runs():
    """The worker's correctness call (``op_call``) poisons free memory, then syncs the device, then calls the
    candidate: a kernel the candidate puts on a stream of its own, waiting for nothing, cannot race the poison's fill
    (on an H100 such a kernel's outputs were overwritten by the fill still running on the current stream)."""
    import torch

    from cudaforge.eval.worker.candidate_worker import Worker

    order: list[str] = []
    worker = Worker(channel=None, device=torch.device("cuda", 0))  # type: ignore[arg-type]
    worker.inputs = lambda encoded: ([torch.ones(3)], [])  # type: ignore[method-assign]
    worker._poison = lambda sizes: order.append(f"poison {sizes}")  # type: ignore[method-assign]
    worker.sync = lambda: order.append("sync")  # type: ignore[method-assign]
    worker.forward = lambda args, what: order.append("forward") or args[0]  # type: ignore[method-assign]
    worker.outputs = lambda out, offset: order.append("outputs") or {}  # type: ignore[method-assign]
    worker.facts = lambda out: []  # type: ignore[method-assign]
    reply = worker.op_call({"inputs": [], "poison": [64], "out_offset": 0}, [])
    assert reply["ok"] is True
    assert order[:3] == ["poison [64]", "sync", "forward"], order


def test_poison_memory_false_is_honoured_on_the_cpu(evaluator, tiny):
    """Issue 54: on the CPU glibc poisoned every new allocation even with ``eval.poison_memory=false``."""
    sees_poison = relu_candidate(
        "fresh = torch.empty(4096, dtype=torch.uint8)\n"
        "        if bool((fresh == 0x7F).all()):\n"
        "            raise RuntimeError('a fresh allocation holds the poison')\n"
        "        return torch.relu(x)"
    )
    poisoned = evaluator.evaluate(tiny["ReLU"], sees_poison)
    assert poisoned.status is EvalStatus.RUNTIME_ERROR and "holds the poison" in poisoned.message
    plain = Evaluator({**evaluator.cfg.to_dict(), "poison_memory": False, "hidden_inputs": []})
    result = plain.evaluate(tiny["ReLU"], sees_poison)
    assert result.status is EvalStatus.CORRECT, result.report()
