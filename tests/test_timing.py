"""Timing statistics (CPU), the interleaving protocol (with a stand-in stopwatch), and real GPU timing."""

from __future__ import annotations

import contextlib
import types

import numpy as np
import pytest
import torch

from cudaforge.eval import timing
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.timing import (
    L2Flusher,
    TimingUnavailable,
    bootstrap_ci,
    speedup,
    summarize,
    time_interleaved,
    time_one,
)
from cudaforge.types import SpeedupStats, TimingStats


def _noisy(median: float, n: int, seed: int, spread: float = 0.05) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return median * (1.0 + spread * rng.standard_normal(n))


# --------------------------------------------------------------------------- bootstrap_ci


def test_bootstrap_ci_contains_the_median() -> None:
    samples = _noisy(1.0, 200, seed=1)
    low, high = bootstrap_ci(samples)
    assert low <= np.median(samples) <= high
    assert low < high


def test_bootstrap_ci_shrinks_with_more_samples() -> None:
    small = bootstrap_ci(_noisy(1.0, 30, seed=2))
    large = bootstrap_ci(_noisy(1.0, 1000, seed=2))
    assert (large[1] - large[0]) < 0.5 * (small[1] - small[0])


def test_bootstrap_ci_is_reproducible_by_seed() -> None:
    samples = _noisy(1.0, 100, seed=3)
    assert bootstrap_ci(samples, seed=7) == bootstrap_ci(samples, seed=7)
    assert bootstrap_ci(samples, seed=7) != bootstrap_ci(samples, seed=8)


def test_bootstrap_ci_wider_at_higher_confidence() -> None:
    samples = _noisy(1.0, 100, seed=4)
    low90, high90 = bootstrap_ci(samples, confidence=0.90)
    low99, high99 = bootstrap_ci(samples, confidence=0.99)
    assert low99 <= low90 and high90 <= high99


def test_bootstrap_ci_accepts_statistics_without_axis() -> None:
    samples = _noisy(1.0, 50, seed=5)
    vectorised = bootstrap_ci(samples, np.mean, n_resamples=300)
    row_by_row = bootstrap_ci(samples, lambda row: float(np.mean(row)), n_resamples=300)
    assert vectorised == pytest.approx(row_by_row)


def test_bootstrap_ci_of_constant_samples_is_a_point() -> None:
    assert bootstrap_ci([2.0] * 10) == (2.0, 2.0)


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [1.0, float("inf")], [1.0, -0.5]])
def test_bootstrap_ci_rejects_bad_samples(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        bootstrap_ci(bad)


@pytest.mark.parametrize("kwargs", [{"n_resamples": 0}, {"confidence": 1.0}, {"confidence": 0.0}])
def test_bootstrap_ci_rejects_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], **kwargs)


# --------------------------------------------------------------------------- summarize


def test_summarize_fields() -> None:
    samples = [1.0, 2.0, 3.0, 4.0, 100.0]
    stats = summarize(samples)
    assert isinstance(stats, TimingStats)
    assert (stats.n, stats.median, stats.min, stats.max) == (5, 3.0, 1.0, 100.0)
    assert stats.mean == pytest.approx(22.0)
    assert stats.std == pytest.approx(np.std(samples, ddof=1))
    assert stats.ci_low <= stats.median <= stats.ci_high
    assert TimingStats.from_json(stats.to_json()) == stats


def test_summarize_single_sample() -> None:
    stats = summarize([0.5])
    assert (stats.n, stats.median, stats.std, stats.ci_low, stats.ci_high) == (1, 0.5, 0.0, 0.5, 0.5)


@pytest.mark.parametrize("bad", [[], [float("nan")], [1.0, float("-inf")]])
def test_summarize_rejects_empty_and_non_finite(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        summarize(bad)


# --------------------------------------------------------------------------- speedup


def test_speedup_of_known_ratio() -> None:
    ref, cand = _noisy(2.0, 200, seed=20), _noisy(1.0, 200, seed=21)
    result = speedup(ref, cand)
    assert isinstance(result, SpeedupStats)
    assert result.baseline == "eager"
    assert result.median == pytest.approx(2.0, rel=0.03)
    assert result.ci_low <= 2.0 <= result.ci_high
    assert result.ci_low <= result.median <= result.ci_high


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("pair_noise", [True, False])
def test_speedup_interval_covers_the_true_ratio(paired: bool, pair_noise: bool) -> None:
    # The 95% interval should hold the true ratio 2.0 in nearly all of 40 experiments,
    # whether the two series share per-trial noise or are independent.
    covered = 0
    for seed in range(40):
        rng = np.random.default_rng(seed)
        cand = 1.0 + 0.05 * rng.standard_normal(100)
        base = cand if pair_noise else 1.0 + 0.05 * rng.standard_normal(100)
        ref = 2.0 * base * (1.0 + 0.02 * rng.standard_normal(100))
        result = speedup(ref, cand, paired=paired, n_resamples=500)
        covered += result.ci_low <= 2.0 <= result.ci_high
    assert covered >= 34


def test_speedup_is_reproducible_and_labelled() -> None:
    ref, cand = _noisy(3.0, 50, seed=8), _noisy(1.0, 50, seed=9)
    assert speedup(ref, cand, baseline="compile") == speedup(ref, cand, baseline="compile")
    assert speedup(ref, cand, baseline="compile").baseline == "compile"


def test_paired_interval_is_narrower_under_shared_drift() -> None:
    # Both series ride the same slow drift (clock changes, heat): pairing cancels it.
    drift = np.linspace(1.0, 1.6, 200)
    rng = np.random.default_rng(10)
    cand = drift * (1.0 + 0.01 * rng.standard_normal(200))
    ref = 2.0 * drift * (1.0 + 0.01 * rng.standard_normal(200))
    paired = speedup(ref, cand, paired=True)
    unpaired = speedup(ref, cand, paired=False)
    assert paired.median == unpaired.median
    assert (paired.ci_high - paired.ci_low) < 0.5 * (unpaired.ci_high - unpaired.ci_low)
    assert speedup(ref, cand) == paired  # equal lengths: paired by default


def test_speedup_of_unequal_lengths_is_unpaired() -> None:
    ref, cand = _noisy(2.0, 120, seed=11), _noisy(1.0, 80, seed=12)
    result = speedup(ref, cand)
    assert result == speedup(ref, cand, paired=False)
    assert result.ci_low <= result.median <= result.ci_high
    with pytest.raises(ValueError, match="equal lengths"):
        speedup(ref, cand, paired=True)


@pytest.mark.parametrize(
    ("ref", "cand"),
    [([], [1.0]), ([1.0], []), ([float("nan")], [1.0]), ([1.0], [float("inf")]), ([1.0], [0.0])],
)
def test_speedup_rejects_bad_samples(ref: list[float], cand: list[float]) -> None:
    with pytest.raises(ValueError):
        speedup(ref, cand)


# --------------------------------------------------------------------------- protocol (stand-in clock)


class _FakeStopwatch:
    """Stands in for the CUDA stopwatch: calls fn, reports its result as the time."""

    def __init__(self, device, flush_l2, lead_us=0.0) -> None:
        self.lead_us, self.lead_note = lead_us, ""
        self.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device=lambda _: contextlib.nullcontext()))
        self.device = device

    def measure(self, fn, args):
        output = fn(*args)
        return float(output), float(output) + 0.01, output


@pytest.fixture
def fake_stopwatch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(timing, "Stopwatch", _FakeStopwatch)


def test_interleaving_alternates_order_and_skips_warmup(fake_stopwatch: None) -> None:
    calls: list[tuple[str, int]] = []

    def make_args(trial: int) -> tuple[int]:
        return (trial,)

    def ref(trial: int) -> float:
        calls.append(("reference", trial))
        return 2.0

    def cand(trial: int) -> float:
        calls.append(("candidate", trial))
        return 1.0

    seen: list[tuple[str, int, tuple, float]] = []
    result = time_interleaved(ref, cand, trials=3, warmup=2, make_args=make_args, on_output=lambda *a: seen.append(a))
    assert calls == [
        ("reference", -2),
        ("candidate", -2),
        ("candidate", -1),
        ("reference", -1),
        ("reference", 0),
        ("candidate", 0),
        ("candidate", 1),
        ("reference", 1),
        ("reference", 2),
        ("candidate", 2),
    ]
    assert [(role, trial) for role, trial, _, _ in seen] == [c for c in calls if c[1] >= 0]
    assert all(args == (trial,) for _, trial, args, _ in seen)
    assert result.reference_ms == [2.0] * 3 and result.candidate_ms == [1.0] * 3
    assert result.reference_host_ms == [2.01] * 3
    assert (result.reference_output, result.candidate_output) == (2.0, 1.0)
    assert result.speedup().median == pytest.approx(2.0)
    assert result.candidate_stats().n == 3


def test_time_one_records_trials_and_last_output(fake_stopwatch: None) -> None:
    outputs = iter(range(1, 100))
    result = time_one(lambda: float(next(outputs)), trials=4, warmup=3, args=())
    assert result.event_ms == [4.0, 5.0, 6.0, 7.0]
    assert result.output == 7.0
    assert result.stats().median == pytest.approx(5.5)


def test_the_lead_reaches_the_stopwatch(monkeypatch) -> None:
    seen = []

    class Recording(_FakeStopwatch):
        def __init__(self, device, flush_l2, lead_us=0.0) -> None:
            super().__init__(device, flush_l2, lead_us)
            seen.append(lead_us)

    monkeypatch.setattr(timing, "Stopwatch", Recording)
    time_one(lambda: 1.0, trials=1, warmup=0, lead_us=250)
    time_interleaved(lambda: 1.0, lambda: 1.0, trials=1, warmup=0)
    assert seen == [250, 0.0]


def _fake_cuda_torch(log: list, with_sleep: bool = True):
    """A torch stand-in with just what ``Stopwatch`` uses, logging the order of the calls."""

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.name = "start" if not any(e == "event:start" for e in log) else "end"
            log.append(f"event:{self.name}")

        def record(self) -> None:
            log.append(f"record:{self.name}")

        def elapsed_time(self, other) -> float:
            return 0.1  # ms: a 200k-cycle spin at 2 GHz

    cuda = types.SimpleNamespace(
        Event=Event,
        synchronize=lambda device=None: log.append("sync"),
        current_device=lambda: 0,
        device=lambda _: contextlib.nullcontext(),
    )
    if with_sleep:
        cuda._sleep = lambda cycles: log.append(f"sleep:{cycles}")
    return types.SimpleNamespace(cuda=cuda, device=lambda *a: ("cuda", 0), __version__="fake")


def test_the_lead_spin_comes_between_the_sync_and_the_start_event(monkeypatch) -> None:
    log: list = []
    monkeypatch.setattr(timing, "_require_cuda", lambda device=None: _fake_cuda_torch(log))
    result = time_one(lambda: log.append("call"), trials=1, warmup=0, flush_l2=False, lead_us=500)
    calls = log[log.index("call") - 3 : log.index("call") + 3]
    # calibration: 200k cycles took 0.1 ms, so 500 us is 1M cycles
    assert calls == ["sync", "sleep:1000000", "record:start", "call", "record:end", "sync"]
    assert result.lead_us == 500 and result.lead_note == ""
    log.clear()
    plain = time_one(lambda: log.append("call"), trials=1, warmup=0, flush_l2=False)
    assert not any(entry.startswith("sleep") for entry in log) and plain.lead_us == 0


def test_without_torch_cuda_sleep_the_lead_is_dropped_and_said(monkeypatch) -> None:
    log: list = []
    monkeypatch.setattr(timing, "_require_cuda", lambda device=None: _fake_cuda_torch(log, with_sleep=False))
    result = time_interleaved(lambda: 1.0, lambda: 1.0, trials=1, warmup=0, flush_l2=False, lead_us=500)
    assert result.lead_us == 0.0 and "no torch.cuda._sleep" in result.lead_note


def test_trial_counts_are_checked(fake_stopwatch: None) -> None:
    with pytest.raises(ValueError):
        time_one(lambda: 1.0, trials=0)
    with pytest.raises(ValueError):
        time_interleaved(lambda: 1.0, lambda: 1.0, warmup=-1)


# --------------------------------------------------------------------------- without CUDA


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_timing_without_cuda_raises_timing_unavailable() -> None:
    with pytest.raises(TimingUnavailable, match="CUDA"):
        time_interleaved(lambda: None, lambda: None, trials=2, warmup=0)
    with pytest.raises(TimingUnavailable):
        time_one(lambda: None, trials=2, warmup=0)
    with pytest.raises(TimingUnavailable):
        L2Flusher()


# --------------------------------------------------------------------------- real GPU


@pytest.mark.gpu
def test_l2_flusher_covers_twice_the_l2() -> None:
    flusher = L2Flusher()
    l2 = torch.cuda.get_device_properties(flusher.device).L2_cache_size
    assert flusher.nbytes >= 2 * l2 > 0
    assert flusher._buffer.numel() * flusher._buffer.element_size() >= 2 * l2
    flusher.flush()
    torch.cuda.synchronize()


@pytest.mark.gpu
def test_interleaved_matmuls_bigger_is_slower() -> None:
    def make_args(trial: int) -> tuple[torch.Tensor, torch.Tensor]:
        gen = torch.Generator(device="cuda").manual_seed(1000 + trial)
        big = torch.randn(4096, 4096, device="cuda", generator=gen)
        small = torch.randn(1024, 1024, device="cuda", generator=gen)
        return big, small

    result = time_interleaved(
        lambda big, small: big @ big, lambda big, small: small @ small, trials=30, warmup=3, make_args=make_args
    )
    assert len(result.reference_ms) == len(result.candidate_ms) == 30
    ref, cand = result.reference_stats(), result.candidate_stats()
    assert ref.median > 4 * cand.median
    assert result.speedup().ci_low > 4
    assert result.reference_output.shape == (4096, 4096)
    assert result.candidate_output.shape == (1024, 1024)
    # Host time spans the event region plus launch and sync.
    assert all(h >= e * 0.99 for h, e in zip(result.reference_host_ms, result.reference_ms, strict=True))


@pytest.mark.gpu
def test_side_stream_work_shows_in_host_time_only() -> None:
    x = torch.randn(4096, 4096, device="cuda")
    side = torch.cuda.Stream()

    def sneaky() -> torch.Tensor:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(20):
                y = x @ x
        return y

    result = time_one(sneaky, trials=10, warmup=2)
    event, host = np.median(result.event_ms), np.median(result.host_ms)
    assert host > 5 * event


@pytest.mark.gpu
def test_time_one_on_gpu_is_positive() -> None:
    x = torch.randn(2048, 2048, device="cuda")
    result = time_one(lambda: x @ x, trials=10, warmup=2)
    stats = result.stats()
    assert stats.n == 10 and stats.median > 0
    torch.testing.assert_close(result.output, x @ x)


@pytest.mark.gpu
def test_a_lead_hides_the_first_launchs_host_latency() -> None:
    """A call that spends 0.3 ms on the host before its only (tiny) kernel: without a lead the event time holds
    that latency; with a 1 ms GPU spin queued before the start event it does not. The host time holds both."""
    import time as _time

    x = torch.empty(1, device="cuda")

    def slow_launch():
        until = _time.perf_counter() + 3e-4
        while _time.perf_counter() < until:
            pass
        return x.add_(1)

    plain = time_one(slow_launch, trials=20, warmup=3, flush_l2=False)
    lead = time_one(slow_launch, trials=20, warmup=3, flush_l2=False, lead_us=1000)
    assert plain.stats().median >= 0.28
    assert lead.stats().median < 0.1
    assert min(lead.host_ms) >= 0.9  # the spin itself is waited for


def test_a_negative_lead_is_refused() -> None:
    from cudaforge.eval.evaluator import Evaluator

    with pytest.raises(ValueError, match="timing_lead_us"):
        Evaluator({"device": "cpu", "timing_lead_us": -5})
    with pytest.raises(ValueError, match="timing_lead_us"):
        Evaluator({"device": "cpu", "timing_lead_us": "fast"})
    assert Evaluator({"device": "cpu", "timing_lead_us": 200}).cfg.timing_lead_us == 200


def test_the_timing_stops_early_on_the_interval_width_alone():
    """``stop_early``: not before ``min_trials`` nor at ``max_trials``; a tight interval stops it, a wide one never,
    whatever the speedup; 0 turns it off."""
    from cudaforge.eval.timing import stop_early

    rng = np.random.default_rng(3)
    ref = list(1.0 + 0.001 * rng.standard_normal(50))
    fast = [r / 2 for r in ref]  # a stable 2x candidate: a tight interval
    noisy = list(np.abs(0.5 + 0.2 * rng.standard_normal(50)))  # a noisy one: a wide interval
    kw = {"min_trials": 25, "max_trials": 100, "halfwidth": 0.01}
    assert stop_early(ref[:24], fast[:24], **kw) is None  # too few
    stopped = stop_early(ref[:25], fast[:25], **kw)
    assert stopped["trials"] == 25 and stopped["halfwidth"] <= 0.01 and stopped["of"] == 100
    assert stop_early(ref, noisy, **kw) is None
    assert stop_early(ref, [r * 2 for r in ref], **kw) is not None  # a slowdown stops as early as a speedup
    assert stop_early(ref, fast, **{**kw, "halfwidth": 0.0}) is None
    assert stop_early(ref, fast, **{**kw, "max_trials": 50}) is None  # all trials taken: nothing to stop


@pytest.mark.parametrize(
    "halfwidth, interleave, noisy, wall_noisy, kept",
    [
        (0.01, True, False, False, 25),  # a tight interval after the first batch: stopped there
        (0.01, True, True, True, 100),  # a wide one: every trial
        (0.01, True, False, True, 100),  # steady reported times the verifier's own clock does not see: every trial
        (0.0, True, False, False, 100),  # the stop turned off
        (0.01, False, False, False, 100),  # not interleaved (one block per side, the paper's protocol): every trial
    ],
)
def test_the_verifier_stops_its_timing_only_after_a_batch_with_a_tight_interval(
    halfwidth, interleave, noisy, wall_noisy, kept
):
    """``_Timing._batches`` with the timed series stood in for (the calls themselves need a GPU)."""
    from types import SimpleNamespace

    from cudaforge.eval import verifier
    from cudaforge.types import EvalResult, EvalStatus

    timing = verifier.Timing.__new__(verifier.Timing)
    timing.cfg = EvalConfig(
        timing_trials=100,
        telemetry_batch=25,
        telemetry_remeasure=0,
        interleave=interleave,
        fresh_inputs=interleave,
        timing_min_trials=25,
        timing_stop_halfwidth=halfwidth,
    )
    timing.result = EvalResult(task_id="t", candidate_hash="h", status=EvalStatus.CORRECT)
    rng = np.random.default_rng(0)

    def series(trials, calls, times):
        for _ in trials:
            ref = 1.0 + 0.001 * float(rng.standard_normal())
            times["ref"].append(ref)
            times["cand"].append(abs(0.5 + 0.3 * float(rng.standard_normal())) if noisy else ref / 2)
            times["cand_wall"].append(abs(0.6 + 0.3 * float(rng.standard_normal())) if wall_noisy else ref / 2 + 0.1)

    timing._series = series
    times = {"ref": [], "cand": [], "cand_wall": []}
    timing._batches(SimpleNamespace(failure=None), times, {})
    assert len(times["cand"]) == kept
    assert ("timing_stopped_early" in timing.result.fingerprint) == (kept < 100)
    if kept < 100:
        assert timing.result.fingerprint["timing_stopped_early"]["wall_halfwidth"] <= 0.02


def _stand_in_timing(monkeypatch, *, every: int, stop_at: int, remeasure_first: bool = False):
    """A ``Timing`` whose timed series and early-stop rule are stood in for: the rule says stop once ``stop_at``
    trials are kept, and records each look; with ``remeasure_first``, the first batch read is taken as throttled."""
    from types import SimpleNamespace

    from cudaforge.eval import telemetry, verifier
    from cudaforge.types import EvalResult, EvalStatus

    timing = verifier.Timing.__new__(verifier.Timing)
    timing.cfg = EvalConfig(
        timing_trials=100,
        telemetry_batch=25,
        telemetry_remeasure=1 if remeasure_first else 0,
        timing_min_trials=25,
        timing_stop_every=every,
    )
    timing.result = EvalResult(task_id="t", candidate_hash="h", status=EvalStatus.CORRECT)
    looks, reads, run = [], [], []

    def series(trials, calls, times):
        for trial in trials:
            run.append(trial)
            for key in ("ref", "cand", "cand_wall"):
                times[key].append(1.0)

    def rule(times, of):
        looks.append(len(times["cand"]))
        return {"trials": len(times["cand"]), "of": of} if len(times["cand"]) >= stop_at else None

    def record(trials, before, after, max_clock, remeasure):
        reads.append(trials)
        return {"trials": trials, "unclean": "", "remeasured": bool(remeasure_first and len(reads) == 1 and remeasure)}

    timing._series, timing._stopped_early = series, rule
    monkeypatch.setattr(telemetry, "batch_record", record)
    times = {"ref": [], "cand": [], "cand_wall": []}
    timing._batches(SimpleNamespace(failure=None), times, {})
    return timing, times, looks, reads, run


def test_the_early_stop_is_looked_at_every_few_trials_inside_a_batch(monkeypatch):
    """Once ``eval.timing_min_trials`` are kept, the stop is looked at every ``eval.timing_stop_every`` kept trials,
    not only at a telemetry batch's end: an interval that narrows at 35 trials stops there (it went on to 50 when
    the look came only after each batch of 25), and the batch cut short is read at that point."""
    timing, times, looks, reads, run = _stand_in_timing(monkeypatch, every=5, stop_at=35)
    assert len(times["cand"]) == 35 and run == list(range(35))
    assert looks == [25, 30, 35]
    assert reads == [25, 10]  # the second batch read after its 10 trials
    assert timing.result.fingerprint["timing_stopped_early"]["trials"] == 35
    _, times, looks, reads, _ = _stand_in_timing(monkeypatch, every=25, stop_at=35)
    assert len(times["cand"]) == 50 and looks == [25, 50] and reads == [25, 25]
    _, times, looks, _, _ = _stand_in_timing(monkeypatch, every=5, stop_at=1000)  # never narrow: every trial
    assert len(times["cand"]) == 100 and looks == list(range(25, 100, 5))


def test_a_stop_seen_in_a_batch_measured_again_does_not_count(monkeypatch):
    """A batch whose telemetry says the GPU was throttled is run again on new trials: a stop the rule saw in it is
    dropped with its trials, and the rule looks again at the new ones."""
    timing, times, looks, reads, run = _stand_in_timing(monkeypatch, every=5, stop_at=25, remeasure_first=True)
    assert reads == [25, 25] and len(times["cand"]) == 25
    assert looks == [25, 25]  # once on the throttled batch (dropped), once on its new trials
    assert run[:25] == list(range(25)) and all(t >= 100_000 for t in run[25:])
    assert timing.result.fingerprint["timing_stopped_early"]["trials"] == 25


def test_the_launch_inclusive_series_counts_as_the_main_series_warm_up() -> None:
    """The launch-inclusive series runs right before the main one (2 warm-ups and 6 checked calls by default): the
    main series then makes only what is left of ``eval.warmup``, at least 2 of its own (its stopwatch and trace start
    there); without that series, or with fewer warm-ups set than 2, it makes exactly ``eval.warmup``."""
    from cudaforge.eval.verifier.timing import main_warmup

    assert main_warmup(10, 8) == 2  # the defaults: 8 + 2 = 10 trials before the first kept one, as eval.warmup says
    assert main_warmup(20, 8) == 12
    assert main_warmup(5, 8) == 2  # the paper's 5: the series already ran 8, the main one keeps its 2 of its own
    assert main_warmup(10, 0) == 10 and main_warmup(3, 0) == 3  # no launch-inclusive series: unchanged
    assert main_warmup(1, 8) == 1 and main_warmup(0, 8) == 0  # never more than asked of the main series itself


def test_each_timed_trial_seed_is_a_keyed_hash_no_first_input_gives_away():
    """The timed inputs' seeds are 64-bit BLAKE2b hashes of the trial's number under a secret of the evaluation: the
    same key gives the same seeds (a trial's inputs can be drawn again), another key others, and no seed follows
    from another by an offset (a candidate that searched one trial's seed would know nothing of the next)."""
    from types import SimpleNamespace

    from cudaforge.eval.verifier.timing import Timing

    one, two = SimpleNamespace(key=b"a" * 16), SimpleNamespace(key=b"b" * 16)
    seeds = [Timing.trial_seed(one, t) for t in (-2, -1, 0, 1, 2, 50_000, 100_000)]
    assert seeds == [Timing.trial_seed(one, t) for t in (-2, -1, 0, 1, 2, 50_000, 100_000)]
    assert len(set(seeds)) == len(seeds) and all(0 <= s < 2**64 for s in seeds)
    assert max(seeds) >= 2**48  # the whole 64 bits are used, not a 40-bit secret plus an offset
    assert len({b - a for a, b in zip(seeds, seeds[1:])}) == len(seeds) - 1
    assert not set(seeds) & {Timing.trial_seed(two, t) for t in (-2, -1, 0, 1, 2, 50_000, 100_000)}
