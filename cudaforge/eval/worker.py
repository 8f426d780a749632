"""The isolated side of an evaluation: compile, check and time one candidate in this process.

Runs only inside a child started by ``cudaforge.isolation.run_isolated`` (entry
``cudaforge.eval.worker:evaluate``), pinned to one GPU or to none. The parent gets a plain
``EvalResult`` dict back; whatever the candidate does to this process (hang, segfault,
illegal memory access) is the parent's to observe, never to suffer.

Order of work (docs/evaluation.md states it as the protocol):
1. compile: import the candidate as a fresh module under the build hooks (load_inline
   builds into the hash-keyed cache); the reference module is not loaded yet and lives in
   another namespace.
2. correctness: reference and candidate models built with the same seed (the reference's
   state dict copied into the candidate where names and shapes match); for each trial,
   fresh seeded inputs, the candidate runs first on its own copy, then the reference;
   outputs compared with the task's or the dtype's tolerances; then each declared input
   variant once.
3. timing (GPU only): interleaved reference/candidate calls over rotating input sets with
   the L2 flushed, every candidate output checked against the reference's for the same
   inputs; medians and bootstrap intervals; NVML state before and after.
"""

from __future__ import annotations

import os
import time
import traceback
from typing import Any, Callable

import torch

from cudaforge.eval.correctness import compare
from cudaforge.tasks.runtime import (
    DEFAULT_VARIANT,
    build_model,
    default_tolerance,
    flatten_outputs,
    load_module,
    make_inputs,
    strict_fp32,
)
from cudaforge.types import EvalResult, EvalStatus, Phase, PhaseRecord, Task, source_hash

CANDIDATE_MODULE_PREFIX = "cudaforge_candidate_"
REFERENCE_MODULE = "cudaforge_reference"
MAX_TIMING_INPUT_SETS = 2
TIMING_POOL_BYTES = 4 << 30  # rotate input sets only while they fit in this many bytes


class _Failure(Exception):
    """Ends the evaluation with a status and a message for the Judge."""

    def __init__(self, status: EvalStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _candidate_traceback(exc: BaseException, module_name: str) -> str:
    """The exception with only the frames of the candidate's own code (plus the last one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename == f"<{module_name}>"]
    keep = own + ([frames[-1]] if frames and (not own or own[-1] is not frames[-1]) else [])
    lines = [f"  line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in keep if f.filename == f"<{module_name}>"]
    if keep and keep[-1].filename != f"<{module_name}>":
        lines.append(f"  in {os.path.basename(keep[-1].filename)}:{keep[-1].lineno} ({keep[-1].name})")
    text = f"{type(exc).__name__}: {exc}".strip()
    return "\n".join([text[:2000], *lines[-6:]])


def _is_triton_compile_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("triton") and "Compil" in type(exc).__name__


class _Recorder:
    """Phase records with their durations."""

    def __init__(self, progress: Callable[[str], None]) -> None:
        self.progress = progress
        self.phases: list[PhaseRecord] = []

    def start(self, phase: Phase) -> float:
        self.progress(phase.value)
        return time.perf_counter()

    def end(self, phase: Phase, started: float, status: str = "ok", message: str = "") -> None:
        self.phases.append(PhaseRecord(phase, status, time.perf_counter() - started, message))


def _copy_matching_state(reference: torch.nn.Module, candidate: Any) -> int:
    """Copy the reference's parameters and buffers into the candidate where names and shapes match."""
    if not isinstance(candidate, torch.nn.Module):
        return 0
    ref_state = reference.state_dict()
    cand_state = candidate.state_dict()
    matching = {k: v for k, v in ref_state.items() if k in cand_state and cand_state[k].shape == v.shape}
    if matching:
        candidate.load_state_dict(matching, strict=False)
    return len(matching)


def _clone(inputs: list[Any]) -> list[Any]:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _tolerance(task: Task, output: Any, cfg: dict[str, Any]) -> tuple[float, float]:
    tensors = [t for t in flatten_outputs(output) if isinstance(t, torch.Tensor)]
    dtype = tensors[0].dtype if tensors else torch.float32
    atol, rtol = default_tolerance(dtype, cfg["atol_fp32"], cfg["rtol_fp32"], cfg["atol_half"], cfg["rtol_half"])
    return (task.atol if task.atol is not None else atol, task.rtol if task.rtol is not None else rtol)


def _call(model: Any, inputs: list[Any], module_name: str, what: str) -> Any:
    try:
        with torch.no_grad():
            return model(*inputs)
    except Exception as exc:  # noqa: BLE001 - a candidate's exception is a verdict, not our crash
        status = EvalStatus.COMPILE_ERROR if _is_triton_compile_error(exc) else EvalStatus.RUNTIME_ERROR
        raise _Failure(status, f"{what} raised\n{_candidate_traceback(exc, module_name)}") from None


def _import_candidate(source: str, module_name: str, build: dict[str, Any], result: EvalResult) -> Any:
    from cudaforge.eval.build import BuildError, BuildSettings, ModuleNotLoadable, ToolchainIncomplete, build_hooks

    with build_hooks(BuildSettings.from_dict(build)) as recorder:
        try:
            return load_module(source, module_name)
        except ToolchainIncomplete as exc:
            raise _Failure(EvalStatus.UNSUPPORTED, f"this machine cannot build the candidate: {exc}") from None
        except ModuleNotLoadable as exc:
            raise _Failure(EvalStatus.COMPILED, f"the CUDA sources compiled; {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the candidate's import failing is a verdict
            if isinstance(exc, BuildError) or recorder.failed:
                result.compile_log_trimmed = recorder.log_trimmed
                raise _Failure(
                    EvalStatus.COMPILE_ERROR, "the CUDA source did not compile:\n" + recorder.log_trimmed
                ) from None
            raise _Failure(
                EvalStatus.RUNTIME_ERROR, "importing the candidate raised\n" + _candidate_traceback(exc, module_name)
            ) from None
        finally:
            result.compile_log = recorder.log
            result.compile_cached = recorder.cached


def _correctness(task, ref_module, cand_module, device, cfg, cand_name, result: EvalResult):
    init = list(ref_module.get_init_inputs())
    ref_model = build_model(ref_module.Model, init, cfg["seed"], device)
    try:
        cand_model = build_model(cand_module.ModelNew, init, cfg["seed"], device)
    except Exception as exc:  # noqa: BLE001
        raise _Failure(EvalStatus.RUNTIME_ERROR, "ModelNew(*get_init_inputs()) raised\n" + _candidate_traceback(exc, cand_name)) from None
    _copy_matching_state(ref_model, cand_model)
    plan = [(DEFAULT_VARIANT, t) for t in range(cfg["correctness_trials"])]
    if cfg["check_variants"]:
        plan += [(v, len(plan) + i) for i, v in enumerate(task.input_variants)]
    result.trials_total = len(plan)
    for variant, trial in plan:
        inputs = make_inputs(ref_module, seed=cfg["seed"] * 1000 + trial, variant=variant, device=device)
        cand_out = _call(cand_model, _clone(inputs), cand_name, f"ModelNew.forward (trial {trial}, {variant} inputs)")
        _sync(device)
        ref_out = _call(ref_model, inputs, REFERENCE_MODULE, "the reference")
        _sync(device)
        atol, rtol = _tolerance(task, ref_out, cfg)
        diff = compare(ref_out, cand_out, atol=atol, rtol=rtol, trial=trial, variant=variant)
        if diff is not None:
            result.diff = diff
            raise _Failure(EvalStatus.INCORRECT, "output mismatch\n" + diff.summary())
        result.trials_passed += 1
    return ref_model, cand_model


def _timing(ref_module, ref_model, cand_model, device, cfg, cand_name, task, result: EvalResult) -> None:
    from cudaforge.eval.fingerprint import gpu_state
    from cudaforge.eval.timing import time_interleaved
    from cudaforge.hardware.gpu_lock import gpu_lock
    from cudaforge.hardware.roofline import make_roofline, task_cost
    from cudaforge.hardware.specs import peak_rates

    sets = []
    for k in range(MAX_TIMING_INPUT_SETS):
        inputs = make_inputs(ref_module, seed=cfg["seed"] * 7919 + k, device=device)
        sets.append(inputs)
        size = sum(x.numel() * x.element_size() for x in inputs if isinstance(x, torch.Tensor))
        if size * (k + 2) > TIMING_POOL_BYTES:
            break
    with torch.no_grad():
        expected = [ref_model(*_clone(s)) for s in sets]
    atol, rtol = _tolerance(task, expected[0], cfg)
    reference_fn = ref_model
    if cfg["baseline"] == "compile":
        reference_fn = torch.compile(ref_model, mode=cfg["compile_mode"])
    mismatch: list[str] = []

    def check(role: str, trial: int, args: Any, output: Any) -> None:
        if role == "candidate" and not mismatch:
            diff = compare(expected[trial % len(sets)], output, atol=atol, rtol=rtol, trial=trial, variant="timing")
            if diff is not None:
                mismatch.append(diff.summary())

    result.fingerprint["gpu_state_before"] = gpu_state(0)
    # profiling never overlaps timing on one GPU: the profiler holds the same lock around ncu
    with gpu_lock(os.environ.get("CUDA_VISIBLE_DEVICES") or "0"), torch.no_grad():
        try:
            times = time_interleaved(
                reference_fn,
                cand_model,
                trials=cfg["timing_trials"],
                warmup=cfg["warmup"],
                flush_l2=cfg["flush_l2"],
                device=device,
                make_args=lambda trial: sets[trial % len(sets)],
                on_output=check,
            )
        except Exception as exc:  # noqa: BLE001
            raise _Failure(EvalStatus.RUNTIME_ERROR, "a timed call raised\n" + _candidate_traceback(exc, cand_name)) from None
    result.fingerprint["gpu_state_after"] = gpu_state(0)
    if mismatch:
        raise _Failure(EvalStatus.INCORRECT, "an output produced during the timed calls was wrong\n" + mismatch[0])
    result.reference_timing = times.reference_stats()
    result.candidate_timing = times.candidate_stats()
    result.speedup = times.speedup(baseline=cfg["baseline"])
    peaks = peak_rates(torch.cuda.get_device_name(device))
    cost = task_cost(ref_module, seed=cfg["seed"])
    result.fingerprint["roofline"] = make_roofline(cost, peaks, result.candidate_timing.median, "evaluator").to_dict()
    result.fingerprint["host_ms_median"] = {
        "reference": sorted(times.reference_host_ms)[len(times.reference_host_ms) // 2],
        "candidate": sorted(times.candidate_host_ms)[len(times.candidate_host_ms) // 2],
    }


def evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Evaluate ``payload = {task, candidate, eval, build, device}``; return an EvalResult dict."""
    from cudaforge.eval.fingerprint import environment_fingerprint

    started = time.perf_counter()
    strict_fp32()
    task = Task.from_dict(payload["task"])
    source, cfg = payload["candidate"], payload["eval"]
    device = torch.device(payload["device"])
    digest = source_hash(source)
    cand_name = CANDIDATE_MODULE_PREFIX + digest
    result = EvalResult(task_id=task.id, candidate_hash=digest, status=EvalStatus.CORRECT, device=str(device))
    result.fingerprint = environment_fingerprint(0 if device.type == "cuda" else None)
    rec = _Recorder(progress)
    phase = Phase.COMPILE
    t = rec.start(phase)
    try:
        cand_module = _import_candidate(source, cand_name, payload["build"], result)
        if not hasattr(cand_module, "ModelNew"):
            raise _Failure(EvalStatus.INVALID, "after import the candidate has no ModelNew")
        rec.end(phase, t, message="cache hit" if result.compile_cached else "")
        phase = Phase.CORRECTNESS
        t = rec.start(phase)
        ref_module = load_module(task.source, REFERENCE_MODULE)
        ref_model, cand_model = _correctness(task, ref_module, cand_module, device, cfg, cand_name, result)
        rec.end(phase, t, message=f"{result.trials_passed}/{result.trials_total} trials passed")
        if device.type != "cuda":
            result.timing_unavailable_reason = "no GPU: correctness was checked on the CPU; timing needs a GPU"
            result.message = f"correct on {result.trials_passed} CPU trials; {result.timing_unavailable_reason}"
        else:
            phase = Phase.TIMING
            t = rec.start(phase)
            _timing(ref_module, ref_model, cand_model, device, cfg, cand_name, task, result)
            rec.end(phase, t)
            s = result.speedup
            result.message = (
                f"correct ({result.trials_passed} trials); candidate {result.candidate_timing.median:.4f} ms vs "
                f"reference {result.reference_timing.median:.4f} ms ({cfg['baseline']}): speedup {s.median:.3f}x "
                f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
            )
    except _Failure as failure:
        result.status, result.message = failure.status, failure.message
        ok = failure.status is EvalStatus.COMPILED
        rec.end(phase, t, status="ok" if ok else "failed", message=failure.message[:500])
    result.phases = rec.phases
    result.seconds = time.perf_counter() - started
    return result.to_dict()
