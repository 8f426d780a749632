"""The cost of a task: FLOPs and the fewest bytes one forward of its reference must move.

FLOPs come from torch's ``FlopCounterMode`` over one forward of the reference built on the
``meta`` device: shapes only, no data, so even a level-3 model costs milliseconds and never runs
at full size on a CPU. FlopCounterMode counts matmuls, convolutions and attention; elementwise
ops, reductions and softmax count zero, so such tasks come out memory-bound, as they are. The
fewest bytes are the reference's inputs, outputs, parameters and buffers, each moved once.
``roofline`` puts a cost beside a GPU's peak rates (``cudaforge.hardware.roofline``).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from cudaforge.hardware.roofline import make_roofline
from cudaforge.hardware.specs import peak_rates
from cudaforge.profile_types import Roofline

COST_TIMEOUT_S = 120.0
"""How long the CPU child that computes a task's cost may take."""


def task_cost(module: types.ModuleType, seed: int = 0) -> dict[str, Any]:
    """FLOPs, minimum bytes and dtype of one forward of the task ``module``'s reference (needs torch).

    Returns ``{flops, min_bytes, input_bytes, output_bytes, parameter_bytes, dtype, notes}``;
    on failure (an op without a meta kernel, a model that insists on a device) the numbers are
    None and ``notes`` says why. Never raises for the task's faults.
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from cudaforge.tasks.runtime import flatten_outputs, make_inputs

    cost: dict[str, Any] = {
        "flops": None,
        "min_bytes": None,
        "input_bytes": None,
        "output_bytes": None,
        "parameter_bytes": None,
        "dtype": "",
        "notes": [],
    }
    try:
        inputs = make_inputs(module, seed=seed, device="meta")
        torch.manual_seed(seed)
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
        counter = FlopCounterMode(display=False)
        with counter, torch.no_grad():
            output = model(*inputs)
    except Exception as exc:  # noqa: BLE001 - a task that cannot run on meta gets no roofline, not a crash
        cost["notes"].append(f"the reference does not run on the meta device: {type(exc).__name__}: {exc}"[:500])
        return cost
    tensors_in = [x for x in inputs if isinstance(x, torch.Tensor)]
    tensors_out = [x for x in flatten_outputs(output) if isinstance(x, torch.Tensor)]
    state = list(model.parameters()) + list(model.buffers()) if isinstance(model, torch.nn.Module) else []
    nbytes = lambda ts: sum(t.numel() * t.element_size() for t in ts)  # noqa: E731
    cost.update(
        flops=float(counter.get_total_flops()),
        input_bytes=nbytes(tensors_in),
        output_bytes=nbytes(tensors_out),
        parameter_bytes=nbytes(state),
    )
    cost["min_bytes"] = cost["input_bytes"] + cost["output_bytes"] + cost["parameter_bytes"]
    floats = [t.dtype for t in tensors_in + state + tensors_out if t.is_floating_point()]
    dtypes = floats or [t.dtype for t in tensors_in + tensors_out]
    cost["dtype"] = str(dtypes[0]).replace("torch.", "") if dtypes else ""
    return cost


def cost_entry(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Child entry (``cudaforge.tasks.cost:cost_entry``): the cost of ``payload["task_source"]``."""
    from cudaforge.tasks.runtime import load_module

    progress("cost")
    module = load_module(payload["task_source"], "cudaforge_roofline_task")
    return task_cost(module, seed=payload.get("seed", 0))


def task_cost_isolated(task_source: str, timeout_s: float = COST_TIMEOUT_S) -> dict[str, Any]:
    """:func:`task_cost` of a task source, computed in a CPU-only child process (the parent never
    executes task code). Never raises: a failed child gives None numbers and a note."""
    return task_cost_child(task_source, timeout_s=timeout_s)[0]


def task_cost_child(
    task_source: str, *, seed: int = 0, gpu: str | None = None, timeout_s: float = COST_TIMEOUT_S
) -> tuple[dict[str, Any], bool]:
    """(:func:`task_cost` of a task source computed in a child process, True), or (None numbers and
    a note, False) when the child failed or timed out (worth computing again, unlike a task that
    does not run on ``meta``). ``gpu``: the physical GPU the child may see (None: none); the cost
    runs on ``meta`` either way, but a task that makes its inputs on an explicit device needs it."""
    from cudaforge.proc.isolation import run_isolated

    outcome = run_isolated(
        "cudaforge.tasks.cost:cost_entry",
        {"task_source": task_source, "seed": seed},
        timeouts={},
        default_timeout=timeout_s,
        gpu=gpu,
    )
    if outcome.status == "ok" and outcome.result is not None:
        return outcome.result, True
    reason = outcome.error.strip().splitlines()[-1] if outcome.error.strip() else outcome.status
    return {"flops": None, "min_bytes": None, "dtype": "", "notes": [f"cost child {outcome.status}: {reason}"]}, False


def roofline(
    task_source: str,
    gpu_name: str | None = None,
    *,
    peaks: dict[str, Any] | None = None,
    measured_ms: float | None = None,
    allow_tf32: bool = False,
) -> Roofline:
    """The roofline of a task on a GPU named ``gpu_name`` (or with ``peaks`` given), computed in a
    CPU child process; ``measured_ms`` (e.g. the evaluator's candidate median) adds the fraction of
    speed of light. Without a GPU name or peaks: FLOPs and bytes only. Never raises."""
    if peaks is None and gpu_name:
        peaks = peak_rates(gpu_name)
    return make_roofline(task_cost_isolated(task_source), peaks, measured_ms, "evaluator", allow_tf32)
