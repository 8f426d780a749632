"""`cudaforge report`: statistics checked against hand-computed values, published tables, writers, plots.

Fake run directories are written from `TaskResult` rows, as `cudaforge run` writes them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys

import numpy as np
import pytest

from cudaforge.cli.hydra_args import positional_runs
from cudaforge.report import (
    FailedAs,
    build_report,
    group_stats,
    load_published,
    load_run,
    make_report,
    run_stats,
    select_published,
    write_report,
)
from cudaforge.report.plots import PlottingUnavailable, require_matplotlib
from cudaforge.report.scaling import curve
from cudaforge.report.tables import csv_text, latex, markdown
from cudaforge.types import RoundRecord, TaskResult


def result(task: str, speedup: float | None = None, correct: bool = True, **kw) -> TaskResult:
    return TaskResult(task_id=task, correct=correct, best_speedup=speedup if correct else None, **kw)


# Level 1: speedups 2.0, 0.5, failed, 1.2. Level 2: 3.0, correct but untimed, 1.0 (not > 1).
L1 = [
    result("kb/level1/1_A", 2.0, cost_usd=0.10, minutes=10, tokens_in=100, tokens_out=50),
    result("kb/level1/2_B", 0.5, cost_usd=0.20, minutes=20, tokens_in=200, tokens_out=50),
    result("kb/level1/3_C", correct=False, cost_usd=0.30, minutes=30, tokens_in=300, tokens_out=50),
    result("kb/level1/4_D", 1.2, cost_usd=0.40, minutes=40, tokens_in=400, tokens_out=50),
]
L2 = [
    result("kb/level2/1_E", 3.0, cost_usd=1.0, minutes=5, tokens_in=10, tokens_out=0, unpriced_calls=2),
    result("kb/level2/2_F", None, cost_usd=1.0, minutes=5, tokens_in=10, tokens_out=0),
    result("kb/level2/3_G", 1.0, cost_usd=1.0, minutes=5, tokens_in=10, tokens_out=0),
]


def write_run(path, results, config: str | None = None, ledger: list[dict] | None = None, extra_lines=()):
    path.mkdir(parents=True, exist_ok=True)
    lines = [r.to_json() for r in results] + list(extra_lines)
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    if config is not None:
        (path / ".hydra").mkdir()
        (path / ".hydra" / "config.yaml").write_text(config)
    if ledger is not None:
        (path / "ledger.jsonl").write_text("\n".join(json.dumps(row) for row in ledger) + "\n")
    return path


def values(stats, **expected):
    return {k: stats.values[k].value for k in expected}


# --------------------------------------------------------------------------- statistics


def test_level_statistics_by_hand():
    stats = run_stats(L1 + L2, bootstrap=0)
    assert list(stats) == ["level1", "level2", "overall"]
    l1, l2, overall = stats["level1"], stats["level2"], stats["overall"]
    expected_l1 = dict(
        tasks=4,
        correct_pct=75.0,
        median=(0.5 + 1.2) / 2,
        p75=1.2 + 0.25 * (2.0 - 1.2),
        perf=(2.0 + 0.5 + 0 + 1.2) / 4,
        geomean=(2.0 * 0.5 * 1.2) ** (1 / 3),
        fast_0_pct=75.0,
        fast_1_pct=50.0,
        fast_2_pct=0.0,
        dollars=0.25,
        minutes=25.0,
        tokens=(150 + 250 + 350 + 450) / 4,
    )
    expected_l1["fast_1.5_pct"] = 25.0  # 2.0 only; fast_2 is 0: 2.0 is not more than 2
    assert values(l1, **expected_l1) == pytest.approx(expected_l1)
    # Level 2: the untimed task is correct (100%, fast_0) but out of every speedup statistic.
    expected_l2 = dict(
        tasks=3,
        correct_pct=100.0,
        median=2.0,
        p75=2.5,
        perf=2.0,
        geomean=math.sqrt(3.0),
        fast_0_pct=100.0,
        fast_1_pct=50.0,
        fast_2_pct=50.0,
        dollars=1.0,
        minutes=5.0,
        tokens=10.0,
    )
    assert values(l2, **expected_l2) == pytest.approx(expected_l2)
    assert (l2.n_untimed, l2.unpriced_calls, l1.n_untimed) == (1, 2, 0)
    # Overall: speedups (failed as 0, untimed left out) 0, 0.5, 1, 1.2, 2, 3.
    expected = dict(
        tasks=7,
        correct_pct=600 / 7,
        median=1.1,
        p75=1.2 + 0.75 * 0.8,
        perf=7.7 / 6,
        geomean=(2 * 0.5 * 1.2 * 3 * 1) ** (1 / 5),
        fast_1_pct=50.0,
        fast_2_pct=100 / 6,
    )
    expected["fast_1.5_pct"] = 100 / 3
    assert values(overall, **expected) == pytest.approx(expected)
    assert (overall.n_tasks, overall.n_correct, overall.n_untimed) == (7, 6, 1)


@pytest.mark.parametrize(
    "failed_as, perf, median, geomean",
    [
        (FailedAs.zero, 3.7 / 4, 0.85, 1.2 ** (1 / 3)),
        (FailedAs.one, 4.7 / 4, 1.1, 1.2 ** (1 / 4)),
        (FailedAs.exclude, 3.7 / 3, 1.2, 1.2 ** (1 / 3)),
    ],
)
def test_failed_as(failed_as, perf, median, geomean):
    stats = group_stats("level1", L1, failed_as=failed_as, bootstrap=0)
    assert values(stats, perf=0, median=0, geomean=0) == pytest.approx(dict(perf=perf, median=median, geomean=geomean))
    # fast_p and the correct rate do not depend on how failed tasks enter the speedup statistics.
    assert values(stats, correct_pct=0, fast_1_pct=0) == pytest.approx(dict(correct_pct=75.0, fast_1_pct=50.0))


def test_all_untimed_has_no_speedup_statistics():
    stats = group_stats("overall", [result("t/level1/1_A", None), result("t/level1/2_B", correct=False)], bootstrap=50)
    assert stats.values["correct_pct"].value == 50.0
    assert stats.values["fast_0_pct"].value == 50.0
    # The one task left in the denominator failed: Perf 0 with failed_as=zero, fast_1 0.
    assert stats.values["perf"].value == 0.0 and stats.values["fast_1_pct"].value == 0.0
    assert stats.values["geomean"].value is None  # no correct timed task
    only_untimed = group_stats("overall", [result("t/level1/1_A", None)], bootstrap=50)
    assert only_untimed.values["perf"] == only_untimed.values["median"]
    assert only_untimed.values["perf"].value is None and only_untimed.values["fast_1_pct"].value is None


def test_unpriced_tasks_have_no_dollar_figure():
    unpriced = result("t/level1/1_A", 2.0, cost_usd=0.0, unpriced_calls=3)
    partly = result("t/level1/2_B", 2.0, cost_usd=0.5, unpriced_calls=1)
    assert group_stats("g", [unpriced], bootstrap=10).values["dollars"].value is None
    assert group_stats("g", [unpriced, partly], bootstrap=0).values["dollars"].value == 0.5
    assert group_stats("g", [result("t/level1/3_C", 2.0)], bootstrap=0).values["dollars"].value == 0.0  # priced at $0


def test_wall_and_active_minutes_with_old_rows_falling_back():
    new = [
        result("kb/level1/1_A", 2.0, minutes=10, wall_minutes=12, active_minutes=4),
        result("kb/level1/2_B", 1.0, minutes=20, wall_minutes=20, active_minutes=8),
    ]
    old = TaskResult.from_json(json.dumps({"task_id": "kb/level1/3_C", "correct": False, "minutes": 30}))
    assert (old.wall_minutes, old.active_minutes, old.minutes) == (None, None, 30)  # rows from before still load
    stats = group_stats("level1", new + [old], bootstrap=0)
    assert stats.values["minutes"].value == pytest.approx((12 + 20 + 30) / 3)  # wall: an old row's minutes
    assert stats.values["active_minutes"].value == pytest.approx(6.0)  # over the rows that have it


def test_report_labels_minutes_and_says_when_tasks_ran_at_once(tmp_path):
    new = [result("kb/level1/1_A", 2.0, minutes=10, wall_minutes=10, active_minutes=4)]
    one_at_a_time = write_run(tmp_path / "serial", new, "concurrency: 1\n")
    concurrent = write_run(tmp_path / "parallel", new, "concurrency: 8\n")
    old = write_run(tmp_path / "old", [result("kb/level1/1_A", 2.0, minutes=7)])

    serial = build_report([one_at_a_time], bootstrap=0)
    assert [m.header for m in serial.metrics if "min" in m.header] == ["wall min / kernel"]
    assert not any("concurrency" in note or "recorded before" in note for note in serial.notes)
    assert any("minutes per kernel when tasks run one at a time" in note for note in serial.notes)

    both = build_report([one_at_a_time, concurrent, old], labels=["serial", "parallel", "old"], bootstrap=0)
    assert [m.header for m in both.metrics if "min" in m.header] == ["wall min / kernel", "active min / kernel"]
    assert [n for n in both.notes if n.startswith("parallel: up to 8 tasks ran at once (concurrency=8)")]
    assert [n for n in both.notes if "not comparable with the CudaForge paper's minutes per kernel" in n]
    assert [n for n in both.notes if n.startswith("old: 1 task(s) recorded before wall and active minutes")]
    text = markdown(both)
    assert "| parallel |" in text and "| 10.0 | 4.0 |" in text  # wall, then active
    assert "| old |" in text and "| 7.0 | – |" in text  # an old run: its minutes, no active minutes
    assert "active_minutes" in csv_text(both)


def test_bootstrap_intervals_contain_the_estimate_and_are_seeded():
    results = [
        result(
            f"kb/level{1 + i % 2}/{i}_T",
            0.5 + (i * 37 % 23) / 10,
            correct=i % 7 != 0,
            cost_usd=0.01 * i,
            minutes=i % 5,
            wall_minutes=i % 5,
            active_minutes=i % 3,
            tokens_in=i,
            held_out={
                "shapes": [{"shape": "odd", "status": "correct", "correct": i % 3 != 0, "speedup": 0.5 + i / 20}],
                **({"decided": True, "scored_correct": True} if i % 7 == 0 else {}),
            },
            compile_beside={"compile_over_eager": 0.8 + (i % 4) / 5},
            best_checks={
                "flags": ["precision_fp64"] if i % 5 == 0 else ["parameters_not_varied"] if i % 6 == 0 else [],
                "memory_ratio": 0.5 + i / 40,
            },
        )
        for i in range(40)
    ]
    a = run_stats(results, bootstrap=400, seed=3)
    overall = a["overall"].values
    correct = [i for i in range(40) if i % 7 != 0]
    assert overall["scored_correct_pct"].value == 100.0  # the held-out shapes decided the 6 others
    assert overall["precision_flagged_pct"].value == pytest.approx(100 * sum(i % 5 == 0 for i in correct) / 34)
    assert overall["not_varied_pct"].value == pytest.approx(100 * sum(i % 5 and i % 6 == 0 for i in correct) / 34)
    for group in a.values():
        for key, est in group.values.items():
            if key == "tasks":
                continue
            assert est.low is not None and est.low <= est.value <= est.high, (group.group, key, est)
    assert run_stats(results, bootstrap=400, seed=3) == a
    assert run_stats(results, bootstrap=400, seed=4)["overall"].values["perf"] != a["overall"].values["perf"]
    narrow = run_stats(results, bootstrap=400, seed=3, confidence=0.5)["overall"].values["perf"]
    wide = a["overall"].values["perf"]
    assert wide.low <= narrow.low <= narrow.high <= wide.high


# --------------------------------------------------------------------------- run directories


def test_load_run_label_dedup_and_unfinished(tmp_path):
    config = (
        "strategy:\n  name: cudaforge\n  max_rounds: 10\n"
        "coder:\n  model: openai/o3\njudge:\n  model: anthropic/claude-sonnet-4\n"
    )
    stale = result("kb/level1/1_A", 0.9).to_json()
    run = write_run(tmp_path / "r1", L1, config, extra_lines=['{"torn'])
    (run / "results.jsonl").write_text(stale + "\n" + (run / "results.jsonl").read_text())
    (run / "tasks" / "kb__level1__9_Unfinished").mkdir(parents=True)
    (run / "tasks" / "kb__level1__1_A").mkdir(parents=True)
    data = load_run(run)
    assert data.label == "cudaforge o3/claude-sonnet-4 10 rounds"
    assert len(data.results) == 4 and data.results[0].best_speedup == 2.0  # the last row of a task wins
    assert data.unfinished == ["kb__level1__9_Unfinished"]
    assert load_run(write_run(tmp_path / "bare", L1)).label == "bare"
    with pytest.raises(FileNotFoundError, match="neither results.jsonl nor tasks/"):
        load_run(tmp_path / "nothing")


def _history_run(tmp_path, with_round_costs=False):
    rounds_a = [
        RoundRecord(1, "first_attempt", status="compile_error"),
        RoundRecord(2, "repair", status="correct", speedup=1.5),
        RoundRecord(3, "optimize", status="correct", speedup=1.2),
    ]
    rounds_b = [RoundRecord(1, "first_attempt", status="incorrect"), RoundRecord(2, "repair", status="incorrect")]
    if with_round_costs:
        for r, c in zip(rounds_a, (1.0, 2.0, 3.0)):
            r.cost_usd, r.seconds = c, 60 * c
    a = TaskResult(
        "kb/level1/1_A", True, best_round=2, best_speedup=1.5, rounds=3, cost_usd=0.4, minutes=2.0, history=rounds_a
    )
    b = TaskResult("kb/level1/2_B", False, rounds=2, cost_usd=0.1, minutes=1.0, history=rounds_b)
    ledger = [
        {"meta": {"task_id": a.task_id, "round": r}, "cost_usd": c, "priced": True, "latency_s": s}
        for r, c, s in ((1, 0.1, 10), (2, 0.2, 30), (3, 0.1, 20))
    ]
    ledger += [
        {"meta": {"task_id": b.task_id, "round": r}, "cost_usd": 0.05, "priced": True, "latency_s": 5} for r in (1, 2)
    ]
    ledger += [
        {"meta": {"task_id": b.task_id, "round": 2}, "cost_usd": None, "priced": False, "latency_s": 0},
        {"meta": {}, "cost_usd": 9.0, "priced": True, "latency_s": 99},
    ]
    return load_run(write_run(tmp_path / "hist", [a, b], ledger=ledger))


def test_scaling_curves_from_the_ledger(tmp_path):
    run = _history_run(tmp_path)
    assert "ledger.jsonl" in run.spend_source["dollars"] and "rescaled" in run.spend_source["minutes"]
    ids = [r.task_id for r in run.results]
    by_round = curve(run, ids, "round")
    assert by_round.budgets == [1, 2, 3] and by_round.perf == pytest.approx([0.0, 0.75, 0.75])
    dollars = curve(run, ids, "dollars")
    assert dollars.budgets == pytest.approx([0.05, 0.1, 0.3, 0.4]) and dollars.perf == pytest.approx([0, 0, 0.75, 0.75])
    # Task A's LLM latency 10/30/20 s rescaled to its 2.0 minutes: rounds end at 1/3, 4/3 and 2 minutes.
    minutes = curve(run, ids, "minutes")
    assert minutes.budgets == pytest.approx([1 / 3, 0.5, 1.0, 4 / 3, 2.0])
    assert minutes.perf == pytest.approx([0, 0, 0, 0.75, 0.75])
    assert curve(run, ids, "round", FailedAs.one).perf == pytest.approx([1.0, 1.25, 1.25])
    assert curve(run, ids, "round", FailedAs.exclude).perf == [None, 1.5, 1.5]


def test_scaling_prefers_round_records(tmp_path):
    run = _history_run(tmp_path, with_round_costs=True)
    assert all(run.spend_source[k].startswith("RoundRecord") for k in ("dollars", "minutes"))
    assert curve(run, ["kb/level1/1_A"], "dollars").budgets == [1.0, 3.0, 6.0]
    assert curve(run, ["kb/level1/1_A"], "minutes").budgets == [1.0, 3.0, 6.0]


# --------------------------------------------------------------------------- published tables


# The shipped tables' numbers, their sources and their groups: tests/test_published.py.


def test_unknown_published_table_names_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="cudaforge_table1"):
        select_published(["nope"])
    (tmp_path / "a.yaml").write_text("tables:\n  x: {rows: [{label: A, group: overall, perf: 2}]}\n")
    (tmp_path / "b.yaml").write_text("tables:\n  x: {rows: []}\n")
    with pytest.raises(ValueError, match="also defined"):
        load_published(tmp_path)


# --------------------------------------------------------------------------- writers


@pytest.fixture
def two_runs(tmp_path):
    config = "strategy:\n  name: one_shot\n  max_rounds: 1\ncoder:\n  model: openai/o3\njudge:\n  model: openai/o3\n"
    a = write_run(tmp_path / "runs" / "a", L1 + L2, config)
    b = write_run(tmp_path / "runs" / "b", [result("kb/level1/1_A", 4.0)], config)  # same label: dir names added
    return a, b


def test_markdown_latex_csv(two_runs):
    report = build_report(list(two_runs), compare=["cudaforge_table1"], bootstrap=200)
    labels = [row.label for row in report.rows("overall")]
    assert labels == ["one_shot o3/o3 1 rounds (a)", "one_shot o3/o3 1 rounds (b)", "paper: CudaForge o3/o3"]
    assert report.groups == ["level1", "level2", "overall"]  # no level-3 table: no run has level-3 tasks
    md = markdown(report)
    assert "## Level 1" in md and "## Level 3" not in md
    assert "| Tasks | Correct % | Median | 75th pct | Perf | Geo. mean | fast_0 % | fast_1 % |" in md
    perf = report.stats[0]["level1"].values["perf"]
    assert f"| {perf.value:.3f} [{perf.low:.3f}, {perf.high:.3f}] |" in md
    assert "| paper: CudaForge o3/o3 | 250 | 97.6 | 1.107 | 1.592 | 1.677 | – | 97.6 | 70.8 |" in md
    assert "1 correct task(s) untimed" in md and "2 LLM call(s) of unpriced models" in md
    assert "failed_as=zero" in md
    tex = latex(report)
    # Levels 1, 2, 1 & 2 (cudaforge_table1's published level1_2 row) and overall, then the two runs' paired test:
    assert tex.count(r"\begin{tabular}") == 5 and r"Correct \%" in tex and r"fast\_1 \%" in tex
    assert r"paper: CudaForge o3/o3 & 250 & 97.6 & 1.107 & 1.592 & 1.677 & -- & 97.6 & 70.8" in tex
    assert r"{\scriptsize[" in tex
    rows = list(csv.DictReader(io.StringIO(csv_text(report))))
    cell = next(r for r in rows if r["group"] == "level1" and r["label"].endswith("(a)") and r["metric"] == "perf")
    assert float(cell["value"]) == pytest.approx(3.7 / 4) and float(cell["ci_low"]) <= 3.7 / 4 <= float(cell["ci_high"])
    paper = next(r for r in rows if (r["group"], r["source"], r["metric"]) == ("overall", "cudaforge_table1", "perf"))
    assert float(paper["value"]) == 1.677 and paper["ci_low"] == ""


def problem_set_of(sources: dict[str, str]) -> dict:
    from cudaforge.tasks import problem_set
    from cudaforge.types import Task

    tasks = [
        Task(i, "kb", int(i.split("/")[1][5:]), int(i.split("/")[2].split("_")[0]), i.rsplit("_", 1)[-1], src)
        for i, src in sources.items()
    ]
    return problem_set(tasks, None)


def test_the_report_names_each_runs_problem_set_and_says_when_they_differ(two_runs, tmp_path):
    from cudaforge.track.store import RunStore

    old = build_report([two_runs[0]], bootstrap=0)  # made before problem-set identity: no problem_set.json
    assert old.runs[0].problem_set is None
    assert old.problem_sets == ["Problem set unknown (run made before problem-set identity)."]
    assert "Problem set unknown (run made before problem-set identity)." in markdown(old)
    sources = {r.task_id: f"# {r.task_id}" for r in L1 + L2}
    first = problem_set_of(sources)
    RunStore(two_runs[0]).write_problem_set(first)
    report = build_report(list(two_runs), bootstrap=0)
    assert report.problem_sets == [
        f"one_shot o3/o3 1 rounds (a): problem set {first['version']}.",
        "one_shot o3/o3 1 rounds (b): problem set unknown (run made before problem-set identity).",
    ]
    RunStore(two_runs[1]).write_problem_set(problem_set_of({**sources, "kb/level1/1_A": "# rewritten"}))
    report = build_report(list(two_runs), bootstrap=0)
    assert report.problem_sets[-1] == (
        "one_shot o3/o3 1 rounds (a) and one_shot o3/o3 1 rounds (b) ran different "
        "problem sets: 1 task(s) differ (1 changed, 0 only in one)."
    )
    RunStore(two_runs[1]).write_problem_set(first)
    assert build_report(list(two_runs), bootstrap=0).problem_sets == [f"Every run: problem set {first['version']}."]


def test_write_report_without_plots(two_runs, tmp_path):
    report = build_report(list(two_runs), bootstrap=0)
    written = write_report(report, tmp_path / "out", plots=False)
    assert sorted(p.name for p in written) == ["anytime.csv", "report.csv", "report.md", "report.tex", "scaling.csv"]
    assert "No intervals" in (tmp_path / "out" / "report.md").read_text()
    assert not (tmp_path / "out" / "plots").exists()


@pytest.mark.slow
def test_make_report_writes_plots_into_the_first_run(two_runs):
    pytest.importorskip("matplotlib")
    report, written = make_report([str(d) for d in two_runs], compare=["cudaforge_table1"], bootstrap=50)
    out = two_runs[0] / "report"
    names = {p.relative_to(out).as_posix() for p in written}
    assert {
        "report.md",
        "report.tex",
        "report.csv",
        "scaling.csv",
        "plots/speedup_distribution.png",
        "plots/best_vs_round.png",
        "plots/best_vs_minutes.png",
    } <= names
    assert "plots/best_vs_dollars.png" in names  # cost_usd split over rounds: a dollar axis exists
    for name in names:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


SKIPPED = (
    "plots skipped (speedup_distribution.png, best_vs_round.png, best_vs_dollars.png, best_vs_minutes.png, anytime.png): "
    "matplotlib is not installed (pip install matplotlib, or report.plots=false to leave plots out)."
)


def test_without_matplotlib_the_tables_are_written_and_one_note_names_the_skipped_figures(
    monkeypatch, two_runs, capsys
):
    from cudaforge.cli import main

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    with pytest.raises(PlottingUnavailable, match=r"pip install 'cudaforge\[report\]'.*report.plots=false"):
        require_matplotlib()
    report, written = make_report([str(two_runs[0])], bootstrap=0)
    out = two_runs[0] / "report"
    assert sorted(p.name for p in written) == ["anytime.csv", "report.csv", "report.md", "report.tex", "scaling.csv"]
    assert not (out / "plots").exists()
    assert [n for n in report.notes if "plots" in n] == [SKIPPED]
    assert (out / "report.md").read_text().count("matplotlib is not installed") == 1
    # the command: exit 0, the tables printed, the note printed once
    assert main(["report", str(two_runs[0]), "report.bootstrap=0", f"report.out_dir={out}"]) == 0
    printed = capsys.readouterr()
    assert (
        "## Level 1" in printed.out
        and printed.out.count("matplotlib is not installed") == 1
        and "error" not in printed.err
    )
    # a CPU run (nothing timed): the speedup figures have no data and say so; only the anytime figure (Correct % against
    # minutes) has data, and only it is named as skipped for want of matplotlib
    untimed = write_run(
        two_runs[0].parent / "cpu", [result("t/level1/1_A", None), result("t/level1/2_B", correct=False)]
    )
    report, _ = make_report([str(untimed)], bootstrap=0)
    assert [n for n in report.notes if "plots" in n] == [
        "plots skipped (anytime.png): matplotlib is not installed (pip install matplotlib, or report.plots=false to "
        "leave plots out).",
        "plots: no correct timed task, so no speedup distribution and no scaling figures.",
    ]


def test_unpriced_runs_show_unpriced_not_zero_dollars(tmp_path):
    unpriced = [
        result("t/level1/1_A", 2.0, cost_usd=None, unpriced_calls=4),
        result("t/level1/2_B", correct=False, cost_usd=None, unpriced_calls=2),
    ]
    run = write_run(tmp_path / "r1", unpriced)
    report = build_report([str(run)], compare=[], bootstrap=20)
    assert report.stats[0]["overall"].values["dollars"].value is None
    md = markdown(report)
    row = md.split("## Overall")[1].splitlines()[4]
    assert row.startswith("| r1 |") and row.endswith("| unpriced | 0.0 | 0 |") and "$0" not in md
    assert r"& unpriced &" in latex(report)
    assert "6 LLM call(s) of unpriced models" in md
    assert not [r for r in csv.DictReader(io.StringIO(csv_text(report))) if r["metric"] == "dollars"]
    # a mixed run: the priced dollars count (a lower bound), the all-unpriced task has no figure
    mixed = [result("t/level1/1_A", 2.0, cost_usd=0.5, unpriced_calls=1), unpriced[0]]
    assert group_stats("g", mixed, bootstrap=0).values["dollars"].value == 0.5


def test_errors_are_clear(two_runs):
    with pytest.raises(ValueError, match="RUN_DIR"):
        build_report([])
    with pytest.raises(ValueError, match="one label per run"):
        build_report(list(two_runs), labels=["only one"])
    with pytest.raises(ValueError):
        build_report(list(two_runs), failed_as="sometimes")


# --------------------------------------------------------------------------- command line


def test_runs_override(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert positional_runs(["a", "report.bootstrap=10", "--cfg", "job", "/x/b"], "report.runs") == [
        f"report.runs=['{tmp_path / 'a'}','/x/b']",
        "report.bootstrap=10",
        "--cfg",
        "job",
    ]
    assert positional_runs(["report.seed=1", "a"], "report.runs") == [
        "report.seed=1",
        f"report.runs=['{tmp_path / 'a'}']",
    ]
    assert positional_runs(["--info", "defaults", "a"], "report.runs")[-1].startswith("report.runs=")
    assert positional_runs(["report.runs=[/x]"], "report.runs") == ["report.runs=[/x]"]
    with pytest.raises(ValueError, match="not both"):
        positional_runs(["a", "report.runs=[/x]"], "report.runs")
    from hydra.core.override_parser.overrides_parser import OverridesParser

    odd = "/tmp/it's, odd\\"
    parsed = OverridesParser.create().parse_overrides(positional_runs([odd], "report.runs"))[0]
    assert parsed.value() == [odd]


def test_a_report_is_made_from_its_config_whole_and_a_wrong_field_name_fails(two_runs, tmp_path):
    """`cudaforge report` passes its ReportConfig whole; a library caller's keyword is one of its fields."""
    from cudaforge.report.build import report_config
    from cudaforge.report.settings import ReportConfig

    cfg = ReportConfig(runs=[str(two_runs[0])], bootstrap=0, plots=False, out_dir=str(tmp_path / "r"), compare=[])
    report, written = make_report(cfg=cfg)
    assert report.bootstrap == 0 and written[0].parent == tmp_path / "r"
    assert report_config([two_runs[0]], bootstrap=7).bootstrap == 7
    assert report_config([two_runs[0]]).compare == []  # the library adds no published table unless asked
    with pytest.raises(TypeError):
        report_config([two_runs[0]], bootstrp=0)


@pytest.mark.slow
def test_cudaforge_report_command(two_runs, tmp_path):
    import os
    import subprocess
    from pathlib import Path

    import cudaforge

    out_dir = tmp_path / "out"
    args = [
        sys.executable,
        "-m",
        "cudaforge.cli",
        "report",
        *map(str, two_runs),
        "report.plots=false",
        "report.bootstrap=0",
        f"report.out_dir={out_dir}",
    ]
    env = {**os.environ, "PYTHONPATH": str(Path(cudaforge.__file__).resolve().parents[1])}  # this checkout's package
    out = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "## Level 1" in out.stdout and "paper: CudaForge o3/o3" in out.stdout
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "anytime.csv",
        "report.csv",
        "report.md",
        "report.tex",
        "scaling.csv",
    ]
    bad = subprocess.run([*args[:4], str(tmp_path / "missing")], capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 2 and "no such run directory" in bad.stderr and "Traceback" not in bad.stderr


def test_two_runs_are_compared_task_by_task_with_an_interval_a_sign_test_and_a_verdict(tmp_path):
    from cudaforge.report.paired import compare, sign_test

    assert sign_test(0, 0) == 1.0 and sign_test(5, 5) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 2**10) and sign_test(7, 3) == pytest.approx(0.34375)
    tasks = [f"kb/level1/{i}_T" for i in range(1, 13)]
    better = [result(t, 1.5 + 0.01 * i, cost_usd=0.2, minutes=5) for i, t in enumerate(tasks)]
    worse = (
        [result(t, 1.0 + 0.01 * i, cost_usd=0.1, minutes=5) for i, t in enumerate(tasks[:-1])]
        + [result(tasks[-1], correct=False, cost_usd=0.1, minutes=5)]
        + [result("kb/level1/99_Only", 9.0)]
    )
    shared, paired = compare(better, worse, bootstrap=500)
    assert shared == sorted(tasks)  # the task only B ran is not paired
    perf = next(p for p in paired if p.header == "Perf")
    assert perf.n == 12 and perf.wins == 12 and perf.losses == 0 and perf.low > 0 and perf.p_value < 0.001
    geo = next(p for p in paired if p.header.startswith("Geo. mean"))
    assert (
        geo.ratio
        and geo.n == 11
        and geo.diff == pytest.approx(np.exp(np.mean([np.log((1.5 + 0.01 * i) / (1.0 + 0.01 * i)) for i in range(11)])))
    )  # over tasks timed in both
    dollars = next(p for p in paired if p.header == "$ / kernel")
    assert dollars.diff == pytest.approx(0.1) and dollars.wins == 0 and dollars.losses == 12  # lower is better
    a = write_run(tmp_path / "a", better, "strategy:\n  name: cudaforge\n")
    b = write_run(tmp_path / "b", worse, "strategy:\n  name: one_shot\n")
    both = build_report([a, b], bootstrap=500)
    md = markdown(both)
    assert "## Paired comparison:" in md and "beats" in md.split("## Paired comparison:")[1].splitlines()[2]
    tex, table = latex(both), csv_text(both)  # issue 53: the paired test was in report.md only
    assert "Paired comparison over shared tasks" in tex and r"sign test $p$" in tex
    perf_row = next(r for r in both.paired_rows if r["metric"] == "Perf")
    assert f",Perf sign test p,{perf_row['p_value']!r}," in table and f",Perf,{perf_row['diff']!r}," in table
    assert "(1 only in A" not in md and "0 only in A, 1 only in B" in md
    same = markdown(
        build_report([a, write_run(tmp_path / "c", better, "strategy:\n  name: self_refine\n")], bootstrap=200)
    )
    assert "Neither run beats the other at 95%" in same
    assert "## Paired comparison" not in markdown(build_report([a], bootstrap=100))  # one run: nothing to pair


def test_an_ablation_multirun_compares_every_arm_with_its_baseline_arm(tmp_path):
    from test_config import compose_with

    from cudaforge.cli.checks import check_values

    tasks = [f"kb/level1/{i}_T" for i in range(1, 7)]
    arms = [
        write_run(
            tmp_path / name, [result(t, s + 0.01 * i) for i, t in enumerate(tasks)], f"strategy:\n  name: {name}\n"
        )
        for name, s in (("cudaforge", 1.5), ("one_shot", 1.0), ("self_refine", 1.2))
    ]
    md = markdown(build_report(arms, bootstrap=200, paired_with=1))
    sections = [line for line in md.splitlines() if line.startswith("## Paired comparison")]
    assert len(sections) == 2 and all(
        line.endswith("(B)") and "one_shot" in line.split(" against ")[1] for line in sections
    )
    assert "## Paired comparison" not in markdown(build_report(arms, bootstrap=100))  # three runs, no baseline named
    with pytest.raises(ValueError, match="report.paired_with=3: the report has 3 run"):
        build_report(arms, bootstrap=100, paired_with=3)
    cfg = compose_with(["report.paired_with=5", f"report.runs=[{arms[0]},{arms[1]}]"])
    assert check_values(cfg) == ["report.paired_with=5: there are 2 run(s), numbered from 0"]


def test_a_run_where_every_task_went_unrun_is_reported_with_its_reasons(tmp_path):
    """Issue 53: a provider down from the start left no results.jsonl, and the report said the folder was not a run."""
    from cudaforge.report.tables import markdown

    run = tmp_path / "down"
    (run / "tasks" / "kb__level1__1_A").mkdir(parents=True)
    rows = [{"task_id": f"kb/level1/{i}_A", "reason": "llm_unavailable", "message": "provider down"} for i in (1, 2)]
    (run / "not_run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = markdown(build_report([run], bootstrap=0))
    assert "| 0 | 2 | 0 | 0/2 (0.0%) |" in text  # tasks, not run, unfinished, correct with not-run as failed
    assert any("2 task(s) not run" in note for note in build_report([run], bootstrap=0).notes)


def test_agent_replies_that_could_not_be_used_are_counted_on_the_terminal_and_in_the_report(tmp_path, capsys):
    """Issue 53: a Judge reply lacking a key was dropped silently (terminal, report and exit status said nothing)."""
    from cudaforge.run.progress import RunProgress

    progress = RunProgress(1, lambda: "", live=False)
    progress.on_event({"event": "dropped", "task_id": "kb/level1/1_A", "round": 2, "role": "judge", "why": "no JSON"})
    progress.on_event(
        {
            "event": "dropped",
            "task_id": "kb/level1/1_A",
            "round": 3,
            "role": "judge",
            "why": "lacked x",
            "partial": True,
        }
    )
    progress.on_event({"event": "dropped", "task_id": "kb/level1/1_A", "round": 4, "role": "coder", "why": "no code"})
    out = capsys.readouterr().out
    assert "round 2: the Judge's reply could not be used: no JSON" in out
    assert "round 3: the Judge's reply passed on in part: lacked x" in out
    assert progress.dropped_line() == "1 coder: no code, 1 judge: dropped, 1 judge: partial"

    history = [
        RoundRecord(1, "first_attempt", status="no_code", message="the reply holds no code block"),
        RoundRecord(2, "repair", status="incorrect", judge_mode="correction", feedback={"failure": "no JSON object"}),
    ]
    run = write_run(tmp_path / "r", [TaskResult("kb/level1/1_A", False, rounds=2, history=history)])
    notes = build_report([run], bootstrap=0).notes
    assert any("1 Coder replies held no code (1x the reply holds no code block)" in n for n in notes)
    assert any("1 Judge replies could not be used (1x no JSON object)" in n for n in notes)


def test_labels_resolve_placeholders_and_name_the_keys_that_tell_runs_apart(tmp_path):
    """Issue 53: own-model runs were labelled ``my-model/${coder.model}``; ablations differing by one key got one
    label."""
    from cudaforge.report.load import load_runs

    base = "strategy: {name: cudaforge, max_rounds: 3}\ncoder: {model: hosted_vllm/my-model}\njudge: {model: '${coder.model}'}\n"
    on = write_run(tmp_path / "on", [result("kb/level1/1_A", 2.0)], base + "profile: {enabled: true}\n")
    off = write_run(tmp_path / "off", [result("kb/level1/1_A", 1.5)], base + "profile: {enabled: false}\n")
    labels = [run.label for run in load_runs([on, off])]
    assert labels == [
        "cudaforge my-model/my-model 3 rounds (profile.enabled=True)",
        "cudaforge my-model/my-model 3 rounds (profile.enabled=False)",
    ]
    same = write_run(tmp_path / "same", [result("kb/level1/1_A", 1.5)], base + "profile: {enabled: true}\n")
    assert [run.label for run in load_runs([on, same])] == [
        labels[0].replace("(profile.enabled=True)", "(on)"),
        labels[0].replace("(profile.enabled=True)", "(same)"),
    ]
