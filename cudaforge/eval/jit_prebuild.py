"""Kernels that a language JIT-compiles at their first launch (Triton, TileLang), compiled ahead of the correctness
phase.

A Triton kernel's build depends on its launch: the dtypes and alignment of its pointers, the values of its integer
and ``constexpr`` arguments, ``num_warps``. Those are known only by running the candidate's ``forward``. So the
evaluator runs it once, on *fake* tensors (``torch._subclasses.fake_tensor``: shapes, strides and dtypes, no
memory, no GPU) of the task's inputs, with the language's launches made compile-only (its ``prebuild`` hook,
``cudaforge.languages``), for the target GPU named by the vendor (``jit_target``):

* in the CPU pool, ahead of the GPU evaluation (``cudaforge.eval.extensions.precompile``): the kernels land in the
  sandboxed worker's private cache of that language (Triton's, TileLang's), which the trusted side keeps for that
  source once the worker is dead (``jit_cache.keep_own_jit_cache``) and copies into the GPU worker's cache before
  the candidate loads;
* with ``eval.jit_ahead=compile``, also in the compile phase of a GPU evaluation the pool did not prepare, so the
  correctness phase compiles nothing.

The run happens in a copy of the sandboxed worker (:func:`compile_ahead`): forked where no GPU is visible (the
pool), a fresh interpreter that sees none elsewhere (a copy forked after the CUDA driver started cannot make even
fake GPU tensors). Nothing the fake ``forward`` does (a module-level buffer cached as a fake tensor, a "first
call" flag) reaches the process that is then evaluated; only the files it compiles into the worker's scratch
directory do. Each side has a part here: :func:`specs` (trusted: what
the inputs look like, as data; the worker never sees the reference) and :func:`compile_ahead` (the worker). What it reports is the candidate's account, read as
data of a known shape (:func:`reported_kernels`), never a verdict.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, cast

import torch

from cudaforge.eval.worker.exchange import DTYPES, decode, encode, is_compact
from cudaforge.languages import compiled_env
from cudaforge.vendors import pin_env, pinned

MAX_REPORT = 64 << 10
"""Bytes of the forked child's report read back."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


def _spec(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as the arena would hand it to the worker: its dtype and shape, its strides when compact (else
    contiguous ones), at an aligned offset."""
    if t.layout == torch.strided and is_compact(t):
        stride = list(t.stride())
    else:
        stride, step = [], 1
        for size in reversed(t.shape):
            stride.insert(0, step)
            step *= max(int(size), 1)
    return {"dtype": str(t.dtype).replace("torch.", ""), "shape": list(t.shape), "stride": stride, "offset": 0}


def specs(values: list[Any]) -> Any:
    """``values`` (real or fake tensors, numbers, nested lists) encoded as :func:`compile_ahead` takes them: tensors
    become descriptions, never data. TypeError for a value the arena could not carry either."""
    return encode(list(values), _spec)


def _fake_mode() -> Any:
    """A fake-tensor mode that never touches a device, even where CUDA is available: torch's own initialises CUDA
    for some device moves when a GPU is visible, which fails in a process forked after CUDA was initialised (the
    GPU worker: "Cannot re-initialize CUDA in forked subprocess", seen on the H200)."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    class _NoDeviceFakeMode(FakeTensorMode):  # type: ignore[no-untyped-call]  # torch's __init_subclass__ is unannotated
        @property
        def avoid_device_init(self) -> bool:
            return True

    return _NoDeviceFakeMode(allow_non_fake_inputs=True)


def fake_specs(make: Any) -> Any:
    """:func:`specs` of what ``make()`` returns, with ``make`` run under a fake-tensor mode (the task's
    ``get_inputs``: no memory, no GPU, milliseconds whatever the sizes)."""
    with _fake_mode():
        return specs(list(make()))


MAX_INPUT_SETS = 8
"""Distinct input shapes a candidate is compiled ahead for (the task's default inputs and its variants)."""


def input_sets(ref_module: Any, variants: Any = (), seed: int = 0) -> list[Any]:
    """:func:`fake_specs` of the task's inputs (``get_inputs``) and of each of ``variants``
    (``get_inputs_variant``), the distinct ones, in order: each input shape is its own Triton specialisation
    (a batch of 129 rows is not one of 256). Trusted side: the task's module runs here, never in the worker."""
    from cudaforge.tasks.runtime import DEFAULT_VARIANT, make_inputs

    found: dict[str, Any] = {}
    for variant in [DEFAULT_VARIANT, *variants][:MAX_INPUT_SETS]:
        encoded = fake_specs(lambda: make_inputs(ref_module, seed=seed, variant=variant, device="cpu"))  # noqa: B023
        found.setdefault(json.dumps(encoded, sort_keys=True), encoded)
    return list(found.values())


def reported_kernels(reply: Any) -> list[str]:
    """The names a worker's ``prebuild`` reply lists, kept only when they look like identifiers, at most 32,
    deduplicated."""
    names = reply.get("built") if isinstance(reply, dict) else None
    if not isinstance(names, list):
        return []
    return list(dict.fromkeys(n for n in names if isinstance(n, str) and _NAME.fullmatch(n)))[:32]


def _on_fake_gpu(model: Any) -> Any:
    """The model's parameters and buffers replaced by fake tensors of the same shapes on the GPU (``.to("cuda")``
    would copy their values, which fake tensors built on the CPU cannot give to a device they cannot reach)."""
    if not isinstance(model, torch.nn.Module):
        return model
    model.eval()

    def moved(t: torch.Tensor) -> torch.Tensor:
        return torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device="cuda")

    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is not None:
                module._parameters[name] = torch.nn.Parameter(moved(param), requires_grad=param.requires_grad)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None:
                module._buffers[name] = moved(buffer)
    return model


def _compile_here(
    module: Any, language: str, init: Any, inputs: list[Any], target: list[Any], seed: int, no_grad: bool
) -> dict[str, Any]:
    """In the copy: the candidate's model built, and called once on fake tensors of each input set
    (:func:`input_sets`), launches compile-only."""
    from cudaforge.languages import get
    from cudaforge.tasks.runtime import grad_mode

    hook = get(language).prebuild
    if hook is None:
        return {"built": [], "error": f"{language} kernels cannot be built ahead"}
    # torch initialises CUDA before any factory call naming a CUDA device, fake or not; in a copy forked after the
    # driver started (the GPU worker; any process that asked torch.cuda.is_available()) that fails, and nothing here
    # needs a device: this copy never runs a kernel
    torch.cuda._lazy_init = lambda: None
    error = ""
    with _fake_mode(), hook(target) as built:  # from the model's construction on (TileLang often compiles there)

        def fake(desc: dict[str, Any]) -> torch.Tensor:
            return torch.empty_strided(
                [int(s) for s in desc["shape"]],
                [int(s) for s in desc["stride"]],
                dtype=DTYPES[desc["dtype"]],
                device="cuda",
            )

        try:
            torch.manual_seed(seed)
            model = _on_fake_gpu(module.ModelNew(*decode(init, fake)))  # as build_model, without its .to(device)
        except Exception as exc:  # noqa: BLE001
            error = f"ModelNew(...) raised {type(exc).__name__}: {exc}"[:500]
            return {"built": list(dict.fromkeys(built)), "error": error}
        for encoded in list(inputs)[:MAX_INPUT_SETS]:
            try:
                args = list(decode(encoded, fake))
                with grad_mode(no_grad):
                    model(*args)
            except Exception as exc:  # noqa: BLE001 - after a fake forward anything may raise; what compiled stays
                error = error or f"{type(exc).__name__}: {exc}"[:500]
    return {"built": list(dict.fromkeys(built)), "error": error}


def _fork_safe() -> bool:
    """Whether a forked copy of this process can make fake GPU tensors: torch here has no GPU backend, or sees no
    GPU. A process forked after the CUDA driver started can never use it again, and torch's factory functions start
    it for a fake tensor too ("CUDA error: initialization error", seen on the H200 in the GPU worker)."""
    no_backend = torch.version.cuda is None and getattr(torch.version, "hip", None) is None
    return no_backend or pinned() == ""


def _source_of(module: Any) -> str:
    """A module's source as ``load_module`` registered it in ``linecache``."""
    import linecache

    entry = linecache.cache.get(getattr(module, "__file__", "") or "")
    return "".join(cast(tuple[Any, Any, list[str], Any], entry)[2]) if entry else ""  # load_module's full entry


def compile_ahead(
    module: Any,
    language: str,
    init: Any,
    inputs: list[Any],
    target: list[Any],
    *,
    seed: int = 0,
    no_grad: bool = True,
    timeout_s: float = 300.0,
    in_child: Any = None,
    source: str | None = None,
    fresh: bool | None = None,
) -> dict[str, Any]:
    """Run :func:`_compile_here` in a copy of this process (the sandboxed worker), waiting at most ``timeout_s``;
    ``{"built": [kernel names, once each], "error": "...", "seconds": s}``. ``inputs``: a list of input sets, each as
    :func:`specs` encodes it. The copy shares nothing back but its report and the files it compiled; it is killed
    once its report is read, or at the deadline.

    The copy is forked where that is safe (:func:`_fork_safe`: the CPU pool's worker), with ``in_child()`` run first
    in it (the worker takes its channel away there: a build the fake ``forward`` asks for fails instead of talking to
    the verifier). Elsewhere (``fresh``; the GPU worker) it is a new interpreter that sees no GPU and imports
    ``source`` (default: the module's own) again: seconds more, for the start and the import."""
    started = time.perf_counter()
    fresh = (not _fork_safe()) if fresh is None else fresh
    request = {"language": language, "init": init, "inputs": inputs, "target": target, "seed": seed, "no_grad": no_grad}
    if fresh:
        request.update(source=source if source is not None else _source_of(module), module=module.__name__)
        fd, request_path = tempfile.mkstemp(prefix="jit-request-", suffix=".json")  # TMPDIR: the worker's scratch
        with os.fdopen(fd, "w") as f:
            json.dump(request, f)
        env = {**os.environ, **pin_env(None), **compiled_env()}
        try:
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "cudaforge.eval.jit_prebuild", request_path],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                env=env,
            )
        except OSError as exc:
            os.unlink(request_path)
            return {
                "built": [],
                "error": f"the compiling copy could not start: {exc}"[:500],
                "seconds": 0.0,
                "fresh": True,
            }
        assert proc.stdout is not None
        read_end = proc.stdout.fileno()

        def stop() -> None:
            proc.kill()
            proc.wait()
            proc.stdout.close() if proc.stdout else None
            os.unlink(request_path)
    else:
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:  # e.g. the sandbox's task limit
            os.close(read_end)
            os.close(write_end)
            return {
                "built": [],
                "error": f"the compiling copy could not start: {exc}"[:500],
                "seconds": 0.0,
                "fresh": False,
            }
        if pid == 0:  # the child: never returns, never touches the channel
            os.close(read_end)

            def forked() -> dict[str, Any]:
                if in_child is not None:
                    in_child()
                return _compile_here(module, **request)

            _report_and_exit(write_end, forked, "")
        os.close(write_end)

        def stop() -> None:
            os.kill(pid, signal.SIGKILL)  # also once it has answered: nothing of it outlives its report
            os.waitpid(pid, 0)
            os.close(read_end)

    report = _read_report(read_end, stop, started, timeout_s)
    report["fresh"] = fresh
    return report


def _read_report(read_end: int, stop: Any, started: float, timeout_s: float) -> dict[str, Any]:
    """The compiling copy's report from ``read_end`` (at most ``MAX_REPORT`` bytes, until ``started + timeout_s``),
    ``stop()`` called whatever happens; ``{"built", "error", "seconds"}``, checked."""
    data, deadline = b"", started + timeout_s
    poller = select.poll()
    poller.register(read_end, select.POLLIN)
    try:
        while len(data) < MAX_REPORT:
            left = deadline - time.perf_counter()
            if left <= 0 or not poller.poll(left * 1000):
                break
            chunk = os.read(read_end, MAX_REPORT - len(data))
            if not chunk:
                break
            data += chunk
            if data.endswith(b"}") and _parses(data):  # the whole report (a process the copy left may hold the pipe)
                break
    finally:
        timed_out = time.perf_counter() >= deadline
        stop()
    try:
        report = json.loads(data) if data else {}
    except ValueError:
        report = {}
    if not isinstance(report, dict):
        report = {}
    report = {
        "built": report.get("built") if isinstance(report.get("built"), list) else [],
        "error": report.get("error") if isinstance(report.get("error"), str) else "",
    }
    if not data:
        report["error"] = f"stopped after {timeout_s:g} s" if timed_out else "the compiling copy of the worker died"
    report["seconds"] = round(time.perf_counter() - started, 3)
    return report


def _parses(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data), dict)
    except ValueError:
        return False


def _report_and_exit(fd: int, compile_: Any, failing: str) -> None:
    """In a copy: ``compile_()``'s report (or what it raised, after ``failing``) written whole to ``fd``, then exit
    at once (no interpreter shutdown that a candidate's thread or exit handler could hold up)."""
    try:
        report = compile_()
    except BaseException as exc:  # noqa: BLE001
        report = {"built": [], "error": f"{failing}{type(exc).__name__}: {exc}"[:500]}
    try:
        data = json.dumps(report).encode()[:MAX_REPORT]
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os._exit(0)


def _main() -> int:
    """``python -m cudaforge.eval.jit_prebuild REQUEST``: a fresh copy of the worker (:func:`compile_ahead`); reads
    its request from the file REQUEST, writes its report on stdout and exits at once. What the candidate prints goes
    to stderr."""
    from cudaforge.tasks.runtime import load_module

    out = os.dup(1)
    os.dup2(2, 1)  # the candidate's prints must not mix with the report

    def fresh() -> dict[str, Any]:
        with open(sys.argv[1], "rb") as f:
            request = json.loads(f.read(64 << 20))
        module = load_module(str(request.pop("source")), str(request.pop("module")))
        return _compile_here(module, **request)

    _report_and_exit(out, fresh, "importing the candidate again raised ")
    return 0


if __name__ == "__main__":
    _main()
