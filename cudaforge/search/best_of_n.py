"""Best-of-N per round: N Coder samples a round, the best verdict of the round goes on (docs/agents.md).

Round 1 writes N first attempts; each later round writes N children of the previous round's best node (correct and
fastest, else compiled, else any evaluated failure, which its children repair). ``strategy.search``: ``samples`` (N),
``judge_role`` (``none``, ``chosen``: the Judge advises once a round on the node that goes on, ``every``).
The YAML: ``configs/strategy/best_of_n.yaml``."""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph

from cudaforge.graph.loop import LoopNodes, LoopState
from cudaforge.search.engine import SearchOptions, latest_round, ranked, search_graph


def parents(nodes: list[dict[str, Any]], options: SearchOptions, generation: int) -> list[int | None]:
    """N children of the last round's best node (N first attempts while no node can be expanded)."""
    best = ranked(latest_round(nodes))
    return [best[0]["id"] if best else None] * options.samples


def shape(graph: StateGraph[LoopState], nodes: LoopNodes) -> None:
    """The best-of-N loop (``strategy.graph: best_of_n``, registered as ``cudaforge.search.best_of_n:shape``)."""
    search_graph(graph, nodes, parents)
