"""Nsight Compute's side of profiling (``cudaforge.profile.profiler`` runs it): finding ncu and its version, the
GPU's name and the visible GPUs (through the vendor), the totals over a forward's kernels, and reading back what ncu
and the profiling child left in a sandbox's scratch (copied out capped, never through a link)."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
from pathlib import Path
from typing import Any, cast

from cudaforge.profile.metrics import is_additive
from cudaforge.profile.records import KernelProfile, MetricValue
from cudaforge.vendors import current


def ncu_version(ncu: str) -> str | None:
    """``ncu --version``'s version (``2025.3.1.0``), or None (the vendor's profiler: ``cudaforge.vendors``)."""
    return current().profiler_version(ncu)


def resolve_ncu(ncu_path: str) -> str | None:
    """The ncu executable's path, or None when there is none (also tries the toolkit's bin)."""
    return current().profiler(ncu_path)


def gpu_model_name(gpu: str | int) -> str:
    """The model name of physical GPU ``gpu`` (index or UUID), for cache keys; never raises."""
    return current().model_name(gpu)


def visible_gpu_ids() -> list[str]:
    """Physical GPU ids this process may use, without torch (``[]``: none); the vendor says how."""
    return current().visible_devices()


def totals(kernels: list[KernelProfile]) -> dict[str, MetricValue]:
    """Metrics totalled over ``kernels`` (one forward): counters summed, rates and percentages
    averaged weighted by kernel duration, per-launch properties (``launch__*``) left out."""
    out: dict[str, MetricValue] = {}
    names = list(dict.fromkeys(name for k in kernels for name in k.metrics))
    for name in names:
        pairs = [
            (k.metrics[name], k.duration_ms)
            for k in kernels
            if name in k.metrics and isinstance(k.metrics[name].value, float)
        ]
        if not pairs:
            continue
        unit = pairs[0][0].unit
        additive = is_additive(name, unit)
        if additive is None or any(m.unit != unit for m, _ in pairs):
            continue  # per launch, or values printed in different units (``profile.units=auto``): no total
        values = [cast(float, m.value) for m, _ in pairs]  # pairs keeps the float values only
        if additive:
            total = sum(values)
        else:
            weights = [d or 0.0 for _, d in pairs]
            if sum(weights) > 0:
                total = sum(v * w for v, w in zip(values, weights)) / sum(weights)
            else:
                total = sum(values) / len(values)
        out[name] = MetricValue(total, unit, "total")
    return out


def ncu_folders(ncu: str | None) -> list[str]:
    """The install folder of ncu (its front end, its target libraries and sections), for the sandbox's root."""
    if not ncu:
        return []
    real = Path(os.path.realpath(ncu)).parent
    return [str(real.parent if real.name == "bin" else real)]


NCU_OUTPUT_CAP = 1 << 30
"""The largest file ncu (or anything else in the profiling sandbox) may write, and the most of it read back."""


def copy_ncu_output(scratch: Path, out_dir: Path) -> None:
    """Copy ncu's log and report out of a dead sandbox's scratch into this process's own folder: regular files only,
    never through a link, capped (the candidate could have left anything there)."""
    for name in ("ncu.log", "profile.ncu-rep"):
        try:
            fd = os.open(scratch / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as src:
            info = os.fstat(src.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size <= NCU_OUTPUT_CAP:
                with (out_dir / name).open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)


def read_capped(path: Path, cap: int = 32 << 20) -> str:
    """The first ``cap`` bytes of a file of ours as text ('' when absent)."""
    try:
        with path.open("rb") as f:
            return f.read(cap).decode(errors="replace")
    except OSError:
        return ""


def sum_ms(kernels: list[KernelProfile]) -> float | None:
    """The summed duration of ``kernels`` in ms (those with one), or None when none has one."""
    known = [k.duration_ms for k in kernels if k.duration_ms is not None]
    return sum(known) if known else None


def child_versions(versions: Any) -> dict[str, str | None]:
    """The tool versions a profiling child reported (read from the candidate's scratch, so any JSON): names and
    version strings only, at most 16 of them, each cut to 64 and 200 characters; anything else is dropped."""
    if not isinstance(versions, dict):
        return {}
    return {
        k[:64]: v[:200] if isinstance(v, str) else None
        for k, v in itertools.islice(versions.items(), 16)
        if isinstance(k, str) and (v is None or isinstance(v, str))
    }


def ncu_errors(text: str) -> str:
    """ncu's ``==ERROR==`` lines, joined (empty when there are none)."""
    return " ".join(line.split("==ERROR==", 1)[1].strip() for line in text.splitlines() if "==ERROR==" in line)[:2000]
