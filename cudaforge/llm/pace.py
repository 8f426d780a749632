"""How fast one model is called, over the whole process: calls in flight (``max_concurrent``) and calls started per
minute (``calls_per_minute``), each per model and ``api_base``, shared by every client of that model (every task of a
run, every child of a search round). A provider's own limits are still met by retrying its rate-limit errors with
backoff (``cudaforge.llm.client``); these keep a run from provoking them. The first client made for a model sets
its limits for the process."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Key = tuple[str, str | None]


class Pace:
    """At most ``per_window`` calls started in any ``window_s`` seconds (a sliding window); ``wait`` blocks until one
    may start, and counts it."""

    def __init__(
        self,
        per_window: int,
        window_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if per_window < 1:
            raise ValueError(f"calls_per_minute is {per_window}: at least 1, or null for no limit")
        self.per_window, self.window_s, self.clock, self.sleep = per_window, float(window_s), clock, sleep
        self.started: deque[float] = deque()
        self.lock = threading.Lock()

    def wait(self) -> float:
        """Block until a call may start; returns the seconds waited."""
        waited = 0.0
        while True:
            with self.lock:
                now = self.clock()
                while self.started and now - self.started[0] >= self.window_s:
                    self.started.popleft()
                if len(self.started) < self.per_window:
                    self.started.append(now)
                    return waited
                delay = self.window_s - (now - self.started[0])
            self.sleep(delay)
            waited += delay


_SLOTS: dict[Key, threading.BoundedSemaphore] = {}
_PACES: dict[Key, Pace] = {}
_LOCK = threading.Lock()


def call_slots(model: str, api_base: str | None, cap: int | None) -> threading.BoundedSemaphore | None:
    """The semaphore that caps one model's calls in flight (``max_concurrent``; None: no cap)."""
    if cap is None:
        return None
    if cap < 1:
        raise ValueError(f"max_concurrent for {model} is {cap}: at least 1, or null for no cap")
    with _LOCK:
        return _SLOTS.setdefault((model, api_base), threading.BoundedSemaphore(cap))


def call_pace(model: str, api_base: str | None, per_minute: int | None) -> Pace | None:
    """The pace of one model's calls (``calls_per_minute``; None: no limit)."""
    if per_minute is None:
        return None
    with _LOCK:
        if (model, api_base) not in _PACES:
            _PACES[(model, api_base)] = Pace(per_minute)
        return _PACES[(model, api_base)]


@contextmanager
def paced(model: str, api_base: str | None, cap: int | None, per_minute: int | None) -> Iterator[None]:
    """One call to ``model``: a slot in flight, once its pace lets it start."""
    pace, slots = call_pace(model, api_base, per_minute), call_slots(model, api_base, cap)
    if slots is None:
        if pace is not None:
            pace.wait()
        yield
        return
    with slots:
        if pace is not None:
            pace.wait()
        yield
