"""A search's recorded tree (``tasks/<task>/tree.jsonl``) in the report (the "Search trees" section) and in the
export (one trajectory per root-to-leaf path): run directories written by hand, no search run needed."""

from __future__ import annotations

import json
from pathlib import Path

from test_teach import L1, kernel, result, write_run

from cudaforge.config import ExportConfig
from cudaforge.report import build_report
from cudaforge.report.search import DRAWN_NODES, search_lines
from cudaforge.report.tables import markdown
from cudaforge.teach import build_rows
from cudaforge.teach.schema import SCHEMAS, conform
from cudaforge.track.store import RunStore
from cudaforge.track.tree import best, dead_ends, depth, leaf_paths

K1, K2, K3, K4 = kernel("x + 1"), kernel("x * 2"), kernel("x - 1"), kernel("x * 3")


def node(id: int, parent: int | None, generation: int, mode: str, status: str, speedup: float | None = None):
    return {"id": id, "parent": parent, "generation": generation, "mode": mode, "status": status, "speedup": speedup}


TREE = [
    node(1, None, 1, "first_attempt", "correct", 1.2),
    node(2, 1, 2, "optimize", "correct", 2.0),
    node(3, 1, 2, "optimize", "incorrect"),
    node(4, 2, 3, "optimize", "correct", 2.5),
]
"""Root 1 with children 2 and 3 (a dead end); 2's child 4 is the best node."""


def search_run(path: Path, tree=TREE) -> Path:
    """A run of four rounds (the tree's nodes, in id order) with ``tree.jsonl`` beside them."""
    rounds = [
        {"mode": "first_attempt", "source": K1, "eval": result(L1.id, K1, "correct", 1.2)},
        {"mode": "optimize", "source": K2, "eval": result(L1.id, K2, "correct", 2.0)},
        {"mode": "optimize", "source": K3, "eval": result(L1.id, K3, "incorrect")},
        {"mode": "optimize", "source": K4, "eval": result(L1.id, K4, "correct", 2.5)},
    ]
    write_run(path, "scripted/model_a", "best_of_n", [(L1, rounds)])
    RunStore(path).task(L1.id).write_text(None, "tree.jsonl", "".join(json.dumps(n) + "\n" for n in tree))
    return path


def test_the_trees_shape_paths_depth_dead_ends_and_best_node():
    assert [[n["id"] for n in p] for p in leaf_paths(TREE)] == [[1, 3], [1, 2, 4]]
    assert depth(TREE) == 3 and [n["id"] for n in dead_ends(TREE)] == [3]
    best_node = best(TREE)
    assert best_node is not None and best_node["id"] == 4
    assert depth([]) == 0 and best([]) is None


def test_the_report_draws_each_search_tree_and_says_nothing_for_other_runs(tmp_path):
    run = search_run(tmp_path / "search")
    report = build_report([run], bootstrap=0)
    lines = report.sections["search"]
    assert lines[:2] == ["", "## Search trees"]
    assert "4 nodes, depth 3, 1 dead ends; best path: #1 1.20x → #2 2.00x → #4 2.50x." in lines
    drawn = lines[lines.index("```text") + 1 : -1]
    assert drawn == [
        "#1 r1 first_attempt correct 1.20x",
        "├─ #2 r2 optimize correct 2.00x",
        "│  └─ #4 r3 optimize correct 2.50x",
        "└─ #3 r2 optimize incorrect",
    ]
    text = markdown(report)
    assert text.index("## Search trees") < text.index("## Notes")
    plain = write_run(tmp_path / "plain", "scripted/model_a", "cudaforge", [(L1, [{"mode": "first_attempt"}])])
    other = build_report([plain], bootstrap=0)
    assert other.sections["search"] == [] and "Search trees" not in markdown(other)


def test_a_big_tree_gets_its_summary_line_only(tmp_path):
    chain = [node(i, i - 1 if i > 1 else None, i, "optimize", "correct", 1.0 + i / 100) for i in range(1, 61)]
    run = search_run(tmp_path / "big", tree=chain)
    loaded = build_report([run], bootstrap=0).runs
    lines = search_lines(loaded)
    assert len(chain) > DRAWN_NODES and "```text" not in lines
    summary = next(line for line in lines if line.startswith("60 nodes"))
    assert summary.startswith("60 nodes, depth 60, 0 dead ends; best path: #1 1.01x → #2 1.02x")
    assert summary.endswith("#60 1.60x.")


def test_a_search_exports_one_trajectory_per_root_to_leaf_path(tmp_path):
    run = search_run(tmp_path / "search")
    rows = build_rows(ExportConfig(runs=[str(run)], format="trajectories"))
    for row in rows:
        conform(row, SCHEMAS["trajectories"])
    assert [[x["round"] for x in row["rounds"]] for row in rows] == [[1, 3], [1, 2, 4]]
    assert [row["provenance"]["round"] for row in rows] == [3, 4]  # each path's leaf
    assert [row["best_speedup"] for row in rows] == [1.2, 2.5] and len({row["id"] for row in rows}) == 2
    prompts = [m["content"] for m in rows[1]["messages"] if m["role"] == "user"]
    assert [p.rsplit(" ", 1)[-1] for p in prompts] == ["1", "2", "4"]  # each step's prompt, in parent order
    fast = build_rows(ExportConfig(runs=[str(run)], format="trajectories", min_speedup=2.0))
    assert [[x["round"] for x in row["rounds"]] for row in fast] == [[1, 2, 4]]


def test_sft_rows_of_a_search_are_its_best_positive_as_before(tmp_path):
    rows = build_rows(ExportConfig(runs=[str(search_run(tmp_path / "search"))], format="sft"))
    assert [row["provenance"]["round"] for row in rows] == [4] and rows[0]["speedup"] == 2.5
