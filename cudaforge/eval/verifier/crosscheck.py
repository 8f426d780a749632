"""The timing cross-check: batches of calls timed by the verifier's own clock, and the exchange path's cost measured
before the candidate is loaded."""

from __future__ import annotations

import math
import time
from types import ModuleType
from typing import Any, cast

import torch

from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate
from cudaforge.eval.verifier.common import (
    CROSSCHECK_RETRIES,
    CROSSCHECK_ROUNDS,
    Failure,
    clone_inputs,
    clone_output,
    finite_or_none,
    output_budget,
    structure,
    sync,
)
from cudaforge.eval.verifier.correctness import call_reference
from cudaforge.eval.verifier.state import TimingState
from cudaforge.eval.worker.exchange import Arena, ArenaError, decode, encode, tensor_bytes
from cudaforge.tasks.runtime import make_inputs
from cudaforge.types import CorrectnessDiff, EvalResult, EvalStatus


def crosscheck_calls(per_call: int, wanted: int, max_gb: float) -> int:
    """Calls in the timing cross-check's batch: ``wanted``, fewer when their inputs and outputs exceed ``max_gb``,
    but never fewer than two (one call has no back-to-back neighbour to hide work behind, and a task too big for
    the budget must not go unchecked)."""
    return max(2, min(wanted, int(max_gb * (1 << 30)) // max(per_call, 1)))


class CrossCheck(TimingState):
    """The cross-check's part of ``Timing``."""

    def crosscheck(self, times: dict[str, list[float]]) -> dict[str, Any]:
        """Batches of calls on fresh inputs, back to back, timed by this process's clock from the moment the inputs
        are in the arena to the worker's answer (every output then checked): a time the candidate cannot shrink.
        The reference runs the same path here (its inputs decoded from the arena, its outputs written back into it),
        so its gap between that clock and its event time stands for the exchange's own cost. Each side is timed in
        ``CROSSCHECK_ROUNDS`` batches and keeps its fastest: a scheduling hiccup cannot fire the guard, a shortened
        time cannot hide in it. A gap is measured again (``CROSSCHECK_RETRIES``) before it fires: on the H200 an honest
        kernel was rejected once while another process profiled with ncu on the same GPU (2026-12-03, call 1)."""
        cfg = self.cfg
        per_call = tensor_bytes(self.fresh_inputs(-1)) + self.trials.out_bytes
        calls = crosscheck_calls(per_call, int(cfg.crosscheck_calls), float(cfg.crosscheck_max_gb))
        numbers: dict[str, Any] = {"calls": calls}
        free = torch.cuda.mem_get_info(self.device)[0] if self.device.type == "cuda" else None
        if free is not None and 2 * calls * per_call > free:  # the arena, and this side's inputs and outputs
            numbers["note"] = (
                f"not run: two calls' inputs and outputs ({2 * per_call / 2**30:.1f} GiB) twice over "
                f"exceed the GPU's free memory ({free / 2**30:.1f} GiB); the reported time is unchecked"
            )
            self.result.fingerprint.setdefault("guard_notes", []).append("timing cross-check " + numbers["note"])
            return numbers
        arena = self.cand.ensure_arena(calls * per_call + (1 << 20))
        ref_walls, cand_walls = [], []
        # the worker's own report, before the trace raised any call to its device span: a timer that shrinks its
        # times gains nothing from the raise, but it is still a lie, and this is the guard that says so
        said = times.get("cand_reported") or times["cand"]
        reported = sorted(said)[len(said) // 2]
        reference_reported = sorted(times["ref"])[len(times["ref"]) // 2]
        # the path's own cost: the reference's through the arena here, or the worker's measured before the candidate
        # was loaded (``exchange_cost``), whichever is larger: neither can be changed by the candidate
        exchange = finite_or_none(self.result.fingerprint.get("timing_crosscheck_exchange_ms")) or 0.0
        p = self.guard.policies
        # the candidate's own launch path (a Triton launcher, an extension's wrapper) may cost more host time than the
        # reference's: the timing lead hides up to its length of it from the timed calls by design, so a gap below the
        # lead (or the slack, when larger) cannot tell a host-bound honest kernel from a lie
        allowed = max(p.threshold("crosscheck_slack_ms"), self.stopwatch.lead_us / 1e3)
        round_ = 0
        for attempt in range(1 + CROSSCHECK_RETRIES):  # noqa: B007 (read after the loop)
            for _ in range(CROSSCHECK_ROUNDS):
                batch = [self.fresh_inputs(20_000 + 100 * round_ + k) for k in range(calls)]
                round_ += 1
                frozen = self.cand.process.stop()
                try:
                    expected, wall = self._reference_through_arena(arena, batch)
                finally:
                    if frozen:
                        self.cand.process.cont()
                ref_walls.append(wall)
                arena.reset()
                encoded = [encode(list(x), arena.put) for x in batch]
                sync(self.device)
                started = time.perf_counter()
                reply = self.cand._request(
                    {"op": "batch", "inputs": encoded, "out_offset": -(-arena._next // 256) * 256}
                )
                cand_walls.append(time.perf_counter() - started)
                self._check_batch(reply.get("outputs"), expected, calls)
            candidate_ms = max(0.0, min(cand_walls) - self.cand.process.rtt_s) * 1e3 / calls
            ref_wall = min(ref_walls) * 1e3 / calls
            path_overhead = max(max(0.0, ref_wall - reference_reported), exchange)
            gap = candidate_ms - reported - path_overhead
            firing = candidate_ms > p.threshold("crosscheck_ratio") * reported and gap > allowed
            if not firing:
                break
            # Another process's work on this GPU (a profiler's replays, another program) can slow a whole batch; a
            # shortened time stays short however often it is measured, so the guard fires only if it persists.
        numbers.update(
            candidate_observed_ms=round(candidate_ms, 5),
            candidate_reported_ms=round(reported, 5),
            reference_observed_ms=round(ref_wall, 5),
            reference_event_ms=round(reference_reported, 5),
            round_trip_ms=round(self.cand.process.rtt_s * 1e3, 4),
            rounds=round_,
        )
        numbers.update(unexplained_ms=round(gap, 5), allowed_ms=round(allowed, 5), exchange_ms=round(exchange, 5))
        if firing:
            numbers["evidence"] = (
                f"the candidate reported a median of {reported:.4f} ms per call, but {calls} calls on fresh inputs took "
                f"{candidate_ms:.4f} ms each by the verifier's clock (the reference: {reference_reported:.4f} ms by its "
                f"events, {ref_wall:.4f} ms by the same clock and path): {gap:.4f} ms per call are not in the reported "
                f"time (allowed: {allowed:.4f} ms), in each of {attempt + 1} measurements. The timing was shortened "
                "inside the candidate's process (patched events or timers, work on other streams or threads, work done "
                "before the timed region), or a call leaves state behind that slows the next one down. Time nothing "
                "yourself; do all the work inside forward."
            )
        return numbers

    def _reference_through_arena(self, arena: Arena, batch: list[list[Any]]) -> tuple[list[Any], float]:
        """The reference over ``batch`` the way the worker runs a candidate's batch: inputs placed in the arena and
        read back as views (copies on the device from a host arena), calls back to back, one sync, every output
        written into the arena, one sync. Its outputs (cloned, after the clock) and the wall time in seconds."""
        arena.reset()
        encoded = [encode(list(x), arena.put) for x in batch]
        out_offset = -(-arena._next // 256) * 256

        def get(desc: dict[str, Any]) -> torch.Tensor:
            view = arena.view(desc)
            return view if view.device == self.device else view.to(self.device)

        def put(t: torch.Tensor) -> dict[str, Any]:
            return arena.put(t if t.layout == torch.strided else t.to_dense())

        sync(self.device)
        started = time.perf_counter()
        outs = [self.reference_fn(*decode(enc, get)) for enc in encoded]
        sync(self.device)
        arena.reset()
        arena._next = out_offset
        for out in outs:
            encode(out, put)
        sync(self.device)
        wall = time.perf_counter() - started
        return [clone_output(o) for o in outs], wall

    def _check_batch(self, outs: Any, expected: list[Any], calls: int) -> None:
        if not isinstance(outs, list) or len(outs) != calls:
            raise Failure(EvalStatus.INCORRECT, "the cross-check batch did not return one output per call")
        for k, (enc, exp) in enumerate(zip(outs, expected)):
            try:
                actual = self.cand.read_back(enc, self.trials.out_bytes)
            except ArenaError as exc:
                raise Failure(EvalStatus.INCORRECT, f"the cross-check's outputs could not be read: {exc}") from None
            diff = structure(self.cfg, exp, actual)
            mismatch = self.check(exp, actual, k) if diff is None else None
            # a wrong output without a structure problem has a mismatch (the casts below)
            if (diff or mismatch is not None) and not self.cfg.stricter_checks_decide:
                self.reported_wrong(
                    f"cross-check call {k} of {calls}: a wrong output",
                    diff or cast(CorrectnessDiff, mismatch).summary(),
                )
                continue
            if diff or mismatch is not None:
                self.guard.incorrect(
                    "timed_output",
                    f"cross-check call {k} of {calls}: an output produced during a "
                    "batch of back-to-back calls was wrong (results must not depend on earlier calls, and "
                    "every call must finish its work before the batch answers)",
                    "an output of the timing cross-check was wrong\n"
                    + (diff or cast(CorrectnessDiff, mismatch).summary()),
                )


def exchange_cost(
    ref_model: Any,
    ref_module: ModuleType,
    cand: Candidate,
    device: torch.device,
    cfg: EvalConfig,
    result: EvalResult,
    seed: int,
) -> None:
    """The timing cross-check's batch path through the worker, timed by this process's clock while the worker holds
    only our code: the task's inputs placed in the arena as the cross-check places them, a stand-in of ours for the
    forward (unwritten tensors shaped like the reference's outputs), the outputs copied into the arena, the syncs.
    Its time per call (``fingerprint["timing_crosscheck_exchange_ms"]``) is what that path costs without any kernel:
    the cross-check sets it beside the candidate's batch (a 1.6 GB output's copies and allocations cost the worker
    more than the reference's own path here, and honest kernels came out 0.53 ms short on an H200)."""
    inputs = make_inputs(ref_module, seed=seed + 10_000, device=device)
    outputs = call_reference(ref_model, clone_inputs(inputs))
    per_call = tensor_bytes(inputs) + output_budget(outputs)
    calls = crosscheck_calls(per_call, int(cfg.crosscheck_calls), float(cfg.crosscheck_max_gb))
    if 2 * calls * per_call > torch.cuda.mem_get_info(device)[0]:
        return
    arena = cand.ensure_arena(calls * per_call + tensor_bytes(outputs) + (1 << 20))
    best = math.inf
    for _ in range(CROSSCHECK_ROUNDS):
        arena.reset()
        shaped = encode([outputs], arena.put)
        encoded = [encode(list(inputs), arena.put) for _ in range(calls)]
        sync(device)
        started = time.perf_counter()
        cand._request(
            {"op": "exchange", "inputs": encoded, "outputs": shaped, "out_offset": -(-arena._next // 256) * 256}
        )
        best = min(best, time.perf_counter() - started)
    result.fingerprint["timing_crosscheck_exchange_ms"] = round(max(0.0, best - cand.process.rtt_s) * 1e3 / calls, 5)
    result.fingerprint["timing_crosscheck_exchange_arena"] = arena.kind
