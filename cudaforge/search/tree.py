"""Tree search (Monte Carlo tree search): which node to expand is decided from measured speedups, their intervals and
how often each subtree was tried, with progressive widening and dead ends pruned (docs/agents.md).

Each round walks down from the root (whose children are first attempts): a node that may still widen (fewer than
``1 + visits ** widening`` children) is expanded, else the walk goes on to its child of highest upper bound: the
subtree's mean reward (a correct node's speedup, 0 for a failure), plus the top of its own speedup's interval above
the median, plus ``exploration * sqrt(ln(parent visits) / visits)``. A node without code is dead, and so is a failed
node whose two or more repairs all failed. ``strategy.search``: ``samples`` (children a round), ``exploration``,
``widening``, ``judge_role``. The YAML: ``configs/strategy/tree.yaml``."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from langgraph.graph import StateGraph

from cudaforge.graph.loop import LoopNodes, LoopState
from cudaforge.search.engine import SearchOptions, live, search_graph


class Tree:
    """The nodes as a tree, with the statistics the walk reads."""

    def __init__(self, nodes: list[dict[str, Any]]):
        self.nodes = {int(n["id"]): n for n in nodes}
        self.children: dict[int | None, list[int]] = defaultdict(list)
        for n in nodes:
            self.children[n["parent"]].append(int(n["id"]))
        self.alive = {int(n["id"]) for n in live(nodes)}

    def subtree(self, node: int | None) -> list[int]:
        """The node and its descendants (the root: every node)."""
        found, todo = ([] if node is None else [node]), list(self.children[node])
        while todo:
            found.append(todo.pop())
            todo.extend(self.children[found[-1]])
        return found

    def reward(self, node: int) -> float:
        """A node's reward: its speedup when correct, else 0."""
        n = self.nodes[node]
        return float(n.get("speedup") or 0.0) if n.get("status") == "correct" else 0.0

    def dead(self, node: int) -> bool:
        """No code, or a failure whose repairs (two or more) all failed."""
        if node not in self.alive:
            return True
        if self.nodes[node].get("status") == "correct":
            return False
        repairs = self.children[node]
        return len(repairs) >= 2 and not any(self.nodes[c].get("status") == "correct" for c in repairs)

    def upper_bound(self, node: int, parent_visits: int, exploration: float) -> float:
        """The walk's score of a child: mean reward below it, its interval's optimism, the exploration term."""
        below = self.subtree(node)
        mean = sum(self.reward(n) for n in below) / len(below)
        ci = self.nodes[node].get("speedup_ci") or []
        optimism = max(0.0, float(ci[1]) - self.reward(node)) if len(ci) == 2 and self.reward(node) else 0.0
        return mean + optimism + exploration * math.sqrt(math.log(max(parent_visits, 1)) / len(below))


def parents(nodes: list[dict[str, Any]], options: SearchOptions, generation: int) -> list[int | None]:
    """``samples`` children of the node the walk stops at (first attempts when it stops at the root)."""
    tree, node = Tree(nodes), None
    while True:
        visits = len(tree.subtree(node)) + 1
        kids = [k for k in tree.children[node] if not tree.dead(k)]
        if not kids or len(tree.children[node]) < 1 + math.floor(visits**options.widening):
            return [node] * options.samples
        node = max(kids, key=lambda k: (tree.upper_bound(k, visits, options.exploration), -k))


def shape(graph: StateGraph[LoopState], nodes: LoopNodes) -> None:
    """The tree search loop (``strategy.graph: tree``, registered as ``cudaforge.search.tree:shape``)."""
    search_graph(graph, nodes, parents)
