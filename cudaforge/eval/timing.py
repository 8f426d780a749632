"""Timing kernels as a measurement: interleaved trials, cold L2, medians with intervals.

Two halves:

* statistics (``bootstrap_ci``, ``summarize``, ``speedup``): numpy only, no GPU needed;
* measurement (``L2Flusher``, ``time_interleaved``, ``time_one``): CUDA events plus host
  wall time around the same region, with a full device synchronisation on both sides of
  every timed call. Without CUDA they raise :class:`TimingUnavailable`; they never make up
  numbers.

torch is imported lazily, so the statistics work (and this module imports) without it.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cudaforge.types import SpeedupStats, TimingStats
from cudaforge.vendors import current

FALLBACK_L2_BYTES = 128 * 1024 * 1024
"""Assumed L2 size when the device does not report one (the flush buffer is twice this: 256 MB)."""

_BOOTSTRAP_CHUNK_ELEMENTS = 4_000_000
"""Resampled values held at once by ``bootstrap_ci`` (bounds memory for long sample lists)."""

OutputHook = Callable[[str, int, Sequence[Any], Any], None]
"""``hook(role, trial, args, output)``, called after each timed call, outside the timed region."""

ArgsFactory = Callable[[int], Sequence[Any]]
"""``make_args(trial) -> args`` for one call; warm-up calls get negative trial numbers."""


class TimingUnavailable(RuntimeError):
    """GPU timing cannot run here (no torch, no CUDA build, or no visible device)."""


# --------------------------------------------------------------------------- statistics


def _as_samples(samples: Sequence[float] | np.ndarray, name: str = "samples") -> np.ndarray:
    """Validate timing samples: non-empty, finite, non-negative; return a float64 array."""
    values = np.asarray(samples, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} holds non-finite values (NaN or inf)")
    if np.any(values < 0):
        raise ValueError(f"{name} holds negative times")
    return values


def _apply_rowwise(statistic: Callable[..., Any], resampled: np.ndarray) -> np.ndarray:
    """Apply ``statistic`` to each row, vectorised when it accepts ``axis`` (numpy reducers do)."""
    try:
        return np.asarray(statistic(resampled, axis=1), dtype=np.float64)
    except TypeError:
        return np.array([statistic(row) for row in resampled], dtype=np.float64)


def _row_blocks(n_resamples: int, n: int) -> list[int]:
    """Split ``n_resamples`` resamples of ``n`` values into row blocks that bound memory."""
    rows_per_block = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // n)
    return [min(rows_per_block, n_resamples - start) for start in range(0, n_resamples, rows_per_block)]


def _percentile_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The central ``confidence`` interval of bootstrap replicates."""
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [alpha, 1.0 - alpha])
    return float(low), float(high)


def _check_bootstrap_args(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def bootstrap_ci(
    samples: Sequence[float] | np.ndarray,
    statistic: Callable[..., Any] = np.median,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``statistic`` over ``samples``.

    Resamples with replacement ``n_resamples`` times from a generator seeded with ``seed``
    (same inputs, same interval), evaluating ``statistic(matrix, axis=1)`` on whole blocks
    of resamples at once; statistics without an ``axis`` argument are applied row by row.
    Returns ``(low, high)``. Raises ValueError on empty or non-finite samples.
    """
    values = _as_samples(samples)
    _check_bootstrap_args(n_resamples, confidence)
    rng = np.random.default_rng(seed)
    replicates = [
        _apply_rowwise(statistic, values[rng.integers(0, values.size, size=(rows, values.size))])
        for rows in _row_blocks(n_resamples, values.size)
    ]
    return _percentile_interval(np.concatenate(replicates), confidence)


def summarize(samples_ms: Sequence[float] | np.ndarray, seed: int = 0) -> TimingStats:
    """Summarise repeated timings (ms): n, median, mean, min, max, std, 95% bootstrap CI of the median.

    ``std`` is the sample standard deviation (ddof=1; 0 for a single sample). Raises
    ValueError on empty input, non-finite or negative values.
    """
    values = _as_samples(samples_ms, "samples_ms")
    ci_low, ci_high = bootstrap_ci(values, np.median, seed=seed)
    return TimingStats(
        n=int(values.size),
        median=float(np.median(values)),
        mean=float(np.mean(values)),
        min=float(np.min(values)),
        max=float(np.max(values)),
        std=float(np.std(values, ddof=1)) if values.size > 1 else 0.0,
        ci_low=ci_low,
        ci_high=ci_high,
    )


def speedup(
    reference_ms: Sequence[float] | np.ndarray,
    candidate_ms: Sequence[float] | np.ndarray,
    baseline: str = "eager",
    *,
    paired: bool | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: str = "median",
) -> SpeedupStats:
    """Speedup = median(reference) / median(candidate), with a percentile-bootstrap interval (``statistic="mean"``:
    the ratio of the means, as the CudaForge code computes it).

    Resampling scheme: when ``paired`` is None (the default) it is chosen by length. Lists
    of equal length are taken as paired trials (trial i of each was measured back to back,
    as ``time_interleaved`` does), and one set of trial indices is resampled for both, so
    drift shared by a pair cancels instead of widening the interval. Lists of different
    length are resampled independently. ``paired=True`` demands equal lengths;
    ``paired=False`` forces independent resampling. Raises ValueError on empty, non-finite
    or negative samples, or a candidate median of zero.
    """
    ref = _as_samples(reference_ms, "reference_ms")
    cand = _as_samples(candidate_ms, "candidate_ms")
    _check_bootstrap_args(n_resamples, confidence)
    if paired is None:
        paired = ref.size == cand.size
    if paired and ref.size != cand.size:
        raise ValueError(f"paired speedup needs equal lengths, got {ref.size} and {cand.size}")
    centers: dict[str, Callable[..., Any]] = {"median": np.median, "mean": np.mean}
    center = centers.get(statistic)
    if center is None:
        raise ValueError(f"unknown speedup statistic {statistic!r}: expected median or mean")
    if center(cand) <= 0:
        raise ValueError(f"candidate {statistic} is zero: speedup is undefined")
    rng = np.random.default_rng(seed)
    ratios = []
    for rows in _row_blocks(n_resamples, max(ref.size, cand.size)):
        ref_idx = rng.integers(0, ref.size, size=(rows, ref.size))
        cand_idx = ref_idx if paired else rng.integers(0, cand.size, size=(rows, cand.size))
        ratios.append(_ratio(ref[ref_idx], cand[cand_idx], center))
    low, high = _percentile_interval(np.concatenate(ratios), confidence)
    return SpeedupStats(
        median=float(center(ref) / center(cand)), ci_low=low, ci_high=high, baseline=baseline, statistic=statistic
    )


def stop_early(
    reference_ms: Sequence[float],
    candidate_ms: Sequence[float],
    *,
    min_trials: int,
    max_trials: int,
    halfwidth: float,
    baseline: str = "eager",
    statistic: str = "median",
) -> dict[str, Any] | None:
    """The sequential stop of the interleaved timing (``eval.timing_min_trials``, ``eval.timing_stop_halfwidth``):
    after at least ``min_trials`` paired trials, and fewer than ``max_trials``, the timing may stop once the paired
    speedup's 95% bootstrap interval is within ``halfwidth`` of its value on either side on average
    ((high - low) / 2 <= halfwidth x speedup). Returns what was seen (trials, the relative half-width, the target)
    when it may stop, else None. The rule fixes the interval's width, never its position: it cannot stop because
    the speedup looks good, and an interval wider than the target keeps the full ``max_trials``."""
    n = min(len(reference_ms), len(candidate_ms))
    if halfwidth <= 0 or n < max(min_trials, 2) or n >= max_trials:
        return None
    try:
        s = speedup(reference_ms[:n], candidate_ms[:n], baseline, paired=True, statistic=statistic)
    except ValueError:
        return None
    if not (math.isfinite(s.ci_low) and math.isfinite(s.ci_high) and s.median > 0):
        return None
    width = (s.ci_high - s.ci_low) / 2 / s.median
    if width > halfwidth:
        return None
    return {"trials": n, "of": max_trials, "halfwidth": round(width, 6), "target": halfwidth}


def _ratio(ref_resamples: np.ndarray, cand_resamples: np.ndarray, center: Callable[..., Any] = np.median) -> np.ndarray:
    """Row-wise center(ref) / center(cand); a zero candidate value gives inf (a real outcome of resampling)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios: np.ndarray = center(ref_resamples, axis=1) / center(cand_resamples, axis=1)
    return ratios


# --------------------------------------------------------------------------- measurement


def _require_cuda(device: Any = None) -> Any:
    """Return ``torch`` after checking that CUDA timing can run on ``device``; else TimingUnavailable."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a dependency
        raise TimingUnavailable(f"torch is not importable: {exc}") from exc
    if torch.version.cuda is None:
        raise TimingUnavailable(f"torch {torch.__version__} is built without CUDA; GPU timing needs a CUDA build")
    if not torch.cuda.is_available():
        raise TimingUnavailable(
            f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device; "
            f"check the driver and {current().device_env}"
        )
    if device is not None:
        torch_device = torch.device(device) if not isinstance(device, int) else torch.device("cuda", device)
        if torch_device.type != "cuda":
            raise TimingUnavailable(f"device {device!r} is not a CUDA device")
    return torch


def _cuda_device(torch: Any, device: Any) -> Any:
    """Normalise ``device`` (None, int, str, torch.device) to a ``torch.device('cuda', i)``."""
    if device is None:
        return torch.device("cuda", torch.cuda.current_device())
    if isinstance(device, int):
        return torch.device("cuda", device)
    torch_device = torch.device(device)
    index = torch_device.index if torch_device.index is not None else torch.cuda.current_device()
    return torch.device("cuda", index)


class L2Flusher:
    """A device buffer of at least twice the L2 size; ``flush()`` overwrites it to evict the L2.

    Writes go through L2, so overwriting twice its capacity leaves none of a timed call's
    data resident. Each flush writes a different value, so no layer can skip it as a no-op.
    """

    def __init__(self, device: Any = None) -> None:
        """Allocate the buffer on ``device`` (default: the current CUDA device)."""
        torch = _require_cuda(device)
        self.device = _cuda_device(torch, device)
        l2_bytes = int(getattr(torch.cuda.get_device_properties(self.device), "L2_cache_size", 0) or 0)
        self.l2_bytes = l2_bytes if l2_bytes > 0 else None
        self.nbytes = 2 * (self.l2_bytes or FALLBACK_L2_BYTES)
        self._buffer = torch.empty(self.nbytes // 4, dtype=torch.int32, device=self.device)
        self._fills = 0

    def flush(self) -> None:
        """Overwrite the whole buffer (asynchronously, on the current stream)."""
        self._fills += 1
        self._buffer.fill_(self._fills)


class Stopwatch:
    """Times single calls on one device: flush, sync, [lead], event, call, event, sync."""

    def __init__(self, device: Any, flush_l2: bool, lead_us: float = 0.0) -> None:
        self.torch = _require_cuda(device)
        self.device = _cuda_device(self.torch, device)
        self.flusher = L2Flusher(self.device) if flush_l2 else None
        self.start = self.torch.cuda.Event(enable_timing=True)
        self.end = self.torch.cuda.Event(enable_timing=True)
        if lead_us < 0:
            raise ValueError(f"lead_us must be >= 0, got {lead_us}")
        self.lead_note = ""
        if lead_us > 0 and not callable(getattr(self.torch.cuda, "_sleep", None)):
            self.lead_note = (
                f"torch {getattr(self.torch, '__version__', '?')} has no torch.cuda._sleep: timed "
                f"without the {lead_us:g} us lead (launch-inclusive)"
            )
            lead_us = 0.0
        self.lead_us = float(lead_us)
        self.lead_cycles = self._cycles_for(lead_us) if lead_us > 0 else 0

    def _cycles_for(self, lead_us: float) -> int:
        """GPU clock cycles that ``torch.cuda._sleep`` spins for ``lead_us`` (calibrated here, on this device)."""
        cuda, probe = self.torch.cuda, 200_000
        with cuda.device(self.device):
            cuda._sleep(probe)  # the first launch loads the kernel
            cuda.synchronize(self.device)
            per_ms = []
            for _ in range(3):
                self.start.record()
                cuda._sleep(probe)
                self.end.record()
                cuda.synchronize(self.device)
                per_ms.append(probe / max(self.start.elapsed_time(self.end), 1e-6))
        return max(1, int(lead_us / 1e3 * statistics.median(per_ms)))

    def measure(self, fn: Callable[..., Any], args: Sequence[Any]) -> tuple[float, float, Any]:
        """Time ``fn(*args)`` once from a cold L2 (when flushing) and an idle device.

        Returns ``(event_ms, host_ms, output)``: CUDA-event time on the current stream, and
        host wall time from just before the start event (before the lead, with one) to the end
        of the device-wide sync. With a lead, a GPU spin of ``lead_us`` is queued before the start
        event, so the host launches ``fn``'s first kernel while the GPU is still busy and the
        event time leaves out that launch's host latency (it still holds any later gap in
        which the GPU waits for the host).
        """
        cuda = self.torch.cuda
        if self.flusher is not None:
            self.flusher.flush()
        cuda.synchronize(self.device)
        host_start = time.perf_counter_ns()
        if self.lead_cycles:
            cuda._sleep(self.lead_cycles)
        self.start.record()
        output = fn(*args)
        self.end.record()
        cuda.synchronize(self.device)
        host_ns = time.perf_counter_ns() - host_start
        return self.start.elapsed_time(self.end), host_ns / 1e6, output


@dataclass
class InterleavedTimes:
    """Per-trial times of a reference and a candidate timed in alternation (ms)."""

    reference_ms: list[float]
    """CUDA-event times of the reference, one per trial."""
    candidate_ms: list[float]
    """CUDA-event times of the candidate, one per trial."""
    reference_host_ms: list[float]
    """Host wall times of the reference (include launch overhead and the final sync)."""
    candidate_host_ms: list[float]
    """Host wall times of the candidate."""
    reference_output: Any = None
    """What the reference returned in the last timed trial."""
    candidate_output: Any = None
    """What the candidate returned in the last timed trial."""
    flushed_l2: bool = True
    """Whether the L2 was flushed before each call."""
    lead_us: float = 0.0
    """The GPU spin queued before each start event (0: launch-inclusive)."""
    lead_note: str = ""
    """Why a requested lead was not used (empty when it was, or none was asked for)."""

    def reference_stats(self) -> TimingStats:
        """Summary of the reference's event times."""
        return summarize(self.reference_ms)

    def candidate_stats(self) -> TimingStats:
        """Summary of the candidate's event times."""
        return summarize(self.candidate_ms)

    def speedup(self, baseline: str = "eager") -> SpeedupStats:
        """Paired-bootstrap speedup of the candidate over the reference (event times)."""
        return speedup(self.reference_ms, self.candidate_ms, baseline, paired=True)


@dataclass
class SingleTimes:
    """Per-trial times of one callable (ms)."""

    event_ms: list[float]
    """CUDA-event times, one per trial."""
    host_ms: list[float]
    """Host wall times, one per trial."""
    output: Any = None
    """What the callable returned in the last timed trial."""
    flushed_l2: bool = True
    """Whether the L2 was flushed before each call."""
    lead_us: float = 0.0
    """The GPU spin queued before each start event (0: launch-inclusive)."""
    lead_note: str = ""
    """Why a requested lead was not used."""

    def stats(self) -> TimingStats:
        """Summary of the event times."""
        return summarize(self.event_ms)


def _check_counts(trials: int, warmup: int) -> None:
    if trials < 1:
        raise ValueError(f"trials must be >= 1, got {trials}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")


class _Series:
    """The timed calls of one callable: times of every trial, the output of the last."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.event_ms: list[float] = []
        self.host_ms: list[float] = []
        self.last_output: Any = None

    def run(
        self,
        stopwatch: Stopwatch,
        role: str,
        trial: int,
        args: Sequence[Any],
        make_args: ArgsFactory | None,
        on_output: OutputHook | None,
    ) -> None:
        """Time one call; record it unless ``trial`` is a warm-up (negative)."""
        call_args = tuple(make_args(trial)) if make_args is not None else tuple(args)
        event_ms, host_ms, output = stopwatch.measure(self.fn, call_args)
        if trial < 0:
            return
        self.event_ms.append(event_ms)
        self.host_ms.append(host_ms)
        self.last_output = output
        if on_output is not None:
            on_output(role, trial, call_args, output)


def time_interleaved(
    reference_fn: Callable[..., Any],
    candidate_fn: Callable[..., Any],
    *,
    trials: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    device: Any = None,
    args: Sequence[Any] = (),
    make_args: ArgsFactory | None = None,
    on_output: OutputHook | None = None,
    lead_us: float = 0.0,
) -> InterleavedTimes:
    """Time a reference and a candidate in alternation on one CUDA device.

    Each trial times both callables, reference first on even trials and candidate first on
    odd ones, so slow drift (clocks, temperature) falls on both alike. Every call: flush the
    L2 (``flush_l2``), synchronise the device, record a start event, call, record an end
    event, synchronise the whole device (so work left on side streams is waited for and
    shows in the host time, though not in the event time), read both clocks. ``warmup``
    trials go first, the same way, unrecorded.

    Arguments: each call gets ``make_args(trial)`` when given (timed trials are 0..trials-1,
    warm-up trials negative; both callables of a trial get the same trial number, so a
    factory seeded by it gives them equal values, and one that returns new tensors gives
    every call fresh ones), else the fixed ``args``. ``on_output(role, trial, args, output)``
    with role ``"reference"`` or ``"candidate"`` sees every timed call's output, outside
    the timed region; only the last trial's outputs are kept. ``lead_us`` > 0 queues a GPU spin
    of that length before each start event (see ``Stopwatch.measure``). Raises
    TimingUnavailable without CUDA; exceptions of the callables propagate.
    """
    _check_counts(trials, warmup)
    stopwatch = Stopwatch(device, flush_l2, lead_us)
    series = {"reference": _Series(reference_fn), "candidate": _Series(candidate_fn)}
    with stopwatch.torch.cuda.device(stopwatch.device):
        for trial in range(-warmup, trials):
            order = ("reference", "candidate") if trial % 2 == 0 else ("candidate", "reference")
            for role in order:
                series[role].run(stopwatch, role, trial, args, make_args, on_output)
    ref, cand = series["reference"], series["candidate"]
    return InterleavedTimes(
        reference_ms=ref.event_ms,
        candidate_ms=cand.event_ms,
        reference_host_ms=ref.host_ms,
        candidate_host_ms=cand.host_ms,
        reference_output=ref.last_output,
        candidate_output=cand.last_output,
        flushed_l2=flush_l2,
        lead_us=stopwatch.lead_us,
        lead_note=stopwatch.lead_note,
    )


def time_one(
    fn: Callable[..., Any],
    *,
    trials: int = 100,
    warmup: int = 10,
    flush_l2: bool = True,
    device: Any = None,
    args: Sequence[Any] = (),
    make_args: ArgsFactory | None = None,
    on_output: OutputHook | None = None,
    lead_us: float = 0.0,
) -> SingleTimes:
    """Time one callable the way ``time_interleaved`` times each of its two (e.g. a baseline).

    Same protocol and arguments; ``on_output`` is called with role ``"single"``. Raises
    TimingUnavailable without CUDA.
    """
    _check_counts(trials, warmup)
    stopwatch = Stopwatch(device, flush_l2, lead_us)
    single = _Series(fn)
    with stopwatch.torch.cuda.device(stopwatch.device):
        for trial in range(-warmup, trials):
            single.run(stopwatch, "single", trial, args, make_args, on_output)
    return SingleTimes(
        event_ms=single.event_ms,
        host_ms=single.host_ms,
        output=single.last_output,
        flushed_l2=flush_l2,
        lead_us=stopwatch.lead_us,
        lead_note=stopwatch.lead_note,
    )
