"""The isolated side of profiling: one forward of the candidate, in a worker the profiler starts.

Entry ``cudaforge.profile.child:profile_forward``, run by ``run_isolated`` (under ``ncu`` for
mode ``ncu``). Phases, announced to the parent for their timeouts:

1. ``compile``: import the candidate under the build hooks (a cache hit after the evaluator
   built it); ``setup``: the task module, the GPU spec sheet, the task's cost on the meta device
   (only when ``want_cost``: the profiler computes it apart, once per task, in a process without the
   candidate), the candidate model and seeded inputs on the GPU, exactly as the evaluator builds them;
2. ``warmup``: ``warmup`` forwards, synchronised, so that compilation, autotuning and lazy
   initialisation are over (ncu does not see them: it starts with profiling off);
3. ``profile``: one forward between ``cudaProfilerStart`` and ``cudaProfilerStop`` (mode
   ``ncu``), or inside torch.profiler (mode ``torch_profiler``, the fallback), or plainly (mode
   ``plain``, the baseline for the profiler's overhead), then ``time_iters`` CUDA-event timings
   of the forward when asked.

The candidate's exceptions come back as ``{"error": ...}``; the parent turns them into a
``ProfileResult`` with status ``error``.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any


def _versions() -> dict[str, Any]:
    import torch

    versions: dict[str, Any] = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "triton": None}
    try:
        import triton

        versions["triton"] = triton.__version__
    except ImportError:
        pass
    return versions


def _import_candidate(source: str, build: dict[str, Any], delivered: dict[str, list[str]] | None = None) -> Any:
    """Import the candidate under the build hooks (``CandidateLoader``, as the evaluation's worker does). In a sandbox
    (``delivered`` given) nothing is built: each ``load_inline`` gets the library the trusted side built before the
    profile, found by its build key."""
    from cudaforge.eval import BuildSettings, CandidateLoader, delivered_builds

    settings = (BuildSettings.from_dict(build) if build else BuildSettings()).resolved()
    loader = CandidateLoader(settings, remote=delivered_builds(settings, delivered) if delivered is not None else None)
    try:
        return loader.load(source)
    finally:
        loader.close()


def _torch_profiler_kernels(forward: Callable[[], Any]) -> list[dict[str, Any]]:
    """Kernels of one forward, as CUPTI (torch.profiler) saw them: name and device time."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    from cudaforge.languages import is_copy_or_fill

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        forward()
        torch.cuda.synchronize()
    kernels = []
    for event in prof.events():
        if event.device_type == DeviceType.CUDA and not is_copy_or_fill(event.name):
            kernels.append({"name": event.name, "duration_ms": event.time_range.elapsed_us() / 1e3})
    return kernels


def _time_forward(forward: Callable[[], Any], iters: int) -> float:
    """Median CUDA-event time of ``iters`` forwards, in ms."""
    import torch

    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        forward()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def profile_forward(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Run ``payload = {task_source, candidate, build, mode, warmup, seed, want_spec, want_cost, time_iters}``;
    returns ``{versions, spec, cost, kernels, forward_ms}`` or, on the candidate's fault, ``{..., error}``."""
    import torch

    from cudaforge.hardware.specs import gpu_spec_sheet
    from cudaforge.tasks.cost import task_cost
    from cudaforge.tasks.runtime import build_model, load_module, make_inputs, strict_fp32

    result: dict[str, Any] = {"versions": _versions(), "spec": None, "cost": None, "kernels": [], "forward_ms": None}
    mode = payload["mode"]
    strict_fp32()
    if not torch.cuda.is_available():
        return {**result, "error": "no GPU visible to the profiling worker"}
    progress("compile")
    try:
        module = _import_candidate(payload["candidate"], payload.get("build") or {}, payload.get("delivered"))
    except Exception as exc:  # noqa: BLE001 - the candidate's fault, reported
        return {**result, "error": f"importing the candidate raised {type(exc).__name__}: {exc}"[:4000]}
    progress("setup")
    device = torch.device("cuda")
    task = load_module(payload["task_source"], "cudaforge_reference")
    if payload.get("want_spec", True):
        result["spec"] = gpu_spec_sheet(0)
    if payload.get("want_cost", True):  # the profiler asks for none: it computes the task's cost apart, once
        result["cost"] = task_cost(task, seed=payload["seed"])
    try:
        model = build_model(module.ModelNew, list(task.get_init_inputs()), payload["seed"], device)
        inputs = make_inputs(task, seed=payload["seed"], device=device)
    except Exception as exc:  # noqa: BLE001
        return {**result, "error": f"building ModelNew or its inputs raised {type(exc).__name__}: {exc}"[:4000]}

    def forward() -> Any:
        with torch.no_grad():
            return model(*inputs)

    try:
        progress("warmup")
        for _ in range(payload["warmup"]):
            forward()
        torch.cuda.synchronize()
        progress("profile")
        if mode == "ncu":
            torch.cuda.profiler.start()
            forward()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
        elif mode == "torch_profiler":
            result["kernels"] = _torch_profiler_kernels(forward)
        else:
            forward()
            torch.cuda.synchronize()
        if payload.get("time_iters"):
            result["forward_ms"] = _time_forward(forward, payload["time_iters"])
    except Exception:  # noqa: BLE001
        return {**result, "error": "ModelNew.forward raised\n" + traceback.format_exc(limit=-3)[-4000:]}
    return result


def spec_entry(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Child entry ``cudaforge.profile.child:spec_entry``: the visible GPU's spec sheet."""
    from cudaforge.hardware.specs import gpu_spec_sheet

    progress("spec")
    return gpu_spec_sheet(0)
