"""A lost GPU is the machine's failure, never the kernel's: no verdict, the task stops unfinished, a resume runs it."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import types

import pytest
from conftest import REPO


def test_device_lost_asks_nvml(monkeypatch):
    from cudaforge.vendors.nvidia import device_lost

    class GpuIsLost(Exception):
        pass

    state = {"lost": False}

    def memory(handle):
        if state["lost"]:
            raise GpuIsLost("GPU is lost")
        return object()

    fake = types.SimpleNamespace(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetHandleByUUID=lambda u: u,
        nvmlDeviceGetMemoryInfo=memory,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert device_lost("0") is None
    state["lost"] = True
    assert device_lost("0") == "NVML: GpuIsLost: GPU is lost"

    class NVMLError_LibraryNotFound(Exception):  # noqa: N801 - pynvml's own names
        pass

    class NVMLError_DriverNotLoaded(Exception):  # noqa: N801
        pass

    for error, said in ((NVMLError_LibraryNotFound, None), (NVMLError_DriverNotLoaded, "NVML does not start any more")):

        def init(error=error):
            raise error("NVML")

        monkeypatch.setattr(fake, "nvmlInit", init)
        got = device_lost("0")  # no NVML here at all: nothing can tell; a driver gone mid-run: lost
        assert got is None if said is None else got.startswith(said)


def _lost_gpu_evaluator(monkeypatch, tmp_path, lost: str | None):
    """The real evaluator, told it has GPU 0, whose worker comes back crashed (as when the GPU falls off the bus)."""
    from cudaforge.eval import evaluator as module
    from cudaforge.proc.isolation import IsolatedOutcome
    from cudaforge.vendors.nvidia import NVIDIA

    ev = module.Evaluator({"build_cache_dir": str(tmp_path / "cache")}, gpus=["0"], interrupted_dir=tmp_path / "int")
    monkeypatch.setattr(
        ev,
        "_worker",
        lambda payload, gpu, env: IsolatedOutcome(
            status="crashed", error="the worker died (signal 9)", phase="correctness"
        ),
    )
    monkeypatch.setattr(module.vendors, "current", lambda: dataclasses.replace(NVIDIA, device_lost=lambda gpu: lost))
    return ev


def test_a_crash_on_a_lost_gpu_is_no_verdict(monkeypatch, tmp_path):
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus, GpuUnavailable

    task = find_task(selection("tiny"), "level1/1_ReLU")
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    answering = _lost_gpu_evaluator(monkeypatch, tmp_path, None)
    assert answering.evaluate(task, source).status is EvalStatus.CRASHED  # the GPU answers: the kernel's crash
    lost = _lost_gpu_evaluator(monkeypatch, tmp_path, "NVML: GpuIsLost")
    with pytest.raises(GpuUnavailable, match="GPU 0 stopped answering .* not the kernel's"):
        lost.evaluate(task, source)
    # the attempt is counted like an evaluation that died: a candidate that keeps taking the GPU down is crashed
    # after INTERRUPTED_ATTEMPTS resumes, never not-run for ever
    from cudaforge.eval.evaluator import INTERRUPTED_ATTEMPTS

    for _ in range(INTERRUPTED_ATTEMPTS - 1):
        with pytest.raises(GpuUnavailable):
            lost.evaluate(task, source)
    assert lost.evaluate(task, source).status is EvalStatus.CRASHED


def _demo_relu(tmp_path):
    """The offline demo's config (2 rounds, no profile), tiny ReLU, and a run context in ``tmp_path/run``."""
    from cudaforge.config import CudaforgeConfig
    from cudaforge.run.demo import install_demo
    from cudaforge.run.runner import make_context
    from cudaforge.tasks import find_task, selection

    install_demo()
    cfg = CudaforgeConfig()
    cfg.strategy.max_rounds = 2
    cfg.profile.enabled = False
    cfg.eval.held_out_shapes = False  # after the loop, never on a lost GPU's path (tests/test_held_out.py has them)
    return cfg, find_task(selection("tiny"), "level1/1_ReLU"), make_context(cfg, tmp_path / "run")


@pytest.mark.slow
def test_a_lost_gpu_stops_the_run_and_the_resume_finishes_the_task(monkeypatch, tmp_path):
    from cudaforge.run.runner import RunAborted, make_context, run_suite
    from cudaforge.track.store import RunDir
    from cudaforge.types import GpuUnavailable

    cfg, task, ctx = _demo_relu(tmp_path)

    def lost(*args, **kwargs):
        raise GpuUnavailable("GPU 0 stopped answering during the evaluation of tiny/level1/1_ReLU (NVML: GpuIsLost)")

    monkeypatch.setattr(ctx.evaluator, "_evaluate", lost)
    with pytest.raises(RunAborted, match="run stopped: GPU 0 stopped answering"):
        run_suite(ctx, [task])
    run = RunDir(tmp_path / "run")
    assert run.results() == [] and run.not_run()[task.id]["reason"] == "gpu_unavailable"
    paid = [row for row in run.ledger() if not row["cache_hit"]]
    ctx.store.release()
    monkeypatch.undo()
    ctx = make_context(cfg, tmp_path / "run")  # the resume, on a GPU (here: the CPU) that answers
    results = run_suite(ctx, [task])
    assert [r.task_id for r in results] == [task.id] and results[0].correct
    assert run.not_run() == {}
    calls = [(r["meta"]["round"], r["role"]) for r in run.ledger() if not r["cache_hit"]]
    assert paid and calls[: len(paid)] == [(r["meta"]["round"], r["role"]) for r in paid]
    assert len(set(calls)) == len(calls)  # the resume asked nothing twice: round 1's Coder step was not redone
    rounds = [json.loads(line)["rounds"] for line in run.results_path.read_text().splitlines()]
    assert rounds == [results[0].rounds]


def _break_the_coder(monkeypatch, broken: set[str], error: Exception | None = None) -> list[str]:
    """The Coder's first step raises ``error`` (KeyError, as a bug in a prompt would) for the tasks in ``broken``;
    returns the list of task ids whose first step was asked for."""
    from cudaforge.agents.coder import Coder

    real = Coder.first_attempt
    asked: list[str] = []

    def first_attempt(self, task, **kwargs):
        asked.append(task.id)
        if task.id in broken:
            raise error or KeyError("'fields'")
        return real(self, task, **kwargs)

    monkeypatch.setattr(Coder, "first_attempt", first_attempt)
    return asked


def _tiny_run_config():
    from cudaforge.config import CudaforgeConfig
    from cudaforge.run.demo import install_demo

    install_demo()
    cfg = CudaforgeConfig()
    cfg.strategy.max_rounds = 1
    cfg.profile.enabled = False
    cfg.eval.held_out_shapes = False  # after the loop, outside what these tests break (tests/test_held_out.py)
    return cfg


def test_internal_errors_in_a_row_stop_the_run_with_each_task_unfinished(monkeypatch, tmp_path):
    """Every task fails the same way in cudaforge's own code: after three in a row the run stops (no task is scored,
    none is a failed kernel), each with its row in `not_run.jsonl` and its traceback beside it."""
    from cudaforge.run.runner import INTERNAL_ERRORS_IN_A_ROW, RunAborted, make_context, run_suite
    from cudaforge.tasks import load_suite, selection
    from cudaforge.track.store import INTERNAL_ERROR_FILE, RunDir

    tasks = load_suite(selection("tiny"))
    assert len(tasks) == INTERNAL_ERRORS_IN_A_ROW == 3
    _break_the_coder(monkeypatch, {t.id for t in tasks})
    cfg = _tiny_run_config()
    cfg.concurrency = 2  # two tasks at a time: the count is kept across threads
    ctx = make_context(cfg, tmp_path / "run")
    events = []
    with pytest.raises(RunAborted, match="3 tasks in a row ended on an internal error of cudaforge, not of their"):
        run_suite(ctx, tasks, on_event=events.append)
    ctx.store.release()
    run = RunDir(tmp_path / "run")
    assert run.results() == [] and sorted(run.not_run()) == sorted(t.id for t in tasks)
    for t in tasks:
        row = run.not_run()[t.id]
        assert row["reason"] == "internal_error" and "(KeyError: \"'fields'\")" in row["message"], row
        trace = (run.task(t.id).root / INTERNAL_ERROR_FILE).read_text()
        assert trace.startswith("Traceback") and "first_attempt" in trace and "\nKeyError: \"'fields'\"\n" in trace
    assert [e["reason"] for e in events if e["event"] == "not_run"] == ["internal_error"] * 3


def test_what_ends_a_run_at_once_is_no_internal_error(monkeypatch, tmp_path):
    """A user's template that does not render stops the run with its own message, as before, and a record of an
    internal error that cannot be written (a full disk) stops it too: no task starts after either."""
    from cudaforge.agents.templates import PromptTemplateError
    from cudaforge.run import runner
    from cudaforge.tasks import load_suite, selection
    from cudaforge.track.store import RunDir

    tasks = load_suite(selection("tiny"))
    asked = _break_the_coder(
        monkeypatch, {t.id for t in tasks}, PromptTemplateError("template coder/first_attempt: 'x' is undefined")
    )
    ctx = runner.make_context(_tiny_run_config(), tmp_path / "run")
    with pytest.raises(PromptTemplateError, match="'x' is undefined"):
        runner.run_suite(ctx, tasks)
    ctx.store.release()
    assert asked == [tasks[0].id] and RunDir(tmp_path / "run").not_run() == {}

    monkeypatch.undo()
    asked = _break_the_coder(monkeypatch, {t.id for t in tasks})

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "internal_error", full_disk)
    ctx = runner.make_context(_tiny_run_config(), tmp_path / "again")
    with pytest.raises(OSError, match="No space left"):
        runner.run_suite(ctx, tasks)
    for thread in threading.enumerate():  # the pool's worker, had it gone on to the next tasks
        if thread.name.startswith("ThreadPoolExecutor"):
            thread.join(timeout=60)
    ctx.store.release()
    assert asked == [tasks[0].id]


@pytest.mark.slow
def test_an_internal_error_stops_its_task_unfinished_and_the_others_go_on(monkeypatch, tmp_path):
    """An exception of cudaforge's own code in one task is neither a failed kernel nor the end of the run: that task
    has no result and `not_run.jsonl` says why, the other tasks finish, and the resume, once the bug is gone, runs
    it (41 s on the 2-core dev machine: slow)."""
    from cudaforge.run import runner
    from cudaforge.run.runner import make_context, not_run_lines, run_suite
    from cudaforge.tasks import load_suite, selection
    from cudaforge.track.store import RunDir

    tasks = load_suite(selection("tiny"))
    broken = {tasks[0].id, tasks[2].id}
    _break_the_coder(monkeypatch, broken)
    monkeypatch.setattr(runner, "INTERNAL_ERRORS_IN_A_ROW", 2)  # a finished task between two errors resets the count
    cfg = _tiny_run_config()
    ctx = make_context(cfg, tmp_path / "run")
    results = run_suite(ctx, tasks)
    assert [r.task_id for r in results] == [tasks[1].id]  # the other finished, and the run went on past it
    run = RunDir(tmp_path / "run")
    assert sorted(run.not_run()) == sorted(broken)
    rows = run.not_run()
    assert all(r["reason"] == "internal_error" and "not of its kernels" in r["message"] for r in rows.values())
    assert not_run_lines(ctx.store, tasks) == [
        f"{t}: not run (internal_error): {rows[t]['message'][:300]}" for t in (tasks[0].id, tasks[2].id)
    ]
    ctx.store.release()

    broken.clear()  # the bug fixed: the same run directory resumes and finishes the task
    ctx = make_context(cfg, tmp_path / "run")
    results = run_suite(ctx, tasks)
    assert [r.task_id for r in results] == [t.id for t in tasks] and run.not_run() == {}
    ctx.store.release()


def test_a_sandbox_that_cannot_be_built_mid_run_leaves_the_task_not_run(monkeypatch, tmp_path):
    """Issue 53: the pre-flight found the wall, then an evaluation's worker could not get it (a namespace limit hit,
    a kernel feature gone): the evaluator has no verdict (SandboxUnavailable, not `unsupported`), the task is not run
    (reason sandbox_unavailable) and the run stops, as for a lost GPU."""
    from cudaforge.eval.worker.remote import WALL_MISSING
    from cudaforge.proc.isolation import IsolatedOutcome
    from cudaforge.run.runner import RunAborted, run_suite
    from cudaforge.track.store import RunDir
    from cudaforge.types import EvalResult, EvalStatus

    _, task, ctx = _demo_relu(tmp_path)
    said = f"eval.sandbox=auto without eval.allow_weak_sandbox=true, and {WALL_MISSING}: landlock: not in this kernel"
    marked = {"sandbox_missing": True}  # what the verifier marks from the sandbox's own status, never from a reply

    def walls_gone(payload, gpu, env):  # what the verifier returns when its worker finds no wall
        result = EvalResult(
            task_id=task.id, candidate_hash="h", status=EvalStatus.UNSUPPORTED, message=said, fingerprint=dict(marked)
        )
        return IsolatedOutcome(status="ok", result=result.to_dict())

    # a candidate that only says the words (a forged worker reply: status unsupported, this message) gets its verdict
    monkeypatch.setattr(ctx.evaluator, "_worker", walls_gone)
    marked.clear()
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    assert ctx.evaluator.evaluate(task, source).status is EvalStatus.UNSUPPORTED
    marked["sandbox_missing"] = True
    with pytest.raises(RunAborted, match="run stopped: the sandbox could not be built for the evaluation of"):
        run_suite(ctx, [task])
    run = RunDir(tmp_path / "run")
    assert run.results() == []
    row = run.not_run()[task.id]
    assert row["reason"] == "sandbox_unavailable" and "landlock: not in this kernel" in row["message"]
    ctx.store.release()
