"""Evaluate, guard, time and profile one kernel language's bundled candidates on a GPU.

    python benchmarks/languages_gpu.py --language cute_dsl [--out FILE.json] [--repeats 2]

For each ``benchmarks/candidates/<language>_<op>.py`` (``relu`` -> tiny/level1/1_ReLU, ``softmax`` ->
tiny/level1/2_Softmax): the evaluator's verdict, guard findings, speedup and phase times (``--repeats`` fresh
evaluations: every one builds cold, since each worker's scratch directory, the language's JIT cache with it, is
new), then one Nsight Compute profile: which kernels it saw and which of them counted as the candidate's own
(``KernelLanguage.profiled_match``). Exit status 1 when a candidate is not correct or none of its kernels is
seen as its own. The language's hack-corpus entries are run by ``benchmarks/hacks/run_corpus.py --only``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cudaforge import languages  # noqa: E402

TASKS = {"relu": "level1/1_ReLU", "softmax": "level1/2_Softmax"}


def main() -> int:
    """Evaluate and profile the candidates; print a table; write JSON rows to --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", required=True, choices=languages.names())
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    missing = languages.missing_modules(args.language)
    if missing:
        print(f"{args.language} needs the Python module(s) {', '.join(missing)}, which this interpreter lacks")
        return 2

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.profile import Profiler
    from cudaforge.tasks import find_task, selection

    rows, failed = [], 0
    for path in sorted((REPO / "benchmarks" / "candidates").glob(f"{args.language}_*.py")):
        op = path.stem.removeprefix(f"{args.language}_")
        if op not in TASKS:
            continue
        task, source = find_task(selection("tiny"), TASKS[op]), path.read_text()
        row = {"file": path.name, "task": task.id, "evaluations": []}
        for _ in range(args.repeats):
            started = time.monotonic()
            result = Evaluator({"device": "cuda"}).evaluate(task, source)
            row["evaluations"].append(
                {
                    "status": result.status.value,
                    "seconds": round(time.monotonic() - started, 2),
                    "speedup": result.speedup.median if result.speedup else None,
                    "candidate_ms": result.candidate_timing.median if result.candidate_timing else None,
                    "reference_ms": result.reference_timing.median if result.reference_timing else None,
                    "phases": {p.phase.value: round(p.seconds, 2) for p in result.phases},
                    "findings": [f"{f['guard']}:{f['verdict']}" for f in result.guard_findings],
                    "message": result.message[:600],
                }
            )
            first_line = (result.message.splitlines() or [""])[0][:200]
            print(
                f"{path.name}: {result.status.value} {first_line} ({row['evaluations'][-1]['seconds']} s)", flush=True
            )
        first = row["evaluations"][0]
        profile = Profiler({"clock_control": "none"}, use_cache=False).profile(
            task, source, measured_ms=first["candidate_ms"]
        )
        row["profile"] = {
            "status": profile.status.value,
            "message": profile.message[:600],
            "seconds": round(profile.seconds, 1),
            "own": [k.name for k in profile.kernels if k.own],
            "library": profile.library_kernel_names,
            "own_kernel_ms": profile.own_kernel_ms,
            "metrics_per_kernel": [len(k.metrics) for k in profile.kernels],
            "source_names": sorted(languages.kernel_names(source)),
        }
        print(
            f"  profile {profile.status.value}: own {row['profile']['own']}, library {profile.library_kernel_names} "
            f"{profile.message[:200]}",
            flush=True,
        )
        ok = all(e["status"] == "correct" for e in row["evaluations"]) and bool(row["profile"]["own"])
        failed += not ok
        row["ok"] = ok
        rows.append(row)
    print("\n| file | verdicts | speedup | candidate ms | eval s (cold) | compile s | profiled own kernels |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        evs = row["evaluations"]
        speed = ", ".join(f"{e['speedup']:.3f}" if e["speedup"] else "-" for e in evs)
        cand = ", ".join(f"{e['candidate_ms']:.4f}" if e["candidate_ms"] else "-" for e in evs)
        compile_s = ", ".join(str(e["phases"].get("compile", "-")) for e in evs)
        print(
            f"| {row['file']} | {', '.join(e['status'] for e in evs)} | {speed} | {cand} | "
            f"{', '.join(str(e['seconds']) for e in evs)} | {compile_s} | {', '.join(row['profile']['own']) or 'none'} |"
        )
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    if not rows:
        print(f"no candidates for {args.language} in benchmarks/candidates/")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
