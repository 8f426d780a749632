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

With ``--evaluate`` (a GPU, or the CPU where torch has no CUDA: then CUDA builds stop at ``compiled``), each
candidate goes the way a run's batch takes it (``Evaluator.precompile`` on the CPU pool, then ``Evaluator.evaluate``
against its task with that build cache, whose compile phase finds the cache: the warm seconds; a candidate whose
builds wait for run time is evaluated once more, and the second evaluation's compile phase is its warm figure) and
the row adds the verdict, each phase's
seconds (``compile_s``, ``correctness_s``, ``timing_s``), the builds the worker made after its compile phase (counted
as compile time, with why they waited), and ``sandbox_denied``: the verdict's message names a permission the sandbox
refused (``Permission denied``, ``Operation not permitted``, a read-only file system). ``--jobs N`` runs N
candidates at a time (their seconds then share the machine's cores: say so beside the figures).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from cudaforge.eval.extensions import BuildSettings, precompile, warm_pch  # noqa: E402
from cudaforge.eval.extensions.deferred import build_sites  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from build_corpus import write_corpus  # noqa: E402

TARGET_S = 15.0
WARM_TARGET_S = 1.0
DENIED = re.compile(r"Permission denied|PermissionError|Operation not permitted|Read-only file system|EACCES|EPERM")


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


def _task_of(name: str) -> str:
    """The corpus candidate's task (``suite/level/name``): its operation is the name's tail."""
    from build_corpus import OPS

    if name.startswith("fail_"):
        return OPS["relu"][0] if "bind" in name else OPS["gelu"][0]
    op = next(op for op in sorted(OPS, key=len, reverse=True) if name.endswith("_" + op))
    return OPS[op][0]


def _phase(result, name: str) -> float | None:
    seconds = [p.seconds for p in result.phases if p.phase.value == name]
    return round(sum(seconds), 2) if seconds else None


def _evaluated(path: Path, work: Path, timeout: float) -> dict:
    """One candidate the way a run's batch takes it: precompile (cold), then evaluate (warm: a cache hit)."""
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection

    suite, task_id = _task_of(path.stem).split("/", 1)
    task = find_task(selection(suite), task_id)
    source = path.read_text()
    cfg = {
        "build_cache_dir": str(work / path.stem),
        "standby_workers": False,
        "timing_trials": 20,
        "warmup": 3,
        "compile_timeout_s": timeout,
        "correctness_timeout_s": max(180.0, timeout),
    }
    with Evaluator(cfg) as evaluator:
        started = time.perf_counter()
        cold = evaluator.precompile(source, task)
        cold_s = time.perf_counter() - started
        result = evaluator.evaluate(task, source)  # its compile phase finds the cache: the warm figure
        late = result.fingerprint.get("builds_after_compile") or {}
        again = evaluator.evaluate(task, source) if late else result  # built at run time: warm is the next one
    again_late = again.fingerprint.get("builds_after_compile") or {}
    message = result.message or ""
    return {
        "candidate": path.stem,
        "task": task.id,
        "status": result.status.value,
        "precompile_status": cold.status if cold is not None else "nothing to build",
        "seconds": round(cold_s, 2),
        "build_seconds": round(
            cold.build_seconds if cold is not None and cold.build_seconds else float(late.get("seconds") or 0.0), 2
        ),
        "warm_seconds": _phase(again, "compile") or 0.0,
        "warm_cached": bool(
            again.compile_cached or (again_late and again_late.get("cached") == again_late.get("count"))
        ),
        "compile_s": _phase(result, "compile"),
        "correctness_s": _phase(result, "correctness"),
        "timing_s": _phase(result, "timing"),
        "compile_note": next((p.message for p in result.phases if p.phase.value == "compile"), "")[:300],
        "built_ahead": result.fingerprint.get("builds_ahead") or [],
        "left_to_run_time": result.fingerprint.get("builds_left_to_run_time") or [],
        "builds_after_compile": late,
        "jit_ahead": (result.fingerprint.get("jit_ahead") or {}).get("note", ""),
        "speedup": round(result.speedup.median, 3) if result.speedup else None,
        "sandbox_denied": bool(DENIED.search(message + (result.compile_log or ""))),
        "message": message[:400],
        "steps": [r.get("steps", {}) for r in (cold.records if cold is not None else [])],
        "path": "",
        "variant": [],
        "fallbacks": [],
    }


def _built(path: Path, work: Path, timeout: float) -> dict:
    """One candidate through the build alone: precompile cold, then warm."""
    settings = BuildSettings(cache_dir=str(work / path.stem))
    outcome = precompile(path.read_text(), settings, timeout_s=timeout)
    records = outcome.records
    sites = build_sites(path.read_text())
    warm = precompile(path.read_text(), settings, timeout_s=timeout)  # the same source again: a cache hit
    return {
        "candidate": path.stem,
        "status": outcome.status,
        "seconds": round(outcome.seconds, 2),
        "build_seconds": round(outcome.build_seconds, 2),
        "warm_seconds": round(warm.seconds, 2),
        "warm_cached": warm.cached,
        "path": _path(outcome, records, sites),
        "sites": sites,
        "ahead": outcome.prebuilt,
        "left_to_run_time": outcome.deferred,
        "variant": [r.get("variant", "") for r in records],
        "fallbacks": [f for r in records for f in r.get("fallbacks", [])],
        "measures": [m for r in records for m in r.get("measures", [])],
        "message": outcome.message[:300],
        "steps": [r.get("steps", {}) for r in records],
    }


def _evaluated_path(row: dict) -> str:
    """Where an evaluated candidate's build was paid."""
    late = row["builds_after_compile"]
    if late:
        why = "; ".join(m.split(": ", 1)[-1] for m in row["left_to_run_time"]) or "a name or source only run time knows"
        return f"at run time, {late.get('count')} build(s) {late.get('seconds')} s counted as compile ({why})"
    if row["built_ahead"]:
        return "ahead from __init__/forward"
    if row["jit_ahead"]:
        return "JIT ahead: " + row["jit_ahead"][:120]
    if row["steps"]:
        return "at import"
    return "at its first launch (not a cpp_extension build)" if row["status"] == "correct" else "none"


def main() -> int:
    """Build every corpus candidate cold; print and write the table; exit 1 when a good one's build exceeds TARGET_S."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "build-corpus")
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--evaluate", action="store_true", help="also evaluate each candidate against its task")
    parser.add_argument("--jobs", type=int, default=1, help="candidates at a time (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (sources, caches: about 2.5 GB)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs: at least 1")
    chosen = {n.strip() for n in args.only.split(",") if n.strip()}
    work = Path(tempfile.mkdtemp(prefix="build-corpus-"))
    try:
        return _run(args, parser, chosen, work)
    finally:
        if args.keep:
            print(f"work folder kept: {work}", flush=True)
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(args: argparse.Namespace, parser: argparse.ArgumentParser, chosen: set[str], work: Path) -> int:
    files = [p for p in write_corpus(work / "corpus") if not chosen or p.stem in chosen]
    if chosen - {p.stem for p in files}:
        parser.error(f"--only: no such candidate(s) {sorted(chosen - {p.stem for p in files})}")
    os.environ.setdefault("CUDAFORGE_PCH_DIR", str(work / "pch"))
    started = time.perf_counter()
    warm_pch(BuildSettings(cache_dir=str(work / "pch-warm")))  # the one-time header build, reported apart
    pch_s = time.perf_counter() - started
    print(f"precompiled header: {pch_s:.1f} s (once per flag set)", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rows_file = args.out / "build_corpus_rows.jsonl"
    written = threading.Lock()

    def one(path: Path) -> dict:
        try:
            row = _evaluated(path, work, args.timeout) if args.evaluate else _built(path, work, args.timeout)
        except Exception as exc:  # noqa: BLE001 - one candidate's failure is its row, the rest go on
            row = {
                "candidate": path.stem,
                "status": "bench_error",
                "seconds": 0.0,
                "build_seconds": 0.0,
                "warm_seconds": 0.0,
                "warm_cached": False,
                "path": "",
                "variant": [],
                "fallbacks": [],
                "steps": [],
                "message": f"{type(exc).__name__}: {exc}"[:400],
            }
        if args.evaluate and row["status"] != "bench_error":
            row["path"] = _evaluated_path(row)
        with written:
            with rows_file.open("a") as f:  # kept row by row: a killed run loses nothing
                f.write(json.dumps(row) + "\n")
            extra = (
                f", evaluated {row['status']} (compile {row.get('compile_s')} s, correctness "
                f"{row.get('correctness_s')} s){' SANDBOX DENIED' if row.get('sandbox_denied') else ''}"
                if args.evaluate
                else ""
            )
            print(
                f"{row['candidate']}: {row.get('precompile_status', row['status'])} {row['seconds']} s (builds "
                f"{row['build_seconds']} s: {_steps(row)}), warm {row['warm_seconds']} s, {row['path']}{extra}",
                flush=True,
            )
        return row

    if args.jobs == 1:
        rows = [one(path) for path in files]
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(one, files))
    good = [r for r in rows if not r["candidate"].startswith("fail_")]
    bad = [r for r in rows if r["candidate"].startswith("fail_")]
    lines = [f"precompiled headers (once per flag set): {pch_s:.1f} s; {args.jobs} candidate(s) at a time", ""]
    if args.evaluate:
        lines += [
            "| candidate | verdict | build s | precompile wall s | warm s | compile s | correctness s | path | "
            "sandbox denied |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r['candidate']} | {r['status']} | {r['build_seconds']} | {r['seconds']} | {r['warm_seconds']} | "
            f"{r.get('compile_s')} | {r.get('correctness_s')} | {r['path']} | "
            f"{'yes' if r.get('sandbox_denied') else '-'} |"
            for r in rows
        ]
    else:
        lines += [
            "| candidate | status | build s | wall s | warm s | steps (s) | path | light tier | fell back |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r['candidate']} | {r['status']} | {r['build_seconds']} | {r['seconds']} | {r['warm_seconds']} | {_steps(r)} | {r['path']} | "
            f"{', '.join(r['variant'])} | {', '.join(r['fallbacks']) or '-'} |"
            for r in rows
        ]
    built_ok = ("correct", "compiled") if args.evaluate else ("ok", "compiled_only")
    if good:
        for what, key in (
            ("build (the compile phase's share)", "build_seconds"),
            ("wall (process starts included)", "seconds"),
        ):
            secs = sorted(r[key] for r in good)
            lines += [
                "",
                f"{len(good)} buildable, {what}: median {secs[len(secs) // 2]} s, max {secs[-1]} s, "
                f"{sum(s <= TARGET_S for s in secs)}/{len(secs)} within {TARGET_S:g} s",
            ]
        warm = sorted(r["warm_seconds"] for r in good)
        lines += [
            f"warm (the same source again): median {warm[len(warm) // 2]} s, max {warm[-1]} s, "
            f"{sum(s < WARM_TARGET_S for s in warm)}/{len(warm)} under {WARM_TARGET_S:g} s",
            f"{sum(r['status'] in built_ok for r in good)} of {len(good)} {' or '.join(built_ok)}",
        ]
        if args.evaluate:
            late = [r for r in good if r.get("builds_after_compile")]
            denied = [r["candidate"] for r in rows if r.get("sandbox_denied")]
            lines += [
                f"{len(late)} built at run time and counted as compile time: "
                + (", ".join(r["candidate"] for r in late) or "none"),
                "refused by the sandbox: " + (", ".join(denied) or "none"),
            ]
    if bad:
        lines += [
            f"{len(bad)} that must fail: "
            + ", ".join(f"{r['candidate']} {r['status']} in {r['seconds']} s" for r in bad)
        ]
    print("\n" + "\n".join(lines))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "build_corpus.json").write_text(
        json.dumps({"pch_seconds": pch_s, "jobs": args.jobs, "rows": rows}, indent=1)
    )
    (args.out / "build_corpus.md").write_text("\n".join(lines) + "\n")
    slow = [r for r in good if r["build_seconds"] > TARGET_S or r["status"] not in built_ok]
    if args.evaluate:
        slow += [r for r in rows if r.get("sandbox_denied") or (r in good and r["warm_seconds"] >= WARM_TARGET_S)]
        return 1 if slow or any(r["status"] in ("correct", "compiled", "bench_error") for r in bad) else 0
    return 1 if slow or any(r["status"] != "failed" for r in bad) else 0


if __name__ == "__main__":
    sys.exit(main())
