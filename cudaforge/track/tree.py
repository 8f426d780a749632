"""A search's tree as its task folder records it (``tree.jsonl``, ``TaskDir.tree``): its shape, read by the report
(which draws it) and the export (whose trajectories follow its paths). Plain functions of the node records: a node is
a mapping with its ``id`` (its round's number), ``parent`` (None: a root), ``generation``, ``mode``, ``status`` and
``speedup`` (``cudaforge.search.engine`` writes them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Node = Mapping[str, Any]


def score(node: Node) -> tuple[int, float]:
    """How good a node's verdict is: correct (by speedup) above compiled above any other failure."""
    if node.get("status") == "correct":
        return 2, float(node.get("speedup") or 0.0)
    return (1 if node.get("status") == "compiled" else 0), 0.0


def children(nodes: Sequence[Node]) -> dict[int | None, list[Node]]:
    """Each node's children in id order, by the parent's id (None: the roots). A node whose parent is not in the
    tree counts as a root."""
    known = {int(n["id"]) for n in nodes}
    found: dict[int | None, list[Node]] = {}
    for node in sorted(nodes, key=lambda n: int(n["id"])):
        parent = node.get("parent")
        key = int(parent) if parent is not None and int(parent) in known else None
        found.setdefault(key, []).append(node)
    return found


def path_to(nodes: Sequence[Node], node_id: int) -> list[Node]:
    """The nodes from a root down to ``node_id``, in parent order."""
    by_id = {int(n["id"]): n for n in nodes}
    path: list[Node] = []
    current: int | None = node_id
    while current is not None and current in by_id and all(int(n["id"]) != current for n in path):
        node = by_id[current]
        path.append(node)
        parent = node.get("parent")
        current = int(parent) if parent is not None else None
    return path[::-1]


def leaf_paths(nodes: Sequence[Node]) -> list[list[Node]]:
    """One path per leaf (a node without children), from its root down, leaves in id order."""
    kids = children(nodes)
    leaves = sorted((n for n in nodes if not kids.get(int(n["id"]))), key=lambda n: int(n["id"]))
    return [path_to(nodes, int(leaf["id"])) for leaf in leaves]


def best(nodes: Sequence[Node]) -> Node | None:
    """The best node (``score``; ties: the earlier one), None for an empty tree."""
    return max(nodes, key=lambda n: (score(n), -int(n["id"])), default=None)


def depth(nodes: Sequence[Node]) -> int:
    """The number of nodes on the longest root-to-leaf path (0: an empty tree)."""
    return max((len(path) for path in leaf_paths(nodes)), default=0)


def dead_ends(nodes: Sequence[Node]) -> list[Node]:
    """Leaves without a correct kernel: branches the search left where they failed."""
    kids = children(nodes)
    return [n for n in nodes if not kids.get(int(n["id"])) and n.get("status") != "correct"]


__all__ = ["Node", "best", "children", "dead_ends", "depth", "leaf_paths", "path_to", "score"]
