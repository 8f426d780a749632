"""A lost GPU is the machine's failure, never the kernel's: no verdict, the task stops unfinished, a resume runs it."""

from __future__ import annotations

import dataclasses
import json
import sys
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


@pytest.mark.slow
def test_a_lost_gpu_stops_the_run_and_the_resume_finishes_the_task(monkeypatch, tmp_path):
    from cudaforge.config import CudaforgeConfig
    from cudaforge.run.demo import install_demo
    from cudaforge.run.runner import RunAborted, make_context, run_suite
    from cudaforge.tasks import find_task, selection
    from cudaforge.track.store import RunDir
    from cudaforge.types import GpuUnavailable

    install_demo()
    cfg = CudaforgeConfig()
    cfg.strategy.max_rounds = 2
    cfg.profile.enabled = False
    task = find_task(selection("tiny"), "level1/1_ReLU")
    ctx = make_context(cfg, tmp_path / "run")

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
