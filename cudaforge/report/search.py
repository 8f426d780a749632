"""The "Search trees" section of report.md: each search strategy's tree (``tasks/<task>/tree.jsonl``), task by task.

A tree of up to ``DRAWN_NODES`` nodes is drawn, one line per node under its parent; every tree gets a summary line
(nodes, depth, dead ends, the path from the root to the best node with each step's speedup). Runs without a tree (not
a search strategy) add nothing, so their report is what it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from cudaforge.report.load import RunData
from cudaforge.track.store import RunDir
from cudaforge.track.tree import Node, best, children, dead_ends, depth, path_to

DRAWN_NODES = 50
"""The largest tree drawn node by node; larger ones get their summary line only."""


def node_text(node: Node) -> str:
    """One node in a line: ``#id r<round> <mode> <verdict> [<speedup>x]``."""
    speedup = node.get("speedup")
    timed = f" {float(speedup):.2f}x" if speedup is not None else ""
    return f"#{node['id']} r{node.get('generation', '?')} {node.get('mode') or '?'} {node.get('status') or '?'}{timed}"


def drawing(nodes: Sequence[Node]) -> list[str]:
    """The tree, one line per node, each child under its parent with ``├─``/``└─`` edges (roots unindented)."""
    kids = children(nodes)
    lines: list[str] = []

    def walk(node: Node, lead: str, edge: str, seen: frozenset[int]) -> None:
        lines.append(f"{lead}{edge}{node_text(node)}")
        below = [k for k in kids.get(int(node["id"]), []) if int(k["id"]) not in seen]
        inner = lead + ("" if not edge else "   " if edge.startswith("└") else "│  ")
        for i, child in enumerate(below):
            walk(child, inner, "└─ " if i == len(below) - 1 else "├─ ", seen | {int(child["id"])})

    for root in kids.get(None, []):
        walk(root, "", "", frozenset({int(root["id"])}))
    return lines


def summary(nodes: Sequence[Node]) -> str:
    """Nodes, depth, dead ends, and the path from the root to the best node with each step's speedup."""
    top = best(nodes)
    steps = path_to(nodes, int(top["id"])) if top is not None else []
    path = " → ".join(
        f"#{n['id']} {float(n['speedup']):.2f}x" if n.get("speedup") is not None else f"#{n['id']} {n.get('status')}"
        for n in steps
    )
    return f"{len(nodes)} nodes, depth {depth(nodes)}, {len(dead_ends(nodes))} dead ends; best path: {path or 'none'}."


def task_lines(label: str, task_id: str, nodes: Sequence[Node]) -> list[str]:
    """One task's tree: its heading, summary, and its drawing when it has at most ``DRAWN_NODES`` nodes."""
    out = ["", f"### {label}: {task_id}", "", summary(nodes)]
    if len(nodes) <= DRAWN_NODES:
        out += ["", "```text", *drawing(nodes), "```"]
    else:
        out += ["", f"(more than {DRAWN_NODES} nodes: not drawn; `tree.jsonl` in the task's folder has every node)"]
    return out


def search_lines(runs: list[RunData]) -> list[str]:
    """The "Search trees" section: every task of the runs that has a ``tree.jsonl`` (empty when none has one)."""
    body: list[str] = []
    for run in runs:
        for folder in RunDir(run.path).tasks():
            nodes: list[Node] = list(folder.tree())
            if nodes:
                body += task_lines(run.label, str((folder.task() or {}).get("id") or folder.slug), nodes)
    if not body:
        return []
    intro = (
        "Each search's tree, task by task: a node is `#id` (its round folder), the search round `r`, the Coder's "
        "mode, the verdict and the speedup; a child is drawn under its parent. Dead ends are leaves without a "
        f"correct kernel; trees of more than {DRAWN_NODES} nodes get the summary line only."
    )
    return ["", "## Search trees", "", intro, *body]


__all__ = ["DRAWN_NODES", "drawing", "node_text", "search_lines", "summary", "task_lines"]
