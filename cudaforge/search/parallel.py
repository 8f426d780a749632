"""A search round's children side by side (``strategy.search.parallel``): written and evaluated several at once.

``Batch.run`` is the search graph's ``batch`` step: it takes up to ``parallel`` children off the round's queue and
runs each one's Coder step, evaluation and (``judge_role=every``) profile and Judge's advice in a thread of its own.
The Coder calls go out together (the LLM client is thread-safe; ``coder.max_concurrent`` caps one model's calls in
flight over the whole process, and rate limits are retried with backoff); the evaluations run side by side, as the
tasks of a run with ``concurrency`` > 1 do: over the evaluator's GPUs (one timing at a time on each) and its build
pool. Each child works on its own round number (its folder, its ledger rows); the batch merges their records into
the state in round order and adds their nodes to the tree, so the tree, the round folders and the report read as
for a search run one child at a time.

A batch is one checkpointed step: a task killed in it runs the batch again on resume, its Coder calls answered from
the response cache and its finished evaluations read back from the task's folder (``eval_<hash>.json``), so no
model is asked twice and no kernel evaluated twice. Budgets are checked before a batch, and a batch holds no more
children than the evaluation budget has left; a dollar or minute budget can be passed by what one batch spends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from threading import Lock
from typing import Any, Protocol, TypeVar

from cudaforge.graph.loop import LoopNodes, LoopServices, LoopState
from cudaforge.types import EvalResult


class Options(Protocol):
    """The search options a batch reads (``cudaforge.search.engine.SearchOptions``)."""

    @property
    def parallel(self) -> int: ...


class Expands(Protocol):
    """What a batch uses of the search's steps (``cudaforge.search.engine.SearchNodes``)."""

    loop: LoopNodes
    s: LoopServices

    @property
    def options(self) -> Options: ...
    def announce(self, history: list[dict[str, Any]], search: dict[str, Any]) -> dict[str, Any]: ...
    def node(
        self, h: dict[str, Any], state: LoopState, parent: int | None, generation: int, cost: float, seconds: float
    ) -> dict[str, Any]: ...
    def write_tree(self, nodes: list[dict[str, Any]]) -> None: ...
    def after_evaluate(self, state: LoopState) -> str: ...
    def advise(self, state: LoopState) -> LoopState: ...
    def advice(self, parent: dict[str, Any] | None) -> dict[str, Any] | None: ...


T = TypeVar("T")
R = TypeVar("R")


def side_by_side(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``fn`` over ``items``, each in a thread of its own, the results in order. Every call is waited for (a
    model's reply or a kernel's evaluation cannot be taken back); then the first error, in item order, is raised."""
    if len(items) <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(max_workers=len(items), thread_name_prefix="search-child") as threads:
        futures = [threads.submit(fn, item) for item in items]
    return [future.result() for future in futures]


def summed_seconds(base: dict[str, float], updates: Sequence[LoopState]) -> dict[str, float]:
    """The time split after steps that each started from ``base``: what each added, summed."""
    out = dict(base)
    for update in updates:
        for key, value in (update.get("seconds") or base).items():
            out[key] = out.get(key, 0.0) + float(value) - float(base.get(key, 0.0))
    return out


class Batch:
    """The ``batch`` step of a search whose ``parallel`` option is above 1."""

    def __init__(self, search: Expands):
        self.search, self.loop, self.s = search, search.loop, search.s
        self.locks: dict[str, Lock] = {}
        """One lock per candidate hash: two children writing the same source share one evaluation."""

    def _take(self, state: LoopState, queue: list[int | None]) -> int:
        """How many children of the queue this batch runs: ``parallel``, no more than the evaluation budget left."""
        take = min(self.search.options.parallel, len(queue))
        budget = self.s.budgets.max_evaluations
        if budget is not None:
            take = min(take, max(1, budget - len(state["evaluated"])))
        return take

    def _evaluate(self, view: LoopState) -> LoopState:
        """The child's evaluation; a source evaluated before (by a sibling, or before a kill) is read back."""
        digest = str(view["pending"])
        with self.locks.setdefault(digest, Lock()):
            if digest not in view["evaluated"]:
                try:
                    stored = EvalResult.from_dict(self.s.store.read_json(None, f"eval_{digest}.json"))
                    view = {**view, "evaluated": {**view["evaluated"], digest: stored.status.value}}
                except FileNotFoundError:
                    pass
            return {**view, **self.loop.evaluate(view)}

    def _child(self, state: LoopState, number: int, parent_id: int | None) -> LoopState:
        """One child: its Coder step (round ``number``), its evaluation, and with ``judge_role=every`` its advice;
        the state it ends in, seen from ``state``."""
        nodes = state["search"]["nodes"]
        parent = nodes[parent_id - 1] if parent_id is not None else None
        view: LoopState = {
            **state,
            "round": number - 1,
            "kernel": parent["hash"] if parent else None,
            "mode": parent["next_mode"] if parent else "first_attempt",
            "feedback": self.search.advice(parent),
            "pending": None,
        }
        view = {**view, **self.loop.write(view)}
        if view.get("pending") and not view.get("stop_reason"):
            view = self._evaluate(view)
            if self.search.after_evaluate(view) == "judge":
                view = {**view, **self.search.advise(view)}
        return view

    def run(self, state: LoopState) -> LoopState:
        """Up to ``parallel`` children of the round's queue, side by side; their records, nodes and spending merged
        into the state."""
        search = self.search.announce(state["history"], dict(state["search"]))
        queue = list(search["queue"])
        take = self._take(state, queue)
        chosen, rest = queue[:take], queue[take:]
        base, started = int(state["round"]), time.monotonic()
        numbers = list(range(base + 1, base + 1 + len(chosen)))
        ends = side_by_side(lambda pair: self._child(state, *pair), list(zip(numbers, chosen, strict=True)))
        return self._merged(state, {**search, "queue": rest}, chosen, ends, time.monotonic() - started)

    def _merged(
        self, state: LoopState, search: dict[str, Any], parents: list[int | None], ends: list[LoopState], wall: float
    ) -> LoopState:
        """The state after the batch: the children's records in round order, their nodes in the tree."""
        records = [end["history"][-1] for end in ends]
        evaluated = dict(state["evaluated"])
        for end in ends:
            evaluated.update(end["evaluated"])
        best = state.get("best")
        for end in ends:  # the fastest correct kernel; a tie keeps the earlier round
            found = end.get("best")
            if found and (best is None or (found.get("speedup") or 0) > (best.get("speedup") or 0)):
                best = found
        nodes = list(search["nodes"])
        for parent, end, record in zip(parents, ends, records, strict=True):
            cost = self.s.ledger.round_cost(self.s.task.id, int(record["round"]))
            seconds = float(end["active_s"]) - float(state["active_s"])
            nodes.append(self.search.node(record, end, parent, int(search["generation"]), cost, seconds))
        self.search.write_tree(nodes)
        last = ends[-1]
        out: LoopState = {
            "round": int(state["round"]) + len(ends),
            "history": [*state["history"], *records],
            "evaluated": evaluated,
            "best": best,
            "kernel": last.get("kernel"),
            "pending": None,
            "mode": last.get("mode", state["mode"]),
            "feedback": last.get("feedback"),
            "active_s": float(state["active_s"]) + wall,
            "seconds": summed_seconds(state["seconds"], ends),
            "search": {**search, "nodes": nodes, "expanding": None},
        }
        stop = next((end["stop_reason"] for end in ends if end.get("stop_reason")), None)
        if stop:
            out["stop_reason"] = stop
        return out
