"""The provider's outage seen from a run: a circuit breaker over tasks that stopped for it.

A task whose model calls still fail for the transport, a rate limit, a server error or a timeout after the client's
retries stops unfinished (``not_run.jsonl``; a resume runs it again). One such task is a blip; several in a row mean
the provider is down, and starting every remaining task only to stop it the same way burns each one's retries and
fills the ledger with failed calls. So after ``trip_after`` such tasks in a row the breaker opens: no task starts for
``pause_s`` seconds, then one more is let through as a probe. A task that finishes closes it. After ``max_pauses``
pauses in a row without a finished task the run stops (``ProviderDown``): every task not run stays for the resume.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class ProviderDown(RuntimeError):
    """The provider failed through every pause of the breaker: the run stops, its unfinished tasks stay for a
    resume."""


class OutageBreaker:
    """Counts tasks stopped by an outage; ``before_task`` waits while the breaker is open. Thread-safe."""

    def __init__(
        self,
        trip_after: int = 3,
        pause_s: float = 120.0,
        max_pauses: int = 5,
        say: Callable[[str], None] = lambda line: None,
        sleep: Callable[[float], bool] | None = None,
    ) -> None:
        if trip_after < 1 or pause_s < 0 or max_pauses < 0:
            raise ValueError(
                f"outage breaker: trip_after >= 1, pause_s >= 0, max_pauses >= 0, not "
                f"{trip_after}, {pause_s}, {max_pauses}"
            )
        self.trip_after, self.pause_s, self.max_pauses, self.say = trip_after, pause_s, max_pauses, say
        self._stop = threading.Event()
        self._sleep = sleep or (lambda seconds: self._stop.wait(seconds))
        self._lock = threading.Lock()
        self.in_a_row = 0
        """Tasks stopped by the outage since the last finished task."""
        self.pauses = 0
        """Pauses since the last finished task."""
        self.open_until: float | None = None
        """Monotonic time the current pause ends (None: closed)."""
        self.last_error = ""

    def stop(self) -> None:
        """End any pause now (the run is being interrupted)."""
        self._stop.set()

    def failed(self, error: str) -> None:
        """A task stopped for the outage."""
        with self._lock:
            self.in_a_row += 1
            self.last_error = error
            if self.in_a_row >= self.trip_after and self.open_until is None:
                self.pauses += 1
                self.open_until = time.monotonic() + self.pause_s
                if self.pauses <= self.max_pauses:
                    self.say(
                        f"cudaforge run: the provider failed {self.in_a_row} task{'' if self.in_a_row == 1 else 's'} in a row ({error[:200]}); "
                        f"no task starts for {self.pause_s:g} s (pause {self.pauses} of {self.max_pauses}), "
                        "then one probes it"
                    )

    def finished(self) -> None:
        """A task finished (its calls were answered): the breaker closes."""
        with self._lock:
            if self.pauses:
                self.say("cudaforge run: the provider answers again; tasks start as before")
            self.in_a_row, self.pauses, self.open_until = 0, 0, None

    def before_task(self) -> None:
        """Wait out an open breaker; ``ProviderDown`` after ``max_pauses`` pauses without a finished task."""
        while True:
            with self._lock:
                if self.open_until is None:
                    return
                if self.pauses > self.max_pauses:
                    raise ProviderDown(
                        f"the model's provider failed {self.in_a_row} task(s) in a row through "
                        f"{self.max_pauses} pause(s) of {self.pause_s:g} s (last: {self.last_error[:300]})"
                    )
                wait = self.open_until - time.monotonic()
                if wait <= 0:  # half open: this task probes; one more failure opens it again
                    self.open_until = None
                    self.in_a_row = self.trip_after - 1
                    return
            if self._sleep(wait):
                return  # stopping: the caller sees the run's own stop flag
