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
the verifier treats it as a second-line guard (docs/threat-model.md, "Threat model").
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, cast

from cudaforge.eval.bounded import finite_number

MARKER = "spin_kernel"
"""The kernel of ``torch.cuda._sleep`` (``at::cuda::spin_kernel``): the markers around each timed call. The worker's
probe, run before the candidate is loaded, learns its exact name and the timed stream's id; only that name on that
stream is a marker."""

SLACK_NS = 1_000
"""How far (ns) a call's work may start before its start marker ends or end after its end marker starts: device
timestamps of one stream's consecutive activities are ordered, so this only absorbs the timer's granularity."""

MAX_EVENTS = 2_000_000
"""Device activities read from one trace (a record cut here is said to be incomplete, and why)."""

MAX_CALLS = 10_000
"""Timed calls one trace may delimit (the spans reported back are at most this many)."""

ATEN_IO = ("FillFunctor", "direct_copy_kernel", "copy_kernel", "CopyFunctor")
"""ATen kernels of the worker's own work between calls (inputs and outputs copied, free memory poisoned): only these,
under ``void at::native::`` (a name no Triton kernel can have, and C++ in ATen's namespace is a static finding), or a
name the probe saw the worker's own copies and fills take, or a copy or fill activity (not a kernel)."""


@dataclass(frozen=True)
class DeviceEvent:
    """One device activity: ``kind`` ``kernel``, or ``copy`` for a memcpy or memset activity (which no kernel's name
    can make it)."""

    name: str
    stream: int
    start_ns: int
    end_ns: int
    kind: str = "kernel"


def _is_io(event: DeviceEvent, io_names: frozenset[str]) -> bool:
    if event.kind == "copy" or event.name in io_names:
        return True
    return event.name.startswith("void at::native::") and any(part in event.name for part in ATEN_IO)


def _is_marker(event: DeviceEvent, marker_name: str | None) -> bool:
    return event.kind == "kernel" and (event.name == marker_name if marker_name else MARKER in event.name)


def _windows(
    events: list[DeviceEvent], marker_name: str | None, stream: int | None
) -> tuple[list[tuple[DeviceEvent, DeviceEvent]], int, list[DeviceEvent]]:
    """The (start marker, end marker) pairs on the timed stream (``stream``, else the one holding the most markers), in
    device order; that stream; every marker on it."""
    by_stream: dict[int, list[DeviceEvent]] = {}
    for event in events:
        if _is_marker(event, marker_name):
            by_stream.setdefault(event.stream, []).append(event)
    if stream is None:
        if not by_stream:
            return [], -1, []
        stream = max(by_stream, key=lambda s: len(by_stream[s]))
    markers = sorted(by_stream.get(stream, []), key=lambda e: e.start_ns)
    return [(markers[i], markers[i + 1]) for i in range(0, len(markers) - 1, 2)], stream, markers


def analyse(
    events: list[DeviceEvent],
    calls: int,
    slack_ns: int = SLACK_NS,
    *,
    marker_name: str | None = None,
    stream: int | None = None,
    io_names: frozenset[str] = frozenset(),
    truncated: bool = False,
) -> dict[str, Any]:
    """Delimit ``calls`` timed calls in ``events`` and say what ran outside them (one sorted pass: linear in the
    events but for the sort).

    ``marker_name`` and ``stream``: the markers' exact name and the timed stream, as the probe found them (None: by
    substring, on the stream with the most markers). ``io_names``: kernel names of the worker's own copies and fills.
    Returns ``{"calls", "windows", "complete", "escaped", "early_us", "late_us", "span_ms", "outside", "outside_us",
    "events", "why"}``: ``complete`` is whether the markers delimit exactly ``calls`` calls (``why`` says what is
    missing when not); ``escaped`` counts calls with work more than ``slack_ns`` before their start marker ended
    (``early_us``, the largest) or after their end marker began (``late_us``); ``span_ms`` is each call's device
    span, first activity to last, plus the kernels that ran in the gap after it (0.0 for a call that ran nothing);
    ``outside`` the heaviest kernels that ran between calls and are not the worker's copies and fills (name, us) and
    ``outside_us`` their total time.
    """
    events = events[:MAX_EVENTS]
    windows, timed, markers = _windows(events, marker_name, stream)
    summary: dict[str, Any] = {"calls": calls, "windows": len(windows), "events": len(events), "why": ""}
    if truncated or len(events) >= MAX_EVENTS:
        summary["why"] = f"the record holds more than {MAX_EVENTS} device activities (cut there)"
    elif len(markers) != 2 * calls:
        summary["why"] = f"{len(markers)} markers on the timed stream where {2 * calls} were placed"
    if len(windows) > MAX_CALLS:
        windows = windows[:MAX_CALLS]
        summary["why"] = summary["why"] or f"more than {MAX_CALLS} calls"
    summary["complete"] = not summary["why"]
    marker_ids = {id(e) for e in markers}
    lows = [first.start_ns for first, _ in windows]
    first_start: list[int | None] = [None] * len(windows)
    last_end: list[int | None] = [None] * len(windows)
    gap_us = [0.0] * len(windows)
    outside: dict[str, float] = {}
    for event in events:
        if id(event) in marker_ids:
            continue
        k = bisect.bisect_right(lows, event.start_ns) - 1  # the last window starting at or before the event
        hit = False
        for w in (k, k + 1):
            if (
                0 <= w < len(windows)
                and event.end_ns > windows[w][0].start_ns
                and event.start_ns < windows[w][1].end_ns
            ):
                hit, before, after = True, first_start[w], last_end[w]
                first_start[w] = event.start_ns if before is None else min(before, event.start_ns)
                last_end[w] = event.end_ns if after is None else max(after, event.end_ns)
        if hit or _is_io(event, io_names):
            continue
        us = (event.end_ns - event.start_ns) / 1e3
        outside[event.name[:120]] = outside.get(event.name[:120], 0.0) + us
        if k >= 0 and k < len(windows):
            gap_us[k] += us  # charged to the call before the gap
    spans: list[float] = []
    early = late = 0.0
    escaped = 0
    for w, (first, last) in enumerate(windows):
        start, end = first_start[w], last_end[w]
        if start is None or end is None:
            spans.append(round(gap_us[w] / 1e3, 6))
            continue
        spans.append(round((end - start) / 1e6 + gap_us[w] / 1e3, 6))
        too_early, too_late = first.end_ns - start, end - last.start_ns
        early, late = max(early, too_early / 1e3), max(late, too_late / 1e3)
        if too_early > slack_ns or too_late > slack_ns:
            escaped += 1
    summary.update(
        escaped=escaped,
        early_us=round(max(early, 0.0), 3),
        late_us=round(max(late, 0.0), 3),
        span_ms=spans,
        outside_us=round(sum(outside.values()), 3),
        timed_stream=timed,
        outside=sorted(([k, round(v, 3)] for k, v in outside.items()), key=lambda kv: -cast(float, kv[1]))[:5],
    )
    return summary


def checked_summary(value: Any, calls: int) -> dict[str, Any] | None:
    """The worker's summary as the verifier may use it: the fields of ``analyse``, each of its type and in range, one
    span per call; None when it is not that (the worker is untrusted: a forged reply is a record that could not be
    read)."""
    if not isinstance(value, dict):
        return None
    if not all(finite_number(value.get(k)) for k in ("early_us", "late_us", "outside_us")):
        return None
    if not all(
        isinstance(value.get(k), int) and finite_number(value[k], MAX_EVENTS + 1)
        for k in ("windows", "escaped", "events")
    ):
        return None
    spans = value.get("span_ms")
    if not isinstance(spans, list) or len(spans) > MAX_CALLS or not all(finite_number(s) for s in spans):
        return None
    outside = value.get("outside")
    if (
        not isinstance(outside, list)
        or len(outside) > 5
        or not all(
            isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and finite_number(o[1]) for o in outside
        )
    ):
        return None
    why = str(value.get("why") or "")[:200]
    complete = value.get("complete") is True and value["windows"] == calls and len(spans) == calls
    if not complete and not why:
        why = f"{value['windows']} calls delimited and {len(spans)} spans for the {calls} calls that ran"
    return {
        "calls": calls,
        "windows": value["windows"],
        "events": value["events"],
        "complete": complete,
        "why": "" if complete else why,
        "escaped": value["escaped"],
        "early_us": float(value["early_us"]),
        "late_us": float(value["late_us"]),
        "span_ms": [float(s) for s in spans],
        "outside_us": float(value["outside_us"]),
        "outside": [[o[0][:120], float(o[1])] for o in outside],
    }


CUPTI_COPY = re.compile(r"^Mem(?:cpy [A-Za-z]+ \(|set \()")
"""How kineto names copy and fill activities (``Memcpy DtoD (Device -> Device)``, ``Memset (Device)``): spaces and a
parenthesis where no kernel's name (a C++ or Triton identifier, demangled) can have them."""


def activity_kind(name: str, activity_type: Any = "") -> str:
    """``copy`` for a memcpy or memset activity, else ``kernel``: by the activity's type where torch gives it as text,
    else by kineto's naming of copies and fills, which no kernel's name can take."""
    kind = str(activity_type or "").lower()
    if "memcpy" in kind or "memset" in kind or CUPTI_COPY.match(name):
        return "copy"
    return "kernel"


def _kind(event: Any) -> str:
    try:
        activity_type = event.activity_type()
    except Exception:  # noqa: BLE001 - an older torch: by the name alone
        activity_type = ""
    return activity_kind(str(event.name()), activity_type)


class TimedTrace:
    """The worker's side: torch's profiler (CUDA activities only) around the timed calls, markers around each."""

    def __init__(self, learned: dict[str, Any] | None = None) -> None:
        """``learned``: what the probe found (``marker_name``, ``stream``, ``io_names``); None: found from the record."""
        self.profile: Any = None
        self.calls = 0
        self.learned = learned or {}

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

        torch.cuda._sleep(max(1, int(lead_cycles)))  # type: ignore[no-untyped-call]  # torch's _sleep is unannotated
        self.calls += 1

    @staticmethod
    def mark_end() -> None:
        """The end marker: a one-cycle spin queued right after the end event."""
        import torch

        torch.cuda._sleep(1)  # type: ignore[no-untyped-call]  # torch's _sleep is unannotated

    def events(self) -> tuple[list[DeviceEvent], bool]:
        """Stop recording; every device activity (at most ``MAX_EVENTS``) and whether the record was cut."""
        from torch._C._autograd import DeviceType  # torch.autograd's, which it imports from here

        profile, self.profile = self.profile, None
        if profile is None:
            raise RuntimeError("no trace was started")
        profile.stop()
        events: list[DeviceEvent] = []
        truncated = False
        for event in profile.profiler.kineto_results.events():
            if event.device_type() != DeviceType.CUDA:
                continue
            if len(events) >= MAX_EVENTS:
                truncated = True
                break
            start = int(event.start_ns())
            events.append(
                DeviceEvent(
                    str(event.name()),
                    int(event.device_resource_id()),
                    start,
                    start + max(0, int(event.duration_ns())),
                    _kind(event),
                )
            )
        return events, truncated

    def stop(self) -> dict[str, Any]:
        """Stop recording; ``analyse`` over what the device ran, with what the probe learned."""
        events, truncated = self.events()
        learned = self.learned
        return analyse(
            events,
            self.calls,
            marker_name=learned.get("marker_name"),
            stream=learned.get("stream"),
            io_names=frozenset(learned.get("io_names") or ()),
            truncated=truncated,
        )
