"""Executing a task's module: only ever inside an isolated child process (needs torch).

The evaluator and the audit share these helpers so that both build inputs and models the
same way: seed, then call ``get_inputs()`` (or ``get_inputs_variant(name)``), then move
tensors to the device keeping their dtype; seed, then construct ``Model(*get_init_inputs())``.
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import Any

import torch

DEFAULT_VARIANT = "default"


def strict_fp32() -> None:
    """Turn off TF32 for matmuls and cuDNN convolutions, so fp32 references are fp32-accurate.

    PyTorch lets cuDNN convolutions use TF32 by default; a reference computed that way misses
    fp32 tolerances by 2-300x, and correct fp32 kernels would fail against it.
    """
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def apply_numerics(tf32: str = "off", deterministic: bool = False) -> None:
    """The process-wide numerics of an evaluation (``eval.tf32``, ``eval.deterministic``): TF32 off (``strict_fp32``),
    on in matmuls and convolutions (``on``), or PyTorch's defaults; and, when ``deterministic``, deterministic cuDNN and cuBLAS as the CudaForge authors'
    harness sets them (cuDNN deterministic, no cuDNN benchmark, ``use_deterministic_algorithms(warn_only)``, a fixed
    cuBLAS workspace)."""
    import os

    if tf32 == "off":
        strict_fp32()
    elif tf32 == "on":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        torch.backends.cuda.matmul.allow_tf32 = False  # PyTorch's defaults
        torch.backends.cudnn.allow_tf32 = True
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True, warn_only=True)


def grad_mode(no_grad: bool = True) -> Any:
    """The autograd context calls run in: ``torch.no_grad()`` (our protocol), or autograd as it is (``eval.no_grad=
    false``: the CudaForge harness runs both models without ``no_grad``)."""
    import contextlib

    return torch.no_grad() if no_grad else contextlib.nullcontext()


def load_module(source: str, name: str) -> types.ModuleType:
    """Execute ``source`` as a fresh module called ``name`` (registered in sys.modules).

    The source is also registered in ``linecache`` under the module's file name, so that
    ``inspect.getsource`` works on its functions: ``@triton.jit`` reads its function's source
    when it decorates it, and fails ("@jit functions should be defined in a Python file")
    without this (the interpreter, ``TRITON_INTERPRET=1``, does not read it, which hides the
    failure on a CPU).
    """
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    linecache.cache[module.__file__] = (len(source), None, source.splitlines(keepends=True), module.__file__)
    sys.modules[name] = module
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def to_device(value: Any, device: torch.device | str) -> Any:
    """Move tensors (also inside lists and tuples) to ``device``, keeping dtypes."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(to_device(v, device) for v in value)
    return value


def seed_torch(seed: int) -> None:
    """Seed torch's CPU generator and every CUDA device's, as ``torch.manual_seed(seed)`` does (the same numbers
    follow), without its cost on a CUDA host: ``torch.manual_seed`` also seeds the backends this process never
    started (XPU, ...), and each of those records its caller's whole stack (``traceback.format_stack``) for a
    lazy start that never comes, about 1.5 ms per call, paid on every timed trial's inputs."""
    seed = int(seed)
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        for generator in torch.cuda.default_generators:
            generator.manual_seed(seed)
    elif torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)  # queued until CUDA starts, as torch.manual_seed does


def make_inputs(
    module: types.ModuleType, seed: int, variant: str = DEFAULT_VARIANT, device: torch.device | str = "cpu"
) -> list[Any]:
    """Fresh forward inputs from the task module, seeded, generated directly on ``device``.

    ``get_inputs()`` runs with ``device`` as torch's default device, so its random tensors are
    drawn by that device's generator (seeded as ``torch.manual_seed`` seeds it, :func:`seed_torch`): gigabytes
    of inputs cost milliseconds on a GPU instead of seconds on the host. Tensors a task creates on an
    explicit device are moved to ``device`` afterwards, keeping their dtype.
    """
    seed_torch(seed)
    with torch.device(device):
        if variant == DEFAULT_VARIANT:
            inputs = module.get_inputs()
        else:
            inputs = module.get_inputs_variant(variant)
    return list(to_device(list(inputs), device))


def build_model(cls: type, init_inputs: list[Any], seed: int, device: torch.device | str) -> torch.nn.Module:
    """Construct ``cls(*init_inputs)`` after seeding, in eval mode, on ``device``."""
    seed_torch(seed)
    model = cls(*init_inputs)
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    return model


def flatten_outputs(output: Any) -> list[Any]:
    """A forward's result as a flat list (a tensor, or the items of a tuple/list)."""
    if isinstance(output, (list, tuple)):
        flat: list[Any] = []
        for item in output:
            flat.extend(flatten_outputs(item))
        return flat
    return [output]


def default_tolerance(dtype: torch.dtype, atol_fp32: float, rtol_fp32: float, atol_half: float, rtol_half: float):
    """(atol, rtol) for an output dtype: half precisions get the looser pair."""
    if dtype in (torch.float16, torch.bfloat16):
        return atol_half, rtol_half
    return atol_fp32, rtol_fp32
