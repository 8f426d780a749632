"""Cold builds of the build corpus (``benchmarks/build_corpus.py``: CUDA candidates in the styles LLM coders and public
releases use, generated into the work folder) through the evaluator's real path: ``precompile`` (a sandboxed CPU-only worker imports the candidate;
the trusted side builds each ``load_inline``, and the calls it defers to ``__init__``/``forward`` are built ahead).

    python benchmarks/build_corpus_bench.py [--out DIR] [--only NAME,...]

Each candidate gets a fresh build cache (a cold build); the precompiled headers of ``main.cpp`` are shared (the
steady state of a run: they are built once per flag set, at the start, reported apart). Per candidate: its status,
the build's seconds (what the evaluator's compile phase counts) and the wall seconds (the precompile child's and
the sandboxed worker's start included), the wall seconds of the same source again (warm: a cache hit), the seconds
of each step (ninja's targets), which path built it (at import, ahead from ``__init__``/``forward``, or at run time
and why), the light-header tier that won and what fell back. The target: every
buildable candidate's build within 15 s. Writes build_corpus_rows.jsonl (row by row), build_corpus.json and
build_corpus.md to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cudaforge.eval.build import BuildSettings, precompile, warm_pch  # noqa: E402
from cudaforge.eval.build.deferred import build_sites  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from build_corpus import write_corpus  # noqa: E402

TARGET_S = 15.0


def _steps(row: dict) -> str:
    """``main.o 6.1, cuda.cuda.o 9.8, relu.so 0.5`` for each build of a row (the library's name shortened)."""
    parts = []
    for steps in row["steps"]:
        parts += [f"{'link' if name.endswith('.so') else name} {secs:g}" for name, secs in steps.items()]
    return ", ".join(parts) or "-"


def _path(outcome, records: list, sites: dict) -> str:
    """Which path built a candidate: at import, ahead from ``__init__``/``forward`` (also when a torch without CUDA
    stopped the load after the build), at run time and why, or none."""
    if outcome.prebuilt or (records and sites["deferred"] and not sites["import"]):
        return "ahead from __init__/forward"
    if records:
        return "at import"
    if outcome.deferred:
        return "at run time (" + "; ".join(m.split(": ", 1)[-1] for m in outcome.deferred) + ")"
    return "none"


def main() -> int:
    """Build every corpus candidate cold; print and write the table; exit 1 when a good one's build exceeds TARGET_S."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "build-corpus")
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args()
    chosen = {n.strip() for n in args.only.split(",") if n.strip()}
    work = Path(tempfile.mkdtemp(prefix="build-corpus-"))
    files = [p for p in write_corpus(work / "corpus") if not chosen or p.stem in chosen]
    os.environ.setdefault("CUDAFORGE_PCH_DIR", str(work / "pch"))
    started = time.perf_counter()
    warm_pch(BuildSettings(cache_dir=str(work / "pch-warm")))  # the one-time header build, reported apart
    pch_s = time.perf_counter() - started
    print(f"precompiled header: {pch_s:.1f} s (once per flag set)", flush=True)
    rows = []
    for path in files:
        settings = BuildSettings(cache_dir=str(work / path.stem))
        outcome = precompile(path.read_text(), settings, timeout_s=args.timeout)
        records = outcome.records
        sites = build_sites(path.read_text())
        warm = precompile(path.read_text(), settings, timeout_s=args.timeout)  # the same source again: a cache hit
        row = {
            "candidate": path.stem, "status": outcome.status, "seconds": round(outcome.seconds, 2),
            "build_seconds": round(outcome.build_seconds, 2),
            "warm_seconds": round(warm.seconds, 2), "warm_cached": warm.cached,
            "path": _path(outcome, records, sites),
            "sites": sites,
            "ahead": outcome.prebuilt, "left_to_run_time": outcome.deferred, "variant": [r.get("variant", "") for r in records],
            "fallbacks": [f for r in records for f in r.get("fallbacks", [])],
            "measures": [m for r in records for m in r.get("measures", [])], "message": outcome.message[:300],
            "steps": [r.get("steps", {}) for r in records],
        }  # fmt: skip
        rows.append(row)
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "build_corpus_rows.jsonl").open("a") as f:  # kept row by row: a killed run loses nothing
            f.write(json.dumps(row) + "\n")
        print(f"{row['candidate']}: {row['status']} {row['seconds']} s (builds {row['build_seconds']} s: {_steps(row)}), "
              f"{row['path']}, {row['variant']} {'fallbacks ' + ', '.join(row['fallbacks']) if row['fallbacks'] else ''}",
              flush=True)
    good = [r for r in rows if not r["candidate"].startswith("fail_")]
    bad = [r for r in rows if r["candidate"].startswith("fail_")]
    lines = [f"precompiled headers (once per flag set): {pch_s:.1f} s", "",
             "| candidate | status | build s | wall s | warm s | steps (s) | path | light tier | fell back |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['candidate']} | {r['status']} | {r['build_seconds']} | {r['seconds']} | {r['warm_seconds']} | {_steps(r)} | {r['path']} | "
              f"{', '.join(r['variant'])} | {', '.join(r['fallbacks']) or '-'} |" for r in rows]  # fmt: skip
    if good:
        for what, key in (("build (the compile phase's share)", "build_seconds"), ("wall (process starts included)", "seconds")):
            secs = sorted(r[key] for r in good)
            lines += ["", f"{len(good)} buildable, {what}: median {secs[len(secs) // 2]} s, max {secs[-1]} s, "
                          f"{sum(s <= TARGET_S for s in secs)}/{len(secs)} within {TARGET_S:g} s"]  # fmt: skip
        lines += [f"{sum(r['status'] in ('ok', 'compiled_only') for r in good)} of {len(good)} built"]
    if bad:
        lines += [f"{len(bad)} that must fail: " + ", ".join(f"{r['candidate']} {r['status']} in {r['seconds']} s" for r in bad)]
    print("\n" + "\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "build_corpus.json").write_text(json.dumps({"pch_seconds": pch_s, "rows": rows}, indent=1))
    (args.out / "build_corpus.md").write_text("\n".join(lines) + "\n")
    slow = [r for r in good if r["build_seconds"] > TARGET_S or r["status"] not in ("ok", "compiled_only")]
    return 1 if slow or any(r["status"] != "failed" for r in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
