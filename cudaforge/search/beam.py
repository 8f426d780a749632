"""Beam search: the k best nodes of a round survive, and each is revised by several Coder samples (docs/agents.md).

Round 1 writes ``samples`` x ``beam_width`` first attempts; each later round keeps the ``beam_width`` best nodes of
the round before (correct by speedup, then compiled, then other failures, which are repaired) and writes ``samples``
children of each. ``judge_role``: ``none``, ``chosen`` (once per survivor, before its children), ``every``.
The YAML: ``configs/strategy/beam.yaml``."""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph

from cudaforge.graph.loop import LoopNodes, LoopState
from cudaforge.search.engine import SearchOptions, latest_round, ranked, search_graph


def parents(nodes: list[dict[str, Any]], options: SearchOptions, generation: int) -> list[int | None]:
    """``samples`` children of each of the last round's ``beam_width`` best nodes (first attempts at the start)."""
    survivors = ranked(latest_round(nodes))[: options.beam_width]
    if not survivors:
        return [None] * (options.samples * options.beam_width)
    return [node["id"] for node in survivors for _ in range(options.samples)]


def shape(graph: StateGraph[LoopState], nodes: LoopNodes) -> None:
    """The beam search loop (``strategy.graph: beam``, registered as ``cudaforge.search.beam:shape``)."""
    search_graph(graph, nodes, parents)
