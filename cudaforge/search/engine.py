"""The search engine: each Coder step is a node of a tree, planned by a strategy's policy (docs/agents.md).

    plan ──> coder ──> evaluate ──(judge_role=every)──> judge ──> plan ...
      └──(judge_role=chosen: a chosen parent not judged yet)──> judge_parent ──> plan

``plan`` records the node the last Coder step made (its parent, generation, verdict, speedup, cost) in the state's
``search`` record and in the task's ``tree.jsonl``, checks the budgets, and when the round's queue is empty asks the
policy for the next round's parents (one entry per child to write: a parent's node id, or None for a first attempt).
The Coder, evaluation and Judge steps are the CudaForge loop's own nodes (``LoopNodes``), run on the chosen parent's
kernel, mode and advice, so every node has its round folder (``round_NN``: the node's id), its ledger rows and its
history record as a round of the CudaForge loop has. Every step is checkpointed: a killed task resumes at the step it
was in, and repeats no finished node.
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.graph import END, START, StateGraph

from cudaforge.graph.loop import LoopNodes, LoopState, round_done
from cudaforge.search.parallel import Batch, side_by_side, summed_seconds
from cudaforge.track.store import CODER_FILE, TREE_FILE, round_folder
from cudaforge.track.tree import score

OK_STATUSES = ("correct", "compiled")
"""Verdicts after which a node's children optimise it (the others: repair it)."""


class JudgeRole(str, enum.Enum):
    """Which nodes the Judge advises on (``strategy.search.judge_role``)."""

    none = "none"  # no Judge: the Coder reads the evaluator's report and timing
    chosen = "chosen"  # the parents a round expands, once each, before their children are written
    every = "every"  # every evaluated node, right after its evaluation


@dataclass(frozen=True)
class SearchOptions:
    """A search strategy's options (``strategy.search``)."""

    samples: int = 4
    """Children written per parent per round (best-of-N's N)."""
    beam_width: int = 1
    """Parents kept per round (beam search's k; best-of-N: 1)."""
    judge_role: JudgeRole = JudgeRole.chosen
    """Which nodes the Judge advises on."""
    exploration: float = 1.0
    """Tree search: the weight of the exploration term (UCB's c)."""
    widening: float = 0.5
    """Tree search: progressive widening's exponent (a node may have about ``visits ** widening`` + 1 children)."""
    parallel: int = 1
    """Children of a round written and evaluated at once (``cudaforge.search.parallel``): their Coder calls go out
    together, their evaluations run side by side over the evaluator's GPUs and build pool. 1: one after another."""

    @classmethod
    def from_strategy(cls, options: Mapping[str, Any]) -> SearchOptions:
        """The options a strategy's ``search`` mapping sets (unknown keys are an error naming the known ones)."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"strategy.search: unknown option(s) {unknown}; known: {sorted(known)}")
        values = {key: value for key, value in options.items() if value is not None}
        if "judge_role" in values:
            values["judge_role"] = JudgeRole(str(getattr(values["judge_role"], "value", values["judge_role"])))
        found = cls(**values)
        if found.samples < 1 or found.beam_width < 1 or found.parallel < 1:
            raise ValueError("strategy.search: samples, beam_width and parallel are at least 1")
        return found


Policy = Callable[[list[dict[str, Any]], SearchOptions, int], list[int | None]]
"""A strategy's choice of the next round's parents: ``(nodes, options, generation) -> parents``, one entry per child
to write (a node id, or None for a first attempt); an empty list ends the search (nothing left to expand)."""


def live(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes that can be expanded: evaluated ones (a Coder step without code, or an error, is a dead end)."""
    return [n for n in nodes if n.get("hash") and n.get("status") not in ("no_code", "llm_error", "")]


def ranked(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes best first (ties: the earlier node first)."""
    return sorted(nodes, key=lambda n: (score(n), -int(n["id"])), reverse=True)


def latest_round(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The live nodes of the last round that has any (all live nodes of a search, before its first such round)."""
    alive = live(nodes)
    last = max((int(n["generation"]) for n in alive), default=0)
    return [n for n in alive if int(n["generation"]) == last]


def fresh_search() -> dict[str, Any]:
    """A search's record before its first step."""
    return {
        "nodes": [],
        "generation": 0,
        "queue": [],
        "judge": [],
        "next": "",
        "expanding": None,
        "spent": 0.0,
        "announced": 0,
    }


class SearchNodes:
    """The search's own steps (``plan``, ``judge_parent``) and routers, around the CudaForge loop's nodes."""

    def __init__(self, nodes: LoopNodes, policy: Policy):
        self.loop, self.s, self.policy = nodes, nodes.s, policy
        self.options = SearchOptions.from_strategy(dict(nodes.s.strategy.search or {}))

    def _judges(self, next_mode: str) -> bool:
        """Whether the strategy's flags let the Judge advise on a node whose children will ``next_mode`` it."""
        strategy = self.s.strategy
        return strategy.judge_optimizes if next_mode == "optimize" else strategy.judge_corrects

    def _spent(self) -> float:
        return float(self.s.ledger.task_totals(self.s.task.id).get("cost_usd") or 0.0)

    def _recorded(self, state: LoopState, search: dict[str, Any]) -> dict[str, Any]:
        """The node the last Coder step made, as the tree records it."""
        cost = self._spent() - float(search["spent"])
        seconds = float(state["active_s"]) - float(search.get("active_s", 0.0))
        return self.node(state["history"][-1], state, search["expanding"], search["generation"], cost, seconds)

    def node(
        self, h: dict[str, Any], state: LoopState, parent: int | None, generation: int, cost: float, seconds: float
    ) -> dict[str, Any]:
        """A tree node: the round record ``h`` of a Coder step on ``parent``, in the state after its steps."""
        number = int(h["round"])
        status = h.get("status") or "no_code"
        judged = self.options.judge_role is JudgeRole.every and bool(h.get("judge_mode"))
        return {
            "id": number,
            "parent": parent,
            "generation": generation,
            "mode": h.get("coder_mode"),
            "hash": h.get("candidate_hash"),
            "status": status,
            "speedup": h.get("speedup"),
            "speedup_ci": h.get("speedup_ci"),
            "next_mode": "optimize" if status in OK_STATUSES else "repair",
            "feedback": state.get("feedback") if judged else None,
            "judged": judged,
            "cost_usd": round(cost, 10),
            "seconds": round(seconds, 3),
            "prompt": f"{round_folder(number)}/{CODER_FILE}",
        }

    def write_tree(self, nodes: list[dict[str, Any]]) -> None:
        self.s.store.write_text(None, TREE_FILE, "".join(json.dumps(n, sort_keys=True) + "\n" for n in nodes))

    def _end(self, state: LoopState, search: dict[str, Any], why: str) -> LoopState:
        if self.options.parallel > 1:  # the last record is said to be over by the task's end (``run_task``)
            search = self.announce(state["history"][:-1], search)
        return {"search": {**search, "next": "end", "queue": [], "judge": []}, "stop_reason": why}

    def announce(self, history: list[dict[str, Any]], search: dict[str, Any]) -> dict[str, Any]:
        """Say each round of ``history`` not said yet is over (side-by-side children: the Coder's step, which says
        so of the round before it in a loop, is not run in order)."""
        for record in history:
            if int(record["round"]) > int(search.get("announced") or 0):
                round_done(self.s, record)
        last = max([int(search.get("announced") or 0), *(int(h["round"]) for h in history)])
        return {**search, "announced": last}

    def plan(self, state: LoopState) -> LoopState:
        """Record the last node, then choose what the next step does: a Judge's advice on a chosen parent, a child
        of the next parent in the queue, or the end (a budget, the rounds, nothing left to expand)."""
        search = {**fresh_search(), **(state.get("search") or {})}
        nodes = list(search["nodes"])
        if len(nodes) < state["round"]:  # the last Coder step's node, finished
            nodes.append(self._recorded(state, search))
            self.write_tree(nodes)
        search = {**search, "nodes": nodes, "expanding": None}
        stop = state.get("stop_reason") or self.loop.spent_stop(state)
        if stop:
            return self._end(state, search, stop)
        if not search["queue"] and not search["judge"]:
            generation = int(search["generation"]) + 1
            if generation > self.s.strategy.round_cap(self.s.budgets.max_rounds):
                return self._end(state, search, "max_rounds")
            parents = self.policy(nodes, self.options, generation)
            if not parents:
                return self._end(state, search, "search_exhausted")
            chosen = sorted({p for p in parents if p is not None})
            waiting = [p for p in chosen if not nodes[p - 1]["judged"] and self._judges(nodes[p - 1]["next_mode"])]
            judge = waiting if self.options.judge_role is JudgeRole.chosen else []
            search = {**search, "generation": generation, "queue": list(parents), "judge": judge}
        if search["judge"]:
            return {"search": {**search, "next": "judge_parent"}}
        if self.options.parallel > 1:
            return {"search": {**search, "next": "batch"}}
        parent_id, *rest = search["queue"]
        parent = nodes[parent_id - 1] if parent_id is not None else None
        search = {**search, "queue": rest, "next": "coder", "expanding": parent_id}
        search.update(spent=self._spent(), active_s=state["active_s"])
        return {
            "search": search,
            "kernel": parent["hash"] if parent else None,
            "mode": parent["next_mode"] if parent else "first_attempt",
            "feedback": self.advice(parent),
        }

    def advice(self, parent: dict[str, Any] | None) -> dict[str, Any] | None:
        """The Judge's advice a child of ``parent`` reads (None: a first attempt, no advice, or no Judge)."""
        return parent["feedback"] if parent and self.options.judge_role is not JudgeRole.none else None

    def profiles(self, status: str | None) -> bool:
        """Whether a node of this verdict is profiled before the Judge advises on it (``strategy.profile``, with a
        profiler: the Judge reads its metrics, as in the CudaForge loop)."""
        return bool(self.s.strategy.profile and self.s.profiler is not None and status in OK_STATUSES)

    def advise(self, state: LoopState) -> LoopState:
        """The Judge's advice on the node ``state``'s history ends with, profiled first where ``profiles`` says: the
        update of both steps, as the Judge's step returns it."""
        if self.profiles(state["history"][-1].get("status")):
            state = {**state, **self.loop.profile({**state, "best": None})}  # the node itself, not the best so far
        return self.loop.judge(state)

    def judge_parent(self, state: LoopState) -> LoopState:
        """The Judge's advice on a chosen parent (``parallel`` of them at once), kept with its node (and its round's
        record and folder)."""
        search = dict(state["search"])
        take, rest = search["judge"][: self.options.parallel], search["judge"][self.options.parallel :]
        nodes, history = list(search["nodes"]), list(state["history"])
        started = time.monotonic()

        def one(parent_id: int) -> tuple[int, LoopState]:
            index = next(i for i, h in enumerate(state["history"]) if h["round"] == parent_id)
            view: LoopState = {
                **state,
                "round": parent_id,
                "kernel": nodes[parent_id - 1]["hash"],
                "history": state["history"][: index + 1],
            }
            return index, self.advise(view)

        done = side_by_side(one, take)
        for parent_id, (index, update) in zip(take, done, strict=True):
            if "history" in update:
                history[index] = update["history"][-1]
            nodes[parent_id - 1] = {**nodes[parent_id - 1], "feedback": update.get("feedback"), "judged": True}
        self.write_tree(nodes)
        updates = [update for _, update in done]
        out: LoopState = {
            "history": history,
            "active_s": updates[0]["active_s"] if len(updates) == 1 else state["active_s"] + time.monotonic() - started,
            "seconds": summed_seconds(state["seconds"], updates),
            "search": {**search, "nodes": nodes, "judge": rest},
        }
        stop = next((u["stop_reason"] for u in updates if u.get("stop_reason")), None)
        if stop:
            out["stop_reason"] = stop
        return out

    # -------------------------------------------------------------- routing

    def after_plan(self, state: LoopState) -> str:
        """Where ``plan`` sent the search."""
        step = str((state.get("search") or {}).get("next") or "end")
        return END if step == "end" else step

    def after_coder(self, state: LoopState) -> str:
        """To the evaluation with a candidate; back to ``plan`` without one (a dead end, or an error that stops)."""
        return "evaluate" if state.get("pending") and not state.get("stop_reason") else "plan"

    def after_evaluate(self, state: LoopState) -> str:
        """To the Judge when it advises on every node (of the verdicts the strategy's flags give it); else back to
        ``plan``."""
        every = self.options.judge_role is JudgeRole.every
        return "judge" if every and self._judges(state["mode"]) else "plan"


def search_graph(graph: StateGraph[LoopState], nodes: LoopNodes, policy: Policy) -> None:
    """Wire a search whose parents ``policy`` chooses (a strategy's ``shape`` calls this with its policy)."""
    search = SearchNodes(nodes, policy)
    graph.add_node("plan", search.plan)
    graph.add_node("coder", nodes.coder)
    graph.add_node("evaluate", nodes.evaluate)
    graph.add_node("judge", search.advise)
    graph.add_node("judge_parent", search.judge_parent)
    graph.add_node("batch", Batch(search).run)
    graph.add_edge(START, "plan")
    graph.add_conditional_edges("plan", search.after_plan, ["coder", "judge_parent", "batch", END])
    graph.add_conditional_edges("coder", search.after_coder, ["evaluate", "plan"])
    graph.add_conditional_edges("evaluate", search.after_evaluate, ["judge", "plan"])
    graph.add_edge("judge", "plan")
    graph.add_edge("judge_parent", "plan")
    graph.add_edge("batch", "plan")
