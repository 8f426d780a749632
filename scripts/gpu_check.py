"""Verify cudaforge on this machine's GPU in one go, and write a dated summary.

    python scripts/gpu_check.py --out benchmarks/results/DATE_GPU_callN [--only tests,audit,...] [--gpu 1]

``--gpu`` pins every step to one physical GPU (``CUDA_VISIBLE_DEVICES``), so two checks can run side by side
on a two-GPU box (`evalbench` wants every GPU for its throughput figure: run it alone). All steps share one
directory of precompiled torch headers (``$CUDAFORGE_PCH_DIR``, default ``/tmp/cudaforge-pch``), so only the
first build of a flag set pays for it.

Steps (each with its own log; a failing step is recorded and the next one runs):
  fingerprint  the GPU, driver, clocks and versions
  tests        every GPU-marked test (pytest -m gpu)
  audit        `cudaforge tasks audit` over every bundled suite on the GPU
  eval         `cudaforge eval` of the bundled candidates on bundled tasks
  evalbench    benchmarks/eval_bench.py: precision, overhead, multi-GPU throughput
  compilebench benchmarks/compile_bench.py: cold build, hooked cold build, cache hit
  ncu          scripts/record_ncu_fixtures.py: ncu fixtures and profiling targets
  hacks        benchmarks/hacks/run_corpus.py: every known hack rejected, every legitimate kernel accepted
  run          `cudaforge run suite=tiny` (the offline demo transcript, real timings and profiles)
The summary is summary.md in --out; it is how anyone verifies the evaluator on a new GPU.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

STEPS = {
    "fingerprint": [
        PY,
        "-c",
        "import json; from cudaforge.eval.fingerprint import environment_fingerprint as f; "
        "print(json.dumps(f(0), indent=1))",
    ],
    # Only the files that hold GPU tests: a GPU node need not have the LLM stack the others import.
    "tests": [
        PY,
        "-m",
        "pytest",
        "-m",
        "gpu",
        "-v",
        "-rA",
        "--no-header",
        "-p",
        "no:cacheprovider",
        "--durations=0",
        *sorted(str(p.relative_to(REPO)) for p in (REPO / "tests").glob("test_*.py") if "mark.gpu" in p.read_text()),
    ],
    "audit": [
        "bash",
        "-c",
        f"{PY} -m cudaforge.cli tasks audit suite=tiny; a=$?; "
        f"{PY} -m cudaforge.cli tasks audit suite=main audit.min_reference_ms=0.5; b=$?; exit $((a|b))",
    ],
    "eval": [
        "bash",
        "-c",
        " && ".join(
            f"{PY} -m cudaforge.cli eval suite={s} task={t} candidate=benchmarks/candidates/{c}"
            for s, t, c in [
                ("tiny", "level1/1_ReLU", "cuda_relu.py"),
                ("tiny", "level1/3_MatmulBiasReLU", "cuda_matmul_bias_relu.py"),
                ("tiny", "level1/2_Softmax", "triton_softmax.py"),
                ("main", "level1/3_Softmax", "triton_softmax.py"),
                ("main", "level1/1_GELU", "triton_gelu.py"),
            ]
        ),
    ],
    "evalbench": [PY, "benchmarks/eval_bench.py", "--out", "{out}"],
    "compilebench": [PY, "benchmarks/compile_bench.py", "benchmarks/candidates/cuda_relu.py", "--out", "{out}"],
    "ncu": [PY, "scripts/record_ncu_fixtures.py", "--out", "{out}/ncu", "--gpu", "{gpu}"],
    "hacks": [PY, "benchmarks/hacks/run_corpus.py", "--out", "{out}/hacks.json"],
    "run": [PY, "-m", "cudaforge.cli", "run", "suite=tiny", "tracker=disabled", "hydra.run.dir={out}/run_tiny"],
}


def _per_test_timeout() -> list[str]:
    """A per-test limit when pytest-timeout is installed, so one stuck GPU test cannot eat the whole step."""
    import importlib.util

    return ["--timeout=240"] if importlib.util.find_spec("pytest_timeout") else []


def run_step(name: str, out: Path, timeout: float, gpu: str | None = None, select: str | None = None) -> dict:
    """Run one step, streaming its output into ``<out>/<step>.log`` (so a killed check keeps its logs)."""
    cmd = [part.replace("{out}", str(out)).replace("{gpu}", gpu or "0") for part in STEPS[name]]
    if name == "tests":
        cmd[5:5] = _per_test_timeout() + (["-k", select] if select else [])  # after `python -m pytest -m gpu`
    started = time.monotonic()
    log = out / f"{name}.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.setdefault("CUDAFORGE_PCH_DIR", "/tmp/cudaforge-pch")
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if name == "tests":
        env["CUDAFORGE_TEST_LOG"] = str(
            out / "tests_outcomes.log"
        )  # each test's outcome as it ends (tests/conftest.py)
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            code = "timeout"
    text = log.read_text(errors="replace")
    seconds = time.monotonic() - started
    tail = "\n".join(text.strip().splitlines()[-15:])
    print(f"== {name}: exit {code} in {seconds:.0f} s\n{tail}\n", flush=True)
    return {"step": name, "exit": code, "seconds": round(seconds, 1), "tail": tail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--only", default=",".join(STEPS), help="comma-separated steps")
    parser.add_argument("--step-timeout", type=float, default=900)
    parser.add_argument("--select", default=None, help="pytest -k expression: run only these GPU tests (a re-run)")
    parser.add_argument("--gpu", default=None, help="physical GPU id for every step (default: all visible GPUs)")
    args = parser.parse_args()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    chosen = [s for s in args.only.split(",") if s]
    unknown = [s for s in chosen if s not in STEPS]
    if unknown:
        sys.exit(f"gpu_check: unknown step(s) {unknown}; steps: {', '.join(STEPS)}")
    if "ncu" in chosen and not (REPO / "scripts" / "record_ncu_fixtures.py").exists():
        chosen.remove("ncu")
    results = []
    for name in chosen:
        results.append(run_step(name, out, args.step_timeout, args.gpu, args.select))
        write_summary(
            out, args.out, chosen, results, args.gpu, args.select
        )  # after every step: a killed check keeps what it did
    sys.exit(0 if all(r["exit"] == 0 for r in results) else 1)


def write_summary(
    out: Path, given: Path, chosen: list[str], results: list[dict], gpu: str | None = None, select: str | None = None
) -> None:
    """summary.md and summary.json of the steps run so far."""
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    pinned = f" --gpu {gpu}" if gpu is not None else ""
    lines = [
        f"# GPU check, {date}",
        "",
        f"Command: `python scripts/gpu_check.py --out {given} --only {','.join(chosen)}{pinned}"
        + (f" --select '{select}'" if select else "")
        + "`",
        "",
        "| step | exit | seconds |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {r['step']} | {r['exit']} | {r['seconds']} |" for r in results]
    for r in results:
        lines += ["", f"## {r['step']}", "", "```", r["tail"], "```"]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    (out / "summary.json").write_text(json.dumps({"date": date, "gpu": gpu, "steps": results}, indent=2))


if __name__ == "__main__":
    main()
