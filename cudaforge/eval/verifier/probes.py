"""Measurements beside the timed calls: the launch-inclusive number, the precision probe and the profiler's share."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from cudaforge.eval.bounded import finite_number
from cudaforge.eval.verifier.common import (
    PRECISION_TRIALS,
    PROFILED_CALLS,
    Failure,
    clone_inputs,
    clone_output,
    same_bits,
)
from cudaforge.eval.verifier.correctness import call_reference
from cudaforge.eval.verifier.state import TimingState
from cudaforge.tasks.runtime import flatten_outputs


class Probes(TimingState):
    """The probes' part of ``Timing``."""

    def launch_inclusive(self, calls: Any) -> int:
        """The number KernelBench's harness and the CudaForge paper report, measured here on the same kernels: CUDA
        events around each call with no timing lead (the host's launch cost inside) and no L2 flush, interleaved, every
        output still checked. Stored beside ours (``EvalResult.launch_inclusive``), never as the speedup. Run right
        before the main series, whose warm-up it is (``timing.main_warmup``); returns the trials it ran (0: none)."""
        from cudaforge.eval.timing import Stopwatch, speedup

        n = int(self.cfg.launch_inclusive_trials)
        if n <= 0:
            return 0
        main, self.stopwatch = self.stopwatch, Stopwatch(self.device, False, 0.0)
        times: dict[str, list[float]] = {
            "ref": [],
            "ref_host": [],
            "cand": [],
            "cand_host": [],
            "cand_wall": [],
            "cand_trial": [],
        }
        try:
            with torch.cuda.device(self.device):
                self._series([-50_002, -50_001] + [50_000 + k for k in range(n)], calls, times)  # 2 warm-ups, n kept
        finally:
            self.stopwatch = main
        if calls.failure is not None or not times["cand"]:
            return n + 2
        s = speedup(
            times["ref"],
            times["cand"],
            self.cfg.baseline.value,
            paired=bool(self.cfg.interleave),
            statistic=self.cfg.speedup_statistic.value,
        )
        median: Callable[[list[float]], float] = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
        self.result.launch_inclusive = {
            "reference_ms": median(times["ref"]),
            "candidate_ms": median(times["cand"]),
            "speedup": s.median,
            "ci_low": s.ci_low,
            "ci_high": s.ci_high,
            "trials": n,
            "how": "CUDA events around each call, no timing lead, no L2 flush",
        }
        return n + 2

    def precision_probe(self) -> None:
        """The reference under TF32 and in bf16, each checked against the reference as timed on fresh inputs
        with the task's tolerance and timed alone (``cudaforge.eval.precision``); the candidate's process frozen."""
        from cudaforge.eval import precision

        cfg, result = self.cfg, self.result
        main = precision.policy_name(cfg.tf32.value)
        inputs = [self.fresh_inputs(70_000)]
        expected = [clone_output(call_reference(self.ref_model, clone_inputs(x))) for x in inputs]
        dtypes = [
            str(t.dtype).replace("torch.", "") for t in flatten_outputs(expected[0]) if isinstance(t, torch.Tensor)
        ]
        record = precision.policy_record(cfg.tf32.value, dtypes)
        result.precision = record
        if not cfg.precision_probe or cfg.baseline.value != "eager":
            record["probe"] = "off" if not cfg.precision_probe else "only for the eager baseline"
            return
        known = precision.reusable_probe(self.known_probe, main)
        if known is not None:
            record.update(known, probe_reused=True)
            self.probe = precision.probe_tuple(main, known)
            return
        try:
            bf16 = precision.bf16_model(self.ref_model)
        except Exception as exc:  # noqa: BLE001 - a model that cannot be cast is probed under TF32 only
            bf16, record["bf16_note"] = None, f"{type(exc).__name__}: {exc}"[:200]
        runners: dict[str, Callable[[list[Any]], Any]] = {
            p: partial(self._under, p) for p in ("strict_fp32", "tf32") if p != main
        }
        runners[main] = lambda xs: self._under(main, xs)
        if bf16 is not None:
            runners["bf16"] = lambda xs: precision.bf16_call(bf16, xs, expected[0])
        allowed, errors, solo, same = {}, {}, {}, []
        frozen = self.cand.process.stop()
        try:
            mains = [runners[main](clone_inputs(x)) for x in inputs]
            for name, run in runners.items():
                if name == main:
                    continue
                problem, identical = "", True
                try:
                    for x, exp, ours in zip(inputs, expected, mains):
                        out = run(clone_inputs(x))
                        identical = identical and same_bits(out, ours)
                        mismatch = self.check(exp, out, 0)
                        if mismatch is not None:
                            problem = mismatch.summary()[:200]
                            break
                except Exception as exc:  # noqa: BLE001 - a precision the reference cannot run in is not allowed
                    problem, identical = f"{type(exc).__name__}: {exc}"[:200], False
                allowed[name], errors[name] = not problem, problem
                if identical and not problem:
                    same.append(name)  # the same kernels' bits: the same time, not measured again
                elif name != "bf16" or not problem:  # bf16 is timed only where the tolerance allows it
                    solo[name] = self._solo(run)
            if solo:
                solo[main] = self._solo(runners[main])
        finally:
            if frozen:
                self.cand.process.cont()
        allowed[main] = True
        record.update(
            reference_solo_ms={k: round(v, 6) for k, v in solo.items()},
            within_tolerance=allowed,
            same_bits_as_main=same,
            mismatch={k: v for k, v in errors.items() if v},
        )
        self.probe = precision.probe_tuple(main, record)

    def _solo(self, run: Callable[[list[Any]], Any]) -> float:
        """The median time of ``run`` alone on fresh inputs, timed like the reference (L2 flushed, the lead)."""
        from cudaforge.eval.timing import time_one

        seed = secrets.randbits(40)
        return (
            time_one(
                run,
                trials=PRECISION_TRIALS,
                warmup=2,
                flush_l2=self.cfg.flush_l2,
                device=self.device,
                lead_us=self.cfg.timing_lead_us,
                make_args=lambda t: [self.fresh_inputs(seed + t)],
            )
            .stats()
            .median
        )

    def _under(self, policy: str, inputs: list[Any]) -> Any:
        from cudaforge.eval.precision import numerics

        with numerics(policy):
            return self.reference_fn(*inputs)

    def kernel_share(self) -> dict[str, Any] | None:
        """The profiler's split of the candidate's GPU time, as the worker reports it (a second-line guard)."""
        encoded, _ = self.cand.put_inputs(self.fresh_inputs(-10_000), self.trials.out_bytes)
        try:
            reply = self.cand._request(
                {"op": "share", "inputs": encoded, "source": self.source, "calls": PROFILED_CALLS}
            )
        except Failure as failure:
            self.result.fingerprint.setdefault("guard_notes", []).append(
                f"profiler share unavailable: {failure.status.value}: {failure.message}"[:300]
            )
            return None
        share = checked_share(reply.get("share"))
        if share is None:
            self.result.fingerprint.setdefault("guard_notes", []).append(
                str(reply.get("note") or "profiler share unavailable or malformed")[:300]
            )
        return share


def checked_share(share: Any) -> dict[str, Any] | None:
    """The worker's ``share`` reply (its own word: any JSON) rebuilt from what is well formed, or None: two finite
    times, a library share in [0, 1], and at most five ``[name, ms]`` pairs per side, names cut to 120 characters.
    What goes into the fingerprint and the findings is this, never the reply itself."""
    if not isinstance(share, dict):
        return None
    own_ms, library_ms, fraction = share.get("own_ms"), share.get("library_ms"), share.get("library_share")
    if not (finite_number(own_ms) and finite_number(library_ms) and finite_number(fraction, 1.0 + 1e-9)):
        return None

    def top(entries: Any) -> list[list[Any]] | None:
        if not isinstance(entries, list):
            return None
        pairs = [
            [e[0][:120], float(e[1])]
            for e in entries[:5]
            if isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) and finite_number(e[1])
        ]
        return pairs if len(pairs) == min(len(entries), 5) else None

    own, library = top(share.get("own", [])), top(share.get("library"))
    if own is None or library is None:
        return None
    return {
        "own_ms": float(own_ms),
        "library_ms": float(library_ms),
        "library_share": float(fraction),
        "own": own,
        "library": library,
    }
