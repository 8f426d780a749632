"""The record of the timed calls (cudaforge.eval.timed_trace): calls delimited by markers, work outside them found."""

from __future__ import annotations

from cudaforge.eval.timed_trace import MARKER, DeviceEvent, analyse, checked_summary

TIMED = 7  # the timed stream
SPIN = f"void at::cuda::(anonymous namespace)::{MARKER}(long)"


def call(t0: int, work: list[tuple[str, int, int, int]], lead_ns: int = 500_000, end_ns: int | None = None):
    """One timed call at ``t0``: the lead's spin, the work (name, stream, start, end relative to the lead's end), the
    end marker ``end_ns`` after the lead's end (default: right after the last work on the timed stream)."""
    events = [DeviceEvent(SPIN, TIMED, t0, t0 + lead_ns)]
    body = t0 + lead_ns
    for name, stream, start, end in work:
        events.append(DeviceEvent(name, stream, body + start, body + end))
    last = max([body + e for _, s, _, e in work if s == TIMED] + [body + 500])
    end_at = body + end_ns if end_ns is not None else last + 300
    events.append(DeviceEvent(SPIN, TIMED, end_at, end_at + 1_000))
    return events


def test_honest_calls_on_one_stream_and_joined_streams_are_inside():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    events += call(10_000_000, [("relu_kernel", 13, 1_000, 5_000), ("add_kernel", TIMED, 5_200, 6_000)])
    summary = analyse(events, 2)
    assert summary["complete"] and summary["windows"] == 2
    assert summary["escaped"] == 0 and summary["outside"] == []
    assert summary["span_ms"] == [0.004, 0.005]


def test_side_stream_work_during_the_lead_escapes_at_four_microseconds():
    # the kernel on a stream of its own starts as soon as it is launched, while the timed stream still spins
    events = call(0, [("relu_kernel", 13, -400_000, -396_000)], end_ns=800)
    summary = analyse(events, 1)
    assert summary["complete"] and summary["escaped"] == 1
    assert summary["early_us"] >= 390 and summary["span_ms"] == [0.004]


def test_work_after_the_end_event_escapes():
    events = call(0, [("relu_kernel", 13, 500, 4_500)], end_ns=1_200)
    summary = analyse(events, 1)
    assert summary["escaped"] == 1 and summary["late_us"] > 3


def test_timer_granularity_is_not_an_escape():
    events = call(0, [("relu_kernel", TIMED, -200, 3_000)])  # 0.2 us "before" the lead ends: the timer's grain
    assert analyse(events, 1)["escaped"] == 0


def test_kernels_between_calls_are_found_copies_and_fills_are_not():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    events += [DeviceEvent("Memcpy DtoD (Device -> Device)", TIMED, 2_000_000, 2_001_000),
               DeviceEvent("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<unsigned char>>",
                           TIMED, 2_002_000, 2_003_000),
               DeviceEvent("relu_kernel", 21, 3_000_000, 3_004_000)]
    events += call(10_000_000, [("relu_kernel", TIMED, 1_000, 2_000)])
    summary = analyse(events, 2)
    assert summary["complete"] and summary["escaped"] == 0
    assert summary["outside"] == [["relu_kernel", 4.0]] and summary["outside_us"] == 4.0


def test_missing_or_extra_markers_make_the_record_incomplete():
    events = call(0, [("relu_kernel", TIMED, 1_000, 5_000)])
    assert not analyse(events, 2)["complete"]
    events.append(DeviceEvent(SPIN, TIMED, 900_000, 901_000))  # the candidate's own _sleep on the timed stream
    assert not analyse(events, 1)["complete"]
    assert not analyse([], 1)["complete"]


def test_checked_summary_refuses_forged_replies():
    good = analyse(call(0, [("k", TIMED, 0, 10)]), 1)
    assert checked_summary(good, 1)["complete"]
    assert not checked_summary(good, 2)["complete"]  # the verifier's own count decides
    for forged in (None, [], {**good, "escaped": -1}, {**good, "early_us": float("nan")}, {**good, "span_ms": "x"},
                   {**good, "span_ms": [1.0] * 20_000}, {**good, "outside": [["k", 1.0]] * 6},
                   {**good, "windows": True}):
        assert checked_summary(forged, 1) is None
