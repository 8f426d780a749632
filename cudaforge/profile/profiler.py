"""The profiler's API: ``Profiler(cfg, cache_dir, lock_dir).profile(task, source, gpu)``.

The parent never imports torch or the candidate. It runs one forward of the candidate in an
isolated worker (``cudaforge.profile.child``) under ``ncu``, holding the GPU's lock, then keeps the
candidate's own kernels, totals them, adds ncu's rule messages, the task's roofline and the GPU's
spec sheet. When ncu is missing, counters are not permitted (ERR_NVGPUCTRPERM), ncu fails or it
times out, the same forward runs under torch.profiler instead (status ``fallback``) and the
message says why; nothing here raises for the candidate's or the tool's faults. The task's cost
(the roofline's FLOPs and bytes) is computed once per task, in a child that never runs a
candidate, and cached by the task's source hash (``Profiler.task_cost``).
"""

from __future__ import annotations

import copy
import itertools
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge import languages
from cudaforge.eval import cap_text, finite_number
from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock
from cudaforge.hardware.roofline import make_roofline, with_measurement
from cudaforge.languages import is_own_kernel, kernel_base_name
from cudaforge.languages import kernel_names as candidate_kernel_names
from cudaforge.languages.names import KERNEL_NAME_MAX
from cudaforge.proc.isolation import IsolatedOutcome, run_isolated
from cudaforge.proc.sandbox import Sandbox, SandboxMode, default_read_paths, describe
from cudaforge.proc.sandbox.scratch import new_scratch, release_scratch
from cudaforge.profile.cache import ProfileCache, cache_key, cost_key
from cudaforge.profile.metrics import NCU_SECTION_SETS, metric_list, selection_args
from cudaforge.profile.ncu import (
    NCU_OUTPUT_CAP,
    child_versions,
    copy_ncu_output,
    gpu_model_name,
    ncu_errors,
    ncu_folders,
    ncu_version,
    read_capped,
    resolve_ncu,
    sum_ms,
    totals,
    visible_gpu_ids,
)
from cudaforge.profile.parse import MAX_LAUNCHES, NcuParseError, parse_ncu_csv, parse_ncu_report
from cudaforge.profile.records import KernelProfile, ProfileResult, ProfileStatus
from cudaforge.profile.settings import ProfileSettings
from cudaforge.tasks.cost import task_cost_child
from cudaforge.types import Task, source_hash

CHILD_ENTRY = "cudaforge.profile.child:profile_forward"
_PERMISSION = "ERR_NVGPUCTRPERM"


class Profiler:
    """Profiles candidates with Nsight Compute (see docs/profiling.md)."""

    def __init__(
        self,
        cfg: Any = None,
        cache_dir: str | Path | None = None,
        lock_dir: str | Path | None = None,
        *,
        build: dict[str, Any] | None = None,
        gpus: list[str] | None = None,
        use_cache: bool = True,
    ) -> None:
        """``cfg``: a ProfileConfig/ProfileSettings/dict; ``cache_dir``: profile cache (default
        ~/.cache/cudaforge/profile); ``lock_dir``: GPU lock files, shared with the evaluator;
        ``build``: ``cudaforge.eval.extensions.BuildSettings`` fields for importing candidates (use the
        evaluator's, so that its builds are cache hits); ``gpus``: physical GPU ids to use when a
        call names none (default: the visible ones; ``[]``: none)."""
        self.settings = ProfileSettings.from_config(cfg)
        self.gpus = visible_gpu_ids() if gpus is None else [str(g) for g in gpus]
        self._turn = itertools.count()
        metric_list(self.settings.metric_set, self.settings.metrics)  # a bad set fails here, not per call
        if self.settings.output not in ("csv", "report"):
            raise ValueError(f"profile.output must be csv or report, not {self.settings.output!r}")
        if self.settings.sandbox not in ("auto", "required", "off"):
            raise ValueError(f"profile.sandbox must be auto, required or off, not {self.settings.sandbox!r}")
        self.cache = ProfileCache(cache_dir) if use_cache else None
        self.lock_dir = lock_dir
        self.build = dict(build or {})
        self._specs: dict[str, dict[str, Any]] = {}
        self._costs: dict[str, dict[str, Any]] = {}
        self._cost_locks: dict[str, threading.Lock] = {}
        self._cost_locks_guard = threading.Lock()

    # ------------------------------------------------------------------ ncu

    def ncu_command(self, ncu: str, out_dir: Path) -> list[str]:
        """The ncu command line that prefixes the worker's: profiling off until the worker's
        ``cudaProfilerStart``, the metric selection, and the output (CSV log or report)."""
        s = self.settings
        command = [
            ncu,
            "--profile-from-start",
            "off",
            "--target-processes",
            s.target_processes,
            "--clock-control",
            s.clock_control,
            "--launch-count",
            str(s.max_kernels),
            *selection_args(s.metric_set, s.metrics),
            *s.extra_args,
            "--log-file",
            str(out_dir / "ncu.log"),
        ]
        if s.output == "report":
            return [*command, "--export", str(out_dir / "profile.ncu-rep"), "--force-overwrite"]
        return [*command, *self._csv_args(s.units)]

    @staticmethod
    def _csv_args(units: str = "base") -> list[str]:
        return ["--csv", "--page", "details", "--print-units", units, "--print-metric-name", "name"]

    def _timeouts(self) -> dict[str, float]:
        s = self.settings
        return {
            "start": s.timeout_s,
            "compile": s.compile_timeout_s,
            "setup": s.timeout_s,
            "warmup": s.timeout_s,
            "profile": s.timeout_s,
        }

    def _payload(self, task: Task, source: str, mode: str, gpu: str) -> dict[str, Any]:
        return {
            "task_source": task.source,
            "candidate": source,
            "build": self.build,
            "mode": mode,
            "warmup": self.settings.warmup,
            "seed": self.settings.seed,
            "want_spec": False,
            "want_cost": False,  # both from trusted children (gpu_spec, task_cost), never from the
            # candidate's process: a spec sheet it forged would set the peaks of every later profile on its GPU
        }

    def _read_kernels(self, ncu: str, out_dir: Path) -> list[KernelProfile]:
        if self.settings.output != "report":
            return parse_ncu_csv(read_capped(out_dir / "ncu.log"))
        report = out_dir / "profile.ncu-rep"
        sections = self.settings.metric_set in {m.value for m in NCU_SECTION_SETS}
        wanted = None if sections else metric_list(self.settings.metric_set, self.settings.metrics)
        try:
            return parse_ncu_report(report, wanted)
        except Exception:  # noqa: BLE001 - no ncu_report module, or one whose API differs: ncu reads its own report
            text = subprocess.run(
                [ncu, "--import", str(report), *self._csv_args(self.settings.units)],
                capture_output=True,
                text=True,
                timeout=self.settings.timeout_s,
                check=False,
            ).stdout
            return parse_ncu_csv(text)

    # ------------------------------------------------------------------ the API

    def profile(
        self,
        task: Task,
        source: str,
        gpu: str | int | None = None,
        *,
        measured_ms: float | None = None,
        artifact_dir: str | Path | None = None,
    ) -> ProfileResult:
        """Profile one forward of ``source`` (a correct candidate for ``task``) on physical GPU ``gpu``
        (default: the first of ``gpus``).

        ``measured_ms`` (the evaluator's candidate median) gives the fraction of speed of light;
        without it the forward's summed kernel time does. ``artifact_dir`` keeps ncu's raw output
        there. Without a GPU the result is ``unavailable`` with the roofline's FLOPs and bytes.
        """
        started = time.monotonic()
        s = self.settings
        result = ProfileResult(
            task_id=task.id,
            candidate_hash=source_hash(source),
            status=ProfileStatus.OK,
            metric_set=s.metric_set,
            metrics=metric_list(s.metric_set, s.metrics),
        )
        if gpu is None and self.gpus:  # round-robin, as the evaluator spreads its timing (the lock serialises each GPU)
            gpu = self.gpus[next(self._turn) % len(self.gpus)]
        if gpu is None:
            result.status = ProfileStatus.UNAVAILABLE
            result.message = "no GPU to profile on: only the task's FLOPs and minimum bytes are reported"
            cost, result.cached = self._task_cost(task, None, "cpu", result)
            result.roofline = make_roofline(cost, None)
            result.seconds = time.monotonic() - started
            return result
        gpu = str(gpu)
        model = gpu_model_name(gpu)
        result.cache_key = cache_key(result.candidate_hash, task.source_hash, model, s.cache_fields())
        cached = self.cache.get(result.cache_key) if self.cache else None
        if cached is not None:
            cached.cached = True
            if cached.roofline is not None and measured_ms:
                with_measurement(cached.roofline, measured_ms, "evaluator")
            return cached
        ncu = resolve_ncu(s.ncu_path)
        result.tools["ncu"] = ncu_version(ncu) if ncu else None
        run = _Run(task, source, gpu, candidate_kernel_names(source), result, model)
        run.libraries = self._prebuild(source, result)
        out_dir = Path(tempfile.mkdtemp(prefix="cudaforge-ncu-"))
        try:
            with gpu_lock(gpu, self.lock_dir, s.lock_timeout_s) as waited:
                result.phase_seconds["gpu_lock_wait"] = waited  # not the task's active time (TaskResult.active_minutes)
                reason = (
                    self._run_ncu(run, ncu, out_dir)
                    if ncu
                    else (f"ncu not found ({s.ncu_path!r} is neither on PATH nor in $CUDA_HOME/bin)")
                )
                if reason:
                    self._fallback(run, reason)
        except GpuLockTimeout as exc:
            result.status, result.message = ProfileStatus.TIMEOUT, f"the GPU was never free to profile on: {exc}"
        finally:
            self._keep_artifacts(out_dir, artifact_dir, result)
        if result.roofline is not None:
            measured, source_of = (measured_ms, "evaluator") if measured_ms else self._forward_ms(result)
            with_measurement(result.roofline, measured, source_of)
        result.seconds = time.monotonic() - started
        if result.status is ProfileStatus.OK and self.cache is not None:
            self.cache.put(result.cache_key, result)
        return result

    def task_cost(
        self, task: Task, gpu: str | None = None, device: str | None = None
    ) -> tuple[dict[str, Any], float | None]:
        """(The cost of ``task``'s reference, the seconds spent computing it or None when it came from a
        cache). Computed once per task in a child process that runs no candidate (``gpu`` visible to it,
        or none), then kept in memory and in the cache directory under :func:`cost_key`: the task's source
        hash, the seed, ``device`` (default: ``cpu``, or ``gpu``'s model name), the torch and cudaforge
        versions. A failed child's result is not kept."""
        device = device or ("cpu" if gpu is None else gpu_model_name(gpu))
        key = cost_key(task.source_hash, self.settings.seed, device)
        with self._cost_lock(key):  # one child per key: a second caller (the prefetch, another task) waits
            cost = self._cached_cost(key)
            if cost is not None:
                return cost, None
            started = time.monotonic()
            cost, complete = task_cost_child(task.source, seed=self.settings.seed, gpu=gpu)
            seconds = time.monotonic() - started
            if complete:
                self._costs[key] = copy.deepcopy(cost)
                try:
                    if self.cache is not None:
                        self.cache.put_cost(key, cost, task.id)
                except OSError:  # an unwritable cache directory costs the next run a child, not this profile
                    pass
            return cost, seconds

    def prefetch(self, task: Task) -> threading.Thread | None:
        """Start computing ``task``'s cost in the background (returns the thread), so that its first
        profile finds it ready; None when nothing is to do: the cost is cached, or this profiler has
        GPUs (there the cost child runs when a profile needs it, under the GPU's lock)."""
        if self.gpus or self._cached_cost(cost_key(task.source_hash, self.settings.seed, "cpu")) is not None:
            return None
        thread = threading.Thread(target=self.task_cost, args=(task,), name=f"task-cost-{task.id}")
        thread.start()
        return thread

    def _cached_cost(self, key: str) -> dict[str, Any] | None:
        """A copy of the cost of ``key`` from memory or the cache directory, or None."""
        cost = self._costs.get(key)
        if cost is None and self.cache is not None:
            cost = self.cache.get_cost(key)
        if cost is None:
            return None
        self._costs[key] = cost
        return copy.deepcopy(cost)

    def _cost_lock(self, key: str) -> threading.Lock:
        with self._cost_locks_guard:
            return self._cost_locks.setdefault(key, threading.Lock())

    def _task_cost(
        self, task: Task, gpu: str | None, device: str, result: ProfileResult
    ) -> tuple[dict[str, Any], bool]:
        """``task_cost`` for one profile: (the cost, True when cached); a computed one adds its seconds
        to ``result.phase_seconds``."""
        cost, seconds = self.task_cost(task, gpu, device)
        if seconds is not None:
            result.phase_seconds["task_cost"] = seconds
        return cost, seconds is None

    def gpu_spec(self, gpu: str | int | None = None) -> dict[str, Any]:
        """The spec sheet of ``gpu`` (default: the first of ``gpus``), read once in a worker and
        kept; ``{}`` without a GPU or when the worker fails."""
        gpu = str(gpu) if gpu is not None else (self.gpus[0] if self.gpus else None)
        if gpu is None:
            return {}
        if gpu not in self._specs:
            outcome = run_isolated(
                "cudaforge.profile.child:spec_entry", {}, timeouts={}, default_timeout=self.settings.timeout_s, gpu=gpu
            )
            if outcome.status != "ok" or not outcome.result:
                return {}
            self._specs[gpu] = outcome.result
        return self._specs[gpu]

    # ------------------------------------------------------------------ steps

    def run_worker(
        self,
        task: Task,
        source: str,
        gpu: str,
        mode: str,
        wrapper: list[str] | None = None,
        time_iters: int = 0,
        *,
        sandbox: Sandbox | None = None,
        collect: Callable[[Path], None] | None = None,
        libraries: dict[str, list[str]] | None = None,
    ) -> IsolatedOutcome:
        """Run the profiling worker once: ``mode`` ``ncu`` (under ``wrapper``, the ncu command),
        ``torch_profiler`` or ``plain`` (the same work unprofiled: the overhead baseline);
        ``time_iters`` > 0 adds a median CUDA-event time of the forward (``forward_ms``). With ``sandbox`` the
        worker (and the wrapper) runs in it, ``collect(scratch)`` reads what it left once it is dead, and the
        candidate's extensions are copies of ``libraries`` (``_prebuild``) in its scratch: it builds nothing."""
        payload = {**self._payload(task, source, mode, gpu), "time_iters": time_iters}
        kwargs: dict[str, Any] = {"wrapper": wrapper} if wrapper else {}
        if sandbox is not None:
            kwargs.update(sandbox=sandbox, collect=collect)
            payload["delivered"] = _deliver(libraries or {}, Path(sandbox.scratch))
        return run_isolated(
            CHILD_ENTRY, payload, timeouts=self._timeouts(), default_timeout=self.settings.timeout_s, gpu=gpu, **kwargs
        )

    def _prebuild(self, source: str, result: ProfileResult) -> dict[str, list[str]]:
        """Build a CUDA candidate's extensions on the trusted side before a sandboxed profile (a cache hit when the
        evaluator built them, as in a run); the libraries to hand to the sandbox, ``{key: [path, module name]}``. The
        sandbox never sees the build cache: it gets copies of these (``_deliver``)."""
        language = languages.detect(source)
        if (
            self.settings.sandbox == "off"
            or language == languages.NO_KERNEL
            or not languages.get(language).builds_extension
        ):
            return {}
        from cudaforge.eval import BuildSettings, precompile

        started = time.monotonic()
        outcome = precompile(
            source,
            BuildSettings.from_dict(self.build) if self.build else None,
            timeout_s=self.settings.compile_timeout_s,
        )
        result.phase_seconds["prebuild"] = time.monotonic() - started
        if outcome.status not in ("ok", "no_build", "compiled_only"):
            result.message = f"building the candidate before profiling: {outcome.status} {outcome.message}"[:500]
        built = {}
        for record in outcome.records:
            library = os.path.join(str(record.get("build_dir", "")), f"{record.get('module_name')}.so")
            if record.get("status") == "built" and record.get("key") and os.path.isfile(library):
                built[str(record["key"])] = [library, str(record["module_name"])]
        return built

    def sandbox(self) -> Sandbox | None:
        """The sandbox a profiled candidate runs in (None with ``sandbox=off``): the candidate's own kind, with a
        fresh scratch directory that ncu writes its output into as well."""
        s = self.settings
        if s.sandbox == "off":
            return None
        budget = int(s.compile_timeout_s + 4 * s.timeout_s)
        return Sandbox(
            mode=SandboxMode(s.sandbox),
            scratch=new_scratch("prof", 2 * NCU_OUTPUT_CAP + (1 << 30)),
            cpu_seconds=4 * budget + 60,
            file_bytes=NCU_OUTPUT_CAP,
            read=[*default_read_paths(), *ncu_folders(resolve_ncu(s.ncu_path))],
        )

    def _run_ncu(self, run: _Run, ncu: str, out_dir: Path) -> str:
        """Profile under ncu and fill ``run.result``; returns why the fallback must run instead ('' if not)."""
        sandbox = self.sandbox()
        try:
            return self._run_ncu_in(run, ncu, out_dir, sandbox)
        finally:
            if sandbox is not None:  # its scratch may be a tmpfs of its own: never left mounted
                release_scratch(sandbox.scratch)

    def _run_ncu_in(self, run: _Run, ncu: str, out_dir: Path, sandbox: Sandbox | None) -> str:
        result = run.result
        if sandbox is None:
            outcome = self.run_worker(run.task, run.source, run.gpu, "ncu", self.ncu_command(ncu, out_dir))
        else:  # ncu runs in the sandbox beside its target and writes into its scratch; its files are copied out after
            outcome = self.run_worker(
                run.task,
                run.source,
                run.gpu,
                "ncu",
                self.ncu_command(ncu, Path(sandbox.scratch)),
                sandbox=sandbox,
                collect=lambda scratch: copy_ncu_output(scratch, out_dir),
                libraries=run.libraries,
            )
            result.tools["sandbox"] = describe(outcome.sandbox or {})
        log = read_capped(out_dir / "ncu.log")
        tool_text = "\n".join((log, outcome.stdout_tail, outcome.stderr_tail))
        result.phase_seconds.update({f"ncu:{k}": v for k, v in outcome.phase_seconds.items()})
        if _PERMISSION in tool_text:
            if sandbox is not None:
                return (
                    f"{_PERMISSION}: the GPU's performance counters are not readable from the candidate's sandbox "
                    f"({result.tools.get('sandbox')}); on this machine they are for administrators "
                    "(docs/profiling.md: allowing them for all users, or profile.sandbox=off, which profiles the "
                    "candidate outside the sandbox with your user's rights)"
                )
            return (
                f"{_PERMISSION}: this user may not read the GPU's performance counters "
                "(docs/profiling.md says how to allow it)"
            )
        if outcome.status == "timeout":
            return f"ncu timed out: {outcome.error}"
        child = self._child_result(outcome, result, "ncu")
        if child is None:
            errors = ncu_errors(tool_text)
            if errors:
                return f"ncu failed: {errors}"
            if sandbox is not None:  # under ncu's injection in the sandbox; the fallback tells whose fault it is
                return f"ncu could not profile inside the candidate's sandbox ({result.message.strip()[:300]})"
            return ""
        try:
            kernels = self._read_kernels(ncu, out_dir)
        except NcuParseError:
            errors = ncu_errors(tool_text)
            if errors:
                return f"ncu failed: {errors}"
            kernels = []
        except Exception as exc:  # noqa: BLE001 - whatever ncu wrote, profiling falls back rather than raising
            return f"reading ncu's output failed: {type(exc).__name__}: {exc}"
        self._assemble(run, child, kernels)
        if not kernels:
            result.message = "ncu profiled no kernel: the forward launched none"
        errors = ncu_errors(tool_text)
        if errors:
            result.message = f"{result.message}\nncu reported: {errors}".strip()
        return ""

    def _fallback(self, run: _Run, reason: str) -> None:
        """Kernel times from torch.profiler (status ``fallback``), or just the reason when disabled."""
        result = run.result
        result.status, result.message = ProfileStatus.OK, ""
        if not self.settings.fallback:
            result.status = ProfileStatus.TIMEOUT if "timed out" in reason else ProfileStatus.UNAVAILABLE
            result.message = reason
            peaks = (self.gpu_spec(run.gpu) if run.gpu is not None else {}).get("peaks")
            cost, _ = self._task_cost(run.task, run.gpu, run.model, result)
            result.roofline = make_roofline(cost, peaks, allow_tf32=self.settings.allow_tf32)
            return
        sandbox = self.sandbox()
        try:
            outcome = self.run_worker(
                run.task, run.source, run.gpu, "torch_profiler", sandbox=sandbox, libraries=run.libraries
            )
        finally:
            if sandbox is not None:
                release_scratch(sandbox.scratch)
        result.phase_seconds.update({f"torch_profiler:{k}": v for k, v in outcome.phase_seconds.items()})
        if outcome.status == "timeout":
            result.status, result.message = (
                ProfileStatus.TIMEOUT,
                f"{reason}; the torch.profiler fallback timed out too",
            )
            return
        child = self._child_result(outcome, result, "torch.profiler")
        if child is None:
            result.message = f"{reason}; then {result.message}"
            return
        entries = listed if isinstance(listed := child.get("kernels"), list) else []
        kernels = [  # the child's list lies in the candidate's scratch: only well-formed entries, at most MAX_LAUNCHES
            KernelProfile(
                id=i,
                name=k["name"][:KERNEL_NAME_MAX],
                base_name=kernel_base_name(k["name"]),
                own=False,
                duration_ms=float(k["duration_ms"]) if finite_number(k.get("duration_ms")) else None,
            )
            for i, k in enumerate(entries[:MAX_LAUNCHES])
            if isinstance(k, dict) and isinstance(k.get("name"), str)
        ]
        self._assemble(run, child, kernels)
        result.status = ProfileStatus.FALLBACK
        result.metrics = []
        result.message = f"{reason}. Fallback: kernel times from torch.profiler (no hardware metrics) and the roofline."

    def _child_result(self, outcome: IsolatedOutcome, result: ProfileResult, tool: str) -> dict[str, Any] | None:
        """The worker's result dict, or None after setting ``result`` to an error."""
        if outcome.status == "ok" and outcome.result is not None and "error" not in outcome.result:
            return outcome.result
        result.status = ProfileStatus.ERROR
        if outcome.status == "ok" and outcome.result is not None:  # the child's words, from the candidate's scratch
            error = outcome.result["error"]
            result.message = cap_text(
                error if isinstance(error, str) else f"the profiling worker ({tool}) failed", 4000
            )
        elif outcome.status == "error":
            traceback_tail = "\n".join(outcome.error.strip().splitlines()[-8:])
            result.message = f"the profiling worker ({tool}) raised:\n{traceback_tail}"
        else:
            tail = "\n".join(outcome.stderr_tail.strip().splitlines()[-10:])
            result.message = f"the profiling worker ({tool}) {outcome.status}: {outcome.error}" + (
                f"\n{tail}" if tail else ""
            )
        return None

    def _assemble(self, run: _Run, child: dict[str, Any], kernels: list[KernelProfile]) -> None:
        """Own vs library kernels, totals, rules, spec sheet, tools and roofline into ``run.result``."""
        result, own_names = run.result, run.own_names
        for kernel in kernels:
            kernel.own = is_own_kernel(kernel.name, own_names)
        own = [k for k in kernels if k.own]
        library = [k for k in kernels if not k.own]
        result.kernels = kernels if self.settings.include_library_kernels else own
        result.totals = totals(own)
        result.own_kernel_ms = sum_ms(own)
        result.library_kernel_ms = sum_ms(library)
        result.library_kernel_names = list(dict.fromkeys(k.base_name for k in library))
        result.rules = [rule for k in result.kernels for rule in k.rules if rule.message]
        result.spec = self.gpu_spec(run.gpu) if run.gpu is not None else {}
        result.tools.update(child_versions(child.get("versions")))
        result.tools["driver"] = result.spec.get("driver_version")
        cost, _ = self._task_cost(run.task, run.gpu, run.model, result)
        result.roofline = make_roofline(cost, result.spec.get("peaks"), allow_tf32=self.settings.allow_tf32)
        if own_names and kernels and not own:
            result.message = (
                f"none of the candidate's kernels ({', '.join(sorted(own_names))}) ran in the forward; "
                f"it launched only {', '.join(result.library_kernel_names)}"
            )

    @staticmethod
    def _forward_ms(result: ProfileResult) -> tuple[float | None, str]:
        parts = [x for x in (result.own_kernel_ms, result.library_kernel_ms) if x is not None]
        tool = "ncu" if result.status is ProfileStatus.OK else "torch.profiler"
        return (sum(parts), tool) if parts else (None, "")

    @staticmethod
    def _keep_artifacts(out_dir: Path, artifact_dir: str | Path | None, result: ProfileResult) -> None:
        if artifact_dir is not None:
            target = Path(artifact_dir)
            target.mkdir(parents=True, exist_ok=True)
            for name, key in (("ncu.log", "ncu_log"), ("profile.ncu-rep", "ncu_rep")):
                if (out_dir / name).exists():
                    kept = target / f"{result.candidate_hash}-{result.metric_set}-{name}"
                    shutil.copyfile(out_dir / name, kept)
                    result.artifacts[key] = str(kept)
        shutil.rmtree(out_dir, ignore_errors=True)


@dataclass
class _Run:
    """One ``profile`` call's inputs and the result being filled in."""

    task: Task
    source: str
    gpu: str
    own_names: set[str]
    result: ProfileResult
    model: str
    """The GPU's model name (part of the task cost's key)."""
    libraries: dict[str, list[str]] = field(default_factory=dict)
    """The candidate's extensions the trusted side built, for a sandboxed profile (``Profiler._prebuild``)."""


def _deliver(libraries: dict[str, list[str]], scratch: Path) -> dict[str, list[str]]:
    """Copy the candidate's built extensions into its sandbox's scratch (never through a link, each a checked
    library: ``deliver``); the payload's map from build key to (the copy, its module name)."""
    from cudaforge.eval import deliver

    return {key: [deliver(library, scratch, module), module] for key, (library, module) in libraries.items()}
