"""The timed phase (GPU): interleaved, checked calls under the GPU's lock, in batches with the GPU's state read."""

from __future__ import annotations

import gc
import hashlib
import os
import secrets
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from cudaforge.eval.guards import runtime as guards
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate
from cudaforge.eval.verifier.common import (
    PROFILE_DIR_ENV,
    Failure,
    Guards,
    compare_outputs,
    facts_problem,
    finite_or_none,
    sync,
    tolerance,
)
from cudaforge.eval.verifier.correctness import Trials
from cudaforge.eval.verifier.crosscheck import CrossCheck
from cudaforge.eval.verifier.probes import Probes
from cudaforge.eval.verifier.trace import Trace
from cudaforge.eval.verifier.verdict import Verdict
from cudaforge.eval.worker.exchange import ArenaError, Driver
from cudaforge.tasks.runtime import grad_mode, make_inputs
from cudaforge.types import CorrectnessDiff, EvalResult, EvalStatus, Phase, Task
from cudaforge.vendors import pinned


def main_warmup(warmup: int, warmed: int) -> int:
    """The warm-up trials of the main series when ``warmed`` trials (the launch-inclusive series: its own warm-ups and
    its checked calls) ran right before it: ``eval.warmup`` in all, at least 2 of them (or all, when fewer are set)
    the main series' own, since its stopwatch (L2 flush, lead) and the trace start with them."""
    return max(min(warmup, 2), warmup - warmed)


class Timing(Trace, CrossCheck, Probes, Verdict):
    """The timed phase of one evaluation (GPU): interleaved calls, then the cross-check and the guards."""

    def __init__(
        self,
        task: Task,
        ref_module: ModuleType,
        ref_model: Any,
        cand: Candidate,
        device: torch.device,
        cfg: EvalConfig,
        result: EvalResult,
        guard: Guards,
        trials: Trials,
        source: str,
    ) -> None:
        from cudaforge.eval.timing import Stopwatch

        self.task, self.ref_module, self.ref_model, self.cand, self.source = task, ref_module, ref_model, cand, source
        self.device, self.cfg, self.result, self.guard, self.trials = device, cfg, result, guard, trials
        self.key = secrets.token_bytes(16)
        """Each timed trial's seed is a keyed hash of its number (``trial_seed``): the candidate cannot know the
        timed inputs before it gets them, nor search the seed from the first ones it gets and compute the rest
        ahead (a 40-bit seed plus the trial's number could be searched on the GPU within the phase's deadline)."""
        self.stopwatch = Stopwatch(device, cfg.flush_l2, cfg.timing_lead_us)
        try:
            self.driver: Driver | None = Driver()
        except ArenaError:
            self.driver = None
        self.probe: tuple[str, dict[str, float], dict[str, bool]] | None = None
        """The precision probe's (main policy, solo times, within tolerance), once it ran."""
        self.known_probe: dict[str, Any] | None = None
        """The probe of the same task on this GPU under the same settings, measured while an earlier candidate was
        evaluated (``Evaluator`` keeps it; ``cudaforge.eval.precision.reusable_probe``): it depends on the reference
        alone, so it is used as it is instead of being measured again."""
        self.traced: list[int] | None = None
        """The trials of the candidate's timed calls in the order they ran under the trace (None: no trace)."""
        self.trace_note = ""
        self.warmed = (0, 0)
        """The trials before the main series: the launch-inclusive series' (its warm-ups included), the main series'
        own warm-ups."""
        self.reference_fn = ref_model
        if cfg.baseline.value == "compile":
            self.reference_fn = torch.compile(ref_model, mode=cfg.compile_mode)

    def fresh_inputs(self, trial: int) -> list[Any]:
        """The inputs of timed trial ``trial``: new ones every trial, or (``eval.fresh_inputs=false``) the same."""
        offset = trial if self.cfg.fresh_inputs else 0
        return make_inputs(self.ref_module, seed=self.trial_seed(offset), device=self.device)

    def trial_seed(self, trial: int) -> int:
        """The 64-bit seed of timed trial ``trial``'s inputs: BLAKE2b of its number under this evaluation's secret."""
        digest = hashlib.blake2b(int(trial).to_bytes(8, "little", signed=True), key=self.key, digest_size=8).digest()
        return int.from_bytes(digest, "little")

    def check(self, expected: Any, actual: Any, trial: int) -> CorrectnessDiff | None:
        atol, rtol = tolerance(self.task, expected, self.cfg)
        return compare_outputs(self.cfg, expected, actual, atol=atol, rtol=rtol, trial=trial, variant="timing")

    def reference_call(self, inputs: list[Any]) -> tuple[float, float, Any]:
        """One timed reference call on ``inputs`` (the reference's own copy, ``TimedCalls.make_args``: not cloned
        again), with every process of the candidate's sandbox frozen meanwhile."""
        frozen = self.cand.process.stop()
        try:
            return self.stopwatch.measure(self.reference_fn, inputs)
        finally:
            if frozen:
                self.cand.process.cont()

    def candidate_call(self, inputs: list[Any], trial: int) -> tuple[float, float, float, Any]:
        """One timed candidate call: inputs into the arena, persisting L2 reset, L2 flushed, then the worker times it.
        Returns (reported event ms, reported host ms, this process's wall ms around the request, outputs)."""
        encoded, offset = self.cand.put_inputs(inputs, self.trials.out_bytes)
        if self.driver is not None:
            try:
                self.driver.reset_persisting_l2()
            except ArenaError:
                pass
        if self.stopwatch.flusher is not None:
            self.stopwatch.flusher.flush()
        sync(self.device)
        started = time.perf_counter()
        reply = self.cand._request(
            {
                "op": "timed",
                "inputs": encoded,
                "out_offset": offset,
                "lead_cycles": self.stopwatch.lead_cycles,
                "what": f"timed call {trial}",
                "poison": self.trials.poison_sizes,
            }
        )
        wall_ms = (time.perf_counter() - started) * 1e3
        event_ms, host_ms = finite_or_none(reply.get("event_ms")), finite_or_none(reply.get("host_ms"))
        if event_ms is None or host_ms is None:
            raise Failure(EvalStatus.CRASHED, "the worker reported a timing that is not a non-negative number")
        return event_ms, host_ms, wall_ms, self.cand.outputs(reply, self.trials.out_bytes)

    def run(self, progress: Callable[[str], None], on_locked: Callable[[], object] = lambda: None) -> None:
        from cudaforge.eval.fingerprint import gpu_state
        from cudaforge.hardware.gpu_lock import gpu_lock

        cfg, result = self.cfg, self.result
        calls = guards.TimedCalls(
            self.fresh_inputs,
            self.check,
            self.device,
            [],
            reference=self.ref_model,
            same_inputs=not cfg.fresh_inputs,
            owned_outputs=True,
        )
        clock = time.perf_counter()
        result.fingerprint["gpu_state_before"] = gpu_state(0)
        spent = {"gpu_state": time.perf_counter() - clock}
        times: dict[str, list[float]] = {
            "ref": [],
            "ref_host": [],
            "cand": [],
            "cand_host": [],
            "cand_wall": [],
            "cand_trial": [],
        }
        progress("gpu_wait")  # the trusted side takes the GPU's lock, on the candidate's behalf
        with gpu_lock(pinned() or "0") as waited, grad_mode(cfg.no_grad):
            progress(Phase.TIMING.value)
            on_locked()  # the wait for the lock is not the candidate's time
            result.fingerprint["gpu_lock_wait_s"] = round(waited, 3)
            collecting = gc.isenabled()
            gc.disable()  # as timeit does: no collection's pause inside the wall clock around a candidate's call
            try:
                clock = time.perf_counter()
                warmed = self.launch_inclusive(calls)  # first: its calls warm the main series up (checked as ever)
                spent["launch_inclusive"] = time.perf_counter() - clock
                clock = time.perf_counter()
                self.start_trace()
                with torch.cuda.device(self.device):
                    self.warmed = (warmed, main_warmup(int(cfg.warmup), warmed))
                    result.fingerprint["trials_before_main"] = {"launch_inclusive": warmed, "warmup": self.warmed[1]}
                    self._series(range(-self.warmed[1], 0), calls, times)
                    self._batches(calls, times, spent)
            finally:
                if collecting:
                    gc.enable()
            spent["trials"] = time.perf_counter() - clock - spent.get("telemetry", 0.0)
            clock = time.perf_counter()
            untimed = self.stop_trace(times)
            spent["trace"] = time.perf_counter() - clock
            result.fingerprint["timing_lead_us"] = self.stopwatch.lead_us
            if self.stopwatch.lead_note:
                result.fingerprint.setdefault("timing_notes", []).append(self.stopwatch.lead_note)
            crosscheck = share = None
            if calls.failure is None:
                clock = time.perf_counter()
                crosscheck = self.crosscheck(times)
                spent["crosscheck"] = time.perf_counter() - clock
                clock = time.perf_counter()
                share = self.kernel_share()
                spent["kernel_share"] = time.perf_counter() - clock
                clock = time.perf_counter()
                try:
                    self.precision_probe()
                except Exception as exc:  # noqa: BLE001 - the probe informs the report; it never decides the verdict
                    result.precision["probe_note"] = f"the precision probe failed: {type(exc).__name__}: {exc}"[:300]
                spent["precision_probe"] = time.perf_counter() - clock
        result.fingerprint["gpu_state_after"] = gpu_state(0)
        if calls.failure is not None:
            failure = calls.failure
            if failure["diff"]:
                self.guard.incorrect(
                    failure["guard"],
                    failure["evidence"],
                    "an output produced during the timed calls was wrong\n" + failure["diff"],
                )
            self.guard.fire(failure["guard"], failure["evidence"])
        if calls.failure is None:
            self.guard.add(untimed)
        self.finish(times, crosscheck, share, spent, calls)
        self.dump_series(times)

    def dump_series(self, times: dict[str, list[float]]) -> None:
        """For benchmarks (``PROFILE_DIR_ENV`` set): the kept trials' times (ms), each call's wall around the worker's
        request among them, written beside the profile as ``series-<pid>-<ns>.json``. Unset: nothing is written."""
        folder = os.environ.get(PROFILE_DIR_ENV)
        if not folder:
            return
        import json
        from pathlib import Path

        record = {
            "task": self.task.id,
            "stopped_early": self.result.fingerprint.get("timing_stopped_early"),
            "warmup": int(self.cfg.warmup),
            "launch_inclusive_trials": self.warmed[0],
            "main_warmup": self.warmed[1],
            **{key: [round(float(v), 5) for v in values] for key, values in times.items()},
        }
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"series-{os.getpid()}-{time.time_ns()}.json").write_text(json.dumps(record))

    def _series(self, trials: Any, calls: Any, times: dict[str, list[float]]) -> None:
        """Timed calls of ``trials`` (negative: warm-up, timed and not kept): interleaved (reference first on even
        trials, candidate first on odd ones), or all of the reference's, then all of the candidate's. A wrong output
        stops the series, unless ``eval.stricter_checks_decide=false``: then it is a reported finding."""
        if self.cfg.interleave:
            for trial in trials:
                calls.draw(trial)
                for role in ("reference", "candidate") if trial % 2 == 0 else ("candidate", "reference"):
                    self._timed(role, trial, self._args(role, trial, calls), calls, times)
                if calls.failure is not None and not self._only_reported(calls):
                    return
            return
        for role in ("reference", "candidate"):
            for trial in trials:
                self._timed(role, trial, self._args(role, trial, calls), calls, times)
                if calls.failure is not None and not self._only_reported(calls):
                    return

    @staticmethod
    def _args(role: str, trial: int, calls: Any) -> list[Any]:
        """The inputs of ``role``'s call in ``trial``: the reference's own copy, made right before its call (so they
        are as warm in the L2 as the candidate's, written into the arena right before its call, when the L2 is not
        flushed); the candidate's call reads ``calls.pristine`` through the arena (drawn here, unless drawn)."""
        if role == "reference":
            args: list[Any] = calls.make_args(trial)
            return args
        calls.draw(trial)
        pristine: list[Any] = calls.pristine
        return pristine

    def _only_reported(self, calls: Any) -> bool:
        """Under ``eval.stricter_checks_decide=false``, a wrong timed output (not an input changed, not a lazy output:
        those keep their guards' policies) becomes a reported ``timed_output`` finding and the series goes on."""
        failure = calls.failure
        if self.cfg.stricter_checks_decide or not failure or not failure.get("diff"):
            return False
        self.reported_wrong(failure["evidence"], failure["diff"])
        calls.failure = None
        return True

    def reported_wrong(self, evidence: str, diff: str) -> None:
        """A wrong output our stricter checks found, kept as a report (the first one of each check only)."""
        findings = self.result.guard_findings
        if not any(f.get("guard") == "timed_output" for f in findings):
            findings.append(self.guard.policies.found("timed_output", f"{evidence}\n{diff}"[:2000], verdict="report"))

    def _batches(self, calls: Any, times: dict[str, list[float]], spent: dict[str, float]) -> None:
        """The kept trials in batches of ``eval.telemetry_batch``, the GPU's state read before and after each
        (``cudaforge.eval.telemetry``); a batch taken while the GPU was throttled, or with its clock off, is measured
        again on new trials (at most ``eval.telemetry_remeasure`` times). Once ``eval.timing_min_trials`` are kept,
        and every ``eval.timing_stop_every`` kept trials after that, the timing stops when the speedup's interval is
        within ``eval.timing_stop_halfwidth`` (``cudaforge.eval.timing.stop_early``;
        ``fingerprint["timing_stopped_early"]``): the batch is read at that point, and a stop seen in a batch that is
        then measured again does not count."""
        from cudaforge.eval import telemetry

        cfg = self.cfg
        trials = list(range(cfg.timing_trials))
        size = int(cfg.telemetry_batch) if cfg.interleave and int(cfg.telemetry_batch) > 0 else len(trials)
        max_clock = (self.result.fingerprint.get("gpu") or {}).get("max_sm_clock_mhz")
        left, fresh, records = int(cfg.telemetry_remeasure), 100_000, []
        for start in range(0, len(trials), size):
            batch = trials[start : start + size]
            while True:
                clock = time.perf_counter()
                before = telemetry.sample(0)
                spent["telemetry"] = spent.get("telemetry", 0.0) + time.perf_counter() - clock
                lengths = {k: len(v) for k, v in times.items()}
                ran, stopped = self._looked(batch, calls, times, len(trials))
                clock = time.perf_counter()
                after = telemetry.sample(0)
                spent["telemetry"] += time.perf_counter() - clock
                if calls.failure is not None:
                    break
                record = telemetry.batch_record(ran, before, after, max_clock, remeasure=left > 0)
                records.append(record)
                if not record["remeasured"]:
                    break
                left -= 1
                for key, n in lengths.items():
                    del times[key][n:]
                batch = [fresh + start + k for k in range(len(batch))]  # new trials (and inputs), parity kept
                fresh += 100_000
            if calls.failure is not None:
                break
            if stopped is not None:
                self.result.fingerprint["timing_stopped_early"] = stopped
                break
        self.result.telemetry = telemetry.summary(records)

    def _looked(self, batch: list[int], calls: Any, times: dict[str, list[float]], of: int) -> tuple[int, Any]:
        """The batch's trials, the early stop looked at once ``eval.timing_min_trials`` are kept and every
        ``eval.timing_stop_every`` after that (interleaved timing only): how many trials ran, and the stop's record
        where it said stop (the rest of the batch not run)."""
        cfg, done = self.cfg, 0
        if not cfg.interleave:
            self._series(batch, calls, times)
            return len(batch), None
        least, every = int(cfg.timing_min_trials), max(1, int(cfg.timing_stop_every))
        while done < len(batch):
            kept = len(times["cand"])
            step = least - kept if kept < least else every - (kept - least) % every
            part = batch[done : done + step]
            self._series(part, calls, times)
            done += len(part)
            if calls.failure is not None:
                return done, None
            kept = len(times["cand"])
            if least <= kept < of and (kept - least) % every == 0:  # at ``of`` (all of them) there is nothing to stop
                stopped = self._stopped_early(times, of)
                if stopped is not None:
                    return done, stopped
        return done, None

    def _stopped_early(self, times: dict[str, list[float]], of: int) -> dict[str, Any] | None:
        """Whether the timing may stop now (``cudaforge.eval.timing.stop_early``): the speedup's interval on the
        worker's reported times within ``eval.timing_stop_halfwidth``, and, since the candidate could report steady
        times it never ran, the same interval on this process's own wall clock around each candidate call within
        twice that (the wall holds the exchange's jitter too). Decided on the times before the trace's correction."""
        from cudaforge.eval.timing import stop_early

        cfg = self.cfg
        rule: dict[str, Any] = {
            "min_trials": int(cfg.timing_min_trials),
            "max_trials": of,
            "baseline": cfg.baseline.value,
            "statistic": cfg.speedup_statistic.value,
        }
        halfwidth = float(cfg.timing_stop_halfwidth)
        stopped = stop_early(times["ref"], times["cand"], halfwidth=halfwidth, **rule)
        walled = stop_early(times["ref"], times["cand_wall"], halfwidth=2 * halfwidth, **rule) if stopped else None
        if stopped is None or walled is None:
            return None
        return {
            **stopped,
            "wall_halfwidth": walled["halfwidth"],
            "wall_target": walled["target"],
            "on": "reported times and the verifier's wall clock, before the trace",
        }

    def _timed(self, role: str, trial: int, inputs: list[Any], calls: Any, times: dict[str, list[float]]) -> None:
        """One timed call of ``role`` in ``trial`` (warm-up trials are negative: timed, not kept), its output checked."""
        if role == "reference":
            event_ms, host_ms, out = self.reference_call(inputs)
            if trial >= 0:
                times["ref"].append(event_ms)
                times["ref_host"].append(host_ms)
                calls.on_output("reference", trial, inputs, out)
            return
        event_ms, host_ms, wall_ms, out = self.candidate_call(calls.pristine, trial)
        if self.traced is not None:
            self.traced.append(trial)
        if trial >= 0:
            times["cand"].append(event_ms)
            times["cand_host"].append(host_ms)
            times["cand_wall"].append(wall_ms)
            times["cand_trial"].append(trial)
            problem = facts_problem(self.cand.facts, self.device)
            if problem and calls.failure is None:
                calls.failure = {"guard": "output_type", "evidence": f"timed trial {trial}: {problem}", "diff": ""}
            calls.on_output("candidate", trial, self.cand.inputs_after, out)
