"""The candidate's model as the verifier sees it: every call crosses the arena to the sandboxed worker."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.common import Failure, sync
from cudaforge.eval.worker.exchange import (
    Arena,
    ArenaError,
    Budget,
    DeviceArena,
    OutputsTooLarge,
    decode,
    encode,
    host_arena,
    tensor_bytes,
)
from cudaforge.eval.worker.remote import CandidateProcess, WorkerFailure
from cudaforge.types import EvalStatus


class Candidate:
    """The candidate's model, seen from here: every call crosses the arena to the sandboxed worker."""

    def __init__(
        self, process: CandidateProcess, device: torch.device, deadline: Callable[[], float], notes: list[str]
    ) -> None:
        self.process, self.device, self.deadline = process, device, deadline
        self.arena: Arena | None = None
        self.notes = notes
        self.inputs_after: list[Any] = []
        """The candidate's inputs after its last call: views of the arena."""
        self.facts: Any = None
        self._input_descs: Any = None
        self.spent: dict[str, float] = {}
        """Seconds spent per part of the exchange (arena, put, worker, read_back), for the phase breakdowns."""
        self.memory: Any = None
        """The worker's account of its device memory in the last call (``{"held", "peak"}`` bytes; None on a CPU):
        untrusted, read through ``cudaforge.eval.verifier.correctness.Memory``."""
        self.on_build: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        """Serves the worker's build requests during any request (a ``load_inline`` left to ``forward``)."""

    def _add(self, part: str, since: float) -> float:
        now = time.perf_counter()
        self.spent[part] = self.spent.get(part, 0.0) + now - since
        return now

    def ensure_arena(self, nbytes: int) -> Arena:
        """An arena of at least ``nbytes`` (a new one, sent to the worker, when the current one is smaller)."""
        if self.arena is not None and self.arena.size >= nbytes:
            return self.arena
        since = time.perf_counter()
        size = max(nbytes, 1 << 20, 2 * (self.arena.size if self.arena else 0))
        old = self.arena
        arena: Arena | None = None
        if self.device.type == "cuda":
            try:
                arena = DeviceArena.create(size)
            except ArenaError as exc:
                note = f"device arena unavailable ({exc}): inputs and outputs cross through host memory"
                if note not in self.notes:
                    self.notes.append(note)
        if arena is None:
            arena = host_arena(size)
        self.process.request(
            {"op": "arena", "kind": arena.kind, "size": arena.size}, timeout_s=self.deadline(), fds=(arena.fd,)
        )
        if old is not None:
            old.close()
        self.arena = arena
        self._add("arena", since)
        return arena

    def put_inputs(self, inputs: list[Any], extra_out: int) -> tuple[Any, int]:
        """Write ``inputs`` into the arena (sized for them and ``extra_out`` bytes of outputs); (encoding, out offset)."""
        arena = self.ensure_arena(tensor_bytes(inputs) + extra_out + 4096)
        arena.reset()
        encoded = encode(list(inputs), arena.put)
        sync(self.device)
        self._input_descs = encoded
        return encoded, -(-arena._next // 256) * 256

    def read_back(self, encoded: Any, out_bytes: int) -> Any:
        """A value from the arena, copied into this process's own memory: bounds-checked, and never more than
        ``out_bytes`` (the budget of the call's outputs, ``output_budget`` of the reference's) nor more than
        ``MAX_OUTPUT_TENSORS`` tensors, each checked before it is copied. ArenaError if malformed, OutputsTooLarge
        past the budget."""
        assert self.arena is not None
        arena = self.arena
        return decode(encoded, lambda desc: arena.view(desc).to(self.device, copy=True), Budget(out_bytes))

    def outputs(self, reply: dict[str, Any], out_bytes: int) -> Any:
        """The outputs of a reply, copied out of the arena (at most ``out_bytes``: ``read_back``); a malformed or
        oversized description makes the candidate incorrect."""
        try:
            value = self.read_back(reply.get("outputs"), out_bytes)
        except OutputsTooLarge as exc:
            raise Failure(EvalStatus.INCORRECT, str(exc)) from None
        except ArenaError as exc:
            raise Failure(EvalStatus.INCORRECT, f"the candidate's outputs could not be read: {exc}") from None
        self.facts = reply.get("facts")
        self.inputs_after = self.views(self._input_descs)
        return value

    def views(self, encoded: Any) -> Any:
        """A value as it stands in the arena, not copied (the input_mutation check reads each byte once; what the
        candidate writes there later changes no verdict)."""
        assert self.arena is not None
        arena = self.arena

        def get(desc: dict[str, Any]) -> torch.Tensor:
            view = arena.view(desc)
            return view if view.device == self.device else view.to(self.device)

        return decode(encoded, get)

    def call(self, inputs: list[Any], *, what: str, poison: list[int], out_bytes: int) -> Any:
        """One call of ModelNew on ``inputs``; its outputs (this process's copies)."""
        clock = time.perf_counter()
        encoded, offset = self.put_inputs(inputs, out_bytes)
        clock = self._add("put", clock)
        reply = self._request({"op": "call", "inputs": encoded, "out_offset": offset, "poison": poison, "what": what})
        self.memory = reply.get("memory")
        clock = self._add("first_call" if "calls" not in self.spent else "calls", clock)
        self.spent.setdefault("calls", 0.0)
        value = self.outputs(reply, out_bytes)
        self._add("read_back", clock)
        return value

    def _request(self, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        try:
            return self.process.request(
                message, timeout_s=self.deadline() if timeout_s is None else timeout_s, on_build=self.on_build
            )
        except WorkerFailure as failure:
            raise Failure(EvalStatus(failure.status), failure.message) from None


def start_worker(device: torch.device, cfg: EvalConfig, logs: str) -> CandidateProcess:
    from cudaforge.eval.worker.early import new_worker

    return new_worker(device.type, cfg, logs)
