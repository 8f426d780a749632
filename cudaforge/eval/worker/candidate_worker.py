"""The sandboxed side of an evaluation: ``python -m cudaforge.eval.worker.candidate_worker CHANNEL_FD``.

This process holds the candidate's code and nothing else: no reference, no task module, no verdict.
It runs inside the candidate's sandbox (``cudaforge.proc.sandbox``) and answers the trusted verifier's
requests over a ``Channel``; tensors cross through an ``Arena`` the verifier made. Everything this
process does or says is untrusted: the candidate can patch any of it. The verifier believes only
what it checks itself (outputs it copies out of the arena and compares, the wall clock around a
request); what this side reports (event times, output types, the profiler's kernel split) feeds
second-line guards and the Judge's feedback, never the verdict's foundation.

Requests (``op``): ``arena``, ``cuda``, ``exchange`` (before ``load`` only), ``load``, ``prebuild``, ``model``, ``state``,
``set_state``, ``call``, ``trace``, ``timed``, ``batch``, ``share``, ``ping``, ``exit``; each gets one reply ``{"ok": true, ...}`` or
``{"ok": false, "status": EvalStatus value, "message": ...}``. While ``load`` runs, this side may send
``{"op": "build", "inputs": ...}`` requests and waits for their replies (the trusted side builds).
"""

from __future__ import annotations

import gc
import os
import sys
import time
import traceback
from typing import Any

import torch

from cudaforge.eval.worker.exchange import Arena, ArenaError, Channel, DeviceArena, decode, encode, host_arena
from cudaforge.tasks.runtime import apply_numerics, build_model, flatten_outputs, grad_mode, strict_fp32

WORKER_MODULE_PREFIX = "cudaforge_candidate_"


class _Fail(Exception):
    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _build_status(exc: BaseException) -> str | None:
    """The verdict a failed build under ``exc`` (raised, or the cause of what the candidate raised instead) calls for:
    ``unsupported`` for this machine's toolkit, ``compiled`` for a torch without CUDA, ``compile_error`` for the
    candidate's sources; None when no build failed."""
    from cudaforge.eval.extensions import BuildError, ModuleNotLoadable, ToolchainIncomplete

    seen: BaseException | None = exc
    for _ in range(16):
        if seen is None:
            return None
        if isinstance(seen, ToolchainIncomplete):
            return "unsupported"
        if isinstance(seen, ModuleNotLoadable):
            return "compiled"
        if isinstance(seen, BuildError):
            return "compile_error"
        seen = seen.__cause__ or seen.__context__
    return None


def _traceback(exc: BaseException, module_name: str) -> str:
    """The exception with only the frames of the candidate's own code (plus the last one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if f.filename == f"<{module_name}>"]
    lines = [f"  line {f.lineno} in {f.name}: {(f.line or '').strip()}" for f in own]
    if frames and frames[-1].filename != f"<{module_name}>":
        last = frames[-1]
        lines.append(f"  in {os.path.basename(last.filename)}:{last.lineno} ({last.name})")
    return "\n".join([f"{type(exc).__name__}: {exc}".strip()[:2000], *lines[-6:]])


def _is_triton_compile_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("triton") and "Compil" in type(exc).__name__


class Worker:
    """The state of one sandboxed worker: its channel, arena, the candidate's module and model."""

    def __init__(self, channel: Channel, device: torch.device) -> None:
        self.channel, self.device = channel, device
        self.arena: Arena | None = None
        self.module: Any = None
        self.module_name = ""
        self.model: Any = None
        self.stopwatch: Any = None
        self.no_grad = True
        """Calls run under ``torch.no_grad()`` (``eval.no_grad``; the verifier says so with ``load``)."""
        self.hooks: Any = None
        """The build hooks (``build_hooks``), entered at ``load`` and kept for the worker's life, so a ``load_inline``
        in ``__init__`` or ``forward`` builds through the trusted side's cache too (or finds its module loaded)."""
        self.source = ""
        """The candidate's source, as ``load`` got it."""
        self.prebuilt: list[str] = []
        self.deferred: list[str] = []
        """Build calls inside functions left to run time, and why (``cudaforge.eval.extensions.deferred.prebuild``)."""
        """The deferred builds made at ``load`` (``cudaforge.eval.extensions.deferred``)."""
        self.trace: Any = None
        """The record of the timed calls (``cudaforge.eval.timed_trace.TimedTrace``) while one runs."""
        self.trace_probe: dict[str, Any] | None = None
        """Whether a trace worked in this process before any candidate code was loaded (``op_trace`` ``probe``)."""

    # -- tensors in and out ----------------------------------------------------------------

    def _arena(self) -> Arena:
        if self.arena is None:
            raise _Fail("crashed", "no arena was set up")
        return self.arena

    def inputs(self, encoded: Any) -> tuple[list[Any], list[tuple[torch.Tensor, torch.Tensor]]]:
        """The forward's arguments: views of the arena (device arena), or copies on the device (host arena).
        Also the (copy, arena view) pairs to write back after the call, so the verifier sees any mutation."""
        arena = self._arena()
        back: list[tuple[torch.Tensor, torch.Tensor]] = []

        def get(desc: dict[str, Any]) -> torch.Tensor:
            view = arena.view(desc)
            if view.device == self.device:
                return view
            copy = view.to(self.device)
            back.append((copy, view))
            return copy

        return list(decode(encoded, get)), back

    def outputs(self, value: Any, offset: int) -> Any:
        """Place a forward's result in the arena from ``offset`` on; its encoding."""
        arena = self._arena()
        arena.reset()
        arena._next = offset

        def put(t: torch.Tensor) -> dict[str, Any]:
            if t.layout != torch.strided:
                t = t.to_dense()
            return arena.put(t)

        try:
            return encode(value, put)
        except TypeError as exc:
            raise _Fail("incorrect", f"ModelNew.forward returned {exc}, which cannot be compared") from None

    @staticmethod
    def facts(value: Any) -> list[dict[str, Any]]:
        """What each returned tensor is (class, layout, device), for the output_type guard."""
        facts = []
        for t in flatten_outputs(value):
            if isinstance(t, torch.Tensor):
                facts.append(
                    {
                        "cls": f"{type(t).__module__}.{type(t).__qualname__}",
                        "plain": type(t) is torch.Tensor,
                        "layout": str(t.layout),
                        "device": t.device.type,
                        "storage": bool(t.numel() == 0 or t.layout != torch.strided or t.data_ptr() != 0),
                    }
                )
        return facts

    def sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def forward(self, args: list[Any], what: str) -> Any:
        try:
            with grad_mode(self.no_grad):
                return self.model(*args)
        except Exception as exc:  # noqa: BLE001 - the candidate's exception is a verdict
            status = "compile_error" if _is_triton_compile_error(exc) else _build_status(exc) or "runtime_error"
            raise _Fail(status, f"{what} raised\n{_traceback(exc, self.module_name)}") from None

    # -- requests ----------------------------------------------------------------------------

    def op_ping(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        return {"ok": True}

    def op_arena(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if len(fds) != 1:
            raise _Fail("crashed", "an arena request without its descriptor")
        if self.arena is not None:
            self.arena.close()
            self.arena = None
        size = int(msg["size"])
        self.arena = DeviceArena.attach(fds[0], size) if msg.get("kind") == "device" else host_arena(size, fds[0])
        return {"ok": True}

    def op_cuda(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The CUDA context, made while the trusted side holds the GPU's lock (a standby, before its candidate is
        known), and Triton's first launch paid with a kernel of ours (``fastclose.warm``)."""
        if self.device.type == "cuda":
            from cudaforge.eval.fastclose import warm

            torch.empty(1, device="cuda").add_(1)
            torch.cuda.synchronize()
            warm(self.device)
            if self.trace_probe is None:  # the profiler's first start (CUPTI) paid here, before the candidate
                self.trace_probe = _probe_trace(self.device, self.module is not None)
        return {"ok": True}

    def op_load(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        from cudaforge.eval.extensions import (
            BuildError,
            BuildSettings,
            CandidateLoader,
            ModuleNotLoadable,
            ToolchainIncomplete,
        )
        from cudaforge.eval.extensions.deferred import prebuild

        self.module_name = str(msg["module"])
        self.source = str(msg["source"])
        apply_numerics(str(msg.get("tf32", "off")), bool(msg.get("deterministic", False)))  # as the verifier's
        self.no_grad = bool(msg.get("no_grad", True))
        if msg.get("poison") is False and self.device.type == "cpu":  # eval.poison_memory=false, as on a GPU
            from cudaforge.eval.guards.runtime import disable_cpu_poison

            disable_cpu_poison()

        def remote(inputs: dict[str, Any]) -> dict[str, Any]:
            self.channel.send({"op": "build", "inputs": inputs})
            reply, _ = self.channel.recv()
            return reply

        if self.hooks is not None:
            raise _Fail("crashed", "the candidate is loaded once per worker")
        self.hooks = CandidateLoader(BuildSettings.from_dict(msg["build"]), remote=remote)
        try:  # the hooks are never left: the worker ends with its candidate
            self.module = self.hooks.load(msg["source"], self.module_name)
            self.prebuilt, self.deferred = prebuild(msg["source"], self.module.__dict__)  # in __init__/forward: now
        except ToolchainIncomplete as exc:
            raise _Fail("unsupported", f"this machine cannot build the candidate: {exc}") from None
        except ModuleNotLoadable as exc:
            raise _Fail("compiled", f"the CUDA sources compiled; {exc}") from None
        except Exception as exc:  # noqa: BLE001
            recorder = self.hooks.recorder
            if isinstance(exc, BuildError) or (recorder is not None and recorder.failed):
                log = recorder.log_trimmed if recorder is not None else str(exc)
                raise _Fail("compile_error", "the CUDA source did not compile:\n" + log) from None
            raise _Fail(
                "runtime_error", "importing the candidate raised\n" + _traceback(exc, self.module_name)
            ) from None
        if not hasattr(self.module, "ModelNew"):
            raise _Fail("invalid", "after import the candidate has no ModelNew")
        return {"ok": True, "prebuilt": self.prebuilt, "deferred": self.deferred}

    def op_prebuild(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Compile the candidate's JIT kernels (Triton) ahead, in a forked copy of this process, on fake tensors
        described by ``init`` and ``inputs`` (``cudaforge.eval.jit_prebuild``)."""
        from cudaforge.eval.jit_prebuild import compile_ahead

        if self.module is None:
            raise _Fail("crashed", "prebuild asked before load")
        fresh = msg.get("fresh")
        report = compile_ahead(
            self.module,
            str(msg["language"]),
            msg["init"],
            msg["inputs"],
            list(msg["target"]),
            seed=int(msg.get("seed", 0)),
            no_grad=self.no_grad,
            source=self.source,
            timeout_s=float(msg.get("timeout_s", 300.0)),
            fresh=fresh if isinstance(fresh, bool) else None,
            in_child=lambda: setattr(self, "channel", None),
        )
        return {"ok": True, **{k: report.get(k) for k in ("built", "error", "seconds", "fresh")}}

    def op_model(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Build ModelNew; with ``vary_seed``, its constant tensors varied as they are registered
        (``cudaforge.eval.params``), and the keys of those varied in the reply."""
        from cudaforge.eval.params import varied_constants

        init, _ = self.inputs(msg["init"])
        vary, keys = msg.get("vary_seed"), msg.get("vary_keys")
        only = [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else None
        self.model = None
        try:
            with varied_constants(int(vary) if isinstance(vary, int) else None, only) as variation:
                self.model = build_model(self.module.ModelNew, init, int(msg["seed"]), self.device)
        except Exception as exc:  # noqa: BLE001
            raise _Fail(
                _build_status(exc) or "runtime_error",
                "ModelNew(*get_init_inputs()) raised\n" + _traceback(exc, self.module_name),
            ) from None
        self.sync()
        gc.freeze()  # what lives now (torch, the module, the model) is never walked again by a collection
        return {"ok": True, "varied": list(variation.keys) if variation is not None else []}

    def op_state(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        state = self.model.state_dict() if isinstance(self.model, torch.nn.Module) else {}
        params = [n for n, _ in self.model.named_parameters()] if isinstance(self.model, torch.nn.Module) else []
        return {
            "ok": True,
            "state": {
                k: [list(v.shape), str(v.dtype).replace("torch.", "")]
                for k, v in state.items()
                if isinstance(v, torch.Tensor)
            },
            "params": params,
        }

    def op_set_state(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        values, _ = self.inputs(msg["tensors"])
        state = {k: v for k, v in values[0].items()} if values else {}
        self.model.load_state_dict({k: v.clone() for k, v in state.items()}, strict=False)
        return {"ok": True, "copied": len(state)}

    def _poison(self, sizes: list[int]) -> None:
        from cudaforge.eval.guards.runtime import poison_free_memory

        poison_free_memory([int(n) for n in sizes][:64], self.device)

    def op_call(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        args, back = self.inputs(msg["inputs"])
        self._poison(msg.get("poison", []))
        self.sync()  # the poison written before the call on every stream: work the candidate puts on a stream of
        # its own, which waits for nothing, must not race the fill (timed calls sync here too)
        held = self.memory_held()
        out = self.forward(args, msg.get("what", "ModelNew.forward"))
        self.sync()
        memory = self.memory_peak(held)
        for copy, view in back:
            view.copy_(copy)
        encoded = self.outputs(out, int(msg["out_offset"]))
        self.sync()
        return {"ok": True, "outputs": encoded, "facts": self.facts(out), "memory": memory}

    def memory_held(self) -> int | None:
        """On a GPU, the bytes this process's allocator holds, its peak counter reset (None: not measured)."""
        if self.device.type != "cuda":
            return None
        try:
            torch.cuda.reset_peak_memory_stats(self.device)
            return int(torch.cuda.memory_allocated(self.device))
        except (RuntimeError, AttributeError):  # a build without the allocator's statistics
            return None

    def memory_peak(self, held: int | None) -> dict[str, int] | None:
        """``{"held", "peak"}``: what the allocator held before the call and the most it held during it."""
        if held is None:
            return None
        try:
            return {"held": held, "peak": int(torch.cuda.max_memory_allocated(self.device))}
        except (RuntimeError, AttributeError):
            return None

    def op_timed(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """One timed call (GPU): sync, the lead's GPU spin, start event, forward, end event, sync."""
        args, back = self.inputs(msg["inputs"])
        self._poison(msg.get("poison", []))
        cuda = torch.cuda
        if self.stopwatch is None:
            self.stopwatch = (cuda.Event(enable_timing=True), cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]  # torch's Event is unannotated
        start, end = self.stopwatch
        lead = int(msg.get("lead_cycles", 0))
        trace = self.trace
        cuda.synchronize()
        host_start = time.perf_counter_ns()
        if trace is not None:
            trace.mark_start(lead)
        elif lead:
            cuda._sleep(lead)  # type: ignore[no-untyped-call]  # torch's _sleep is unannotated
        start.record()
        out = self.forward(args, msg.get("what", "a timed call"))
        end.record()
        if trace is not None:
            trace.mark_end()
        cuda.synchronize()
        host_ms = (time.perf_counter_ns() - host_start) / 1e6
        for copy, view in back:
            view.copy_(copy)
        encoded = self.outputs(out, int(msg["out_offset"]))
        self.sync()
        return {
            "ok": True,
            "event_ms": start.elapsed_time(end),
            "host_ms": host_ms,
            "outputs": encoded,
            "facts": self.facts(out),
        }

    def op_trace(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """``action``: ``probe`` (a one-call trace before any candidate code exists; kept), ``start`` (the timed calls
        from now on are traced), ``stop`` (the trace's summary, ``cudaforge.eval.timed_trace.analyse``)."""
        from cudaforge.eval.timed_trace import TimedTrace

        action = msg.get("action")
        if action == "probe":
            if self.trace_probe is None:
                self.trace_probe = _probe_trace(self.device, self.module is not None)
            return {"ok": True, **self.trace_probe}
        if action == "start":  # (the main series' first call next)
            gc.freeze()  # a collection in a timed call walks only what it made (a full one: 54-63 ms on a 2-core CPU)
            if self.device.type != "cuda":
                return {"ok": True, "traced": False, "note": "no trace without a GPU"}
            trace = TimedTrace((self.trace_probe or {}).get("learned"))
            try:
                trace.start()
            except Exception as exc:  # noqa: BLE001 - the verifier decides what a failed trace means
                return {"ok": True, "traced": False, "note": f"{type(exc).__name__}: {exc}"[:300]}
            self.trace = trace
            return {"ok": True, "traced": True}
        if action == "stop":
            trace, self.trace = self.trace, None
            if trace is None:
                return {"ok": True, "summary": None, "note": "no trace was running"}
            try:
                return {"ok": True, "summary": trace.stop()}
            except Exception as exc:  # noqa: BLE001
                return {"ok": True, "summary": None, "note": f"{type(exc).__name__}: {exc}"[:300]}
        raise _Fail("crashed", f"unknown trace action {action!r}")

    def op_batch(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """Calls back to back (no sync between them), one device sync, then every output into the arena."""
        return self._batch(msg, lambda args: self.forward(args, "a call of the timing cross-check"))

    def op_exchange(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        """The cross-check's batch path with a stand-in of ours for the forward (new tensors shaped like the outputs
        the trusted side gives, left unwritten), before any candidate code is loaded: what the path itself costs in
        this process (decoding, allocating, copying into the arena, the syncs), to set beside the candidate's batch."""
        if self.module is not None:
            raise _Fail("crashed", "the exchange is measured before the candidate is loaded")
        shaped, _ = self.inputs(msg["outputs"])

        def stand_in(args: list[Any]) -> Any:
            return _empty_like(shaped[0])

        return self._batch(msg, stand_in)

    def _batch(self, msg: dict[str, Any], forward: Any) -> dict[str, Any]:
        calls = [self.inputs(enc)[0] for enc in msg["inputs"]]
        outs = [forward(args) for args in calls]
        self.sync()
        arena = self._arena()
        arena.reset()
        arena._next = int(msg["out_offset"])
        encoded = []
        for out in outs:
            encoded.append(self.outputs(out, arena._next))
        self.sync()
        return {"ok": True, "outputs": encoded}

    def op_share(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        from cudaforge.eval.guards.runtime import kernel_share
        from cudaforge.languages import kernel_names as candidate_kernel_names

        args, _ = self.inputs(msg["inputs"])
        try:
            share = kernel_share(
                lambda: self.model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args]),
                candidate_kernel_names(msg["source"]),
                int(msg.get("calls", 3)),
            )
        except Exception as exc:  # noqa: BLE001 - the guard is skipped, not the evaluation
            return {"ok": True, "note": f"profiler share unavailable: {type(exc).__name__}: {exc}"[:300]}
        return {"ok": True, "share": share}


def _probe_trace(device: torch.device, loaded: bool) -> dict[str, Any]:
    """Two traced calls of ours (a small kernel between the markers) with the worker's own copies and fills between
    them: whether this process can trace the timed calls at all, and what the record of the timed calls needs to
    know (the markers' exact name, the timed stream, the names of the worker's own kernels between calls), all found
    before the candidate could interfere (``loaded`` says when it was too late)."""
    from cudaforge.eval.guards.runtime import poison_free_memory
    from cudaforge.eval.timed_trace import MARKER, TimedTrace, analyse

    if device.type != "cuda":
        return {"trace_ok": False, "note": "no GPU"}
    if loaded:
        return {"trace_ok": False, "note": "probed after the candidate was loaded"}
    started = time.perf_counter()
    trace = TimedTrace()
    try:
        work = torch.ones(4096, device=device)
        torch.cuda.synchronize()
        trace.start()
        for call in range(2):
            if call:  # what the worker does between two timed calls
                poison_free_memory([65536], device)
                torch.empty(64, 48, device=device).t().contiguous()
                torch.empty(16, device=device).copy_(torch.ones(16))
                torch.cuda.synchronize()
            trace.mark_start(1)
            work.mul_(2.0)
            trace.mark_end()
            torch.cuda.synchronize()
        events, _ = trace.events()
    except Exception as exc:  # noqa: BLE001 - no profiler here: the guard is not run, and says so
        return {"trace_ok": False, "note": f"{type(exc).__name__}: {exc}"[:300]}
    summary = analyse(events, 2)
    markers = sorted((e for e in events if e.kind == "kernel" and MARKER in e.name), key=lambda e: e.start_ns)
    ok = bool(summary["complete"]) and len(markers) == 4 and all(span > 0 for span in summary["span_ms"])
    if not ok:
        return {"trace_ok": False, "note": f"the probe's record did not delimit its calls: {summary}"[:300]}
    low, high = markers[1].end_ns, markers[2].start_ns  # the gap between the two calls
    io_names = sorted(
        {
            e.name
            for e in events
            if e.kind == "kernel" and MARKER not in e.name and e.start_ns >= low and e.end_ns <= high
        }
    )
    return {
        "trace_ok": True,
        "probe_s": round(time.perf_counter() - started, 4),
        "note": "",
        "learned": {"marker_name": markers[0].name, "stream": markers[0].stream, "io_names": io_names[:32]},
    }


def _empty_like(value: Any) -> Any:
    """New, unwritten tensors shaped like ``value`` (a tensor, or tuples and lists of them)."""
    if isinstance(value, torch.Tensor):
        return torch.empty_like(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_empty_like(v) for v in value)
    return value


def prepare(device: torch.device) -> dict[str, Any]:
    """What every candidate would otherwise pay for first: imports (Triton, the build hooks, torch's profiler)."""
    started = time.perf_counter()
    strict_fp32()
    poisoned = True
    if device.type == "cpu":
        from cudaforge.eval.guards.runtime import enable_cpu_poison

        poisoned = enable_cpu_poison()  # glibc fills every new allocation with 0x7F
    try:
        import triton  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        pass
    import torch.utils.cpp_extension  # noqa: F401

    import cudaforge.eval.extensions  # noqa: F401

    if device.type == "cuda":
        import torch._inductor  # noqa: F401 - what a first profiler session imports (seconds on a GPU node)
        import torch.profiler  # noqa: F401

        from cudaforge.eval.fastclose import warm_host

        warm_host()  # Triton's once-per-process costs of a first launch that need no GPU (0.4 s on an H200)
    return {"prepare_s": round(time.perf_counter() - started, 4), "poisoned": poisoned}


def main() -> None:
    """Serve the verifier until it says ``exit`` or goes away."""
    channel = Channel.from_fd(int(sys.argv[1]))
    device = torch.device(os.environ.get("CUDAFORGE_WORKER_DEVICE", "cpu"))
    facts = prepare(device)
    channel.send({"op": "hello", "pid": os.getpid(), "uid": os.getuid(), **facts})
    worker = Worker(channel, device)
    while True:
        try:
            msg, fds = channel.recv(None, accept_fds=True)
        except Exception:  # noqa: BLE001 - the verifier is gone
            os._exit(0)
        op = msg.get("op")
        handler = getattr(worker, f"op_{op}", None) if isinstance(op, str) else None
        if op == "exit":
            channel.send({"ok": True})
            os._exit(0)
        try:
            if handler is None:
                raise _Fail("crashed", f"unknown request {op!r}")
            reply = handler(msg, fds)
        except _Fail as failure:
            reply = {"ok": False, "status": failure.status, "message": failure.message}
        except (ArenaError, KeyError, TypeError, ValueError) as exc:
            reply = {"ok": False, "status": "crashed", "message": f"the worker could not serve {op!r}: {exc}"}
        except BaseException as exc:  # noqa: BLE001 - e.g. SystemExit raised by the candidate's code
            reply = {"ok": False, "status": "runtime_error", "message": f"{type(exc).__name__}: {exc}"[:2000]}
        try:
            channel.send(reply)
        except Exception:  # noqa: BLE001
            os._exit(0)


if __name__ == "__main__":
    main()
