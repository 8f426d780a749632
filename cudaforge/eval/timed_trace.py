"""What the timed calls really ran: a CUPTI record (torch's profiler) of every device activity while they run.

A timed call's CUDA events live on one stream. Work the call leaves on another stream (a stream made without
naming it, a stream inside an extension), work that starts before the start event, or work that ends after the end
event is not in the event time, and on a task of a few microseconds the host-side guards cannot see it. This module
records, in the worker, every kernel, copy and fill the device ran while the timed calls ran, on any stream, with the
device's own timestamps, and delimits each call by two marker kernels of ours on the timed stream: the timing lead's
spin (or a one-cycle spin without a lead) just before the start event, and a one-cycle spin just after the end event.
Stream order puts every honest kernel of a call between the first marker's end and the second marker's start; work
outside that interval ran outside the timed region, whatever stream or thread launched it. Between calls only the
worker's own copies and fills run; any other kernel there was launched outside a call.

``analyse`` is pure (a list of device events in, a bounded summary out) so it is tested without a GPU; ``TimedTrace``
drives torch's profiler in the worker. Everything here runs in the candidate's process and is reported, not proven:
the verifier treats it as a second-line guard (docs/evaluation.md, "Threat model").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MARKER = "spin_kernel"
"""The kernel of ``torch.cuda._sleep`` (``at::cuda::spin_kernel``): the markers around each timed call."""

SLACK_NS = 1_000
"""How far (ns) a call's work may start before its start marker ends or end after its end marker starts: device
timestamps of one stream's consecutive activities are ordered, so this only absorbs the timer's granularity."""

MAX_EVENTS = 200_000
"""Device activities read from one trace (a forged or runaway trace is cut here and said to be incomplete)."""

MAX_CALLS = 10_000
"""Timed calls one trace may delimit (the spans reported back are at most this many)."""

IO_KERNELS = ("FillFunctor", "copy_kernel", "CopyFunctor", "direct_copy")
"""Kernels of the worker's own work between calls (inputs and outputs copied, free memory poisoned)."""


@dataclass(frozen=True)
class DeviceEvent:
    """One device activity: kernel, copy or fill."""

    name: str
    stream: int
    start_ns: int
    end_ns: int


def _is_io(name: str) -> bool:
    return name.startswith(("Memcpy", "Memset")) or any(part in name for part in IO_KERNELS)


def _windows(events: list[DeviceEvent]) -> tuple[list[tuple[DeviceEvent, DeviceEvent]], int, int]:
    """The (start marker, end marker) pairs on the stream that holds the most markers, in device order; that stream;
    how many markers it holds."""
    by_stream: dict[int, list[DeviceEvent]] = {}
    for event in events:
        if MARKER in event.name:
            by_stream.setdefault(event.stream, []).append(event)
    if not by_stream:
        return [], -1, 0
    stream = max(by_stream, key=lambda s: len(by_stream[s]))
    markers = sorted(by_stream[stream], key=lambda e: e.start_ns)
    return [(markers[i], markers[i + 1]) for i in range(0, len(markers) - 1, 2)], stream, len(markers)


def analyse(events: list[DeviceEvent], calls: int, slack_ns: int = SLACK_NS) -> dict[str, Any]:
    """Delimit ``calls`` timed calls in ``events`` and say what ran outside them.

    Returns ``{"calls", "windows", "complete", "escaped", "early_us", "late_us", "span_ms", "outside", "outside_us",
    "events"}``: ``complete`` is whether the markers delimit exactly ``calls`` calls; ``escaped`` counts calls with work
    more than ``slack_ns`` before their start marker ended (``early_us``, the largest) or after their end marker began
    (``late_us``); ``span_ms`` is each call's device span, first activity to last (0.0 for a call that ran nothing);
    ``outside`` the heaviest kernels that ran between calls and are not the worker's copies and fills (name, us) and
    ``outside_us`` their total time.
    """
    events = events[:MAX_EVENTS]
    windows, stream, markers = _windows(events)
    marker_ids = {id(e) for pair in windows for e in pair}
    summary: dict[str, Any] = {"calls": calls, "windows": len(windows), "events": len(events),
                               "complete": markers == 2 * calls and len(events) < MAX_EVENTS}  # fmt: skip
    if len(windows) > MAX_CALLS:
        windows = windows[:MAX_CALLS]
        summary["complete"] = False
    work = sorted((e for e in events if id(e) not in marker_ids and not (e.stream == stream and MARKER in e.name)),
                  key=lambda e: e.start_ns)  # fmt: skip
    spans: list[float] = []
    early = late = 0.0
    escaped = 0
    assigned: set[int] = set()
    for first, last in windows:
        lo, hi = first.start_ns, last.end_ns
        mine = [e for e in work if e.end_ns > lo and e.start_ns < hi]
        assigned.update(id(e) for e in mine)
        if not mine:
            spans.append(0.0)
            continue
        start, end = min(e.start_ns for e in mine), max(e.end_ns for e in mine)
        spans.append(round((end - start) / 1e6, 6))
        too_early, too_late = first.end_ns - start, end - last.start_ns
        early, late = max(early, too_early / 1e3), max(late, too_late / 1e3)
        if too_early > slack_ns or too_late > slack_ns:
            escaped += 1
    outside: dict[str, float] = {}
    for event in work:
        if id(event) not in assigned and not _is_io(event.name):
            outside[event.name[:120]] = outside.get(event.name[:120], 0.0) + (event.end_ns - event.start_ns) / 1e3
    summary.update(escaped=escaped, early_us=round(max(early, 0.0), 3), late_us=round(max(late, 0.0), 3),
                   span_ms=spans, outside_us=round(sum(outside.values()), 3),
                   outside=sorted(([k, round(v, 3)] for k, v in outside.items()), key=lambda kv: -kv[1])[:5])  # fmt: skip
    return summary


def checked_summary(value: Any, calls: int) -> dict[str, Any] | None:
    """The worker's summary as the verifier may use it: the fields of ``analyse``, each of its type and in range; None
    when it is not that (the worker is untrusted: a forged reply is a trace that could not be read)."""
    if not isinstance(value, dict):
        return None
    numbers = ("early_us", "late_us", "outside_us")
    if not all(isinstance(value.get(k), (int, float)) and not isinstance(value.get(k), bool)
               and math.isfinite(value[k]) and value[k] >= 0 for k in numbers):  # fmt: skip
        return None
    if not all(isinstance(value.get(k), int) and not isinstance(value.get(k), bool) and 0 <= value[k] <= MAX_EVENTS
               for k in ("windows", "escaped", "events")):  # fmt: skip
        return None
    spans = value.get("span_ms")
    if not isinstance(spans, list) or len(spans) > MAX_CALLS or not all(
            isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) and s >= 0 for s in spans):
        return None
    outside = value.get("outside")
    if not isinstance(outside, list) or len(outside) > 5 or not all(
            isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and isinstance(o[1], (int, float))
            for o in outside):
        return None
    return {"calls": calls, "windows": value["windows"], "events": value["events"],
            "complete": value.get("complete") is True and value["windows"] == calls, "escaped": value["escaped"],
            "early_us": float(value["early_us"]), "late_us": float(value["late_us"]),
            "span_ms": [float(s) for s in spans], "outside_us": float(value["outside_us"]),
            "outside": [[o[0][:120], float(o[1])] for o in outside]}  # fmt: skip


class TimedTrace:
    """The worker's side: torch's profiler (CUDA activities only) around the timed calls, markers around each."""

    def __init__(self) -> None:
        self.profile: Any = None
        self.calls = 0

    def start(self) -> None:
        """Start recording (raises what torch's profiler raises when it cannot)."""
        from torch.profiler import ProfilerActivity, profile

        self.profile = profile(activities=[ProfilerActivity.CUDA])
        self.profile.start()
        self.calls = 0

    @property
    def active(self) -> bool:
        return self.profile is not None

    def mark_start(self, lead_cycles: int) -> None:
        """The start marker: the timing lead's spin, or a one-cycle spin (queued right before the start event)."""
        import torch

        torch.cuda._sleep(max(1, int(lead_cycles)))
        self.calls += 1

    @staticmethod
    def mark_end() -> None:
        """The end marker: a one-cycle spin queued right after the end event."""
        import torch

        torch.cuda._sleep(1)

    def stop(self) -> dict[str, Any]:
        """Stop recording; ``analyse`` over what the device ran."""
        from torch.autograd import DeviceType

        profile, self.profile = self.profile, None
        if profile is None:
            raise RuntimeError("no trace was started")
        profile.stop()
        events = []
        for event in profile.profiler.kineto_results.events():
            if event.device_type() != DeviceType.CUDA:
                continue
            start = int(event.start_ns())
            events.append(DeviceEvent(str(event.name()), int(event.device_resource_id()), start,
                                      start + max(0, int(event.duration_ns()))))  # fmt: skip
            if len(events) >= MAX_EVENTS:
                break
        return analyse(events, self.calls)
