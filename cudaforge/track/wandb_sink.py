"""Weights & Biases as a sink for a run's results (never needed for a run to succeed).

One W&B run per Hydra job (safe under multirun: each job process starts its own), grouped
by the sweep's directory, holding the resolved config, each round's metrics as it ends (verdict, speedup, the
Judge's outcome, its dollars and tokens), a per-task summary
table (``cost_usd`` null for a task whose calls were all unpriced, never 0) and the best kernels
as an artifact. Offline mode is the default: runs sync later
with ``wandb sync <run dir>/wandb``. Every W&B failure is reported once and then ignored:
the run directory is the source of truth.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Literal, cast

from cudaforge.types import TaskResult

log = logging.getLogger(__name__)


def run_cost(results: list[TaskResult]) -> tuple[float | None, int]:
    """Dollars of the priced calls over all tasks and the number of unpriced calls; the dollars are None
    when some calls were made and none of them had a price (unknown, not $0)."""
    costs = [r.cost_usd for r in results if r.cost_usd is not None]
    unpriced = sum(r.unpriced_calls for r in results)
    return (sum(costs) if costs or not unpriced else None), unpriced


class NullTracker:
    """Tracks nothing (``tracker=disabled``, or W&B failed to start)."""

    def log_round(self, event: dict[str, Any]) -> None:
        """Nothing."""

    def log_task(self, result: TaskResult, best_source: str | None) -> None:
        """Nothing."""

    def finish(self, results: list[TaskResult]) -> None:
        """Nothing."""


class WandbTracker:
    """Sends a run to W&B (online or offline)."""

    def __init__(
        self,
        *,
        mode: str,
        project: str,
        entity: str | None,
        tags: list[str],
        run_dir: Path,
        config: dict[str, Any],
        name: str,
        group: str | None,
    ) -> None:
        """Start the W&B run (``mode``: ``online`` or ``offline``), writing under ``run_dir/wandb``."""
        os.environ.setdefault("WANDB_SILENT", "true")  # our own line says where the run is
        import wandb

        self.wandb = wandb
        self.run = wandb.init(
            mode=cast(Literal["online", "offline"], mode),  # make_tracker passes one of the two
            project=project,
            entity=entity,
            tags=tags or None,
            dir=str(run_dir),
            config=config,
            name=name,
            group=group,
            reinit="finish_previous",
        )
        self.best_kernels: dict[str, str] = {}
        self.spent: dict[str, tuple[float, int, int]] = {}
        """Each task's dollars and tokens at its last logged round, so each round logs its own."""
        self.logged: set[tuple[str, Any]] = set()
        """(task, round) already logged as it ended."""

    def log_round(self, event: dict[str, Any]) -> None:
        """One round as it ends (the loop's ``round_done`` event): its verdict and speedup, the Judge's outcome, and
        its own dollars and tokens (the task's totals less those at its previous round)."""
        task = str(event["task_id"])
        totals = (
            float(event.get("cost_usd") or 0.0),
            int(event.get("tokens_in") or 0),
            int(event.get("tokens_out") or 0),
        )
        before = self.spent.get(task, (0.0, 0, 0))
        self.spent[task] = totals
        self.logged.add((task, event["round"]))
        self.run.log(
            {
                "task": task,
                "round": event["round"],
                "round/status": event.get("status"),
                "round/correct": event.get("status") == "correct",
                "round/speedup": event.get("speedup"),
                "round/judge": event.get("judge"),
                "round/cost_usd": totals[0] - before[0],
                "round/tokens_in": totals[1] - before[1],
                "round/tokens_out": totals[2] - before[2],
            }
        )

    def log_task(self, result: TaskResult, best_source: str | None) -> None:
        """A finished task's best kernel, for the artifact, and those of its rounds not logged as they ended (a Ray
        campaign's: its workers' events stay on their nodes)."""
        for record in result.history:
            if (result.task_id, record.round) not in self.logged:
                self.run.log(
                    {
                        "task": result.task_id,
                        "round": record.round,
                        "round/status": record.status,
                        "round/correct": record.status == "correct",
                        "round/speedup": record.speedup,
                    }
                )
        if best_source:
            self.best_kernels[result.task_id] = best_source

    def finish(self, results: list[TaskResult]) -> None:
        """The per-task summary table, the best kernels artifact, then close the run."""
        columns = [
            "task_id",
            "correct",
            "best_speedup",
            "best_round",
            "rounds",
            "cost_usd",
            "unpriced_calls",
            "minutes",
            "wall_minutes",
            "active_minutes",
            "tokens_in",
            "tokens_out",
            "stop_reason",
        ]
        table = self.wandb.Table(
            columns=cast(list[str | int], columns), data=[[getattr(r, c) for c in columns] for r in results]
        )
        self.run.log({"tasks": table})
        self.run.summary["correct_fraction"] = sum(r.correct for r in results) / max(1, len(results))
        self.run.summary["cost_usd"], self.run.summary["unpriced_calls"] = run_cost(results)
        if self.best_kernels:
            artifact = self.wandb.Artifact("best_kernels", type="kernels")
            for task_id, source in self.best_kernels.items():
                with artifact.new_file(task_id.replace("/", "__") + ".py") as f:
                    f.write(source)
            self.run.log_artifact(artifact)
        where = Path(self.run.dir).parent  # run.dir is the run folder's files/ subfolder
        self.run.finish()
        print(f"W&B run written to {where} (offline: `wandb sync {where}`)", flush=True)  # a plain line, like the run's


class SafeTracker:
    """Wraps a tracker so that its failures are logged once and never stop the run."""

    def __init__(self, factory: Any) -> None:
        try:
            self.inner = factory()
        except Exception as exc:  # noqa: BLE001 - tracking must not be needed for a run
            print(f"cudaforge run: warning: W&B tracking is off for this run: {exc}", file=sys.stderr, flush=True)
            self.inner = NullTracker()

    def _call(self, name: str, *args: Any) -> None:
        try:
            getattr(self.inner, name)(*args)
        except Exception as exc:  # noqa: BLE001
            print(
                f"cudaforge run: warning: W&B {name} failed, tracking is off from here: {exc}",
                file=sys.stderr,
                flush=True,
            )
            self.inner = NullTracker()

    def log_round(self, event: dict[str, Any]) -> None:
        """Forward to the tracker."""
        self._call("log_round", event)

    def log_task(self, result: TaskResult, best_source: str | None) -> None:
        """Forward to the tracker."""
        self._call("log_task", result, best_source)

    def finish(self, results: list[TaskResult]) -> None:
        """Forward to the tracker."""
        self._call("finish", results)


def make_tracker(tracker_cfg: Any, run_dir: Path, config: dict[str, Any], name: str, group: str | None) -> SafeTracker:
    """The tracker a run's config asks for (``tracker.wandb_mode``)."""
    mode = str(getattr(tracker_cfg.wandb_mode, "value", tracker_cfg.wandb_mode))
    if mode == "disabled" or os.environ.get("WANDB_MODE") == "disabled":
        return SafeTracker(NullTracker)
    return SafeTracker(
        lambda: WandbTracker(
            mode=mode,
            project=tracker_cfg.project,
            entity=tracker_cfg.entity,
            tags=list(tracker_cfg.tags),
            run_dir=run_dir,
            config=config,
            name=name,
            group=group,
        )
    )
