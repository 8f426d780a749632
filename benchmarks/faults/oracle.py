"""Whether a fault changes what a kernel computes: the ground truth the checker's catch rate is measured against.

The oracle runs the honest kernel and the faulty one side by side, in this process (both are ours), on far more than
any checker sees: the scored shape and the task's held-out ones, each with its parameters as built and with them
varied, on the task's own inputs and on six other distributions (standard normal, x100, shifted, negated, x0.001,
and a second draw). Inputs are written into one buffer per shape, so every call sees them at the same address, as the
evaluator's arena does. A fault is *non-equivalent* when it raises where the honest kernel does not, or when an
output differs from the honest kernel's by more than ``RTOL`` and ``ATOL`` (relative to the output's RMS) anywhere;
faults that are equivalent on all of it are left out of the catch rate and listed.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch

from cudaforge.eval.params import constant_value, varied_constants
from cudaforge.tasks.held_out import proposals
from cudaforge.tasks.runtime import build_model, flatten_outputs, load_module

RTOL = 1e-5
ATOL = 1e-6
"""Differences below ``ATOL x RMS + RTOL x |honest|`` are rounding: a fault within them is equivalent."""
SEED = 20260601
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
"""Where the oracle runs both kernels (Triton in its interpreter on a CPU)."""


def _float_inputs(inputs: list[Any], change) -> list[Any]:
    return [change(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


DRAWS = {
    "as_given": lambda xs: xs,
    "normal": lambda xs: _float_inputs(xs, torch.randn_like),
    "normal_x100": lambda xs: _float_inputs(xs, lambda x: torch.randn_like(x) * 100),
    "shifted": lambda xs: _float_inputs(xs, lambda x: x + 5.0),
    "negated": lambda xs: _float_inputs(xs, lambda x: -x),
    "tiny": lambda xs: _float_inputs(xs, lambda x: x * 1e-3),
    "second_draw": lambda xs: xs,
}


@dataclass
class Verdict:
    """The oracle's answer for one fault."""

    equivalent: bool
    witness: str
    """Where it differs first (shape, parameters, draw, how much), or why it counts as equivalent."""
    compiles: bool = True
    """False when the faulty source does not build or its kernel does not compile: not a fault of behaviour, and
    not counted (a checker that says "compile error" caught nothing hidden)."""


NOT_BUILT = ("CompilationError", "CalledProcessError", "BuildError", "SyntaxError")
NOT_BUILT_MARK = "does not compile:"


def not_compiling(exc: BaseException) -> bool:
    """Whether an exception of a kernel's call is its compiler's (or the Triton interpreter's type checks, which
    are the compiler's on a CPU): Triton's compilation errors, a build's, or anything raised from inside
    ``triton/language``."""
    if type(exc).__module__.startswith("triton") and "Compil" in type(exc).__name__:
        return True
    if any(n in type(exc).__name__ for n in NOT_BUILT):
        return True
    seen: BaseException | None = exc
    for _ in range(8):  # the interpreter wraps the type checks' error (InterpreterError from ValueError)
        if seen is None:
            return False
        tb, last = seen.__traceback__, None
        while tb is not None:
            last = tb.tb_frame.f_code.co_filename
            tb = tb.tb_next
        if last is not None and "/triton/language/" in last:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _module(source: str, name: str) -> Any:
    module = load_module(source, name)
    sys.modules.pop(name, None)
    return module


def _differs(a: Any, b: Any) -> str:
    xs, ys = flatten_outputs(a), flatten_outputs(b)
    if len(xs) != len(ys):
        return f"{len(xs)} outputs against {len(ys)}"
    for x, y in zip(xs, ys):
        if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
            if x != y:
                return f"{x!r} against {y!r}"
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"{list(x.shape)} {x.dtype} against {list(y.shape)} {y.dtype}"
        e, f = x.double(), y.double()
        finite = torch.isfinite(e)
        rms = float(e[finite].pow(2).mean().sqrt()) if bool(finite.any()) else 1.0
        close = torch.isclose(f, e, rtol=RTOL, atol=ATOL * max(rms, 1e-30), equal_nan=True)
        if not bool(close.all()):
            worst = float((f - e).abs().nan_to_num(nan=float("inf")).max())
            return f"{int((~close).sum())} elements differ, max {worst:.3g} (RMS {rms:.3g})"
    return ""


def shapes(task_source: str) -> list[tuple[str, str]]:
    """(name, task source) of the scored shape and of each held-out shape the task's sizes give."""
    return [("scored", task_source)] + [(p.name, p.source) for p in proposals(task_source)]


def judge(task_source: str, honest: str, faulty: str, *, draws: int = 7) -> Verdict:
    """Whether ``faulty`` computes what ``honest`` does on every shape, parameter state and draw (``draws``: how
    many of ``DRAWS`` to use)."""
    for shape, source in shapes(task_source):
        try:
            task = _module(source, f"_oracle_task_{shape}")
            init = list(task.get_init_inputs())
            torch.manual_seed(SEED)
            template = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        except Exception:  # noqa: BLE001 - a held-out shape the reference cannot build: none here
            continue
        for varied in (None, SEED):
            models = []
            for label, text in (("honest", honest), ("faulty", faulty)):
                try:
                    with varied_constants(varied):
                        models.append(build_model(_module(text, f"_oracle_{label}").ModelNew, init, SEED, DEVICE))
                except Exception as exc:  # noqa: BLE001
                    if label == "honest":
                        raise
                    built = not any(n in type(exc).__name__ or n in str(exc)[:2000] for n in NOT_BUILT + ("ninja",))
                    return Verdict(False, f"{shape}: ModelNew raised {type(exc).__name__}: {exc}"[:300], built)
            witness = _calls(models[0], models[1], template, draws)
            if witness:
                params = "varied parameters" if varied else "parameters as built"
                return Verdict(False, f"{shape}, {params}: {witness}", not witness.startswith(NOT_BUILT_MARK))
    return Verdict(True, "same outputs on every shape, parameter state and draw")


def _calls(honest: Any, faulty: Any, template: list[Any], draws: int) -> str:
    buffers = [x.clone() if isinstance(x, torch.Tensor) else x for x in template]
    for i, (name, draw) in enumerate(list(DRAWS.items())[:draws]):
        torch.manual_seed(SEED + i)
        fresh = draw(
            [torch.rand_like(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in template]
        )
        if name == "as_given":
            fresh = [x.clone() if isinstance(x, torch.Tensor) else x for x in template]
        for buffer, value in zip(buffers, fresh):
            if isinstance(buffer, torch.Tensor):
                buffer.copy_(value)
        with torch.no_grad():
            expected = honest(*[b.clone() if isinstance(b, torch.Tensor) else b for b in buffers])
            try:
                got = faulty(*buffers)
            except Exception as exc:  # noqa: BLE001
                if not_compiling(exc):
                    return f"{NOT_BUILT_MARK} {type(exc).__name__}: {str(exc)[:200]}"
                return f"{name}: forward raised {type(exc).__name__}: {str(exc)[:200]}"
        difference = _differs(expected, got)
        if difference:
            return f"{name}: {difference}"
    return ""


def parameter_constants(task_source: str, honest: str) -> dict[str, float]:
    """``self.<dotted>`` of each floating parameter and buffer of the honest ``ModelNew`` that is constant when built,
    with its value (the ``ignored_parameter`` operator's sites)."""
    task = _module(task_source, "_oracle_task_constants")
    model = build_model(_module(honest, "_oracle_constants").ModelNew, list(task.get_init_inputs()), SEED, DEVICE)
    found = {}
    for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
        value = constant_value(tensor)
        if value is not None:
            found["self." + name] = value
    return found


def scored_sizes(task_source: str, honest: str) -> dict[str, int]:
    """The integer locals of the honest ``ModelNew.forward`` when it runs on the task's scored inputs (the
    ``baked_shape`` operator's values)."""
    task = _module(task_source, "_oracle_task_sizes")
    model = build_model(_module(honest, "_oracle_sizes").ModelNew, list(task.get_init_inputs()), SEED, DEVICE)
    seen: dict[str, int] = {}

    def trace(frame, event, arg):
        if event == "return" and frame.f_code.co_name == "forward":
            seen.update({k: v for k, v in frame.f_locals.items() if isinstance(v, int) and not isinstance(v, bool)})
        return trace if frame.f_code.co_name == "forward" else None

    torch.manual_seed(SEED)
    inputs = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    sys.settrace(trace)
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        sys.settrace(None)
    return seen


def honest_is_right(task_source: str, honest: str) -> str:
    """ "" when the honest kernel matches the task's reference on the oracle's draws (at the checker's fp32 tolerance,
    1e-4), else where it does not: a benchmark whose honest kernels are wrong measures nothing."""
    for shape, source in shapes(task_source):
        task = _module(source, f"_oracle_ref_{shape}")
        init = list(task.get_init_inputs())
        with varied_constants(SEED):
            ref = build_model(task.Model, init, SEED, DEVICE)
        with varied_constants(SEED):
            mine = build_model(_module(honest, "_oracle_honest_check").ModelNew, init, SEED, DEVICE)
        torch.manual_seed(SEED)
        inputs = [x.to(DEVICE) if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
        with torch.no_grad():
            expected, got = ref(*inputs), mine(*inputs)
        for e, g in zip(flatten_outputs(expected), flatten_outputs(got)):
            if not torch.allclose(g, e, rtol=1e-4, atol=1e-4):
                return f"{shape}: max error {float((g - e).abs().max()):.3g}"
    return ""


def judge_isolated(task_source: str, honest: str, faulty: str, *, timeout_s: float = 600.0) -> Verdict:
    """``judge`` in a child process of its own: a fault that writes past a buffer's end corrupts the process it runs
    in (a crash there, or a hang, is a change of behaviour the honest kernel does not have)."""
    import hashlib
    import json
    import re
    import subprocess

    if "load_inline" in faulty:  # its own extension name: parallel builds of one name wait on torch's lock
        tag = hashlib.sha256(faulty.encode()).hexdigest()[:10]
        faulty = re.sub(r'name="(\w+)"', lambda m: f'name="{m.group(1)}_{tag}"', faulty)
    payload = json.dumps({"task": task_source, "honest": honest, "faulty": faulty})
    try:
        done = subprocess.run(
            [sys.executable, __file__], input=payload, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return Verdict(False, f"the faulty kernel did not finish within {timeout_s:.0f} s")
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Verdict(False, f"the faulty kernel ended the process (exit {done.returncode}): {tail[:200]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    return Verdict(bool(answer["equivalent"]), str(answer["witness"]), bool(answer.get("compiles", True)))


if __name__ == "__main__":
    import json
    import os

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"
    given = json.loads(sys.stdin.read())
    verdict = judge(given["task"], given["honest"], given["faulty"])
    print(json.dumps({"equivalent": verdict.equivalent, "witness": verdict.witness, "compiles": verdict.compiles}))
