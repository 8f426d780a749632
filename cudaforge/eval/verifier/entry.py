"""The verifier's entry: one evaluation from its payload to its result, phase by phase."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import torch

from cudaforge import languages
from cudaforge.eval.bounded import cap_text, source_size_problem
from cudaforge.eval.extensions.loading import candidate_module_name
from cudaforge.eval.guards.source import static_findings
from cudaforge.eval.jit_cache import (
    count_kernels,
    keep_own_jit_cache,
    own_store,
    seed_own_jit_cache,
    seed_worker_caches,
)
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate, start_worker
from cudaforge.eval.verifier.common import PROFILE_DIR_ENV, REFERENCE_MODULE, Failure, Guards, Recorder
from cudaforge.eval.verifier.correctness import cpu_scaled, run_correctness, set_weights
from cudaforge.eval.verifier.models import candidate_model, reference_model
from cudaforge.eval.verifier.start import PREPARED, before_candidate, evict, jit_ahead, probe_trace
from cudaforge.eval.verifier.timing import Timing
from cudaforge.eval.worker.remote import CandidateProcess, WorkerFailure
from cudaforge.proc.sandbox import SandboxMode
from cudaforge.tasks.runtime import DEFAULT_VARIANT, apply_numerics, load_module
from cudaforge.types import (
    EvalResult,
    EvalStatus,
    Phase,
    PhaseRecord,
    SpeedupStats,
    Task,
    TimingStats,
    source_hash,
)

_OVER_QUOTA = re.compile(r"\[Errno (?:28|122)\]|No space left on device|Disk quota exceeded")


def _quota_said(message: str, cfg: EvalConfig) -> str:
    """A failure whose text shows a write refused for space (``ENOSPC``, ``EDQUOT``) ends by saying which quota the
    candidate has: the sandbox's scratch folder and its private /tmp are bounded tmpfs. Only said, never a verdict
    (the host's own disk can be full too)."""
    if not _OVER_QUOTA.search(message[-20000:]):
        return message
    return (
        message + f"\n(a write was refused for space: the candidate may write {cfg.sandbox_scratch_gb:g} "
        f"GB and {cfg.sandbox_scratch_files} files in its scratch folder and as much in its /tmp, "
        "eval.sandbox_scratch_gb and eval.sandbox_scratch_files; write less, or keep it in memory)"
    )


def _count_late_builds(late: list[Any], phases: list[PhaseRecord], result: EvalResult) -> None:
    """Builds a candidate made after its compile phase (a ``load_inline`` whose arguments only run time knows) are
    compile time: their seconds move from the phase that made them to the compile phase, and the result says how
    many and how long (``fingerprint["builds_after_compile"]``)."""
    if not late:
        return
    seconds = sum(max(0.0, float(r.seconds)) for r in late)
    result.fingerprint["builds_after_compile"] = {
        "count": len(late),
        "seconds": round(seconds, 3),
        "cached": sum(bool(r.cached) for r in late),
    }
    compile_at = next((i for i, p in enumerate(phases) if p.phase is Phase.COMPILE), None)
    if compile_at is None:
        return
    for record in phases[compile_at + 1 :]:  # the first later phase long enough to have made them
        if record.seconds >= seconds:
            record.seconds -= seconds
            phases[compile_at].seconds += seconds
            phases[compile_at].message = "; ".join(
                filter(
                    None,
                    [phases[compile_at].message, f"{len(late)} build(s) at run time, {seconds:.2f} s, counted here"],
                )
            )
            return


def _worker_failed(result: EvalResult, failure: WorkerFailure, phase: Phase) -> None:
    """A worker's failure outside a request's own handling (its start, above all) as the result's status and
    message; a sandbox that could not be built (``wall_missing``, the sandbox's own status before the candidate
    existed, which no reply of the worker can set) is marked ``fingerprint["sandbox_missing"]``: no verdict."""
    result.status, result.message = EvalStatus(failure.status), failure.message
    if failure.wall_missing:
        result.fingerprint["sandbox_missing"] = True
    if result.status in (EvalStatus.TIMEOUT, EvalStatus.CRASHED):
        result.message = f"{phase.value} phase: {failure.message}"


def _phase_status(status: EvalStatus) -> str:
    return {EvalStatus.TIMEOUT: "timeout", EvalStatus.CRASHED: "crashed"}.get(status, "failed")


def evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """Evaluate ``payload = {task, candidate, eval, build, device}``; return an EvalResult dict."""
    folder = os.environ.get(PROFILE_DIR_ENV)
    if not folder:
        return _evaluate(payload, progress)
    import cProfile

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        return _evaluate(payload, progress)
    finally:
        profiler.disable()
        Path(folder).mkdir(parents=True, exist_ok=True)
        profiler.dump_stats(str(Path(folder) / f"verifier-{os.getpid()}-{time.time_ns()}.prof"))


def _evaluate(payload: dict[str, Any], progress: Callable[[str], None]) -> dict[str, Any]:
    """One evaluation, phase by phase (``_Evaluation``); a phase's ``Failure`` or the worker's becomes the result's
    status, and the worker always ends before the result is returned."""
    run = _Evaluation(payload, progress)
    result = run.result
    try:
        cand, ref_module, init, known, ref_model, varied = run.start()
        run.compile()
        trials, ref_model = run.correctness(cand, ref_module, init, known, ref_model, varied)
        run.timing(cand, ref_module, ref_model, trials)
    except Failure as failure:
        result.status, result.message = failure.status, failure.message
        if failure.status in (EvalStatus.TIMEOUT, EvalStatus.CRASHED):
            result.message = f"{run.phase.value} phase: {failure.message}"
        if failure.status in (EvalStatus.RUNTIME_ERROR, EvalStatus.CRASHED):
            result.message = _quota_said(result.message, run.cfg)
        ok = failure.status is EvalStatus.COMPILED
        run.rec.end(
            run.phase, run.t, status="ok" if ok else _phase_status(failure.status), message=failure.message[:500]
        )
    except WorkerFailure as failure:
        _worker_failed(result, failure, run.phase)
        run.rec.end(run.phase, run.t, status=_phase_status(result.status), message=failure.message[:500])
    finally:
        tail_started = time.perf_counter()  # the worker's end and its files kept: no phase's time
        run.end_worker()
    return run.finish(tail_started)


class _Evaluation:
    """The state of one evaluation across its phases: the payload read, the result being filled, the phase and its
    time budget, the candidate's worker."""

    def __init__(self, payload: dict[str, Any], progress: Callable[[str], None]) -> None:
        from cudaforge.eval.fingerprint import environment_fingerprint
        from cudaforge.eval.worker import early

        self.started = time.perf_counter()
        self.payload, self.progress = payload, progress
        self.task = Task.from_dict(payload["task"])
        self.source, self.cfg = payload["candidate"], EvalConfig.from_dict(payload["eval"])
        apply_numerics(self.cfg.tf32.value, self.cfg.deterministic)
        self.device = torch.device(payload["device"])
        self.digest = source_hash(self.source)
        result = EvalResult(
            task_id=self.task.id, candidate_hash=self.digest, status=EvalStatus.CORRECT, device=str(self.device)
        )
        result.fingerprint = environment_fingerprint(0 if self.device.type == "cuda" else None)
        result.fingerprint["worker_setup_s"] = round(time.perf_counter() - self.started, 4)
        result.fingerprint["standby"] = {k: v for k, v in PREPARED.items() if k != "process"} or None
        self.result, self.rec, self.guard = result, Recorder(progress), Guards(self.cfg, result)
        self.notes: list[str] = result.fingerprint.setdefault("guard_notes", [])
        self.process: CandidateProcess | None = PREPARED.pop("process", None) or early.take()
        self.phase_started, self.phase_budget = time.monotonic(), float(self.cfg.static_timeout_s)
        self.phase, self.t = Phase.COMPILE, time.perf_counter()
        self.own_caches: dict[str, Path] = {}  # a JIT language's folder of the worker's scratch -> the kept copy
        self.builds_at_compile: int | None = None  # how many builds the worker had made when its compile phase ended
        self.prepared = False  # the source's JIT kernels were kept before (the CPU pool, or an earlier evaluation)

    def remaining(self) -> float:
        return max(0.5, self.phase_budget - (time.monotonic() - self.phase_started) - 1.0)

    def enter(self, phase: Phase, announce: bool = True) -> float:
        self.phase_started = time.monotonic()
        self.phase_budget = {
            Phase.COMPILE: self.cfg.compile_timeout_s,
            Phase.CORRECTNESS: self.cfg.correctness_timeout_s,
            Phase.TIMING: self.cfg.timing_timeout_s,
        }[phase]
        return self.rec.start(phase) if announce else time.perf_counter()

    def start(self) -> tuple[Candidate, Any, list[Any], Any, Any, Any]:
        """Before the compile phase: the parent's size limit and the static guards again, the worker (started here
        when no standby fits), the reference built, what is measured before the candidate is loaded."""
        cfg, device, result, task = self.cfg, self.device, self.result, self.task
        too_large = source_size_problem(self.source, int(cfg.max_source_bytes))  # the parent's limit, here too
        if too_large:
            raise Failure(EvalStatus.INVALID, too_large)
        self.guard.add(static_findings(self.source, self.guard.policies, task.source))  # nothing of it has run yet
        process = self.process
        if process is None or not process.process.alive() or process.mode is not SandboxMode(cfg.sandbox):
            if process is not None:
                process.close()
            process = self.process = start_worker(device, cfg, os.getcwd())
            process.wait_hello(cfg.static_timeout_s)
        elif not process.hello:
            process.wait_hello(cfg.static_timeout_s)
        self.status = process.sandbox_status()
        keys = ("uid", "capabilities", "namespaces", "landlock", "pids_max", "kill_all", "missing", "notes", "mode")
        result.fingerprint["sandbox"] = {k: self.status.get(k) for k in keys}
        result.fingerprint["sandbox_summary"] = process.sandbox_line()
        self.cand = cand = Candidate(process, device, self.remaining, self.notes)
        ref_module = load_module(task.source, REFERENCE_MODULE)
        sys.modules.pop(REFERENCE_MODULE, None)
        init = list(ref_module.get_init_inputs())
        base = "small" if cpu_scaled(task, device, ref_module) else DEFAULT_VARIANT
        known = self.payload.get("known_checks")
        ref_model, varied = reference_model(task, ref_module, init, cfg, device, result, base, known)
        if device.type == "cuda":
            before_candidate(ref_model, ref_module, cand, device, cfg, result, self.payload.get("known_before"))
            probe_trace(cand, result)
        self.init = init
        return cand, ref_module, init, known, ref_model, varied

    def compile(self) -> None:
        """The compile phase: the candidate imported in its worker under the build hooks (the trusted side builds),
        the JIT languages' kept kernels seeded and compiled ahead."""
        from cudaforge.eval.extensions import BuildSettings
        from cudaforge.eval.extensions.deferred import reported_misses, reported_sites
        from cudaforge.eval.extensions.service import serve_build_counted

        cfg, result, process = self.cfg, self.result, cast(CandidateProcess, self.process)
        self.t = self.enter(self.phase)
        settings = BuildSettings.from_dict(
            {
                **self.payload["build"],
                "sandbox": cfg.sandbox.value,
                "sandbox_namespaces": bool(cfg.sandbox_namespaces),
                "allow_weak_sandbox": bool(cfg.allow_weak_sandbox),
            }
        )

        def on_build(inputs: dict[str, Any]) -> dict[str, Any]:
            return serve_build_counted(inputs, process.builds, settings, process.scratch, process.sandbox.uid)

        self.cand.on_build = on_build
        seed_worker_caches(process.scratch)
        if "pid" in (self.status.get("namespaces") or []):  # all of the sandbox dies with its init: its files are
            for language in languages.jit_caches(self.source):  # still there when they are read (keep_own_jit_cache);
                store = own_store(settings.cache_root(), language.jit_cache, self.digest)  # only its languages'
                self.own_caches[language.jit_cache] = store
                self.prepared = self.prepared or count_kernels(store, language.jit_kernel_marks) > 0
                seed_own_jit_cache(store, Path(process.scratch) / language.jit_cache)
        loaded = self._load(settings, on_build)
        ahead, left = reported_sites(loaded), reported_misses(loaded)
        result.fingerprint["builds_ahead"] = ahead
        if left:
            result.fingerprint["builds_left_to_run_time"] = left
        compile_note = "cache hit" if result.compile_cached else ""
        if ahead:
            compile_note = "; ".join(filter(None, [compile_note, "built ahead: " + ", ".join(ahead)]))
        if left:
            compile_note = "; ".join(filter(None, [compile_note, "; ".join(left)]))
        if self.device.type == "cuda":
            build = cfg.jit_ahead.value == "compile" and not self.prepared
            jit = jit_ahead(self.source, self.task, self.init, process, self.device, cfg, self.remaining(), build)
            if jit:
                result.fingerprint["jit_ahead"] = jit
                compile_note = "; ".join(filter(None, [compile_note, jit["note"]]))
        self.rec.end(self.phase, self.t, message=compile_note)
        self.builds_at_compile = len(process.builds)

    def _load(self, settings: Any, on_build: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """The worker's ``load``: the candidate imported; a failed build's own log is the compile error."""
        cfg, result, process = self.cfg, self.result, cast(CandidateProcess, self.process)
        request = {
            "op": "load",
            "source": self.source,
            "module": candidate_module_name(self.source),
            "build": settings.to_dict(),
            "tf32": cfg.tf32.value,
            "deterministic": cfg.deterministic,
            "no_grad": cfg.no_grad,
            "poison": bool(cfg.poison_memory),
        }
        try:
            return process.request(request, timeout_s=self.remaining(), on_build=on_build)
        except WorkerFailure as failure:
            failed = [r for r in process.builds if r.status == "failed"]
            if failure.status == "compile_error" and failed:  # our own log, not the worker's account of it
                raise Failure(
                    EvalStatus.COMPILE_ERROR, "the CUDA source did not compile:\n" + failed[0].log_trimmed
                ) from None
            raise Failure(EvalStatus(failure.status), failure.message) from None
        finally:
            result.compile_log = cap_text("".join(r.log for r in process.builds))  # the result stays readable
            result.compile_cached = bool(process.builds) and all(r.cached for r in process.builds)
            failed = [r for r in process.builds if r.status == "failed"]
            if failed:
                result.compile_log_trimmed = cap_text(failed[0].log_trimmed)

    def correctness(
        self, cand: Candidate, ref_module: Any, init: list[Any], known: Any, ref_model: Any, varied: Any
    ) -> tuple[Any, Any]:
        """The correctness phase: ModelNew built in the worker (the weights as the protocol says), every trial."""
        cfg, device, result = self.cfg, self.device, self.result
        self.phase = Phase.CORRECTNESS
        self.t = self.enter(self.phase)
        clock = time.perf_counter()
        encoded, _ = cand.put_inputs(init, 0)
        ref_model = candidate_model(cand, encoded, ref_module, init, ref_model, varied, cfg, device, self.guard)
        set_weights(ref_model, cand, cfg, result)
        cand._add("model", clock)
        try:
            trials = run_correctness(self.task, ref_module, ref_model, cand, device, cfg, result, self.guard, known)
        finally:
            result.fingerprint["correctness_breakdown_s"] = {k: round(v, 4) for k, v in cand.spent.items()}
            cand.spent = {}
        self.rec.end(self.phase, self.t, message=f"{result.trials_passed}/{result.trials_total} trials passed")
        return trials, ref_model

    def timing(self, cand: Candidate, ref_module: Any, ref_model: Any, trials: Any) -> None:
        """The timing phase on a GPU (``Timing``), and the verdict's message; on the CPU, the message alone."""
        cfg, device, result = self.cfg, self.device, self.result
        weights = result.fingerprint.get("weights", "seed")
        weights_text = "weights from the same seed" if weights == "seed" else f"weights {weights}"
        if device.type != "cuda":
            result.timing_unavailable_reason = "no GPU: correctness was checked on the CPU; timing needs a GPU"
            if result.fingerprint.get("inputs_variant") == "small":
                weights_text += ", on the task's 'small' inputs (its own are sized for a GPU)"
            result.message = (
                f"correct on {result.trials_passed} CPU trials ({weights_text}); {result.timing_unavailable_reason}"
            )
            return
        self.phase = Phase.TIMING
        self.t = self.enter(self.phase)
        timing = Timing(self.task, ref_module, ref_model, cand, device, cfg, result, self.guard, trials, self.source)
        timing.known_probe = self.payload.get("known_probe")
        timing.run(self.progress, on_locked=lambda: self.enter(Phase.TIMING, announce=False))
        self.rec.end(self.phase, self.t)
        s, timed = cast(SpeedupStats, result.speedup), cast(TimingStats, result.candidate_timing)  # set by run
        result.message = (
            f"correct ({result.trials_passed} trials, {weights_text}); candidate {timed.median:.4f} ms vs reference "
            f"{cast(TimingStats, result.reference_timing).median:.4f} ms ({cfg.baseline.value}): speedup {s.median:.3f}x "
            f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
        )

    def end_worker(self) -> None:
        """The worker ended, every process of its sandbox dead before a JIT language's kept kernels are read."""
        process, result = self.process, self.result
        if process is None:
            return
        try:
            if self.own_caches and not process.process.kill():  # every process dead before its files are read
                raise RuntimeError("a process of the sandbox outlived its kill: its JIT cache is not kept")
            if self.own_caches:
                self._keep_jit_caches(process)
        except Exception as exc:  # noqa: BLE001 - the candidate's files never decide the verdict or the cleanup
            result.fingerprint["jit_keep_error"] = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            process.close()  # the scratch released and the worker ended, whatever the keep met

    def _keep_jit_caches(self, process: CandidateProcess) -> None:
        jit = self.result.fingerprint.get("jit_ahead")
        if isinstance(jit, dict) and languages.get(jit["language"]).jit_cache:
            language = languages.get(jit["language"])
            jit["kernels_at_end"] = count_kernels(Path(process.scratch) / language.jit_cache, language.jit_kernel_marks)
        new_store = False
        for folder, store in self.own_caches.items():
            existed = store.exists()
            keep_own_jit_cache(
                Path(process.scratch) / folder,
                store,
                next(lang.jit_keep for lang in languages.jit_caches() if lang.jit_cache == folder),
            )
            new_store = new_store or (not existed and store.exists())
        if new_store:  # what was kept counts in the cache's size limit like a build (a later keep of
            evict(self.payload["build"])  # the same source adds at most to its own capped store)

    def finish(self, tail_started: float) -> dict[str, Any]:
        """The result, with its phases, the builds made after the compile phase, and the verifier's own seconds."""
        result, process = self.result, self.process
        if not self.notes:
            result.fingerprint.pop("guard_notes", None)
        if self.builds_at_compile is not None and process is not None:
            _count_late_builds(process.builds[self.builds_at_compile :], self.rec.phases, result)
        result.phases = self.rec.phases
        result.seconds = time.perf_counter() - self.started
        result.fingerprint["verifier_s"] = {
            "total": round(result.seconds, 4),
            "tail": round(time.perf_counter() - tail_started, 4),
        }
        return result.to_dict()
