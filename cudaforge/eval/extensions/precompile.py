"""Builds ahead of a GPU evaluation: ``precompile`` imports a candidate in a sandboxed CPU-only worker whose
``load_inline`` calls this package serves, under a hard timeout, so compiles overlap GPU work.

``python -m cudaforge.eval.extensions.precompile SOURCE RESULT SETTINGS_JSON`` is the child it starts."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge import languages
from cudaforge.caches import GB, evict_lru
from cudaforge.eval.extensions.deferred import reported_misses, reported_sites
from cudaforge.eval.extensions.logs import trim_compiler_log
from cudaforge.eval.extensions.records import BuildRecorder
from cudaforge.eval.extensions.service import serve_build_counted
from cudaforge.eval.extensions.settings import BuildSettings
from cudaforge.proc.files import write_atomic
from cudaforge.proc.isolation import remove_noted, scrubbed_env
from cudaforge.vendors import pin_env

# --------------------------------------------------------------------------- precompile


@dataclass
class BuildOutcome:
    """What :func:`precompile` found, JSON-serialisable."""

    status: str
    """``ok`` (every build linked), ``compiled_only`` (compiled; torch here has no CUDA to link
    and load against), ``failed`` (compile/link error), ``toolchain_error`` (this machine's CUDA
    toolkit lacks a header the sources need: not the candidate's fault), ``timeout``, ``crashed``
    (the child died or broke outside a build), or ``no_build`` (nothing was built, e.g. Triton)."""
    cached: bool = False
    """True when every build was a cache hit."""
    seconds: float = 0.0
    """Wall time of the whole precompile, process start included."""
    build_seconds: float = 0.0
    """Time spent inside build calls."""
    keys: list[str] = field(default_factory=list)
    log: str = ""
    """Whole compiler output of every build (or the child's stderr when it crashed)."""
    log_trimmed: str = ""
    """First errors with context, for the Judge."""
    message: str = ""
    """One line: what happened (for ``ok``, also an exception the import raised after building)."""
    records: list[dict[str, Any]] = field(default_factory=list)
    prebuilt: list[str] = field(default_factory=list)
    """The builds the candidate defers (in ``__init__``/``forward``) that were built ahead (``build.deferred``)."""
    deferred: list[str] = field(default_factory=list)
    """The deferred builds left to run time, each with why (``build.deferred.prebuild``)."""
    jit: list[str] = field(default_factory=list)
    """Kernels a JIT language (Triton) compiled ahead for the target GPU (``cudaforge.eval.jit_prebuild``), kept for
    the GPU worker of the same source."""
    jit_message: str = ""
    """Why no JIT kernel was compiled ahead, or what stopped the run after some were (empty otherwise)."""

    @property
    def ok(self) -> bool:
        """True when the sources compiled (``ok``, ``compiled_only`` or ``no_build``)."""
        return self.status in ("ok", "compiled_only", "no_build")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return dataclasses.asdict(self)


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[3])


def precompile(
    source: str,
    settings: BuildSettings | None = None,
    timeout_s: float = 600.0,
    env: dict[str, str] | None = None,
    task_source: str | None = None,
) -> BuildOutcome:
    """Build a candidate's extensions in a CPU-only child process, ahead of its GPU evaluation.

    The child (trusted, ``CUDA_VISIBLE_DEVICES=""``, its own session, a scrubbed environment plus
    ``env``) starts a sandboxed worker that imports ``source``; the worker's ``load_inline`` calls come
    back to the child, which builds them (:func:`serve_build`: the compiler sandboxed, the cache
    written here only). Past ``timeout_s`` the child's process group is killed, and its worker's
    sandbox with it. Import errors that happen after the builds (a candidate that touches the GPU at
    import, say) do not fail the outcome: they are the evaluation's business, and are reported in
    ``message``.

    With ``task_source`` (the task's reference module), kernels of a JIT language (Triton) are compiled too, for
    ``settings.arch``, by running the candidate once on fake tensors of the task's inputs in the worker
    (``cudaforge.eval.jit_prebuild``); what they compile is kept for the GPU worker of the same source.
    """
    settings = (settings or BuildSettings()).resolved()
    started = time.perf_counter()
    work = Path(settings.cache_dir) / "precompile"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        src = Path(tmp) / "candidate.py"
        src.write_text(source)
        result = Path(tmp) / "outcome.json"
        task_file = Path(tmp) / "task.py"
        if task_source is not None:
            task_file.write_text(task_source)
        child_env = scrubbed_env(
            {
                **pin_env(None),
                "PYTHONPATH": os.pathsep.join(p for p in (_package_root(), os.environ.get("PYTHONPATH")) if p),
                "PYTHONUNBUFFERED": "1",
                **(env or {}),
            }
        )
        cmd = [
            sys.executable,
            "-P",  # its working folder is never where imports are found
            "-m",
            "cudaforge.eval.extensions.precompile",
            str(src),
            str(result),
            json.dumps(settings.to_dict()),
            str(task_file) if task_source is not None else "",
        ]
        proc = subprocess.Popen(
            cmd,
            env=child_env,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            output, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            output, _ = proc.communicate()
            remove_noted(tmp)  # the worker's scratch directory, which the killed child could not remove
            return BuildOutcome(
                status="timeout",
                seconds=time.perf_counter() - started,
                log=output[-20000:],
                message=f"precompile killed after {timeout_s:g} s",
            )
        seconds = time.perf_counter() - started
        if not result.exists():
            remove_noted(tmp)
            tail = output[-20000:]
            return BuildOutcome(
                status="crashed",
                seconds=seconds,
                log=tail,
                log_trimmed=trim_compiler_log(tail),
                message=f"precompile child exited with code {proc.returncode} and no result",
            )
        outcome = BuildOutcome(**json.loads(result.read_text()))
        outcome.seconds = seconds
        return outcome


def _outcome_from(recorder: BuildRecorder, error: BaseException | None) -> BuildOutcome:
    records = recorder.records
    if any(r.status == "failed" for r in records):
        status = "failed"
    elif any(r.status == "toolchain_error" for r in records):
        status = "toolchain_error"
    elif any(r.status == "crashed" for r in records):
        status = "crashed"
    elif any(r.status == "compiled_only" for r in records):
        status = "compiled_only"
    elif records:
        status = "ok"
    else:
        status = "no_build" if error is None else "crashed"
    if error is not None and status in ("ok", "no_build"):
        message = f"built; importing the candidate then raised {type(error).__name__}: {error}"[:2000]
    elif status == "compiled_only":
        message = "compiled with nvcc; not linked or loaded: torch here has no CUDA"
    elif status in ("failed", "toolchain_error"):
        message = "; ".join((r.error.splitlines() or ["build failed"])[0] for r in records if r.status == status)
    elif status == "crashed":
        broken = [r.error for r in records if r.status == "crashed"]
        message = ("; ".join(broken) if broken else f"{type(error).__name__}: {error}")[:2000]
    else:
        message = "built" if records else "no extension was built"
    return BuildOutcome(
        status=status,
        cached=recorder.cached,
        build_seconds=recorder.seconds,
        keys=recorder.keys,
        log=recorder.log,
        log_trimmed=recorder.log_trimmed,
        message=message,
        records=recorder.to_dict()["records"],
    )


JIT_TIMEOUT_S = 300.0
"""How long the CPU pool's worker may compile a candidate's JIT kernels (the whole precompile has its own limit)."""


def _jit_request(source: str, task_path: str, settings: BuildSettings) -> tuple[dict[str, Any] | None, str]:
    """The worker's ``prebuild`` request for a JIT-language candidate (None and why not otherwise)."""
    from cudaforge.eval.jit_prebuild import input_sets, specs
    from cudaforge.tasks.runtime import load_module
    from cudaforge.vendors import current

    name = languages.detect(source)
    if not task_path or name == languages.NO_KERNEL or languages.get(name).prebuild is None:
        return None, ""
    target = current().jit_target(settings.arch or "")
    if target is None:
        return None, f"no JIT target for architecture {settings.arch!r}"
    try:
        ref = load_module(Path(task_path).read_text(), "cudaforge_reference_precompile")
        return {
            "op": "prebuild",
            "language": name,
            "init": specs(list(ref.get_init_inputs())),
            "target": target,
            "inputs": input_sets(ref, tuple(getattr(ref, "INPUT_VARIANTS", ()))),
            "timeout_s": JIT_TIMEOUT_S,
        }, ""
    except Exception as exc:  # noqa: BLE001 - the task's inputs could not be described: left to the GPU
        return None, f"the task's inputs could not be described: {type(exc).__name__}: {exc}"[:500]


def _precompile_child(source_path: str, result_path: str, settings_json: str, task_path: str = "") -> int:
    """Entry point of the precompile child (trusted): the candidate is imported in a sandboxed CPU-only worker
    whose ``load_inline`` calls this process builds; then, with a task (``task_path``), its JIT kernels are compiled
    there and kept for the GPU worker; the outcome is written to ``result_path``."""
    from cudaforge.eval.worker.remote import CandidateProcess, WorkerFailure
    from cudaforge.proc.isolation import note_scratch
    from cudaforge.proc.sandbox import SandboxMode

    settings = BuildSettings.from_dict(json.loads(settings_json))
    source = Path(source_path).read_text()
    recorder = BuildRecorder()
    error: BaseException | None = None
    prebuilt: list[str] = []
    deferred: list[str] = []
    jit: list[str] = []
    jit_message = ""
    worker = CandidateProcess(
        device="cpu",
        mode=SandboxMode(settings.sandbox),
        logs_dir=str(Path(result_path).parent),
        namespaces=settings.sandbox_namespaces,
        allow_weak=settings.allow_weak_sandbox,
        env=languages.compiled_env(),
    )  # compiled for the GPU, not interpreted
    note_scratch(worker.scratch, Path(result_path).parent)  # the parent removes it, should this process be killed

    def on_build(inputs: dict[str, Any]) -> dict[str, Any]:
        return serve_build_counted(inputs, recorder.records, settings, worker.scratch, worker.sandbox.uid)

    import torch.utils.cpp_extension  # noqa: F401 - while the worker starts, not inside the first build's time

    try:
        worker.wait_hello(120.0)
        reply = worker.request(
            {"op": "load", "source": source, "module": "cudaforge_candidate", "build": settings.to_dict()},
            timeout_s=24 * 3600,
            on_build=on_build,
        )  # the parent's deadline
        prebuilt, deferred = reported_sites(reply), reported_misses(reply)
        request, jit_message = _jit_request(source, task_path, settings)
        if request is not None:
            jit, jit_message = _compile_jit(worker, request, settings, source)
    except WorkerFailure as failure:
        built = [r for r in recorder.records if r.status == "built"]
        if failure.status == "compile_error" and built and len(built) == len(recorder.records):
            # built here, but the library would not load in the worker (an undefined symbol, say)
            record = built[-1]
            record.status, record.error = "failed", failure.message.split("\n", 1)[-1][:20000]
            record.log += f"\n{record.error}\n"
            record.log_trimmed = trim_compiler_log(record.log)
        elif failure.status not in ("compile_error", "compiled", "unsupported"):
            error = RuntimeError(failure.message)
    finally:
        worker.close()
    outcome = _outcome_from(recorder, error)
    outcome.prebuilt, outcome.deferred, outcome.jit, outcome.jit_message = prebuilt, deferred, jit, jit_message
    if jit and outcome.status == "no_build":
        outcome.message = f"compiled ahead for the GPU: {', '.join(jit)}"
    write_atomic(Path(result_path), json.dumps(outcome.to_dict()))
    return 0


def _compile_jit(worker: Any, request: dict[str, Any], settings: BuildSettings, source: str) -> tuple[list[str], str]:
    """Have ``worker`` compile the JIT kernels ``request`` asks for, then keep its JIT caches for the source's GPU
    worker once every process of its sandbox is dead (only where a PID namespace makes that certain)."""
    from cudaforge.eval.jit_cache import keep_own_jit_cache, own_store
    from cudaforge.eval.jit_prebuild import reported_kernels
    from cudaforge.eval.worker.remote import WorkerFailure
    from cudaforge.languages import jit_caches
    from cudaforge.types import source_hash

    try:
        reply = worker.request(request, timeout_s=JIT_TIMEOUT_S + 30)
    except WorkerFailure as failure:
        return [], f"compiling ahead failed: {failure.message}"[:500]
    kernels = reported_kernels(reply)
    error = reply.get("error") if isinstance(reply.get("error"), str) else ""
    if not kernels:
        return [], error[:500] or "no kernel was launched"
    if "pid" not in (worker.sandbox_status().get("namespaces") or []):
        return [], "compiled, but not kept: without a PID namespace no one can tell that the worker is gone"
    if not worker.process.kill():  # every process of the sandbox dead before its files are read
        return kernels, "compiled, but not kept: a process of the sandbox outlived its kill"
    new_store = False
    for language in jit_caches(source):  # only the languages it is written in
        store = own_store(settings.cache_root(), language.jit_cache, source_hash(source))
        existed = store.exists()
        keep_own_jit_cache(Path(worker.scratch) / language.jit_cache, store, language.jit_keep)
        new_store = new_store or (not existed and store.exists())
    if new_store and settings.max_cache_gb > 0:  # what was kept counts in the cache's size limit like a build
        with contextlib.suppress(OSError):
            evict_lru(settings.cache_root(), int(settings.max_cache_gb * GB), pch_root=settings.pch_root())
    return kernels, error[:500]


if __name__ == "__main__":
    sys.exit(_precompile_child(*sys.argv[1:5]))
