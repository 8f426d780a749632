"""Search strategies compared on the simulator, at equal dollars, over seeds: Correct %, geometric mean and fast_1.

    python benchmarks/search/compare.py --out benchmarks/results/DATE_GPU/search_sim20
    python benchmarks/search/compare.py --tasks 3 --strategies best_of_n,beam --seeds 1 --out /tmp/smoke  # CPU

Each (strategy, seed) is one ``cudaforge run`` (a subprocess, in ``OUT/runs/<strategy>_s<seed>``): the simulated
Coder and Judge (``coder=simulator judge=simulator``) on the ``sim20`` suite and its pool (``coder.pool``), every
strategy under the same dollar budget a task (``strategy.max_dollars``, words priced at o3's rates) and the same
round cap (``strategy.max_rounds``), held-out shapes off (an aside of a run, evaluated afresh each time). A run whose
results are all there is not run again. The statistics are the report's (``cudaforge.report``): per strategy the mean
over seeds of each seed's statistic, with a percentile bootstrap over seeds and tasks jointly
(``seeded_group_stats``), with the report's defaults (``ReportConfig``: a task without a correct kernel counts as 0
in the speedup statistics, so it has no log and the geometric mean is over the tasks with a correct kernel).
``summary.json`` and ``summary.md`` go to ``OUT``. On a CPU the speedups are the pool's declared ones (the summary
says so); on a GPU they are measured. docs/simulator.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO)]

STRATEGIES = ("cudaforge", "best_of_n", "beam", "tree")
METRICS = (("correct_pct", "Correct %", 1), ("geomean", "Geo. mean", 3), ("fast_1_pct", "fast_1 %", 1))


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="folder of the runs and the summary")
    p.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated (default: all four)")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated sampling seeds")
    p.add_argument("--max-dollars", type=float, default=0.02, help="dollar budget a task, every strategy")
    p.add_argument("--max-rounds", type=int, default=20, help="round cap a task, every strategy")
    p.add_argument("--tasks", type=int, default=None, help="only the first N tasks of the suite (a quick smoke)")
    p.add_argument("--jobs", type=int, default=1, help="tasks at once within a run (concurrency=)")
    p.add_argument("--runs-at-once", type=int, default=1, help="(strategy, seed) runs at once, each a process")
    p.add_argument("--suite", default="sim20")
    p.add_argument("--pool", default="sim20_pool.yaml", help="coder.pool")
    p.add_argument("--eval-set", action="append", default=[], metavar="KEY=VALUE", help="an eval override (repeat)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any other run override (repeat)")
    p.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples of the intervals")
    return p.parse_args(argv)


def gpu_here() -> bool:
    from cudaforge.eval import visible_gpus

    return bool(visible_gpus([]))


def overrides(args: argparse.Namespace, strategy: str, seed: int, run_dir: Path) -> list[str]:
    """The ``cudaforge run`` overrides of one (strategy, seed)."""
    out = [
        "coder=simulator",
        "judge=simulator",
        f"suite={args.suite}",
        f"coder.pool={args.pool}",
        f"strategy={strategy}",
        f"seed={seed}",
        f"strategy.max_dollars={args.max_dollars}",
        f"strategy.max_rounds={args.max_rounds}",
        f"concurrency={args.jobs}",
        "eval.held_out_shapes=false",
        f"hydra.run.dir={run_dir}",
    ]
    if args.tasks:
        out.append(f"suite.first_n={args.tasks}")
    from check_pool import device_overrides

    return out + device_overrides() + [f"eval.{kv}" for kv in args.eval_set] + list(args.set)


def finished(run_dir: Path, n_tasks: int | None) -> bool:
    """Whether a run directory holds a result for each of its tasks (``plan.json``'s count, else ``n_tasks``)."""
    results = run_dir / "results.jsonl"
    if not results.is_file():
        return False
    done = {json.loads(line)["task_id"] for line in results.read_text().splitlines() if line.strip()}
    plan = run_dir / "plan.json"
    wanted = json.loads(plan.read_text()).get("tasks") if plan.is_file() else None
    wanted = wanted or n_tasks
    return bool(done) and wanted is not None and len(done) >= int(wanted)


def run(args: argparse.Namespace, strategy: str, seed: int, run_dir: Path) -> None:
    """One ``cudaforge run``, its task lines printed as they come; a failed run stops the comparison."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": os.environ.get("WANDB_MODE", "disabled")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "cudaforge.cli", "run", *overrides(args, strategy, seed, run_dir)]
    started = time.monotonic()
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as child:
        assert child.stdout is not None
        lines = []
        for line in child.stdout:
            lines.append(line)
            if line.startswith(("done ", "cudaforge run: error")) or "correct |" in line:
                print(f"  [{strategy} seed {seed}] {line.rstrip()}", flush=True)
    if child.returncode != 0 and not (child.returncode == 1 and finished(run_dir, args.tasks)):  # 1: not all correct
        sys.stdout.write("".join(lines[-30:]))
        raise SystemExit(f"cudaforge run failed ({child.returncode}) for {strategy} seed {seed}: {' '.join(command)}")
    print(f"  [{strategy} seed {seed}] {time.monotonic() - started:.0f} s", flush=True)


def evaluations(results: list[Any]) -> int:
    """Kernels the runs' searches evaluated (every round record with code; repeats of a kernel included)."""
    return sum(1 for r in results for h in r.history if h.candidate_hash)


def speedups_declared(results: list[Any]) -> bool:
    """Whether the best kernels' speedups are the pool's declared ones (no GPU timed them)."""
    from cudaforge.search.pool import DECLARED

    return any(DECLARED in (h.message or "") for r in results for h in r.history if h.status == "correct")


def estimate(value: Any) -> dict[str, float | None]:
    """A report ``Estimate`` as JSON: the value and its interval."""
    return {"value": value.value, "low": value.low, "high": value.high}


def strategy_summary(strategy: str, runs: list[Any], bootstrap: int) -> dict[str, Any]:
    """One strategy's row: the report's statistics over its seeds (the tasks every seed finished), what it spent."""
    from cudaforge.report.settings import ReportConfig
    from cudaforge.report.stats import group_stats, seeded_group_stats

    report = ReportConfig()
    options: dict[str, Any] = {"failed_as": report.failed_as, "fast_p": (0, 1), "bootstrap": bootstrap}
    options.update(confidence=report.confidence, seed=report.seed)
    shared = sorted(set.intersection(*({r.task_id for r in run.results} for run in runs)))
    per_seed = [[{r.task_id: r for r in run.results}[t] for t in shared] for run in runs]
    pooled = seeded_group_stats("overall", per_seed, **options)
    every = [r for results in per_seed for r in results]
    return {
        "strategy": strategy,
        "seeds": [int(run.config.get("seed", 0)) for run in runs],
        "tasks": len(shared),
        **{key: estimate(pooled.values[key]) for key, _, _ in METRICS},
        "per_seed": [
            {
                key: group_stats("overall", results, **{**options, "bootstrap": 0}).values[key].value
                for key, _, _ in METRICS
            }
            for results in per_seed
        ],
        "evaluations": evaluations(every),
        "evaluations_per_task": evaluations(every) / max(1, len(every)),
        "dollars": sum(r.cost_usd or 0.0 for r in every),
        "dollars_per_task": sum(r.cost_usd or 0.0 for r in every) / max(1, len(every)),
        "speedups": "declared" if speedups_declared(every) else "measured",
        "runs": [str(run.path) for run in runs],
    }


def summarize(
    args: argparse.Namespace, out: Path, strategies: list[str], seeds: list[int], gpu: bool
) -> dict[str, Any]:
    from cudaforge.report.load import load_run
    from cudaforge.report.settings import ReportConfig

    rows = [
        strategy_summary(s, [load_run(out / "runs" / f"{s}_s{seed}") for seed in seeds], args.bootstrap)
        for s in strategies
    ]
    return {
        "suite": args.suite,
        "pool": args.pool,
        "device": "gpu" if gpu else "cpu",
        "speedups": "measured by the evaluator" if gpu else "declared by the simulator's pool (no GPU timed them)",
        "max_dollars_per_task": args.max_dollars,
        "max_rounds": args.max_rounds,
        "seeds": seeds,
        "eval_overrides": list(args.eval_set),
        "failed_as": str(ReportConfig().failed_as.value),
        "convention": (
            "the report's (cudaforge.report.stats): Correct % and fast_1 over all tasks; the geometric mean over the "
            "tasks with a correct kernel (a failed task counts as 0, which has no log); each the mean over seeds of "
            "the per-seed statistic, its interval a 95% percentile bootstrap over seeds and tasks jointly"
        ),
        "strategies": rows,
    }


def markdown(summary: dict[str, Any]) -> str:
    """``summary.md``: a table a strategy, and what the numbers are."""

    def cell(e: dict[str, Any], digits: int) -> str:
        if e["value"] is None:
            return "-"
        interval = f" [{e['low']:.{digits}f}, {e['high']:.{digits}f}]" if e["low"] is not None else ""
        return f"{e['value']:.{digits}f}{interval}"

    head = ["strategy", "seeds", "tasks", *(h for _, h, _ in METRICS), "evals / task", "$ / task"]
    lines = [
        f"# Search strategies on the simulator: {summary['suite']}, pool {summary['pool']}",
        "",
        f"Device: {summary['device']}; speedups {summary['speedups']}. Budget a task: "
        f"${summary['max_dollars_per_task']} (words at o3's rates), at most {summary['max_rounds']} rounds; "
        f"seeds {', '.join(map(str, summary['seeds']))}"
        + (f"; eval overrides {', '.join(summary['eval_overrides'])}" if summary["eval_overrides"] else "")
        + ".",
        "",
        "| " + " | ".join(head) + " |",
        "|" + " --- |" * len(head),
    ]
    for row in summary["strategies"]:
        cells = [row["strategy"], str(len(row["seeds"])), str(row["tasks"])]
        cells += [cell(row[key], digits) for key, _, digits in METRICS]
        cells += [f"{row['evaluations_per_task']:.1f}", f"{row['dollars_per_task']:.4f}"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Statistics: {summary['convention']}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    strategies = [s for s in args.strategies.split(",") if s]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    out = args.out.resolve()
    gpu = gpu_here()
    print(f"{len(strategies)} strategies x {len(seeds)} seeds on {args.suite} ({'GPU' if gpu else 'CPU'}) -> {out}")
    pairs = [(s, seed) for s in strategies for seed in seeds]

    def one(numbered: tuple[int, tuple[str, int]]) -> None:
        i, (strategy, seed) = numbered
        run_dir = out / "runs" / f"{strategy}_s{seed}"
        if finished(run_dir, args.tasks):
            print(f"[{i}/{len(pairs)}] {strategy} seed {seed}: done before, kept", flush=True)
            return
        print(f"[{i}/{len(pairs)}] {strategy} seed {seed} ...", flush=True)
        run(args, strategy, seed, run_dir)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, args.runs_at_once)) as runs:  # each run its own process; the verdicts are shared
        list(runs.map(one, enumerate(pairs, 1)))
    summary = summarize(args, out, strategies, seeds, gpu)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(markdown(summary))
    print(markdown(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
