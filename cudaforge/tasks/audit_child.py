"""The isolated side of ``cudaforge tasks audit``: run one reference and look for degeneracy."""

from __future__ import annotations

import gc
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.tasks.audit import ChildSettings
from cudaforge.tasks.runtime import (
    DEFAULT_VARIANT,
    build_model,
    default_tolerance,
    flatten_outputs,
    load_module,
    make_inputs,
    strict_fp32,
)
from cudaforge.types import Task


def _tensors(output: Any) -> list[torch.Tensor]:
    return [t for t in flatten_outputs(output) if isinstance(t, torch.Tensor)]


CHUNK = 1 << 24
"""Elements compared at a time: the checks widen to float64 a chunk at a time, on the device the outputs are on,
so a task with gigabytes of output costs neither a host copy nor a float64 copy of the whole output."""


def _chunks(*tensors: torch.Tensor):
    flat = [t.reshape(-1) for t in tensors]
    for start in range(0, flat[0].numel(), CHUNK):
        yield [f[start : start + CHUNK].double() for f in flat]


def _close(x: torch.Tensor, y: torch.Tensor | float, atol: float, rtol: float) -> bool:
    """``torch.allclose(x, y)`` in float64 (``y`` a tensor of x's shape, or a number compared as
    ``allclose(y, x)``: within ``atol + rtol * |x|``), chunk by chunk."""
    if isinstance(y, torch.Tensor):
        return all(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True) for a, b in _chunks(x, y))
    return all(bool(((a - y).abs() <= atol + rtol * a.abs()).all()) for (a,) in _chunks(x))


def _max_abs_diff(x: torch.Tensor, y: torch.Tensor) -> float:
    return max((float((a - b).abs().max()) for a, b in _chunks(x, y)), default=0.0)


def _same(a: list[torch.Tensor], b: list[torch.Tensor], atol: float, rtol: float) -> bool:
    return len(a) == len(b) and all(x.shape == y.shape and _close(x, y, atol, rtol) for x, y in zip(a, b))


def _finding(check: str, detail: str) -> dict[str, Any]:
    return {"check": check, "detail": detail}


def _degeneracy(outs: list[torch.Tensor], atol: float, rtol: float, label: str) -> list[dict[str, Any]]:
    found = []
    for i, out in enumerate(outs):
        name = f"{label} output {i}" if len(outs) > 1 else f"{label} output"
        if not out.is_floating_point() or out.numel() == 0:
            continue
        if not torch.isfinite(out).all():
            bad = int((~torch.isfinite(out)).sum())
            found.append(_finding("non_finite", f"{name} has {bad} NaN/Inf values"))
            continue
        largest = float(out.abs().max())
        mean = float(sum(float(c.sum()) for (c,) in _chunks(out)) / out.numel())
        if largest * (1 - rtol) <= atol:  # zeros pass where |y| <= atol + rtol * |y| everywhere
            found.append(_finding("near_zero", f"{name}: all zeros would pass (max |y| = {largest:.3g})"))
        elif _close(out, mean, atol, rtol):
            found.append(_finding("near_constant", f"{name}: the constant {mean:.6g} would pass"))
    return found


def _median_ms(fn: Callable[[], Any], repeats: int = 10) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def audit_task(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Audit one task (``payload = {task, config}``); return findings and what was run."""
    task = Task.from_dict(payload["task"])
    cfg = ChildSettings.from_dict(payload["config"])
    progress("load")
    strict_fp32()
    use_cuda = cfg.device in ("auto", "cuda") and torch.cuda.is_available()
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("audit.device=cuda but no GPU is visible")
    device = torch.device("cuda" if use_cuda else "cpu")
    module = load_module(task.source, "cudaforge_audit_reference")
    base = DEFAULT_VARIANT
    if not use_cuda and cfg.cpu_variant in task.input_variants:
        base = cfg.cpu_variant
    init = list(module.get_init_inputs())

    def run(model: torch.nn.Module, seed: int, variant: str = base) -> list[torch.Tensor]:
        with torch.no_grad():
            out = model(*make_inputs(module, seed, variant, device))
        # copies, kept where they are (the checks run on the device): a forward that returns a buffer it reuses
        # must not make two runs look alike
        return [t.detach().clone() for t in _tensors(out)]

    progress("checks")
    with torch.device(device):  # parameters initialised where they will live (seconds on the host for big models)
        model = build_model(module.Model, init, seed=1, device=device)
    first = run(model, seed=11)
    if not first:
        return {
            "device": str(device),
            "variant": base,
            "findings": [_finding("no_tensor_output", "forward returned no tensor")],
        }
    atol, rtol = cfg.atol, cfg.rtol
    if task.atol is not None or task.rtol is not None:
        atol, rtol = task.atol if task.atol is not None else atol, task.rtol if task.rtol is not None else rtol
    elif first[0].dtype in (torch.float16, torch.bfloat16):
        atol, rtol = default_tolerance(first[0].dtype, atol, rtol, 1e-2, 1e-2)
    findings = _degeneracy(first, atol, rtol, base)
    again = run(model, seed=11)
    if not all(torch.equal(a, b) for a, b in zip(first, again)):
        worst = max(_max_abs_diff(a, b) for a, b in zip(first, again))
        within = _same(first, again, atol, rtol)
        finding = _finding(
            "nondeterministic",
            f"two runs on the same inputs differ (max {worst:.3g}, {'within' if within else 'beyond'} the tolerance)",
        )
        findings.append({**finding, "within_tolerance": within})
    if _same(first, run(model, seed=12), atol, rtol):
        findings.append(_finding("input_independent", "outputs for two different input seeds agree"))
    if any(True for _ in model.parameters()):
        with torch.device(device):
            other = build_model(module.Model, init, seed=2, device=device)
        if _same(first, run(other, seed=11), atol, rtol):
            findings.append(_finding("weight_independent", "outputs for two weight seeds agree"))
    checked = [base]
    skipped = []
    for variant in task.input_variants:
        if variant == base:
            continue
        if not use_cuda and variant != cfg.cpu_variant:
            skipped.append(variant)  # full-size variants are left to the GPU audit
            continue
        findings += _degeneracy(run(model, seed=13, variant=variant), atol, rtol, variant)
        checked.append(variant)
    reference_ms = None
    if use_cuda:
        progress("timing")
        inputs = make_inputs(module, 11, device=device)
        with torch.no_grad():
            reference_ms = _median_ms(lambda: model(*inputs))
        if reference_ms < cfg.min_reference_ms:
            findings.append(_finding("too_fast", f"reference takes {reference_ms:.3f} ms < {cfg.min_reference_ms} ms"))
    return {
        "device": torch.cuda.get_device_name(device) if use_cuda else "cpu",
        "variant": base,
        "checked_variants": checked,
        "skipped_variants": skipped,
        "findings": findings,
        "output_shapes": [list(t.shape) for t in first],
        "output_dtypes": [str(t.dtype).replace("torch.", "") for t in first],
        "reference_ms": reference_ms,
        "atol": atol,
        "rtol": rtol,
        "finished_at": time.time(),
    }


def _poisons_the_process(exc: BaseException) -> bool:
    """A CUDA error leaves the context unusable: later tasks in this process would fail for it."""
    text = f"{type(exc).__name__}: {exc}"
    return "CUDA error" in text or "AcceleratorError" in text or "CUBLAS_STATUS" in text or "cuDNN error" in text


def audit_batch(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Audit several tasks in this warm process (``payload = {tasks, config}``), announcing phase ``task:I`` for
    each so that the parent holds each task to its own deadline. A task that raises gets its traceback as its
    result; after a CUDA error the process stops, and the parent runs the tasks not reached in a fresh one."""
    results: list[dict[str, Any]] = []
    for i, task in enumerate(payload["tasks"]):
        progress(f"task:{i}")
        try:
            results.append(audit_task({"task": task, "config": payload["config"]}, lambda _phase: None))
        except Exception as exc:  # noqa: BLE001 - a reference that raises is a finding, not the batch's end
            results.append({"error": traceback.format_exc()})
            if _poisons_the_process(exc):
                break
        finally:
            gc.collect()
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return {"results": results}
