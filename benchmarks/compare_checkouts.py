"""Evaluate the bundled candidates with the evaluator of one checkout, to compare two checkouts' verdicts and speedups.

    python benchmarks/compare_checkouts.py --root DIR --out FILE.json [--repeats 3] [--pairs 0,2] [--set KEY=VALUE ...]
    python benchmarks/compare_checkouts.py --compare BEFORE.json AFTER.json [--tolerance-pct 2]
    python benchmarks/compare_checkouts.py --interleave BEFORE_ROOT AFTER_ROOT --outs BEFORE.json AFTER.json \
        [--repeats 5] [--evaluators 3]

``--root`` is the checkout whose ``cudaforge`` is imported (e.g. one made with
``git archive COMMIT | tar -x -C before``); the candidates and tasks always come from this script's own checkout,
so both sides evaluate the same sources. Each pair is evaluated ``--repeats`` times after one untimed evaluation
that builds and warms. ``--compare`` prints, per pair, both sides' median speedups (the median of the repeats)
and their difference in percent, and exits 1 when a verdict differs or a difference exceeds ``--tolerance-pct``.
``--pairs`` keeps some pairs, by their index in ``PAIRS``; with ``--repeats 0`` each pair is only built and
warmed once, which is how a device call fills both checkouts' build caches in parallel, one process per pair,
before the timed runs (that take them one at a time). This is how the sandbox's "no false positives, speedups within 2%" target was checked on the H200
(benchmarks/results/2026-12-01_h200/README.md). Needs a GPU for the first form.

``--interleave`` runs both checkouts at once, each in its own process (``PYTHONPATH`` set to its root), and
alternates them one evaluation at a time, pair by pair (before, after, after, before ...), so a drift in clocks
or load falls on both sides; it writes the two JSON files ``--compare`` reads. ``--evaluators N`` makes each side
use N evaluators in turn: each has its own standby worker starting while the others evaluate, so a back-to-back
loop does not wait for one worker's start-up every time (about 13 s for a sandboxed one on the H200).
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


def _evaluators(root: Path, overrides: dict, count: int):
    sys.path.insert(0, str(root.resolve()))
    from cudaforge.eval.evaluator import Evaluator  # noqa: PLC0415 -- the checkout under test

    cfg = {"build_cache_dir": f"/tmp/compare-cache-{root.resolve().name}", **overrides}
    return [Evaluator(cfg) for _ in range(max(1, count))]


def _run_row(result) -> dict:
    r = result
    return {
        "status": r.status.value,
        "seconds": round(r.seconds, 3),
        "speedup": r.speedup.median if r.speedup else None,
        "ci": [r.speedup.ci_low, r.speedup.ci_high] if r.speedup else None,
        "candidate_ms": r.candidate_timing.median if r.candidate_timing else None,
        "reference_ms": r.reference_timing.median if r.reference_timing else None,
        "message": "" if r.status.value == "correct" else r.report()[-600:],
    }


def _finish_row(row: dict) -> dict:
    speedups = [x["speedup"] for x in row["runs"] if x["speedup"] is not None]
    row["statuses"] = sorted({x["status"] for x in row["runs"]})
    row["speedup_median"] = statistics.median(speedups) if speedups else None
    return row


def _header(root: Path, overrides: dict) -> dict:
    import cudaforge  # noqa: PLC0415

    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "root": str(root),
        "package": cudaforge.__file__,
        "overrides": overrides,
        "pairs": [],
    }


def measure(
    root: Path, out: Path, repeats: int, overrides: dict, pairs: list[tuple[str, str, str]], evaluators: int = 1
) -> int:
    pool = _evaluators(root, overrides, evaluators)
    from cudaforge.tasks import find_task, selection  # noqa: PLC0415

    report, turn = _header(root, overrides), 0
    for suite_name, task_id, file in pairs:
        task = find_task(selection(suite_name), task_id)
        source = (HERE / "candidates" / file).read_text()
        started = time.monotonic()
        first = pool[turn % len(pool)].evaluate(task, source)
        turn += 1
        row = {
            "suite": suite_name,
            "task": task_id,
            "candidate": file,
            "first_status": first.status.value,
            "first_seconds": round(time.monotonic() - started, 2),
            "runs": [],
        }
        for _ in range(repeats):
            row["runs"].append(_run_row(pool[turn % len(pool)].evaluate(task, source)))
            turn += 1
        _finish_row(row)
        report["pairs"].append(row)
        speedups = [x["speedup"] for x in row["runs"] if x["speedup"] is not None]
        print(
            f"{suite_name}/{task_id} {file}: {row['statuses']} speedups {[round(s, 4) for s in speedups]}", flush=True
        )
        out.write_text(json.dumps(report, indent=1))
    for evaluator in pool:
        evaluator.close()
    return 0


def serve(root: Path, overrides: dict, evaluators: int) -> int:
    """Evaluate on request: each stdin line is a PAIRS index; each answer is one stdout line ``RESULT {json}``.
    The evaluators take turns, so each one's standby worker has the others' evaluations to start in."""
    pool = _evaluators(root, overrides, evaluators)
    from cudaforge.tasks import find_task, selection  # noqa: PLC0415

    print("HEADER " + json.dumps(_header(root, overrides)), flush=True)
    for turn, line in enumerate(sys.stdin):
        suite_name, task_id, file = PAIRS[int(line)]
        result = pool[turn % len(pool)].evaluate(
            find_task(selection(suite_name), task_id), (HERE / "candidates" / file).read_text()
        )
        print("RESULT " + json.dumps(_run_row(result)), flush=True)
    for evaluator in pool:
        evaluator.close()
    return 0


class _Side:
    """One checkout's ``--serve`` process, its cudaforge (and its workers') imported from ``root``."""

    def __init__(self, root: Path, sets: list[str], evaluators: int, log: Path) -> None:
        import os
        import subprocess

        env = {**os.environ, "PYTHONPATH": str(root.resolve())}
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--serve",
            "--root",
            str(root),
            "--evaluators",
            str(evaluators),
        ] + [f"--set={s}" for s in sets]
        self.log = log.open("a")
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env
        )
        self.header = self._read("HEADER ")

    def _read(self, prefix: str) -> dict:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.log.write(line)
            if line.startswith(prefix):
                return json.loads(line[len(prefix) :])
        raise RuntimeError(f"the serving process ended (exit {self.proc.wait()}); see {self.log.name}")

    def evaluate(self, index: int) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{index}\n")
        self.proc.stdin.flush()
        return self._read("RESULT ")

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)
        self.log.close()


def interleave(
    before: Path,
    after: Path,
    outs: tuple[Path, Path],
    repeats: int,
    sets: list[str],
    evaluators: int,
    indices: list[int],
) -> int:
    """Both checkouts' evaluations alternated pair by pair (ABBA ...), so drift in clocks or load falls on both
    sides alike; one evaluation at a time (never two timed parts at once)."""
    sides = [
        _Side(root, sets, evaluators, out.with_suffix(".log")) for root, out in ((before, outs[0]), (after, outs[1]))
    ]
    reports = [dict(side.header, pairs=[]) for side in sides]
    try:
        for index in indices:
            suite_name, task_id, file = PAIRS[index]
            rows = [{"suite": suite_name, "task": task_id, "candidate": file, "runs": []} for _ in sides]
            for side, row in zip(sides, rows):  # untimed: builds and warms
                started = time.monotonic()
                row["first_status"] = side.evaluate(index)["status"]
                row["first_seconds"] = round(time.monotonic() - started, 2)
            for repeat in range(repeats):
                order = (0, 1) if repeat % 2 == 0 else (1, 0)
                for k in order:
                    rows[k]["runs"].append(sides[k].evaluate(index))
            for report, row, out in zip(reports, rows, outs):
                report["pairs"].append(_finish_row(row))
                out.write_text(json.dumps(report, indent=1))
            print(
                f"{suite_name}/{task_id} {file}: before {rows[0]['statuses']} {rows[0]['speedup_median']}, "
                f"after {rows[1]['statuses']} {rows[1]['speedup_median']}",
                flush=True,
            )
    finally:
        for side in sides:
            side.close()
    return 0


def compare(before: Path, after: Path, tolerance_pct: float) -> int:
    rows = {(p["suite"], p["task"], p["candidate"]): p for p in json.loads(before.read_text())["pairs"]}
    failed = 0
    print("| pair | before | after | difference |\n| --- | --- | --- | --- |")
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
        print(
            f"| {key[0]} {key[1]} {key[2]} | {b['statuses']} {b['speedup_median']} | "
            f"{p['statuses']} {p['speedup_median']} | {show}{' **over**' if bad else ''} |"
        )
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
    parser.add_argument(
        "--evaluators",
        type=int,
        default=1,
        help="evaluators taking turns, each with its own standby worker (back-to-back loops wait less)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--interleave", nargs=2, type=Path, metavar=("BEFORE_ROOT", "AFTER_ROOT"))
    parser.add_argument("--outs", nargs=2, type=Path, metavar=("BEFORE_JSON", "AFTER_JSON"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare, args.tolerance_pct)
    if args.serve:
        return serve(args.root, parse_sets(args.set), args.evaluators)
    indices = [int(i) for i in args.pairs.split(",")] if args.pairs else list(range(len(PAIRS)))
    if args.interleave:
        if not args.outs:
            parser.error("--interleave needs --outs BEFORE_JSON AFTER_JSON")
        for out in args.outs:
            out.parent.mkdir(parents=True, exist_ok=True)
        return interleave(*args.interleave, tuple(args.outs), args.repeats, args.set, args.evaluators, indices)
    if not args.out:
        parser.error("--out is required to measure")
    if not (args.root / "cudaforge" / "__init__.py").is_file():
        parser.error(f"--root {args.root}: no cudaforge package there")
    try:
        pairs = [PAIRS[int(i)] for i in args.pairs.split(",")] if args.pairs else PAIRS
    except (ValueError, IndexError):
        parser.error(f"--pairs {args.pairs!r}: expected indices 0..{len(PAIRS) - 1}, comma-separated")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    return measure(args.root, args.out, args.repeats, parse_sets(args.set), pairs, args.evaluators)


if __name__ == "__main__":
    sys.exit(main())
