"""Before the candidate: a standby's start-up, what is measured before any candidate code exists, and JIT kernels
compiled ahead in the compile phase."""

from __future__ import annotations

import os
import secrets
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import torch

from cudaforge import languages
from cudaforge.eval.jit_cache import count_kernels, seed_worker_caches
from cudaforge.eval.known import known_before
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.verifier.candidate import Candidate, start_worker
from cudaforge.eval.verifier.common import SOLO_TRIALS, Failure, finite_or_none
from cudaforge.eval.verifier.crosscheck import exchange_cost
from cudaforge.eval.worker.exchange import ArenaError
from cudaforge.eval.worker.remote import CandidateProcess, WorkerFailure
from cudaforge.tasks.runtime import grad_mode, load_module, make_inputs
from cudaforge.types import EvalResult, EvalStatus, Task
from cudaforge.vendors import pinned


def before_candidate(
    ref_model: Any,
    ref_module: ModuleType,
    cand: Candidate,
    device: torch.device,
    cfg: EvalConfig,
    result: EvalResult,
    known: Any = None,
) -> None:
    """What is measured before any candidate code exists, under the GPU's lock if it is free within a few seconds
    (a note when it is not): the reference timed alone (the baseline of the reference_slowdown guard), and the
    cost of the timing cross-check's path through this worker (``exchange_cost``). Neither depends on the
    candidate: ``known`` figures of an earlier evaluation of the same task on this GPU under these settings, at
    most ``BEFORE_MAX_AGE_S`` old, are used as they are (``fingerprint["measured_before_reused"]`` says whose
    and how old) instead of being measured again."""
    from cudaforge.eval.timing import time_one
    from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock

    reused = known_before(known)
    if reused is not None:
        result.fingerprint.update(reused["values"])
        result.fingerprint["measured_before_reused"] = {"from": reused["from"], "age_s": reused["age_s"]}
        return
    seed = secrets.randbits(40)
    try:
        with gpu_lock(pinned() or "0", timeout_s=5.0), grad_mode(cfg.no_grad):
            times = time_one(
                ref_model,
                trials=SOLO_TRIALS,
                warmup=3,
                flush_l2=cfg.flush_l2,
                device=device,
                make_args=lambda t: make_inputs(ref_module, seed=seed + t, device=device),
                lead_us=cfg.timing_lead_us,
            )
            result.fingerprint["measured_before_at"] = time.time()
            result.fingerprint["reference_solo_ms"] = sorted(times.event_ms)[len(times.event_ms) // 2]
            try:
                exchange_cost(ref_model, ref_module, cand, device, cfg, result, seed)
            except (Failure, ArenaError, RuntimeError) as exc:  # the cross-check then stands on the reference's path
                result.fingerprint.setdefault("guard_notes", []).append(
                    f"the cross-check's exchange path was not measured: {exc}"[:300]
                )
    except GpuLockTimeout:
        result.fingerprint.setdefault("guard_notes", []).append(
            "reference_slowdown not checked: the GPU was busy when the reference would have been timed alone"
        )
    except Exception as exc:  # noqa: BLE001 - the reference's own failure shows in correctness
        result.fingerprint.setdefault("guard_notes", []).append(f"reference not timed alone: {type(exc).__name__}")


def probe_trace(cand: Candidate, result: EvalResult) -> None:
    """Whether the worker can trace its timed calls (``cudaforge.eval.timed_trace``), asked before the candidate is
    loaded: a trace that worked here and fails later was broken by the candidate (``untimed_work`` fires)."""
    try:
        reply = cand._request({"op": "trace", "action": "probe"})
    except Failure as failure:
        reply = {"trace_ok": False, "note": failure.message}
    result.fingerprint["timed_trace_probe"] = {
        "trace_ok": reply.get("trace_ok") is True,
        "note": str(reply.get("note") or "")[:300],
        "probe_s": finite_or_none(reply.get("probe_s")),
    }


PREPARED: dict[str, Any] = {}
"""What ``prepare`` did in this process (empty when the verifier was not a standby)."""


def prepare(progress: Callable[[str], None], claimed: Callable[[], bool]) -> None:
    """A standby verifier's start-up, paid before its candidate is known (``cudaforge.proc.isolation.Standby``):
    imports, the fingerprint's constant parts, the sandboxed worker (started and waited for), and the CUDA
    contexts of both processes, made while holding the GPU's lock (so neither lands inside another process's
    timed calls) and only until the standby is claimed."""
    from cudaforge.eval import extensions  # noqa: F401 - torch.utils.cpp_extension and the build service
    from cudaforge.eval.fastclose import warm, warm_host
    from cudaforge.eval.fingerprint import warm_caches
    from cudaforge.hardware.gpu_lock import GpuLockTimeout, gpu_lock

    started = time.perf_counter()
    # torch._inductor (torch._dynamo, sympy ...) is what a first FlopCounterMode imports (the cost model after the
    # timed trials): about 1 s on a laptop core, seconds on a GPU node.
    import numpy.ma  # noqa: F401 - numpy's median imports it at its first call (the timing's early stop): 0.09 s
    import torch._inductor  # noqa: F401
    import torch.utils.flop_counter  # noqa: F401

    import cudaforge.hardware.roofline  # noqa: F401
    import cudaforge.hardware.specs  # noqa: F401
    import cudaforge.tasks.cost  # noqa: F401

    warm_caches()
    warm_host()
    gpu = pinned()
    device = torch.device("cuda" if gpu and torch.cuda.is_available() else "cpu")
    cfg = standby_settings()
    if cfg is not None:
        logs = os.getcwd()
        process = start_worker(device, cfg, logs)
        PREPARED["process"] = process
        try:
            process.wait_hello(cfg.static_timeout_s)
        except WorkerFailure:
            pass  # the evaluation finds the worker dead and says why
    cuda_ready = False
    if device.type == "cuda":
        while not claimed():
            try:
                with gpu_lock(cast(str, gpu).split(",")[0], timeout_s=0.1):  # a GPU device: one was pinned
                    torch.empty(1, device="cuda").add_(1)
                    torch.cuda.synchronize()
                    warm(device)  # the output screen's first launch (Triton's once-per-process costs)
                    if cfg is not None:
                        warm_checks(device, cfg)
                    if "process" in PREPARED and PREPARED["process"].hello:
                        seed_worker_caches(PREPARED["process"].scratch)
                        PREPARED["process"].request({"op": "cuda"}, timeout_s=60.0)
                    cuda_ready = True
                break
            except GpuLockTimeout:
                continue
            except WorkerFailure:
                break
    PREPARED.update(prepare_s=round(time.perf_counter() - started, 4), cuda_ready=cuda_ready)


def warm_checks(device: torch.device, cfg: EvalConfig) -> None:
    """The first launches of the kernels every evaluation's checks run (drawing inputs, comparing outputs, the
    inputs' bit-for-bit check, the precision guard's statistics), in the usual dtypes, paid by a standby before its
    candidate is known: under lazy module loading, CUDA loads each kernel's module at its first launch in a
    process, and each verifier is a new process. Never raises (what fails here fails again, and is reported,
    where it counts)."""
    from cudaforge.eval.guards import runtime as guards
    from cudaforge.eval.verifier.common import compare_outputs

    try:
        for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
            expected = torch.randn(4096, device=device).to(dtype)
            actual = expected + (expected.abs() * 1e-3).to(dtype)
            compare_outputs(cfg, expected, actual, atol=1e-2, rtol=1e-2, trial=0, variant="warm")
            guards.same_bits(expected, expected.clone())
            if dtype in (torch.float32, torch.float64):
                guards.precision_downgrade(expected, actual)
        torch.rand(4096, device=device)
        torch.randint(0, 7, (4096,), device=device)
        torch.cuda.synchronize(device)
    except Exception:  # noqa: BLE001
        pass


def standby_settings() -> EvalConfig | None:
    """The settings a standby was started with (``CUDAFORGE_STANDBY_EVAL``, JSON), to start its worker ahead."""
    import json

    try:
        return EvalConfig.from_dict(json.loads(os.environ["CUDAFORGE_STANDBY_EVAL"]))
    except (KeyError, ValueError, TypeError):
        return None


JIT_AHEAD_MIN_S = 20.0
"""Compile-phase seconds that must be left for ``eval.jit_ahead=compile`` to start its copy (a fresh interpreter
took about 8 s on an H200)."""


def jit_ahead(
    source: str,
    task: Task,
    init: list[Any],
    process: CandidateProcess,
    device: torch.device,
    cfg: EvalConfig,
    timeout_s: float,
    build: bool,
) -> dict[str, Any] | None:
    """For a candidate in a JIT language that can be built ahead (Triton, TileLang; None for any other): how many
    compiled kernels its worker's cache of that language held after the candidate's import (what the CPU pool or
    an earlier evaluation built ahead, plus what the worker warmed with) and after the compile phase, as counted
    here; with ``build``
    (``eval.jit_ahead=compile``, the pool did not prepare it), its kernels are compiled in the compile phase, on
    fake tensors of the task's inputs (``cudaforge.eval.jit_prebuild``). The task's inputs are described from a
    module of the task loaded for this alone (a fake tensor must never stay in the reference the trials use).
    What cannot be described, or a copy that fails, is a note, not a verdict; a worker that stops answering is the
    candidate's failure, in the compile phase."""
    from cudaforge.eval.jit_prebuild import input_sets, reported_kernels, specs
    from cudaforge.vendors import current

    name = languages.detect(source)
    if name == languages.NO_KERNEL or languages.get(name).prebuild is None or not languages.get(name).jit_cache:
        return None
    cache = Path(process.scratch) / languages.get(name).jit_cache
    marks = languages.get(name).jit_kernel_marks
    record: dict[str, Any] = {"language": name, "kernels_seeded": count_kernels(cache, marks)}
    if not build or timeout_s < JIT_AHEAD_MIN_S:
        record.update(kernels=[], kernels_after=record["kernels_seeded"], note="")
        if build:
            record["note"] = f"{name} kernels not compiled ahead: {timeout_s:.0f} s of the compile phase left"
        elif record["kernels_seeded"]:
            record["note"] = f"{name} kernels found built ahead: {record['kernels_seeded']} in the worker's cache"
        return record
    major, minor = torch.cuda.get_device_capability(device)
    target = current().jit_target(f"{major}.{minor}")
    try:
        if target is None:
            raise ValueError(f"no JIT target for compute capability {major}.{minor}")
        ref = load_module(task.source, f"_cudaforge_jit_inputs_{task.source_hash[:12]}")
        sys.modules.pop(ref.__name__, None)
        request = {
            "op": "prebuild",
            "language": name,
            "init": specs(init),
            "target": target,
            "seed": cfg.seed,
            "inputs": input_sets(ref, task.input_variants if cfg.check_variants else (), seed=cfg.seed * 1000),
            "timeout_s": timeout_s - 10.0,
        }
    except Exception as exc:  # noqa: BLE001 - the task's own code under fake tensors: anything may raise
        record.update(
            kernels=[],
            kernels_after=record["kernels_seeded"],
            error=str(exc)[:300],
            note=f"{name} kernels not compiled ahead: {str(exc)[:200]}",
        )
        return record
    try:
        reply = process.request(request, timeout_s=timeout_s - 5.0)
    except WorkerFailure as failure:  # the copy has its own deadline 5 s sooner: this is the worker's doing
        raise Failure(EvalStatus(failure.status), failure.message) from None
    kernels = reported_kernels(reply)
    error = said if isinstance(said := reply.get("error"), str) else ""
    record.update(
        kernels=kernels,
        error=error[:300],
        kernels_after=count_kernels(cache, marks),
        seconds=reply.get("seconds") if isinstance(reply.get("seconds"), (int, float)) else None,
    )
    record["note"] = (
        f"{name} kernels compiled ahead: {', '.join(kernels)}"
        if kernels
        else f"no {name} kernel compiled ahead" + (f" ({error[:200]})" if error else "")
    )
    return record


def evict(build: dict[str, Any]) -> None:
    """Keep the build cache under ``eval.build_cache_max_gb`` after a JIT cache was kept in it (a run of Triton
    candidates builds nothing that would evict otherwise)."""
    import contextlib

    from cudaforge.caches import GB, evict_lru
    from cudaforge.eval.extensions import BuildSettings

    settings = BuildSettings.from_dict(build)
    if settings.max_cache_gb > 0:
        with contextlib.suppress(OSError):
            evict_lru(settings.cache_root(), int(settings.max_cache_gb * GB), pch_root=settings.pch_root())
