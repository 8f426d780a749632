"""Record real Nsight Compute fixtures and the profiler's target figures on a GPU, in one run.

    python scripts/record_ncu_fixtures.py --out DIR [--gpu 0] [--ncu ncu]

Profiles three small candidates of the ``tiny`` suite (a one-kernel CUDA ReLU, a Triton softmax,
the two-kernel CUDA softmax of tests/fixtures/ncu/) with ``cudaforge24`` and one with ncu's
``basic`` set, and writes at most six files to DIR:

* ``<candidate>_cudaforge24.csv`` (three) and ``two_kernel_softmax_basic.csv``: ncu's raw CSV
  output, to copy into tests/fixtures/ncu/ (the parser tests pick them up);
* ``cuda_relu_cudaforge24.ncu-rep``: the same profile as an ncu report (kept when under 200 KB);
* ``targets.json``: for each candidate, the wall time of a plain run of the worker against a
  profiled one (target: profiling adds at most 5 s), ncu's summed kernel duration against the
  evaluator's median for the same forward (target: within 10%), and each profile's summary.

Every measurement is guarded: one that fails is recorded with its error and the rest go on.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cudaforge.profile import Profiler  # noqa: E402
from cudaforge.tasks import load_suite, selection  # noqa: E402

CANDIDATES = {
    "cuda_relu": ("tiny", "ReLU", REPO / "benchmarks" / "candidates" / "cuda_relu.py"),
    "triton_softmax": ("tiny", "Softmax", REPO / "benchmarks" / "candidates" / "triton_softmax.py"),
    "two_kernel_softmax": ("tiny", "Softmax", REPO / "tests" / "fixtures" / "ncu" / "two_kernel_softmax.py"),
    # a forward of about 1 ms, where launch overhead no longer dominates the evaluator's time
    "triton_softmax_main": ("main", "Softmax", REPO / "benchmarks" / "candidates" / "triton_softmax.py"),
}
MAX_FIXTURE_BYTES = 200_000
REPEATS = 2  # plain and profiled runs alternate; the first pair also warms ncu's and the OS's caches


def guarded(record: dict[str, Any], key: str, measure: Callable[[], Any]) -> Any:
    """Run ``measure``; store its value under ``key`` or its error under ``key + '_error'``."""
    try:
        value = measure()
        record[key] = value
        return value
    except Exception:  # noqa: BLE001 - a failed measurement is a finding, not the end of the run
        record[f"{key}_error"] = traceback.format_exc()[-3000:]
        return None


def keep(src: str | None, dst: Path, record: dict[str, Any]) -> None:
    """Copy a raw ncu output into the fixture folder when it is small enough."""
    if not src:
        record.setdefault("files_skipped", []).append(f"{dst.name}: no output")
        return
    size = Path(src).stat().st_size
    if size > MAX_FIXTURE_BYTES:
        record.setdefault("files_skipped", []).append(f"{dst.name}: {size} bytes, over {MAX_FIXTURE_BYTES}")
        return
    shutil.copyfile(src, dst)
    record.setdefault("files", []).append(dst.name)


def profile_dict(result: Any) -> dict[str, Any]:
    """The figures of a ProfileResult worth reading in targets.json."""
    return {
        "status": result.status.value,
        "message": result.message,
        "seconds": result.seconds,
        "phase_seconds": result.phase_seconds,
        "own_kernel_ms": result.own_kernel_ms,
        "library_kernel_ms": result.library_kernel_ms,
        "library_kernel_names": result.library_kernel_names,
        "kernels": [
            {"name": k.name, "own": k.own, "duration_ms": k.duration_ms, "grid": k.grid, "block": k.block}
            for k in result.kernels
        ],
        "tools": result.tools,
        "summary": result.summary(),
    }


def measure_candidate(
    name: str, task: Any, source: str, args: argparse.Namespace, work: Path, out: Path, report: dict[str, Any]
) -> dict[str, Any]:
    """Plain vs profiled wall time, ncu vs evaluator timing, and the fixture files of one candidate."""
    record: dict[str, Any] = {"task": task.id}
    build = {"cache_dir": str(work / "build")}
    common = {"ncu_path": args.ncu, "timeout_s": 300.0}
    c24 = Profiler({**common, "metric_set": "cudaforge24"}, lock_dir=work / "locks", build=build, use_cache=False)
    runs: list[dict[str, Any]] = []
    for i in range(REPEATS):
        run: dict[str, Any] = {}
        plain = guarded(run, "plain", lambda: c24.run_worker(task, source, args.gpu, "plain"))
        if plain is not None:
            run["plain"] = {
                "status": plain.status,
                "seconds": plain.seconds,
                "phase_seconds": plain.phase_seconds,
                "error": plain.error[-2000:],
            }
        artifacts = work / "raw" / f"{name}-{i}"
        result = guarded(run, "profiled", lambda: c24.profile(task, source, args.gpu, artifact_dir=artifacts))  # noqa: B023
        if result is not None:
            run["profiled"] = profile_dict(result)
            plain_ok = plain is not None and plain.status == "ok" and "error" not in (plain.result or {"error": 1})
            if plain_ok and result.status.value == "ok":
                run["overhead_s"] = result.seconds - plain.seconds
            elif plain is not None and plain.result and "error" in plain.result:
                run["plain"]["error"] = plain.result["error"][-2000:]
            if i == REPEATS - 1 and CANDIDATES[name][0] == "tiny":
                keep(result.artifacts.get("ncu_log"), out / f"{name}_cudaforge24.csv", report)
        runs.append(run)
    record["runs"] = runs
    # the first pair is cold (the plain run pays the build, ncu its own start-up): warm pairs only
    overheads = [r["overhead_s"] for r in runs[1:] if "overhead_s" in r]
    record["overhead_s_min"] = min(overheads) if overheads else None
    record["overhead_target_met"] = bool(overheads) and min(overheads) <= 5.0

    timed = guarded(
        record,
        "forward_ms_events_no_flush",
        lambda: c24.run_worker(task, source, args.gpu, "plain", time_iters=100).result["forward_ms"],
    )
    evaluation = guarded(record, "evaluator", lambda: evaluate(task, source, args.gpu, work))
    last = runs[-1].get("profiled", {}) if runs else {}
    if evaluation and evaluation.get("candidate_median_ms") and last.get("own_kernel_ms") is not None:
        evaluator_ms = evaluation["candidate_median_ms"]
        own = last["own_kernel_ms"]
        everything = own + (last.get("library_kernel_ms") or 0.0)
        record["ncu_vs_evaluator"] = {
            "ncu_own_kernels_ms": own,
            "ncu_all_kernels_ms": everything,
            "evaluator_median_ms": evaluator_ms,
            "events_no_flush_ms": timed,
            "ratio_all_kernels_to_evaluator": everything / evaluator_ms,
            "within_10pct": abs(everything / evaluator_ms - 1.0) <= 0.10,
        }
    if name == "cuda_relu":
        rep = Profiler(
            {**common, "metric_set": "cudaforge24", "output": "report"},
            lock_dir=work / "locks",
            build=build,
            use_cache=False,
        )
        result = guarded(record, "report_mode", lambda: rep.profile(task, source, args.gpu, artifact_dir=work / "rep"))
        if result is not None:
            record["report_mode"] = profile_dict(result)
            keep(result.artifacts.get("ncu_rep"), out / f"{name}_cudaforge24.ncu-rep", report)
    if name == "two_kernel_softmax":
        basic = Profiler({**common, "metric_set": "basic"}, lock_dir=work / "locks", build=build, use_cache=False)
        result = guarded(record, "basic", lambda: basic.profile(task, source, args.gpu, artifact_dir=work / "basic"))
        if result is not None:
            record["basic"] = profile_dict(result)
            keep(result.artifacts.get("ncu_log"), out / f"{name}_basic.csv", report)
    return record


def evaluate(task: Any, source: str, gpu: str, work: Path) -> dict[str, Any]:
    """The evaluator's verdict and candidate timing (median and interval, ms) for the same forward."""
    from cudaforge.eval.evaluator import Evaluator

    evaluator = Evaluator({"timing_trials": 100, "warmup": 10, "build_cache_dir": str(work / "build")})
    result = evaluator.evaluate(task, source, gpu=gpu)
    timing = result.candidate_timing
    return {
        "status": result.status.value,
        "message": result.message[-2000:],
        "candidate_median_ms": timing.median if timing else None,
        "candidate_ci_ms": [timing.ci_low, timing.ci_high] if timing else None,
    }


def main() -> int:
    """Record everything into ``--out``; returns 0 when targets.json was written."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, type=Path, help="folder for the fixtures and targets.json")
    parser.add_argument("--gpu", default="0", help="physical GPU id (as CUDA_VISIBLE_DEVICES takes it)")
    parser.add_argument("--ncu", default="ncu", help="the ncu executable")
    parser.add_argument("--only", default=",".join(CANDIDATES), help="comma-separated candidates to record")
    args = parser.parse_args()
    chosen = [c for c in args.only.split(",") if c]
    unknown = sorted(set(chosen) - set(CANDIDATES))
    if unknown:
        parser.error(f"unknown candidate(s) {unknown}; known: {', '.join(CANDIDATES)}")
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = {(name, t.name): t for name in ("tiny", "main") for t in load_suite(selection(name))}
    report: dict[str, Any] = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "gpu": args.gpu, "candidates": {}}
    with tempfile.TemporaryDirectory(prefix="cudaforge-record-") as tmp:
        work = Path(tmp)
        for name in chosen:
            suite_name, task_name, path = CANDIDATES[name]
            print(f"recording {name} on {suite_name}/{task_name} ...", flush=True)
            report["candidates"][name] = measure_candidate(
                name, tasks[(suite_name, task_name)], path.read_text(), args, work, args.out, report
            )
    report["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    (args.out / "targets.json").write_text(json.dumps(report, indent=1, default=str))
    for name, record in report["candidates"].items():
        print(f"{name}: overhead {record.get('overhead_s_min')} s, ncu vs evaluator {record.get('ncu_vs_evaluator')}")
    print(f"files: {report.get('files', [])}; skipped: {report.get('files_skipped', [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
