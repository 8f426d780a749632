"""The published tables (`cudaforge/resources/published/*.yaml`): complete, each row traced to the paper, and the
report's handling of them (groups of several levels, per-row sources, "missing" meaning the paper has none).

The expected numbers are the CudaForge paper's (arXiv:2511.01884), copied from its Tables 1-5, figures and text.
"""

from __future__ import annotations

import csv
import io
import re

import pytest

from cudaforge.report import build_report, load_published
from cudaforge.report.tables import csv_text, group_title, latex, markdown
from cudaforge.types import TaskResult

KEYS = ("correct_pct", "median", "p75", "perf", "fast_1_pct")
TABLES = (
    "cudaforge_table1",
    "cudaforge_baselines",
    "cudaforge_h200",
    "cudaforge_strategies",
    "cudaforge_dstar",
    "cudaforge_cost",
    "cudaforge_gpus",
    "cudaforge_models",
)


@pytest.fixture(scope="module")
def tables():
    return load_published()


def rows_of(tables, name: str) -> dict[str, dict[str, float]]:
    """label (without ``paper: ``) -> values, for a table whose labels are unique."""
    rows = {r.label.removeprefix("paper: "): r.values for r in tables[name].rows}
    assert len(rows) == len(tables[name].rows), f"{name}: labels are not unique"
    return rows


def five(values: dict[str, float]) -> list[float | None]:
    return [values.get(k) for k in KEYS]


# --------------------------------------------------------------------------- the data


def test_every_table_loads_and_every_row_names_where_the_paper_gives_it(tables):
    assert set(TABLES) <= set(tables)
    for name in TABLES:
        table = tables[name]
        assert table.title and "arXiv:2511.01884" in table.source and table.rows, name
        for row in table.rows:
            where = f"{name}, {row.label}, {row.group}"
            assert re.search(r"\b(Table [1-5]|Fig\. [1-9])\b", row.source), f"{where}: source {row.source!r}"
            assert row.group in ("level1", "level2", "level3", "level1_2", "overall"), where
            assert row.values and all(v > 0 for v in row.values.values()), f"{where}: absent, never 0"


def test_table1_cudaforge_rows_have_all_five_metrics(tables):
    rows = {r.group: r.values for r in tables["cudaforge_table1"].rows}
    assert five(rows["overall"]) == [97.6, 1.107, 1.592, 1.677, 70.8]
    assert five(rows["level1_2"]) == [98.0, 1.112, 1.617, 1.776, 71.5]
    assert five(rows["level1"]) == [96.0, 1.044, 1.751, 1.448, 54.0]
    assert five(rows["level2"]) == [100.0, 1.124, 1.427, 2.104, 89.0]
    assert five(rows["level3"]) == [96.0, 1.081, 1.510, 1.283, 68.0]
    assert {g: v["tasks"] for g, v in rows.items()} == {
        "level1": 100,
        "level2": 100,
        "level1_2": 200,
        "level3": 50,
        "overall": 250,
    }


def test_table2_levels_recombine_into_table1(tables):
    """Failed tasks sit in every denominator: Table 1's overall and Level 1 & 2 rows are task-weighted means of
    Table 2's levels, Perf (1.448*100 + 2.104*100 + 1.283*50)/250 = 1.677 included."""
    rows = {r.group: r.values for r in tables["cudaforge_table1"].rows}

    def mean(key, levels):
        return sum(rows[g]["tasks"] * rows[g][key] for g in levels) / sum(rows[g]["tasks"] for g in levels)

    for combined, levels in (("overall", ("level1", "level2", "level3")), ("level1_2", ("level1", "level2"))):
        assert mean("perf", levels) == pytest.approx(rows[combined]["perf"], abs=0.001)
        assert mean("correct_pct", levels) == pytest.approx(rows[combined]["correct_pct"], abs=0.05)
        assert mean("fast_1_pct", levels) == pytest.approx(rows[combined]["fast_1_pct"], abs=0.05)
    assert (1.448 * 100 + 2.104 * 100 + 1.283 * 50) / 250 == pytest.approx(1.677, abs=0.001)


def test_fast_1_and_correct_are_whole_counts_of_all_tasks(tables):
    """Why the file says fast_1 is over all tasks: with the task count given, every percentage is a whole count."""
    checked = 0
    for table in tables.values():
        for row in table.rows:
            for key in ("fast_1_pct", "correct_pct"):
                if key in row.values and "tasks" in row.values:
                    count = row.values[key] * row.values["tasks"] / 100
                    assert count == pytest.approx(round(count), abs=1e-6), (table.name, row.label, key)
                    checked += 1
    assert checked >= 40


def test_table1_baseline_rows(tables):
    strategies = rows_of(tables, "cudaforge_strategies")
    assert {k: five(v) for k, v in strategies.items()} == {
        "one-shot": [57.6, 0.390, 1.014, 0.680, 31.6],
        "self-refine": [90.8, 1.012, 1.209, 1.107, 55.2],
        "correction-only": [97.6, 1.031, 1.238, 1.222, 59.6],
        "optimisation-only": [88.4, 1.061, 1.483, 1.509, 64.0],
        "CudaForge (full loop)": [97.6, 1.107, 1.592, 1.677, 70.8],
    }
    assert all(v["tasks"] == 250 for v in strategies.values())
    dstar = rows_of(tables, "cudaforge_dstar")
    assert {k: five(v) for k, v in dstar.items()} == {
        "full loop, 10 rounds": [100.0, 1.322, 1.736, 1.767, 84.0],
        "full ncu metric set": [100.0, 1.280, 1.489, 1.414, 80.0],
        "30 rounds": [100.0, 1.317, 1.777, 2.265, 92.0],
    }
    assert (dstar["full ncu metric set"]["dollars"], dstar["full ncu metric set"]["minutes"]) == (1.0, 40.0)
    assert all(v["tasks"] == 25 for v in dstar.values())


def test_other_systems_carry_only_what_the_paper_gives(tables):
    """The Agentic Baseline and Kevin-32B: Correct and Perf only, so every other cell reads as not given."""
    baselines = rows_of(tables, "cudaforge_baselines")
    assert baselines["Agentic Baseline"] == {"correct_pct": 95.0, "perf": 1.490}
    assert baselines["Kevin-32B"] == {"correct_pct": 82.0, "perf": 1.10}
    assert {r.group for r in tables["cudaforge_baselines"].rows} == {"level1_2"}
    h200 = {(r.label, r.group): r.values for r in tables["cudaforge_h200"].rows}
    assert h200[("paper: CudaForge o3/o3 (H200)", "level1_2")] == {"tasks": 200, "correct_pct": 98.0, "perf": 1.662}
    assert h200[("paper: CudaForge o3/o3 (H200)", "level3")] == {"tasks": 50, "correct_pct": 96.0, "perf": 1.261}
    assert h200[("paper: Kevin-32B", "level1_2")] == {"correct_pct": 82.0, "perf": 1.10}


def test_table3_cost(tables):
    cost = {(r.label, r.group): (r.values["dollars"], r.values["minutes"]) for r in tables["cudaforge_cost"].rows}
    assert cost == {
        ("paper: CudaForge cost", "level1"): (0.29, 28.5),
        ("paper: CudaForge cost", "level2"): (0.30, 24.1),
        ("paper: CudaForge cost", "level3"): (0.33, 27.1),
        ("paper: CudaForge cost", "overall"): (0.30, 26.5),
        ("paper: Agentic Baseline cost", "overall"): (5.0, 60.0),
    }
    tasks = {r.group: r.values.get("tasks") for r in tables["cudaforge_cost"].rows if "CudaForge" in r.label}
    assert tasks == {"level1": 10, "level2": 10, "level3": 5, "overall": 25}  # D*'s 10 + 10 + 5 tasks


def test_table4_gpus_and_table5_models(tables):
    assert {k: five(v) for k, v in rows_of(tables, "cudaforge_gpus").items()} == {
        "RTX 6000": [100.0, 1.322, 1.736, 1.767, 84.0],
        "RTX 4090": [100.0, 1.188, 1.589, 1.327, 80.0],
        "A100": [100.0, 1.371, 1.762, 1.841, 84.0],
        "RTX 3090": [100.0, 1.155, 1.706, 1.320, 72.0],
    }
    assert {k: five(v) for k, v in rows_of(tables, "cudaforge_models").items()} == {
        "o3 / o3": [100.0, 1.322, 1.736, 1.767, 84.0],
        "o3 / GPT-5": [100.0, 1.131, 1.561, 2.114, 96.0],
        "o3 / Claude-Sonnet-4": [100.0, 1.265, 1.456, 1.829, 84.0],
        "o3 / GPT-OSS-120B": [100.0, 1.226, 1.490, 1.364, 76.0],
        "GPT-5 / o3": [100.0, 1.125, 1.388, 1.896, 72.0],
        "Claude-Sonnet-4 / o3": [88.0, 1.052, 1.207, 1.398, 56.0],
        "GPT-OSS-120B / o3": [96.0, 1.080, 1.477, 1.653, 68.0],
        "QwQ-32B / o3": [84.0, 0.965, 1.153, 0.790, 44.0],
    }
    for name in ("cudaforge_gpus", "cudaforge_models"):
        assert all(r.group == "overall" and r.values["tasks"] == 25 for r in tables[name].rows)


def test_text_inconsistencies_are_notes_and_the_tables_values_are_kept(tables):
    notes = {(t.name, r.label, r.group): r.note for t in tables.values() for r in t.rows}
    assert "92.8%" in notes[("cudaforge_strategies", "paper: self-refine", "overall")]
    assert "58.8%" in notes[("cudaforge_strategies", "paper: correction-only", "overall")]
    assert "2.271x" in notes[("cudaforge_dstar", "paper: 30 rounds", "overall")]
    assert "6 H100 hours" in notes[("cudaforge_cost", "paper: Agentic Baseline cost", "overall")]


# --------------------------------------------------------------------------- the schema


def test_rows_read_source_and_note_and_other_keys_are_ignored(tmp_path):
    (tmp_path / "p.yaml").write_text(
        "tables:\n  t:\n    title: T\n    source: S\n    rows:\n"
        "      - {label: A, group: level1_2, perf: 2, source: \"Table 9, row 'A'\", note: N}\n"
        "other_numbers:\n  - {source: Fig. 1, text: anything}\n"
    )
    (row,) = load_published(tmp_path)["t"].rows
    assert (row.label, row.group, row.values, row.source, row.note) == (
        "A",
        "level1_2",
        {"perf": 2.0},
        "Table 9, row 'A'",
        "N",
    )


@pytest.mark.parametrize("group", ["Level1", "levels1_2", "all", "level1-2"])
def test_an_unknown_group_is_an_error(tmp_path, group):
    (tmp_path / "p.yaml").write_text(f"tables:\n  t: {{rows: [{{label: A, group: {group}, perf: 2}}]}}\n")
    with pytest.raises(ValueError, match="group"):
        load_published(tmp_path)


# --------------------------------------------------------------------------- in a report


def write_run(path, task_ids):
    path.mkdir(parents=True)
    rows = [TaskResult(task_id=t, correct=True, best_speedup=1.5).to_json() for t in task_ids]
    (path / "results.jsonl").write_text("\n".join(rows) + "\n")
    return path


def test_group_titles():
    assert [group_title(g) for g in ("level1", "level1_2", "level1_2_3", "overall")] == [
        "Level 1",
        "Levels 1 & 2",
        "Levels 1 & 2 & 3",
        "Overall",
    ]


def test_a_level_1_and_2_table_when_the_runs_have_both_levels(tmp_path):
    run = write_run(tmp_path / "a", ["kb/level1/1_A", "kb/level2/1_B", "kb/level3/1_C"])
    report = build_report([run], compare=["cudaforge_table1", "cudaforge_baselines"], bootstrap=0)
    assert report.groups == ["level1", "level2", "level3", "overall"]  # the run's statistics: unchanged
    md = markdown(report)
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings == ["## Level 1", "## Level 2", "## Levels 1 & 2", "## Level 3", "## Overall", "## Notes"]
    combined = md.split("## Levels 1 & 2")[1].split("## Level 3")[0]
    assert "Published rows only" in combined
    assert "| paper: CudaForge o3/o3 | 200 | 98.0 | 1.112 | 1.617 | 1.776 | – | 98.0 | 71.5 |" in combined
    assert "| paper: Agentic Baseline | – | 95.0 | – | – | 1.490 | – | 95.0 | – |" in combined
    labels = [line.split("|")[1].strip() for line in combined.splitlines() if line.startswith("| ")][2:]
    assert labels and all(label.startswith("paper: ") for label in labels)  # no run row
    assert "- paper: CudaForge o3/o3, Levels 1 & 2: Table 1, row 'CudaForge (Level 1 & 2)'" in md
    assert "- paper: Agentic Baseline, Levels 1 & 2: Table 1, row 'Agentic Baseline (Level 1 & 2)'" in md
    assert latex(report).count(r"\begin{tabular}") == 5 and r"\caption{Levels 1 \& 2:" in latex(report)
    rows = list(csv.DictReader(io.StringIO(csv_text(report))))
    assert {(r["source"], r["metric"], r["value"]) for r in rows if r["group"] == "level1_2"} >= {
        ("cudaforge_table1", "perf", "1.776"),
        ("cudaforge_baselines", "correct_pct", "95.0"),
    }


def test_no_level_1_and_2_table_without_both_levels(tmp_path):
    run = write_run(tmp_path / "a", ["kb/level1/1_A", "kb/level3/1_C"])
    md = markdown(build_report([run], compare=["cudaforge_table1", "cudaforge_baselines"], bootstrap=0))
    assert "## Levels 1 & 2" not in md and "paper: Agentic Baseline" not in md  # nor its source line
    assert "- paper: CudaForge o3/o3, Level 3: Table 2, row 'Level 3'" in md
