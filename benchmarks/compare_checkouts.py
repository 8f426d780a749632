"""Evaluate the bundled candidates with the evaluator of one checkout, to compare two checkouts' verdicts and speedups.

    python benchmarks/compare_checkouts.py --root DIR --out FILE.json [--repeats 3] [--pairs 0,2] [--set KEY=VALUE ...]
    python benchmarks/compare_checkouts.py --compare BEFORE.json AFTER.json [--tolerance-pct 2]

``--root`` is the checkout whose ``cudaforge`` is imported (e.g. one made with
``git archive COMMIT | tar -x -C before``); the candidates and tasks always come from this script's own checkout,
so both sides evaluate the same sources. Each pair is evaluated ``--repeats`` times after one untimed evaluation
that builds and warms. ``--compare`` prints, per pair, both sides' median speedups (the median of the repeats)
and their difference in percent, and exits 1 when a verdict differs or a difference exceeds ``--tolerance-pct``.
``--pairs`` keeps some pairs, by their index in ``PAIRS``; with ``--repeats 0`` each pair is only built and
warmed once, which is how a device call fills both checkouts' build caches in parallel, one process per pair,
before the timed runs (that take them one at a time). This is how the sandbox's "no false positives, speedups within 2%" target was checked on the H200
(benchmarks/results/2026-12-01_h200_README.md). Needs a GPU for the first form.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PAIRS = [
    ("tiny", "level1/1_ReLU", "cuda_relu.py"),
    ("tiny", "level1/1_ReLU", "triton_relu.py"),
    ("tiny", "level1/2_Softmax", "cuda_softmax.py"),
    ("tiny", "level1/2_Softmax", "triton_softmax.py"),
    ("tiny", "level1/3_MatmulBiasReLU", "cuda_matmul_bias_relu.py"),
    ("main", "level1/3_Softmax", "triton_softmax.py"),
    ("main", "level1/1_GELU", "triton_gelu.py"),
]


def parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            sys.exit(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def measure(root: Path, out: Path, repeats: int, overrides: dict, pairs: list[tuple[str, str, str]]) -> int:
    sys.path.insert(0, str(root.resolve()))
    from cudaforge.eval.evaluator import Evaluator  # noqa: PLC0415 -- the checkout under test
    from cudaforge.tasks import find_task, selection  # noqa: PLC0415

    import cudaforge  # noqa: PLC0415

    cfg = {"build_cache_dir": f"/tmp/compare-cache-{root.resolve().name}", **overrides}
    evaluator = Evaluator(cfg)
    report = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "command": " ".join(sys.argv),
              "root": str(root), "package": cudaforge.__file__, "overrides": overrides, "pairs": []}
    for suite_name, task_id, file in pairs:
        task = find_task(selection(suite_name), task_id)
        source = (HERE / "candidates" / file).read_text()
        started = time.monotonic()
        first = evaluator.evaluate(task, source)
        row = {"suite": suite_name, "task": task_id, "candidate": file, "first_status": first.status.value,
               "first_seconds": round(time.monotonic() - started, 2), "runs": []}
        for _ in range(repeats):
            r = evaluator.evaluate(task, source)
            row["runs"].append({"status": r.status.value, "seconds": round(r.seconds, 3),
                                "speedup": r.speedup.median if r.speedup else None,
                                "ci": [r.speedup.ci_low, r.speedup.ci_high] if r.speedup else None,
                                "candidate_ms": r.candidate_timing.median if r.candidate_timing else None,
                                "reference_ms": r.reference_timing.median if r.reference_timing else None,
                                "message": "" if r.status.value == "correct" else r.report()[-600:]})
        speedups = [x["speedup"] for x in row["runs"] if x["speedup"] is not None]
        row["statuses"] = sorted({x["status"] for x in row["runs"]})
        row["speedup_median"] = statistics.median(speedups) if speedups else None
        report["pairs"].append(row)
        print(f"{suite_name}/{task_id} {file}: {row['statuses']} speedups {[round(s, 4) for s in speedups]}", flush=True)
        out.write_text(json.dumps(report, indent=1))
    evaluator.close()
    return 0


def compare(before: Path, after: Path, tolerance_pct: float) -> int:
    rows = {(p["suite"], p["task"], p["candidate"]): p for p in json.loads(before.read_text())["pairs"]}
    failed = 0
    print(f"| pair | before | after | difference |\n| --- | --- | --- | --- |")
    for p in json.loads(after.read_text())["pairs"]:
        key = (p["suite"], p["task"], p["candidate"])
        b = rows.get(key)
        if b is None:
            continue
        diff = None
        if b["speedup_median"] and p["speedup_median"]:
            diff = 100 * (p["speedup_median"] - b["speedup_median"]) / b["speedup_median"]
        bad = b["statuses"] != p["statuses"] or diff is None or abs(diff) > tolerance_pct
        failed += bad
        show = "n/a" if diff is None else f"{diff:+.2f}%"
        print(f"| {key[0]} {key[1]} {key[2]} | {b['statuses']} {b['speedup_median']} | "
              f"{p['statuses']} {p['speedup_median']} | {show}{' **over**' if bad else ''} |")
    return 1 if failed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", default="", help="comma-separated indices into PAIRS (default: all)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--tolerance-pct", type=float, default=2.0)
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare, args.tolerance_pct)
    if not args.out:
        parser.error("--out is required to measure")
    if not (args.root / "cudaforge" / "__init__.py").is_file():
        parser.error(f"--root {args.root}: no cudaforge package there")
    try:
        pairs = [PAIRS[int(i)] for i in args.pairs.split(",")] if args.pairs else PAIRS
    except (ValueError, IndexError):
        parser.error(f"--pairs {args.pairs!r}: expected indices 0..{len(PAIRS) - 1}, comma-separated")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    return measure(args.root, args.out, args.repeats, parse_sets(args.set), pairs)


if __name__ == "__main__":
    sys.exit(main())
