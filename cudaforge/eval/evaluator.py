"""The evaluator's public API: one candidate, or a batch over all local GPUs.

The parent process only parses (the static phase) and orchestrates: every candidate runs in
its own isolated child (``cudaforge.proc.isolation``), pinned to one GPU, with per-phase timeouts.
CUDA candidates of a batch are first built in a CPU-only process pool, so compiles overlap
other candidates' GPU work; the GPU worker then finds the build in the cache.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from cudaforge import languages, vendors
from cudaforge.eval.bounded import cap_strings
from cudaforge.eval.jit_cache import trusted_cache
from cudaforge.eval.known import kept_before, known_before, reference_decisions
from cudaforge.eval.precision import kept_probe
from cudaforge.eval.settings import EvalConfig, JitAhead
from cudaforge.eval.static import check_candidate
from cudaforge.proc.isolation import IsolatedOutcome, Standby, run_isolated
from cudaforge.proc.sandbox import SandboxMode
from cudaforge.types import (
    EvalResult,
    EvalStatus,
    GpuUnavailable,
    Phase,
    PhaseRecord,
    SandboxUnavailable,
    Task,
    source_hash,
)
from cudaforge.vendors import pinned

DEFAULT_BUILD_CACHE = Path.home() / ".cache" / "cudaforge" / "build"
WORKER_ENTRY = "cudaforge.eval.verifier:evaluate"
WORKER_PREPARE = "cudaforge.eval.verifier:prepare"
PHASE_GRACE_S = 30.0
"""The parent's deadline for each phase is the phase's budget plus this: the verifier ends a candidate that
overruns by itself, and the parent's deadline only catches a verifier that could not."""


def as_eval_config(cfg: Any = None) -> EvalConfig:
    """An ``EvalConfig`` from an EvalConfig (copied), a DictConfig or a dict (over the defaults; checked), or None
    (the protocol's defaults)."""
    if cfg is None:
        return EvalConfig()
    if isinstance(cfg, EvalConfig):
        return cfg.replace()
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return EvalConfig.from_dict(dataclasses.asdict(cfg))
    if hasattr(cfg, "items"):
        return EvalConfig.from_dict({str(k): cfg[k] for k in cfg})
    raise TypeError(f"expected an eval config, got {type(cfg).__name__}")


def default_eval_config() -> dict[str, Any]:
    """The protocol's defaults as plain values: ``EvalConfig``'s, the one definition (``cudaforge/eval/settings.py``)."""
    return EvalConfig().to_dict()


INTERRUPTED_ATTEMPTS = 2
"""Evaluations of one candidate that may be interrupted (the evaluating process killed or crashed) before it is
reported ``crashed`` instead of run again: one interruption may be a run killed from outside, two are the
candidate's."""


def _marker_attempts(marker: Path) -> int:
    """The interrupted evaluations an ``interrupted_dir`` marker counts (an unreadable marker counts as many as
    ``INTERRUPTED_ATTEMPTS``: it cannot vouch for the candidate)."""
    try:
        attempts = json.loads(marker.read_text()).get("attempts", 1)
        return attempts if isinstance(attempts, int) else INTERRUPTED_ATTEMPTS
    except (OSError, ValueError, AttributeError):
        return INTERRUPTED_ATTEMPTS


def visible_gpus(requested: list[int] | None = None) -> list[str]:
    """Physical GPU ids (as ``CUDA_VISIBLE_DEVICES`` takes them) this process may use.

    ``requested`` picks among the visible ones by position; empty means all of them.
    """
    import torch

    count = torch.cuda.device_count()
    env = pinned()
    ids = [d.strip() for d in env.split(",") if d.strip()][:count] if env else [str(i) for i in range(count)]
    if requested:
        unknown = [i for i in requested if i >= len(ids) or i < 0]
        if unknown:
            raise ValueError(f"eval.devices={requested}: only {len(ids)} GPU(s) visible")
        ids = [ids[i] for i in requested]
    return ids


class Evaluator:
    """Evaluates candidates against tasks (see docs/evaluation.md for the protocol)."""

    def __init__(
        self,
        cfg: Any = None,
        *,
        gpus: list[str] | None = None,
        compile_workers: int | None = None,
        lock_dir: str | os.PathLike | None = None,
        interrupted_dir: str | os.PathLike | None = None,
    ):
        """``cfg``: an EvalConfig (or dict); ``gpus``: physical GPU ids (default: from the config);
        ``lock_dir``: where the per-GPU lock files live, shared with the profiler (default
        ``$CUDAFORGE_LOCK_DIR`` or ~/.cache/cudaforge/locks); ``interrupted_dir``: where a marker is kept while a
        candidate is evaluated (a run directory's, so that a resumed run does not re-run a candidate whose
        evaluation died with the run)."""
        self.cfg = as_eval_config(cfg)
        self.interrupted_dir = str(interrupted_dir) if interrupted_dir else None
        if self.cfg.device == "cpu":
            self.gpus: list[str] = []
        else:
            self.gpus = gpus if gpus is not None else visible_gpus(self.cfg.devices)
            if self.cfg.device == "cuda" and not self.gpus:
                raise ValueError("eval.device=cuda but no GPU is visible")
        self.build_cache = Path(self.cfg.build_cache_dir or DEFAULT_BUILD_CACHE).expanduser()
        self.compile_workers = compile_workers or max(1, (os.cpu_count() or 2) // 2)
        self.lock_dir = str(Path(lock_dir).expanduser().resolve()) if lock_dir else None
        self._build = None
        self._turn = 0
        self._turn_lock = threading.Lock()
        self._standbys: dict[tuple[str, str], Standby] = {}
        self._standby_lock = threading.Lock()
        self._probes: dict[tuple[str, str], dict[str, Any]] = {}
        """The precision probe of each (task, GPU), measured once while a correct candidate of the task was evaluated
        and handed to the task's later candidates (it depends on the reference alone; ``EvalResult.precision`` says
        ``probe_reused``)."""
        self._reference_checks: dict[tuple[str, str, str], dict[str, Any]] = {}
        """What the checks beyond the scored inputs decided of each task's reference, by task, device and settings:
        which hidden distributions it can judge and whether its varied parameters hold (``known_checks``). It
        depends on the reference alone, so a task's later candidates skip the fp64 evaluations that decided it."""
        self._before: dict[tuple[str, str, str], dict[str, Any]] = {}
        """What evaluations measured before their candidates, by task, GPU and settings (``eval.known``)."""
        self._running: set[int] = set()
        """The evaluations and builds of this evaluator running now (tokens of ``_begin_work``)."""
        self._overlapped: set[int] = set()
        self._work_tokens = iter(range(1 << 62))
        self._work_guard = threading.Lock()

    # ------------------------------------------------------------------ standby workers

    def _standby(self, kind: str, entry: str, prepare: str, gpu: str, env: dict[str, str]) -> Standby:
        """The GPU's waiting standby of ``kind`` (or a new one, when none waits or it no longer fits), and a
        new one started in its place for the next candidate."""
        with self._standby_lock:
            standby = self._standbys.pop((kind, gpu), None)
            if standby is not None and not (standby.alive() and standby.matches(entry, gpu, env)):
                standby.close()
                standby = None
            if standby is None:
                standby = Standby(entry, prepare, gpu=gpu, env=env, trusted=self._trusted_verifier())
            self._standbys[(kind, gpu)] = Standby(entry, prepare, gpu=gpu, env=env, trusted=self._trusted_verifier())
        return standby

    def _standbys_on(self) -> bool:
        """Standby workers are used with ``eval.standby_workers`` and a timing lead. Under the launch-inclusive
        protocol (``eval.timing_lead_us=0``) the host's jitter is in the timed calls, and on an H200 five
        evaluations of one pair spread 3.4-4.9% with standbys against 0.43% with cold workers
        (docs/evaluation.md), so every candidate then starts cold."""
        return bool(self.cfg.standby_workers) and self.cfg.timing_lead_us > 0

    def _worker(self, payload: dict[str, Any], gpu: str | None, env: dict[str, str]) -> IsolatedOutcome:
        """Run one payload in a fresh worker: the GPU's standby when there is one, else a cold start.

        With standby workers (``_standbys_on``) each GPU evaluation also starts the next candidate's worker, so
        its start-up (imports, CUDA context, fingerprint) overlaps this candidate's evaluation or the
        agents' turn; a standby still serves one candidate only.
        """
        if gpu is not None and self._standbys_on():
            standby = self._standby("eval", WORKER_ENTRY, WORKER_PREPARE, gpu, env)
            return standby.run(payload, timeouts=self._timeouts())
        return run_isolated(
            WORKER_ENTRY, payload, timeouts=self._timeouts(), gpu=gpu, env=env, trusted=self._trusted_verifier()
        )

    def _trusted_verifier(self) -> bool:
        """Whether the verifier's result may be taken as soon as it marks it delivered (``isolation.run_isolated``):
        only while the candidate runs behind the whole wall (``eval.sandbox`` not ``off``, no weak sandbox allowed),
        where nothing of it can write the verifier's working folder."""
        return SandboxMode(self.cfg.sandbox) is not SandboxMode.off and not self.cfg.allow_weak_sandbox

    def wait_for_standbys(self, timeout_s: float = 120.0) -> bool:
        """Block until every waiting standby worker has finished its start-up (or died), at most ``timeout_s``.

        True when none is still starting. An agent loop never needs this (the agents' turn outlasts the start-up);
        benchmarks use it to measure a candidate that finds its worker ready."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._standby_lock:
                starting = [s for s in self._standbys.values() if s.alive() and not s.ready()]
            if not starting:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    def close(self) -> None:
        """Stop the standby workers (they also end by themselves when this process exits)."""
        with self._standby_lock:
            standbys, self._standbys = list(self._standbys.values()), {}
        for standby in standbys:
            standby.close()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def _begin_work(self) -> int:
        """Mark an evaluation or a build of this evaluator running; returns its token for :meth:`_end_work`."""
        with self._work_guard:
            token = next(self._work_tokens)
            if self._running:  # they overlap: each one's measurements may have been slowed by the other
                self._overlapped.update(self._running)
                self._overlapped.add(token)
            self._running.add(token)
            return token

    def _end_work(self, token: int) -> bool:
        """End :meth:`_begin_work`'s mark; True when this evaluator ran nothing else meanwhile (no other
        evaluation, on any GPU, and no build): only then are an evaluation's measurements before its candidate
        kept for the next ones (``cudaforge.eval.known``)."""
        with self._work_guard:
            self._running.discard(token)
            overlapped = token in self._overlapped
            self._overlapped.discard(token)
            return not overlapped

    def _next_gpu(self) -> str:
        """Round-robin over this evaluator's GPUs (timing itself is serialised per GPU by a lock)."""
        with self._turn_lock:
            gpu = self.gpus[self._turn % len(self.gpus)]
            self._turn += 1
        return gpu

    # ------------------------------------------------------------------ settings

    def build_settings(self):
        """The ``BuildSettings`` every worker and precompile of this evaluator uses (arch resolved here)."""
        from cudaforge.eval.extensions import BuildSettings

        if self._build is None:
            self._build = BuildSettings(
                cache_dir=str(self.build_cache),
                arch=self.cfg.target_arch,
                sandbox=SandboxMode(self.cfg.sandbox).value,
                sandbox_namespaces=bool(self.cfg.sandbox_namespaces),
                allow_weak_sandbox=bool(self.cfg.allow_weak_sandbox),
                memory_gb=float(self.cfg.sandbox_memory_gb),
                timeout_s=float(self.cfg.compile_timeout_s),
                max_cache_gb=float(self.cfg.build_cache_max_gb),
            ).resolved()
        return self._build

    def _timeouts(self) -> dict[str, float]:
        grace = PHASE_GRACE_S
        return {
            "start": self.cfg.static_timeout_s + grace,
            Phase.COMPILE.value: self.cfg.compile_timeout_s + grace,
            Phase.CORRECTNESS.value: self.cfg.correctness_timeout_s + grace,
            Phase.TIMING.value: self.cfg.timing_timeout_s + grace,
            "gpu_wait": self.cfg.gpu_wait_timeout_s,  # queued for the GPU's lock: not the candidate's time
        }

    def _env(self, device: str) -> dict[str, str]:
        # the verifier's own Triton cache (its output screen), written by trusted processes only; the driver stubs
        # built there are copied into each candidate worker's private cache (cudaforge.eval.jit_cache)
        env = (
            languages.interpreted_env()
            if device == "cpu"
            else {lang.jit_cache_env: str(trusted_cache(self.build_cache)) for lang in languages.trusted_stub_caches()}
        )
        if self.lock_dir:
            env["CUDAFORGE_LOCK_DIR"] = self.lock_dir
        env["CUDAFORGE_STANDBY_EVAL"] = json.dumps(
            self.cfg.to_dict()
        )  # a standby starts its sandboxed worker with these
        env["CUDAFORGE_CHILD_EARLY"] = "cudaforge.eval.worker.early:start_worker"  # a cold one, before it imports torch
        return env

    # ------------------------------------------------------------------ one candidate

    def evaluate(
        self, task: Task, source: str, *, gpu: str | None = None, changes: dict[str, Any] | None = None
    ) -> EvalResult:
        """Evaluate ``source`` against ``task``; never raises, whatever the candidate is or does (``changes``: eval
        settings of this evaluation alone, e.g. the held-out shapes' ``{"hidden_inputs": []}``).

        The static checks run here; the rest in a verifier child (``cudaforge.eval.verifier``) that runs the
        candidate in a sandboxed worker of its own. A candidate whose evaluation was interrupted (the process
        running it died: ``interrupted_dir`` holds its marker) is run once more, since the run may have been killed
        from outside; interrupted ``INTERRUPTED_ATTEMPTS`` times, it is ``crashed`` and never run again."""
        started = time.monotonic()
        digest = source_hash(source) if isinstance(source, str) else "?"
        try:
            marker = self._interrupted_marker(task, digest)
            attempts = _marker_attempts(marker) if marker is not None and marker.exists() else 0
            if attempts >= INTERRUPTED_ATTEMPTS:
                return EvalResult(
                    task_id=task.id,
                    candidate_hash=digest,
                    status=EvalStatus.CRASHED,
                    message=(
                        f"{attempts} evaluations of this candidate never finished (the process running them died, or the "
                        "run was killed during them); it is not run again, so a candidate that takes the evaluator down "
                        "cannot stop the run again. Delete " + str(marker) + " to evaluate it anyway."
                    ),
                )
            if marker is not None:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(
                    json.dumps({"task": task.id, "candidate": digest, "started": time.time(), "attempts": attempts + 1})
                )
            result = self._evaluate(task, source, gpu, started, changes or {})
            if marker is not None:
                marker.unlink(missing_ok=True)
            return result
        except GpuUnavailable:
            # no verdict: the machine failed. The marker stays and counts the attempt, so a candidate that itself
            # takes the GPU down is `crashed` after INTERRUPTED_ATTEMPTS resumes instead of stopping every one
            raise
        except Exception as exc:  # noqa: BLE001 - whatever went wrong becomes a result; the run goes on
            return EvalResult(
                task_id=task.id,
                candidate_hash=digest,
                status=EvalStatus.CRASHED,
                message=f"the evaluator could not evaluate this candidate: {type(exc).__name__}: {exc}"[:2000],
                seconds=time.monotonic() - started,
            )

    def _interrupted_marker(self, task: Task, digest: str) -> Path | None:
        if not self.interrupted_dir:
            return None
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{task.id}__{digest}")[:200]
        return Path(self.interrupted_dir) / f"{name}.json"

    def _evaluate(
        self, task: Task, source: str, gpu: str | None, started: float, changes: dict[str, Any] | None = None
    ) -> EvalResult:
        # The static checks and guards run here too (in a child with a deadline), so a rejected source never costs
        # a worker.
        static = check_candidate(source, self.cfg, task.source)
        static_record = PhaseRecord(
            Phase.STATIC, "ok" if static.ok else "failed", time.monotonic() - started, static.message
        )
        if not static.ok:
            return EvalResult(
                task_id=task.id,
                candidate_hash=source_hash(source),
                status=EvalStatus(static.status),
                message=static.message,
                phases=[static_record],
                seconds=time.monotonic() - started,
                guard_findings=static.findings,
            )
        missing = languages.missing_message(static.backend) if static.backend != languages.NO_KERNEL else ""
        if missing:  # the machine's fault, not the candidate's: said before any worker starts
            return EvalResult(
                task_id=task.id,
                candidate_hash=source_hash(source),
                status=EvalStatus.UNSUPPORTED,
                message=f"this candidate is written in {static.backend}: {missing}.",
                phases=[static_record],
                seconds=time.monotonic() - started,
            )
        if gpu is None and self.gpus:
            gpu = self._next_gpu()
        device = "cuda" if gpu is not None else "cpu"
        payload = {
            "task": task.to_dict(),
            "candidate": source,
            "eval": self.cfg.replace(**(changes or {})).to_dict(),
            "build": self.build_settings().to_dict(),
            "device": device,
        }
        probe_key = (task.id + ":" + source_hash(task.source), str(gpu))
        if gpu is not None and probe_key in self._probes:
            payload["known_probe"] = self._probes[probe_key]
        before_key = (*probe_key, source_hash(json.dumps(payload["eval"], sort_keys=True, default=str)))
        if gpu is not None and known_before(self._before.get(before_key)) is not None:
            payload["known_before"] = self._before[before_key]
        if before_key in self._reference_checks:
            payload["known_checks"] = self._reference_checks[before_key]
        handed = time.monotonic()
        token = self._begin_work()
        try:
            outcome = self._worker(payload, gpu, self._env(device))
        finally:
            ran_alone = self._end_work(token)
        result = self._from_outcome(task, source, outcome)
        verifier = result.fingerprint.get("verifier_s")
        if isinstance(verifier, dict) and isinstance(verifier.get("total"), (int, float)):
            # what the hand-over to the verifier and its exit cost beyond the verifier's own seconds (a benchmark's
            # account of the overhead; the verifier's number is its own and only read, never trusted for a verdict)
            verifier["handover_and_exit"] = round(time.monotonic() - handed - float(verifier["total"]), 4)
        if (
            gpu is not None
            and result.status is EvalStatus.CORRECT
            and not result.guard_findings
            and probe_key not in self._probes
        ):  # a correct candidate's with no finding: it left no work behind
            kept = kept_probe(result.precision)
            if kept is not None:
                self._probes[probe_key] = {**kept, "probe_from": result.candidate_hash}
        decided = reference_decisions(result.checks, self._reference_checks.get(before_key))
        if decided:
            self._reference_checks[before_key] = decided
        kept = kept_before(result.fingerprint, result.candidate_hash) if gpu is not None and ran_alone else None
        if kept is not None:  # measured before the candidate's code existed (whatever its verdict), with no other
            self._before[before_key] = kept  # evaluation or build of ours that could have slowed the measurement
        result.phases.insert(0, static_record)
        result.seconds = time.monotonic() - started
        if result.status is EvalStatus.UNSUPPORTED and result.fingerprint.get("sandbox_missing") is True:
            raise SandboxUnavailable(
                f"the sandbox could not be built for the evaluation of {task.id}, so it has no verdict: "
                + result.message.strip().splitlines()[0][:400]
            )
        if gpu is not None:
            result.device = f"cuda (physical GPU {gpu})"
            if result.status in (EvalStatus.CRASHED, EvalStatus.RUNTIME_ERROR, EvalStatus.TIMEOUT):
                lost = vendors.current().device_lost(gpu)
                if lost:
                    raise GpuUnavailable(
                        f"GPU {gpu} stopped answering during the evaluation of {task.id} ({lost}); "
                        f"the {result.status.value} verdict is not the kernel's"
                    )
        return result

    @staticmethod
    def _from_outcome(task: Task, source: str, outcome: IsolatedOutcome) -> EvalResult:
        if outcome.status == "ok" and outcome.result is not None:
            try:  # every text in it capped (the verifier caps its own; a run keeps this result twice per round)
                return EvalResult.from_dict(cap_strings(outcome.result))
            except Exception as exc:  # noqa: BLE001 - a malformed result is a crash, not ours to raise
                outcome = IsolatedOutcome(
                    status="crashed",
                    error=f"the verifier's result was malformed ({exc})"[:500],
                    phase=outcome.phase,
                    phase_seconds=outcome.phase_seconds,
                )
        phases = [
            PhaseRecord(Phase(p), "ok", s) for p, s in outcome.phase_seconds.items() if p in Phase._value2member_map_
        ]
        status, message = EvalStatus.CRASHED, outcome.error
        if outcome.status == "timeout":
            status = EvalStatus.TIMEOUT
            message = {
                "compile": f"the build never finished: {outcome.error}",
                "start": f"the worker did not start: {outcome.error}",
            }.get(outcome.phase, outcome.error)
        elif outcome.status == "error":
            status = EvalStatus.CRASHED
            message = "the verifier raised:\n" + "\n".join(outcome.error.strip().splitlines()[-8:])
        else:
            stderr = outcome.stderr_tail.strip()
            if stderr:
                message += "\nlast lines of stderr:\n" + "\n".join(stderr.splitlines()[-10:])
        if phases and outcome.status != "ok":
            phases[-1].status = "timeout" if status is EvalStatus.TIMEOUT else "crashed"
            phases[-1].message = outcome.error[:500]
        return EvalResult(
            task_id=task.id,
            candidate_hash=source_hash(source),
            status=status,
            message=f"{outcome.phase} phase: {message}" if outcome.phase else message,
            phases=phases,
        )

    # ------------------------------------------------------------------ many candidates

    def precompile(self, source: str, task: Task | None = None):
        """Build a candidate on the CPU pool (no GPU): its CUDA extensions, and with ``task`` also the kernels of a
        JIT language that can be built ahead (Triton, ``KernelLanguage.prebuild``), compiled for this evaluator's
        architecture and kept for its GPU worker. Returns the build outcome, or None when there is nothing to build.

        The candidate's import runs in a sandboxed worker; its builds are served by a trusted child."""
        from cudaforge.eval.extensions import precompile

        backend = check_candidate(source, self.cfg, guards=False).backend
        jit = (
            task is not None
            and self.cfg.jit_ahead is not JitAhead.off
            and backend != languages.NO_KERNEL
            and languages.get(backend).prebuild is not None
        )
        if backend != "cuda" and not jit:
            return None
        token = self._begin_work()  # the candidate's import runs: what it does may slow a measurement beside it
        try:
            return precompile(
                source,
                self.build_settings(),
                timeout_s=self.cfg.compile_timeout_s,
                task_source=task.source if jit and task is not None else None,
            )
        finally:
            self._end_work(token)

    def evaluate_batch(
        self, jobs: list[tuple[Task, str]], on_result: Callable[[int, EvalResult], None] | None = None
    ) -> list[EvalResult]:
        """Evaluate many (task, source) pairs: builds on a CPU pool, one worker per GPU.

        Results come back in the order of ``jobs``; ``on_result(index, result)`` sees each
        as it finishes.
        """
        slots: queue.Queue[str | None] = queue.Queue()
        for gpu in self.gpus or (None,):
            slots.put(gpu)
        compile_slots = threading.Semaphore(self.compile_workers)
        results: list[EvalResult | None] = [None] * len(jobs)

        def run(index: int) -> None:
            task, source = jobs[index]
            if self.gpus:
                with compile_slots:
                    self.precompile(source, task)  # failures are re-found, and reported, by the worker
            gpu = slots.get()
            try:
                results[index] = result = self.evaluate(task, source, gpu=gpu)
            finally:
                slots.put(gpu)
            if on_result:
                on_result(index, result)

        workers = max(1, len(self.gpus)) + (self.compile_workers if self.gpus else 0)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(run, i) for i in range(len(jobs))]:
                future.result()
        return [r for r in results if r is not None]
