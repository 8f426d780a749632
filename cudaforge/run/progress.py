"""What a run shows while it works: a live panel on a terminal, plain lines in a log.

Counts tasks done, running and without a correct kernel, the best speedup so far and the
dollars spent, from the graph's events and the finished TaskResults.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from cudaforge.types import TaskResult


class RunProgress:
    """Progress of one ``cudaforge run``; ``on_event`` and ``on_result`` are the runner's callbacks."""

    def __init__(self, total: int, spent: Callable[[], str], live: bool | None = None) -> None:
        """``spent()`` gives the ledger's dollar line; ``live`` None: a live panel only on a terminal."""
        self.total, self.spent = total, spent
        self.done = self.failed = self.not_run = 0
        self.dropped: dict[str, int] = {}
        """Agent replies that could not be used as they came, by kind (``coder: no code``, ``judge: dropped``,
        ``judge: partial``): said on a line of their own and in the run's summary."""
        self.running: dict[str, str] = {}
        self.best: float | None = None
        self.lock = threading.Lock()
        self.live = None
        if live if live is not None else sys.stdout.isatty():
            from rich.live import Live

            self.live = Live(self._panel(), refresh_per_second=4, transient=False)
            self.live.start()

    def _panel(self) -> Any:
        from rich.table import Table

        table = Table(title="cudaforge run", show_header=False)
        table.add_row(
            "tasks",
            f"{self.done}/{self.total} done, {len(self.running)} running, {self.failed} without a correct kernel"
            + (f", {self.not_run} not run (the same command runs them again)" if self.not_run else ""),
        )
        table.add_row("best speedup", "-" if self.best is None else f"{self.best:.3f}x")
        table.add_row("LLM", self.spent())
        if self.dropped:
            table.add_row("replies not used", self.dropped_line())
        for task_id, state in sorted(self.running.items())[:8]:
            table.add_row(task_id, state)
        return table

    def _refresh(self, line: str | None) -> None:
        if self.live is not None:
            self.live.update(self._panel())
        elif line:
            print(line, flush=True)

    def on_event(self, event: dict[str, Any]) -> None:
        """A graph step started or an evaluation finished."""
        with self.lock:
            task, kind = event["task_id"], event["event"]
            line = None
            if kind == "not_run":
                self.running.pop(task, None)
                self.not_run += 1
                line = f"not run {task} ({event['reason']}: the same command runs it again): {event['message'][:200]}"
            elif kind == "dropped":
                role, partial = event.get("role", "agent"), event.get("partial")
                label = f"{role}: {'partial' if partial else 'no code' if role == 'coder' else 'dropped'}"
                self.dropped[label] = self.dropped.get(label, 0) + 1
                what = "passed on in part" if partial else "could not be used"
                line = f"  {task} round {event['round']}: the {role.capitalize()}'s reply {what}: {str(event.get('why'))[:200]}"
            elif kind == "round_done":
                return  # for the trackers: the round's lines were said as its steps ended
            elif kind == "evaluated":
                speed = f" speedup {event['speedup']:.3f}x" if event.get("speedup") else ""
                line = f"  {task} round {event['round']}: {event['status']}{speed}"
                self.running[task] = f"round {event['round']}: {event['status']}{speed}"
                if event.get("speedup") and (self.best is None or event["speedup"] > self.best):
                    self.best = event["speedup"]
            else:
                self.running[task] = f"round {event['round']}: {kind}"
            self._refresh(line)

    def dropped_line(self) -> str:
        """The agent replies that could not be used as they came, counted by kind ("" when none)."""
        return ", ".join(f"{n} {label}" for label, n in sorted(self.dropped.items()))

    def on_result(self, result: TaskResult) -> None:
        """A task finished."""
        with self.lock:
            self.running.pop(result.task_id, None)
            self.done += 1
            self.failed += not result.correct
            best = (
                f"{result.best_speedup:.3f}x"
                if result.best_speedup
                else ("correct" if result.correct else "no correct kernel")
            )
            self._refresh(
                f"done {result.task_id}: {best} after {result.rounds} round{'' if result.rounds == 1 else 's'} ({result.stop_reason})"
            )

    def close(self) -> None:
        """Stop the live panel (its last state stays on screen)."""
        if self.live is not None:
            self.live.update(self._panel())
            self.live.stop()
