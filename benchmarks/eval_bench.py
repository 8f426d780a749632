"""Harness benchmark of the evaluator on a GPU: precision, overhead and multi-GPU throughput.

    python benchmarks/eval_bench.py --out benchmarks/results/DATE_GPU_callN [--repeats 5] [--batch 20]

Targets (issue: evaluation engine):
- precision: one candidate/task pair evaluated ``--repeats`` times in a row; the speedup
  medians within 2% of each other (max-min over mean);
- overhead: for a task whose reference runs about 1 ms, everything but the compile and the
  timed calls themselves at most 1 s per candidate (was 3 s before the public-candidates issue);
- new_checks: what the checks beyond the scored inputs (hidden distributions, varied parameters, the fp64
  reference) cost per candidate on a microsecond, a 1 ms and a 100 ms task (on against off, a ready worker);
- throughput: a batch of ``--batch`` candidates on all visible GPUs against the same batch on
  one GPU (the ratio of wall times). The CUDA sources are built first, untimed, so both batches
  find every build done and the GPUs' share of the work is what is compared.
``--parts`` runs a subset (``precision,overhead`` on one GPU while another job uses the other).
``--set KEY=VALUE`` (repeatable) overrides an eval setting (``--set timing_lead_us=200``); ``--tag``
names the output. The overhead part measures candidates twice: back to back (each one arrives
while the previous candidate's evaluation started its worker) and with the worker ready (as in
the agent loop, where the agents' turn outlasts a worker's start-up). ``--wait-standby`` makes
the precision runs wait for the worker's start-up too.
Writes ``eval_bench[_PARTS][_TAG].json`` and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cudaforge.eval.evaluator import Evaluator, visible_gpus  # noqa: E402
from cudaforge.eval.fingerprint import environment_fingerprint  # noqa: E402
from cudaforge.tasks import find_task, selection  # noqa: E402

CANDIDATES = REPO / "benchmarks" / "candidates"
SLOW = REPO / "benchmarks" / "slow"
"""A task of about 100 ms and its candidate (not shipped with the package)."""
PRECISION_PAIR = ("main", "level1/3_Softmax", "triton_softmax.py")
OVERHEAD_PAIR = ("main", "level1/1_GELU", "triton_gelu.py")
BATCH_PAIRS = [
    ("tiny", "level1/1_ReLU", "triton_relu.py"),
    ("tiny", "level1/2_Softmax", "triton_softmax.py"),
    ("tiny", "level1/1_ReLU", "cuda_relu.py"),
    ("tiny", "level1/2_Softmax", "cuda_softmax.py"),
    ("tiny", "level1/3_MatmulBiasReLU", "cuda_matmul_bias_relu.py"),
]


def load(pair):
    suite_name, task_id, file = pair
    return find_task(selection(suite_name), task_id), (CANDIDATES / file).read_text()  # an absolute file: as it is


def phase_seconds(result, name: str) -> float:
    return sum(p.seconds for p in result.phases if p.phase.value == name)


def precision(evaluator: Evaluator, repeats: int, wait_standby: bool = False) -> dict:
    task, source = load(PRECISION_PAIR)
    evaluator.evaluate(task, source)  # builds and warms the cache; not counted
    medians, runs = [], []
    for _ in range(repeats):
        if wait_standby:
            evaluator.wait_for_standbys()
        result = evaluator.evaluate(task, source)
        assert result.status.value == "correct", result.report()
        medians.append(result.speedup.median)
        runs.append(
            {
                "speedup": result.speedup.to_dict(),
                "reference_ms": result.reference_timing.median,
                "candidate_ms": result.candidate_timing.median,
                "host_ms_median": result.fingerprint.get("host_ms_median"),
                "gpu_state_before": result.fingerprint.get("gpu_state_before"),
                "gpu_state_after": result.fingerprint.get("gpu_state_after"),
                "standby": result.fingerprint.get("standby"),
                "seconds": result.seconds,
            }
        )
    mean = sum(medians) / len(medians)
    return {
        "task": task.id,
        "candidate": PRECISION_PAIR[2],
        "speedup_medians": medians,
        "wait_standby": wait_standby,
        "spread_pct": 100 * (max(medians) - min(medians)) / mean,
        "target_pct": 2.0,
        "runs": runs,
    }


def overhead(evaluator: Evaluator, repeats: int = 3, wait_standby: bool = False) -> dict:
    task, source = load(OVERHEAD_PAIR)
    evaluator.evaluate(task, source)
    rows = []
    for _ in range(repeats):
        if wait_standby:
            evaluator.wait_for_standbys()
        r = evaluator.evaluate(task, source)
        assert r.status.value == "correct", r.report()
        before = r.fingerprint.get("trials_before_main") or {"warmup": evaluator.cfg.warmup}
        calls = r.candidate_timing.n + sum(before.values())  # the timing may stop early (timing_min_trials)
        timed_calls_s = calls * (r.reference_timing.mean + r.candidate_timing.mean) / 1000
        rows.append(
            {
                "total_s": r.seconds,
                "compile_s": phase_seconds(r, "compile"),
                "correctness_s": phase_seconds(r, "correctness"),
                "timing_phase_s": phase_seconds(r, "timing"),
                "timed_calls_s": timed_calls_s,
                "reference_ms": r.reference_timing.median,
                "overhead_s": r.seconds - phase_seconds(r, "compile") - timed_calls_s,
                "timed_trials": r.candidate_timing.n,
                "stopped_early": r.fingerprint.get("timing_stopped_early"),
                "worker_setup_s": r.fingerprint.get("worker_setup_s"),
                "standby": r.fingerprint.get("standby"),
                "verifier_s": r.fingerprint.get("verifier_s"),
                "gpu_lock_wait_s": r.fingerprint.get("gpu_lock_wait_s"),
                "phases_s": {p.phase.value: round(p.seconds, 4) for p in r.phases},
                "correctness_breakdown_s": r.fingerprint.get("correctness_breakdown_s"),
                "timing_breakdown_s": r.fingerprint.get("timing_breakdown_s"),
            }
        )
    best = min(rows, key=lambda row: row["overhead_s"])
    return {
        "task": task.id,
        "wait_standby": wait_standby,
        "runs": rows,
        "overhead_s_median": sorted(x["overhead_s"] for x in rows)[len(rows) // 2],
        "best": best,
        "target_s": 1.0,
    }


NEW_CHECKS_OFF = {"hidden_inputs": [], "vary_parameters": False, "fp64_reference": False}
"""The settings that turn off the checks beyond the scored inputs (issue 52): what ``new_checks`` compares against."""
NEW_CHECK_PAIRS = [
    ("microsecond", ("tiny", "level1/1_ReLU", "triton_relu.py")),
    ("1 ms", OVERHEAD_PAIR),
    ("100 ms", ("main", str(SLOW / "1_TanhLerp100ms.py"), str(SLOW / "triton_tanh_lerp.py"))),
]


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def _runs(evaluator: Evaluator, task, source: str, repeats: int) -> dict:
    """The first evaluation of a pair (its build, and the decisions on the reference that later evaluations of the
    task reuse) and ``repeats`` more with a ready worker."""
    first = evaluator.evaluate(task, source)
    assert first.status.value == "correct", first.report()
    runs = []
    for _ in range(repeats):
        evaluator.wait_for_standbys()
        r = evaluator.evaluate(task, source)
        assert r.status.value == "correct", r.report()
        runs.append(
            {
                "total_s": r.seconds,
                "correctness_s": phase_seconds(r, "correctness"),
                "timing_phase_s": phase_seconds(r, "timing"),
                "trials": r.trials_total,
                "reference_ms": r.reference_timing.median,
                "candidate_ms": r.candidate_timing.median,
                "correctness_breakdown_s": r.fingerprint.get("correctness_breakdown_s"),
            }
        )
    return {
        "first_total_s": first.seconds - phase_seconds(first, "compile"),
        "first_correctness_s": phase_seconds(first, "correctness"),
        "total_s_median": _median([x["total_s"] for x in runs]),
        "correctness_s_median": _median([x["correctness_s"] for x in runs]),
        "runs": runs,
    }


def new_checks(cfg: dict, gpus: list[str], repeats: int, save=lambda rows: None) -> dict:
    """What the checks beyond the scored inputs cost per candidate on a microsecond, a 1 ms and a 100 ms task: each
    pair evaluated ``repeats`` times with a ready worker, with those checks on (the defaults) and off
    (``NEW_CHECKS_OFF``); the first evaluation of each is reported apart. The correctness phase's difference is the
    checks' own cost (the timing phase does not change with them, only varies); ``save(rows)`` after each pair."""
    out: dict = {}
    with Evaluator(cfg, gpus=gpus[:1]) as on, Evaluator({**cfg, **NEW_CHECKS_OFF}, gpus=gpus[:1]) as off:
        for size, pair in NEW_CHECK_PAIRS:
            task, source = load(pair)
            row: dict = {"task": task.id, "candidate": Path(pair[2]).name}
            row["on"], row["off"] = _runs(on, task, source, repeats), _runs(off, task, source, repeats)
            row["reference_ms"] = row["on"]["runs"][0]["reference_ms"]
            row["cost_s"] = row["on"]["total_s_median"] - row["off"]["total_s_median"]
            row["cost_correctness_s"] = row["on"]["correctness_s_median"] - row["off"]["correctness_s_median"]
            row["cost_first_correctness_s"] = row["on"]["first_correctness_s"] - row["off"]["first_correctness_s"]
            print(
                f"new checks, {size} task ({task.id}, reference {row['reference_ms']:.3f} ms): correctness phase "
                f"{row['cost_correctness_s']:+.3f} s per candidate ({row['on']['runs'][0]['trials']} trials against "
                f"{row['off']['runs'][0]['trials']}), {row['cost_first_correctness_s']:+.3f} s in the task's first "
                f"evaluation; whole evaluation {row['cost_s']:+.3f} s (the timing phase varies)",
                flush=True,
            )
            out[size] = row
            save(out)
    return out


def throughput(cfg: dict, batch: int, gpus: list[str]) -> dict:
    jobs = [load(BATCH_PAIRS[i % len(BATCH_PAIRS)]) for i in range(batch)]
    started = time.monotonic()
    warm = Evaluator(cfg, gpus=gpus[:1])
    for source in {source for _, source in jobs}:  # both batches find every build done: the GPUs are compared
        warm.precompile(source)
    walls = {"precompile_s": time.monotonic() - started}
    for label, use in (("all_gpus", gpus), ("one_gpu", gpus[:1])):
        with Evaluator(cfg, gpus=use) as evaluator:
            started = time.monotonic()
            results = evaluator.evaluate_batch(jobs)
            walls[label] = time.monotonic() - started
        walls[f"{label}_statuses"] = sorted({r.status.value for r in results})
        walls[f"{label}_per_gpu"] = {g: sum(1 for r in results if r.device.endswith(f"GPU {g})")) for g in use}
        print(f"throughput: {label}: {batch} candidates in {walls[label]:.1f} s", flush=True)
    return {"batch": batch, "gpus": gpus, **walls, "ratio_one_over_all": walls["one_gpu"] / walls["all_gpus"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/cudaforge-bench-cache"))
    parser.add_argument("--parts", default="precision,overhead,throughput", help="comma-separated parts to run")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an eval setting (JSON value)")
    parser.add_argument("--tag", default="", help="suffix of the output file name")
    parser.add_argument("--wait-standby", action="store_true", help="precision runs wait for the worker's start-up")
    parser.add_argument("--overhead-repeats", type=int, default=3, help="candidates per overhead measurement")
    parser.add_argument(
        "--ready-only", action="store_true", help="measure the overhead with the worker ready only (not back to back)"
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="cProfile each evaluation's trusted side into this folder; a summary in the output folder",
    )
    args = parser.parse_args()
    if args.profile:
        from cudaforge.eval.verifier import PROFILE_DIR_ENV

        os.environ[PROFILE_DIR_ENV] = str(args.profile)  # before the evaluator starts its verifiers
    overrides = {}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--set {item!r}: expected KEY=VALUE")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key] = value
    parts = {p for p in args.parts.split(",") if p}
    known_parts = {"precision", "overhead", "throughput", "new_checks"}
    if parts - known_parts:
        parser.error(f"unknown part(s) {sorted(parts - known_parts)}")
    args.out.mkdir(parents=True, exist_ok=True)
    gpus = visible_gpus()
    if not gpus:
        sys.exit("eval_bench: needs a GPU")
    cfg = {"build_cache_dir": str(args.cache), **overrides}
    evaluator = Evaluator(cfg, gpus=gpus[:1])
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "overrides": overrides,
        "fingerprint": environment_fingerprint(0),
    }
    name = "eval_bench" if parts == {"precision", "overhead", "throughput"} else f"eval_bench_{'_'.join(sorted(parts))}"
    name += f"_{args.tag}.json" if args.tag else ".json"
    if "precision" in parts:
        report["precision"] = precision(evaluator, args.repeats, args.wait_standby)
        print(
            f"precision: speedup medians {report['precision']['speedup_medians']} "
            f"spread {report['precision']['spread_pct']:.2f}% (target < 2%)",
            flush=True,
        )
        (args.out / name).write_text(json.dumps(report, indent=2))
    if "overhead" in parts:
        report["overhead"] = overhead(evaluator, args.overhead_repeats, wait_standby=True)
        if not args.ready_only:
            report["overhead_back_to_back"] = overhead(evaluator, args.overhead_repeats)
        for key, label in (("overhead", "worker ready"), ("overhead_back_to_back", "back to back")):
            if key not in report:
                continue
            print(
                f"overhead ({label}): {report[key]['overhead_s_median']:.2f} s per candidate (target at most 1 s); "
                f"best run {json.dumps(report[key]['best'])}",
                flush=True,
            )
        (args.out / name).write_text(json.dumps(report, indent=2))
    evaluator.close()
    if "new_checks" in parts:

        def save(rows: dict) -> None:
            report["new_checks"] = rows
            (args.out / name).write_text(json.dumps(report, indent=2))

        new_checks(cfg, gpus, args.overhead_repeats, save)
    if "throughput" in parts:
        if len(gpus) < 2:
            print("throughput: one GPU visible, nothing to compare", flush=True)
        else:
            report["throughput"] = throughput(cfg, args.batch, gpus)
            t = report["throughput"]
            print(
                f"throughput: {args.batch} candidates: 1 GPU {t['one_gpu']:.1f} s, {len(gpus)} GPUs "
                f"{t['all_gpus']:.1f} s, ratio {t['ratio_one_over_all']:.2f}",
                flush=True,
            )
    (args.out / name).write_text(json.dumps(report, indent=2))
    if args.profile:
        (args.out / name.replace(".json", "_profile.txt")).write_text(profile_summary(args.profile))


def profile_summary(folder: Path) -> str:
    """The verifier's dumps in ``folder`` merged: the top functions by cumulative and by own time; then the last
    evaluation's alone (a ready worker's, as the overhead's runs are), with who waits: the callers of the sleeps,
    the syncs, the socket reads and the comparisons."""
    import io
    import pstats

    dumps = sorted(folder.glob("verifier-*.prof"))
    if not dumps:
        return f"no profile dumps in {folder}\n"
    out = io.StringIO()
    stats = pstats.Stats(*map(str, dumps), stream=out)
    print(f"{len(dumps)} evaluations' trusted sides (every evaluation of the run, warm-up ones included)", file=out)
    stats.sort_stats("cumulative").print_stats(70)
    stats.sort_stats("tottime").print_stats(40)
    newest = max(dumps, key=lambda p: p.stat().st_mtime)
    print(f"\nthe last evaluation alone ({newest.name})", file=out)
    last = pstats.Stats(str(newest), stream=out)
    last.sort_stats("cumulative").print_stats(80)
    for name in (
        "time.sleep",
        "recvmsg",
        "_cuda_synchronize",
        "torch.equal",
        "posix.waitpid",
        r"subprocess.py:\d+\(wait\)",
    ):
        last.print_callers(name)
    out.write(series_summary(folder))
    return out.getvalue()


def series_summary(folder: Path) -> str:
    """Each evaluation's kept trials (``series-*.json``, ``Timing.dump_series``): the spread of the reference's and
    the candidate's times, of the verifier's wall around each candidate request and of that wall less the worker's
    own span (the exchange: inputs, poison, outputs, the socket), by the trial's parity too (even trials time the
    reference first); and the wall's interval at the early stop's first look, which decides whether it stops."""
    import numpy as np

    from cudaforge.eval.timing import speedup

    dumps = sorted(folder.glob("series-*.json"), key=lambda p: p.stat().st_mtime)
    out = [f"\n{len(dumps)} timed series (kept trials, ms: median [p10, p90])"]

    def spread(xs) -> str:
        if len(xs) == 0:
            return "-"
        p10, p50, p90 = np.percentile(np.asarray(xs, dtype=float), [10, 50, 90])
        return f"{p50:.4f} [{p10:.4f}, {p90:.4f}]"

    for path in dumps:
        s = json.loads(path.read_text())
        ref, wall, host = np.asarray(s["ref"]), np.asarray(s["cand_wall"]), np.asarray(s["cand_host"])
        parity = np.asarray(s["cand_trial"]) % 2
        out.append(f"{path.name}: {len(ref)} kept, warm-up {s.get('warmup')}, stopped {s.get('stopped_early')}")
        for key in ("ref", "ref_host", "cand", "cand_host", "cand_wall"):
            out.append(f"  {key:10s} {spread(s[key])}")
        out.append(f"  wall-host  {spread(wall - host)}")
        for p, name in ((0, "even (reference first)"), (1, "odd (candidate first)")):
            out.append(f"  {name}: wall {spread(wall[parity == p])}, wall-host {spread((wall - host)[parity == p])}")
        for n in (25, 50):
            if len(ref) >= n:
                st = speedup(ref[:n], wall[:n], paired=True)
                out.append(f"  wall interval at {n}: {(st.ci_high - st.ci_low) / 2 / st.median:.4f} of the speedup")
        worst = np.argsort(wall)[-3:][::-1]
        out.append("  slowest walls: " + ", ".join(f"trial {s['cand_trial'][i]} {wall[i]:.3f}" for i in worst))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    main()
