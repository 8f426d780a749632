"""The isolated side of the held-out shapes (``held_out.py``): each candidate shape's reference built and run on
torch's ``meta`` device, which checks every shape and allocates nothing; and the module census of a model that
``cudaforge integrate`` patches (``cudaforge/run/integrate.py``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.tasks.runtime import flatten_outputs, load_module

_MODULE = "cudaforge_held_out_reference"


def _run_on_meta(source: str) -> dict[str, Any]:
    module = load_module(source, _MODULE)
    try:
        with torch.device("meta"), torch.no_grad():
            model = module.Model(*list(module.get_init_inputs()))
            inputs = list(module.get_inputs())
            output = model(*inputs)
    finally:
        sys.modules.pop(_MODULE, None)
    tensors = [t for t in flatten_outputs(inputs) if isinstance(t, torch.Tensor)]
    return {
        "ok": True,
        "input_bytes": int(sum(t.numel() * t.element_size() for t in tensors)),
        "inputs": [list(t.shape) for t in tensors],
        "outputs": [list(t.shape) for t in flatten_outputs(output) if isinstance(t, torch.Tensor)],
    }


def check_shapes(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """``payload["shapes"]``: ``[{"name", "source"}]``; returns ``{"shapes": {name: {"ok", "input_bytes", "inputs"}
    or {"ok": False, "error"}}}``."""
    found: dict[str, Any] = {}
    for item in payload["shapes"]:
        progress(f"shape:{item['name']}")
        try:
            found[item["name"]] = _run_on_meta(item["source"])
        except Exception as exc:  # noqa: BLE001 - the reference refuses this shape: it is dropped, said why
            found[item["name"]] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
    return {"shapes": found}


def module_census(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """``payload["source"]``: a problem file; returns ``{"modules": {class name: instances}}`` of its ``Model`` built
    on the meta device (the model itself not counted)."""
    progress("build")
    module = load_module(payload["source"], _MODULE)
    try:
        with torch.device("meta"):
            model = module.Model(*list(module.get_init_inputs()))
    finally:
        sys.modules.pop(_MODULE, None)
    counts: dict[str, int] = {}
    for name, child in model.named_modules():
        if name:
            counts[type(child).__name__] = counts.get(type(child).__name__, 0) + 1
    return {"modules": counts}
