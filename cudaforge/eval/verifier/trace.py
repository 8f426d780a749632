"""The trace of the candidate's timed calls (the ``untimed_work`` guard) as the timed phase drives it."""

from __future__ import annotations

from cudaforge.eval.verifier.common import Failure
from cudaforge.eval.verifier.state import TimingState


class Trace(TimingState):
    """The trace's part of ``Timing``."""

    def start_trace(self) -> None:
        """Trace the candidate's timed calls from here on (``cudaforge.eval.timed_trace``), where the probe before the
        candidate was loaded showed that this worker can."""
        probe = self.result.fingerprint.get("timed_trace_probe") or {}
        if not probe.get("trace_ok"):
            self.trace_note = (
                "untimed_work not checked: this worker cannot trace its calls ("
                + str(probe.get("note") or "no probe")[:200]
                + ")"
            )
            return
        try:
            reply = self.cand._request({"op": "trace", "action": "start"})
        except Failure as failure:
            reply = {"traced": False, "note": failure.message}
        if reply.get("traced") is True:
            self.traced = []
        else:
            self.trace_note = "failed: " + str(reply.get("note"))[:200]

    def stop_trace(self, times: dict[str, list[float]]) -> list[dict[str, str]]:
        """The trace's findings (``untimed_work``); each kept call's time raised to its device span (its own work and
        the kernels between it and the next call) where that is longer than its event time, so such work gains nothing
        even where the guard only reports. An incomplete record raises nothing: the guard's finding says why, and
        under ``report`` the speedup stands unverified."""
        from cudaforge.eval.timed_trace import checked_summary

        p, fingerprint = self.guard.policies, self.result.fingerprint
        if self.traced is None:
            if self.trace_note.startswith("failed: "):  # the probe traced, the candidate's process no longer does
                return [
                    p.found(
                        "untimed_work",
                        "the timed calls could not be traced, although the same trace worked in "
                        f"this process before the candidate was loaded ({self.trace_note[8:]}); do not start, "
                        "stop or hold torch's profiler or CUPTI",
                    )
                ]
            fingerprint.setdefault("guard_notes", []).append(self.trace_note)
            return []
        traced, self.traced = self.traced, None
        try:
            reply = self.cand._request({"op": "trace", "action": "stop"})
        except Failure as failure:
            reply = {"note": failure.message}
        summary = checked_summary(reply.get("summary"), len(traced))
        if summary is None:
            return [
                p.found(
                    "untimed_work",
                    "the record of the timed calls could not be read ("
                    + str(reply.get("note") or "a malformed summary")[:200]
                    + "); do not start, stop or hold "
                    "torch's profiler or CUPTI",
                )
            ]
        spans = summary.pop("span_ms")
        raised = 0
        if summary["complete"]:
            times["cand_reported"] = list(times["cand"])  # what the worker said, for the cross-check to weigh
            span_of: dict[float, float] = dict(zip(traced, spans))
            for k, trial in enumerate(times["cand_trial"]):
                span = span_of.get(trial, 0.0)
                if span > times["cand"][k]:
                    times["cand"][k], raised = span, raised + 1
        summary["raised_to_span"] = raised
        fingerprint["timed_trace"] = summary
        found = []
        if not summary["complete"]:
            found.append(
                p.found(
                    "untimed_work",
                    f"the record of the timed calls is incomplete: {summary['why']} "
                    f"({summary['windows']} of the {len(traced)} calls delimited, {summary['events']} device "
                    "activities); do not call torch.cuda._sleep, start or stop a profiler, or launch more "
                    "than a few thousand kernels per call",
                )
            )
        if summary["escaped"]:
            found.append(
                p.found(
                    "untimed_work",
                    (
                        f"in {summary['escaped']} of {len(traced)} timed calls, device work ran outside the timed region: up to "
                        f"{summary['early_us']:.1f} us before the start event and {summary['late_us']:.1f} us after the end "
                        "event (the device's own timestamps, every stream). Work launched on another stream and not joined back "
                        "to the current stream is not in the call's time; make the current stream wait for every stream you "
                        "use (torch.cuda.current_stream().wait_stream(s)) before forward returns, or use the current stream."
                    ),
                )
            )
        if summary["outside"]:
            names = ", ".join(f"{name} ({us:.1f} us)" for name, us in summary["outside"])
            found.append(
                p.found(
                    "untimed_work",
                    (
                        f"kernels ran between the timed calls, outside any call ({summary['outside_us']:.1f} us: {names}; "
                        "their time is charged to the call before them): work launched from another thread, a hook, a signal "
                        "handler or a callback is not in any call's time. Do all the work inside forward, on the calling "
                        "thread."
                    ),
                )
            )
        return found
