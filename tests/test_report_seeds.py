"""Seeds as an axis: the sampling seed reaches the LLM layer, runs of several seeds are one row of the report with
intervals over seeds and tasks, and the anytime curves (statistics against dollars and minutes) with their bands."""

from __future__ import annotations

import csv
import json
import math
import os
import uuid

import numpy as np
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from test_report import result, write_run

from cudaforge.llm import Backoff, LLMClient, ResponseCache, install_script, remove_script, request_key
from cudaforge.llm.settings import LLMConfig
from cudaforge.report import build_report, group_stats, load_runs, write_report
from cudaforge.report.anytime import arm_curves, curve_metrics
from cudaforge.report.seeds import arms
from cudaforge.report.stats import seeded_group_stats
from cudaforge.types import RoundRecord, TaskResult

FAST = Backoff(base_s=0.001, max_s=0.005)


# --------------------------------------------------------------------------- the seed in the LLM layer


def test_a_seed_samples_afresh_and_seed_zero_keeps_the_old_cache_keys(tmp_path):
    name = f"s{uuid.uuid4().hex[:8]}"
    script = install_script(name, ["reply one", "reply two", "reply three"])
    try:
        messages = [{"role": "user", "content": "write a kernel"}]
        config = LLMConfig(model=f"scripted/{name}")
        plain = LLMClient(config, role="coder", backoff=FAST).request(messages)
        assert "seed" not in plain  # seed 0: the request (and its cache key) of a run made before seeds
        seeded = LLMClient(config, role="coder", backoff=FAST, seed=1).request(messages)
        assert seeded["seed"] == 1 and request_key(seeded) != request_key(plain)
        with ResponseCache(tmp_path / "c.sqlite", "read_write") as cache:
            zero = LLMClient(config, role="coder", cache=cache, backoff=FAST)
            one = LLMClient(config, role="coder", cache=cache, backoff=FAST, seed=1)
            first = zero.complete(messages)
            again = zero.complete(messages)  # a resume of seed 0 replays
            other = one.complete(messages)  # seed 1 asks the model again
            assert (first.text, again.text, other.text) == ("reply one", "reply one", "reply two")
            assert again.cache_hit and not other.cache_hit and len(script.calls) == 2
    finally:
        remove_script(name)


def test_the_seed_is_checked_before_a_run():
    from cudaforge.cli import main

    assert main(["run", "seed=-1"]) == 2


# --------------------------------------------------------------------------- statistics over seeds


SEED_A = [result("kb/level1/1_A", 2.0), result("kb/level1/2_B", 1.0), result("kb/level1/3_C", correct=False)]
SEED_B = [result("kb/level1/1_A", 4.0), result("kb/level1/2_B", correct=False), result("kb/level1/3_C", 0.5)]


def test_pooled_values_are_the_mean_over_seeds_of_each_seeds_statistic():
    stats = seeded_group_stats("level1", [SEED_A, SEED_B], bootstrap=0)
    value = {k: v.value for k, v in stats.values.items()}
    assert value["tasks"] == 3
    assert value["correct_pct"] == pytest.approx(100 * 2 / 3)
    assert value["perf"] == pytest.approx(((2 + 1 + 0) / 3 + (4 + 0 + 0.5) / 3) / 2)
    assert value["geomean"] == pytest.approx((math.sqrt(2 * 1) + math.sqrt(4 * 0.5)) / 2)
    assert value["fast_1_pct"] == pytest.approx((100 / 3 + 100 / 3) / 2)
    # one seed is exactly the task bootstrap of a single run, intervals included
    alone, single = seeded_group_stats("level1", [SEED_A], seed=3), group_stats("level1", SEED_A, seed=3)
    assert {k: (v.value, v.low, v.high) for k, v in alone.values.items()} == {
        k: (v.value, v.low, v.high) for k, v in single.values.items()
    }
    with pytest.raises(ValueError, match="same tasks"):
        seeded_group_stats("level1", [SEED_A, SEED_B[:2]])


def test_the_interval_over_seeds_and_tasks_is_wider_than_over_tasks_when_seeds_disagree():
    same = [result(f"kb/level1/{i}_T", 1.0 + 0.01 * i) for i in range(8)]
    other = [result(f"kb/level1/{i}_T", 3.0 + 0.01 * i) for i in range(8)]
    pooled = seeded_group_stats("level1", [same, other], bootstrap=2000).values["perf"]
    alone = seeded_group_stats("level1", [same], bootstrap=2000).values["perf"]
    assert pooled.low <= pooled.value <= pooled.high
    assert pooled.value == pytest.approx(
        (np.mean([r.best_speedup for r in same]) + np.mean([r.best_speedup for r in other])) / 2
    )
    # the two seeds are 2x apart, so resampling seeds spreads the estimate far beyond the tasks' own spread
    assert (pooled.high - pooled.low) > 10 * (alone.high - alone.low)
    assert pooled.low < 1.5 and pooled.high > 2.5


CONFIG = """strategy: {{name: {strategy}, max_rounds: 3}}
coder: {{model: scripted/demo}}
judge: {{model: scripted/demo}}
seed: {seed}
output: {output}
"""


def _seeded_runs(tmp_path, strategies=("cudaforge", "one_shot"), seeds=(0, 1, 2), drop=None):
    paths = []
    for strategy in strategies:
        for seed in seeds:
            results = [
                result(f"kb/level1/{i}_T", 1.0 + 0.5 * seed + (strategy == "one_shot") + 0.1 * i) for i in range(4)
            ]
            if drop == (strategy, seed):
                results = results[1:]
            config = CONFIG.format(strategy=strategy, seed=seed, output=f"out{seed}.json")  # output: not the arm
            paths.append(write_run(tmp_path / f"{strategy}_seed-{seed}", results, config=config))
    return paths


def test_runs_that_differ_only_in_their_seed_are_one_arm(tmp_path):
    paths = _seeded_runs(tmp_path)
    found = arms(load_runs(paths))
    assert [(a.label, a.seeds) for a in found] == [
        ("cudaforge demo/demo 3 rounds (3 seeds)", [0, 1, 2]),
        ("one_shot demo/demo 3 rounds (3 seeds)", [0, 1, 2]),
    ]
    assert [len(a.runs) for a in arms(load_runs(paths), pool=False)] == [1] * 6
    # a repeated seed is not a seed axis: those runs stay apart
    twice = write_run(
        tmp_path / "again",
        [result("kb/level1/0_T", 1.0)],
        config=CONFIG.format(strategy="self_refine", seed=0, output="x"),
    )
    once = write_run(
        tmp_path / "again2",
        [result("kb/level1/0_T", 1.0)],
        config=CONFIG.format(strategy="self_refine", seed=0, output="y"),
    )
    assert [len(a.runs) for a in arms(load_runs([twice, once]))] == [1, 1]


def test_the_report_tables_one_row_per_arm_with_intervals_over_seeds_and_tasks(tmp_path):
    paths = _seeded_runs(tmp_path, drop=("one_shot", 2))
    report = build_report(paths, bootstrap=500)
    rows = report.rows("overall")
    assert [r.label for r in rows] == [
        "cudaforge demo/demo 3 rounds (3 seeds)",
        "one_shot demo/demo 3 rounds (3 seeds)",
    ]
    perf = rows[0].values["perf"]
    per_seed = [np.mean([1.0 + 0.5 * s + 0.1 * i for i in range(4)]) for s in (0, 1, 2)]
    assert perf.value == pytest.approx(np.mean(per_seed)) and perf.low < perf.value < perf.high
    # the task seed 2 of one_shot lacks is left out of that arm, and a note says so
    assert rows[1].values["tasks"].value == 3
    notes = [n for n in report.notes if "seeds 0, 1, 2" in n]
    assert len(notes) == 2 and "missing from some seed: kb/level1/0_T" in notes[1]
    assert "over seeds and tasks" in report.caption
    assert build_report(paths, bootstrap=0, pool_seeds=False).rows("overall").__len__() == 6


# --------------------------------------------------------------------------- anytime curves


def _history(task, rounds, correct_after=None, speedups=None):
    """A task whose rounds each cost $0.10 and 60 s; correct from round ``correct_after`` on, with ``speedups``."""
    history = []
    for k in range(1, rounds + 1):
        ok = correct_after is not None and k >= correct_after
        history.append(
            RoundRecord(
                round=k,
                coder_mode="first_attempt" if k == 1 else "optimize",
                status="correct" if ok else "incorrect",
                speedup=(speedups or {}).get(k) if ok else None,
                cost_usd=0.10,
                seconds=60.0,
            )
        )
    best = max((r.speedup for r in history if r.speedup), default=None)
    return TaskResult(
        task_id=task,
        correct=correct_after is not None,
        best_speedup=best,
        rounds=rounds,
        history=history,
        cost_usd=0.10 * rounds,
        minutes=rounds,
    )


def test_anytime_curves_step_with_each_round_by_hand(tmp_path):
    run = write_run(
        tmp_path / "r",
        [
            _history("kb/level1/1_A", 3, correct_after=1, speedups={1: 0.5, 2: 2.0, 3: 1.5}),
            _history("kb/level1/2_B", 3, correct_after=3, speedups={3: 1.2}),
        ],
    )
    arm = arms(load_runs([run]))[0]
    curves = {(c.group, c.metric): c for c in arm_curves(arm, "dollars", bootstrap=200)}
    correct, fast1, geo = (curves["overall", k] for k in ("correct_pct", "fast_1_pct", "geomean"))
    assert correct.budgets == pytest.approx([0.1, 0.2, 0.3])
    assert correct.value == pytest.approx([50.0, 50.0, 100.0])
    assert fast1.value == pytest.approx([0.0, 50.0, 100.0])
    assert geo.value == pytest.approx([0.5, 2.0, math.sqrt(2.0 * 1.2)])
    for c in curves.values():
        for v, lo, hi in zip(c.value, c.low, c.high):
            assert v is None or (lo is not None and lo - 1e-9 <= v <= hi + 1e-9)
    minutes = {c.metric: c for c in arm_curves(arm, "minutes", bootstrap=0) if c.group == "overall"}
    assert minutes["correct_pct"].budgets == pytest.approx([1.0, 2.0, 3.0])
    assert {m.key for m in curve_metrics([0, 1, 2])} == {"correct_pct", "fast_1_pct", "fast_2_pct", "geomean", "perf"}


def test_anytime_curve_of_several_seeds_is_their_mean_and_is_written(tmp_path):
    paths = []
    for seed, after in ((0, 1), (1, 2)):
        config = CONFIG.format(strategy="cudaforge", seed=seed, output="o")
        paths.append(
            write_run(
                tmp_path / f"s{seed}",
                [_history("kb/level1/1_A", 2, after, {1: 1.5, 2: 1.5}), _history("kb/level1/2_B", 2, None)],
                config=config,
            )
        )
    report = build_report(paths, bootstrap=100)
    arm = report.arms[0]
    assert arm.pooled
    correct = next(
        c for c in arm_curves(arm, "dollars", bootstrap=100) if c.group == "overall" and c.metric == "correct_pct"
    )
    assert correct.seeds == 2 and correct.value == pytest.approx([(50 + 0) / 2, 50.0])
    assert correct.low[0] < correct.value[0] < correct.high[0]  # the seeds disagree after one round
    written = write_report(report, tmp_path / "out", plots=True)
    rows = list(csv.DictReader((tmp_path / "out" / "anytime.csv").open()))
    assert {r["axis"] for r in rows} == {"dollars", "minutes"} and {r["seeds"] for r in rows} == {"2"}
    picked = [r for r in rows if r["group"] == "overall" and r["axis"] == "dollars" and r["metric"] == "correct_pct"]
    assert [float(r["value"]) for r in picked] == pytest.approx([25.0, 50.0])
    pytest.importorskip("matplotlib")
    assert (tmp_path / "out" / "plots" / "anytime.png") in written


def test_the_runs_table_names_each_runs_seed_when_seeds_are_pooled(tmp_path):
    from cudaforge.report.tables import markdown

    text = markdown(build_report(_seeded_runs(tmp_path, strategies=("cudaforge",)), bootstrap=0))
    assert "| run | directory | seed | tasks |" in text
    assert [line.split(" | ")[2] for line in text.splitlines() if "_seed-" in line and "`" in line] == ["0", "1", "2"]


def test_two_arms_of_seeds_are_compared_task_by_task_on_their_seed_means(tmp_path):
    report = build_report(_seeded_runs(tmp_path), bootstrap=300)
    text = "\n".join(report.paired)
    assert (
        "## Paired comparison: cudaforge demo/demo 3 rounds (3 seeds) (A) against one_shot demo/demo 3 rounds "
        "(3 seeds) (B)"
    ) in text
    perf = next(line for line in report.paired if line.startswith("| Perf |"))
    # one_shot is 1.0 faster on every task under every seed: the mean difference is exactly -1, B wins all 4 tasks
    assert perf.split(" | ")[1:4] == ["4", "-1.000", "[-1.000, -1.000]"] and "0 / 4" in perf
    assert "**one_shot demo/demo 3 rounds (3 seeds) beats cudaforge" in text
    assert "mean over its arm's seeds (3 in A, 3 in B)" in text
    # paired_with names a run; its whole arm is the baseline
    against = build_report(_seeded_runs(tmp_path / "b"), bootstrap=0, paired_with=4)
    assert sum(line.startswith("## Paired comparison") for line in against.paired) == 1
    assert "against one_shot demo/demo 3 rounds (3 seeds) (B)" in against.paired[1]


@pytest.mark.slow
def test_a_seed_sweep_over_two_strategies_on_tiny_is_reported_as_two_arms(tmp_path):
    """The real `cudaforge run -m` over seeds and strategies with the offline demo models, then `cudaforge report`.
    Two seeds, the fewest that make an arm of seeds (each job is a whole run of two tasks with their held-out
    shapes: a third seed added 95 s to CI and nothing the two do not check)."""
    import subprocess
    import sys

    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}
    sweep = tmp_path / "sweep"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "run",
            "-m",
            "seed=0,1",
            "strategy=cudaforge,one_shot",
            "suite.first_n=2",  # ReLU, and Softmax, which one_shot's first reply gets wrong
            f"hydra.sweep.dir={sweep}",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=1200,
    )
    assert out.returncode == 1, out.stderr[-3000:]  # one_shot's demo transcript fails a task: exit 1, as documented
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert len(jobs) == 4
    # each seed's Coder asked afresh: the first request (the same prompt under both strategies) has one cache key per
    # seed, shared by the two strategies of that seed
    firsts: dict[str, set[str]] = {}
    for job in jobs:
        rows = [json.loads(line) for line in (job / "ledger.jsonl").read_text().splitlines()]
        seed = job.name.split("seed-")[1].split("__")[0]
        firsts.setdefault(seed, set()).add(next(r["request_key"] for r in rows if r["role"] == "coder"))
    assert sorted(firsts) == ["0", "1"] and all(len(keys) == 1 for keys in firsts.values())
    assert len(set.union(*firsts.values())) == 2
    report = build_report([sweep], bootstrap=200)
    assert [a.label for a in report.arms] == [
        "cudaforge demo/demo 10 rounds (2 seeds)",
        "one_shot demo/demo 1 rounds (2 seeds)",
    ]
    overall = {row.label: row.values for row in report.rows("overall")}
    assert overall["cudaforge demo/demo 10 rounds (2 seeds)"]["correct_pct"].value == 100.0
    assert overall["one_shot demo/demo 1 rounds (2 seeds)"]["correct_pct"].value == 50.0
    assert any(line.startswith("| Correct % | 2 | +50.0") for line in report.paired)
    # the held-out-shape column: every correct kernel of the demo is checked on shapes it never saw (CPU: untimed)
    assert overall["cudaforge demo/demo 10 rounds (2 seeds)"]["held_out_pct"].value == 100.0
    assert overall["cudaforge demo/demo 10 rounds (2 seeds)"]["held_out_geomean"].value is None
    results = load_runs([jobs[0]])[0].results
    assert all({r["shape"] for r in t.held_out["shapes"]} == {"odd", "large"} for t in results)
    assert all(t.compile_beside == {} for t in results)  # nothing timed on a CPU, so no torch.compile pair
    written = write_report(report, tmp_path / "report", plots=False)
    rows = list(csv.DictReader((tmp_path / "report" / "anytime.csv").open()))
    minutes = [r for r in rows if r["axis"] == "minutes" and r["metric"] == "correct_pct" and r["group"] == "overall"]
    assert {r["arm"] for r in minutes} == {a.label for a in report.arms} and all(r["seeds"] == "2" for r in minutes)
    assert float(minutes[-1]["value"]) in (100.0, 50.0)
    assert tmp_path / "report" / "anytime.csv" in written


def test_a_cpu_run_has_no_fast_p_or_speedup_curve_to_draw(tmp_path):
    """Issue 53: on a CPU the anytime plot drew a flat 0% fast_1 line (failed tasks' zeros) instead of "no data"."""
    from cudaforge.report.anytime import drawable

    run = write_run(
        tmp_path / "cpu",
        [_history("kb/level1/1_A", 2, correct_after=1, speedups={}), _history("kb/level1/2_B", 2, correct_after=None)],
    )
    curves = arm_curves(arms(load_runs([run]))[0], "minutes", bootstrap=0)
    assert [c.metric for c in drawable(curves, "minutes", "correct_pct")] == ["correct_pct"]
    assert drawable(curves, "minutes", "fast_1_pct") == [] and drawable(curves, "minutes", "geomean") == []
