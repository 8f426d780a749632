"""Where a JIT-language candidate's compile is paid: the correctness phase, the compile phase, or the CPU pool.

    python benchmarks/jit_ahead_bench.py --out DIR [--cache DIR] [--modes off,compile_phase,pool]
                                         [--languages triton,tilelang]

Three modes, each with a build cache of its own (so each pays the same cold costs: Triton's driver stubs, the
worker's first imports):

* ``off``: ``eval.jit_ahead=off``, the kernels compile at their first call (the correctness phase; so does a
  single evaluation under the default, ``pool``);
* ``compile_phase``: ``eval.jit_ahead=compile`` without the CPU pool, the kernels compile in the compile phase on
  fake tensors of the task's inputs, in a fresh CPU-only process (``cudaforge.eval.jit_prebuild``);
* ``pool``: ``Evaluator.precompile(source, task)`` first (what ``evaluate_batch`` does), compiled for this GPU's
  target in a CPU-only sandboxed worker; the GPU worker finds them in its cache.

For the bundled Triton candidates of the tiny suite (ReLU, Softmax, and MatmulBiasReLU autotuned over four configs)
and the TileLang ones (ReLU, Softmax, MatmulBiasReLU; skipped where ``tilelang`` is not installed): verdict, seconds
of the precompile and of each phase, and the trusted side's count of compiled kernels in the worker's cache of that
language (seeded, after the compile phase, at the end). Writes ``jit_ahead.json`` and ``jit_ahead.md``.
Exit status 1 when a candidate is not correct or, in ``pool`` mode, anything compiled on the GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CANDIDATES = {
    "triton": [
        ("ReLU", "triton_relu.py"),
        ("Softmax", "triton_softmax.py"),
        ("MatmulBiasReLU", "triton_matmul_bias_relu.py"),
    ],
    "tilelang": [
        ("ReLU", "tilelang_relu.py"),
        ("Softmax", "tilelang_softmax.py"),
        ("MatmulBiasReLU", "tilelang_matmul_bias_relu.py"),
    ],
}
MODES = ("off", "compile_phase", "pool")


def _phase(result, name: str) -> float | None:
    return next((round(p.seconds, 3) for p in result.phases if p.phase.value == name), None)


def main() -> int:
    """Evaluate each candidate in each mode; print and write a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache", type=Path, default=None, help="root of the three build caches (default: a temp dir)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--languages", default=",".join(CANDIDATES), help="comma-separated, of triton, tilelang")
    args = parser.parse_args()

    from cudaforge import languages
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import load_suite, selection
    from cudaforge.types import EvalStatus

    args.out.mkdir(parents=True, exist_ok=True)
    root = args.cache or Path(tempfile.mkdtemp(prefix="jit-ahead-"))
    tiny = {t.name: t for t in load_suite(selection("tiny"))}
    rows, failed = [], False
    modes = [m for m in args.modes.split(",") if m]
    if not modes or set(modes) - set(MODES):
        parser.error(f"--modes: expected some of {', '.join(MODES)}")
    chosen = [name for name in args.languages.split(",") if name]
    if not chosen or set(chosen) - set(CANDIDATES):
        parser.error(f"--languages: expected some of {', '.join(CANDIDATES)}")
    candidates = []
    for name in chosen:
        if languages.missing_message(name):
            print(f"skipping {name}: {languages.missing_message(name)}", flush=True)
        else:
            candidates += CANDIDATES[name]
    for mode in modes:
        jit_ahead = {"off": "off", "compile_phase": "compile", "pool": "pool"}[mode]
        evaluator = Evaluator(
            {
                "jit_ahead": jit_ahead,
                "build_cache_dir": str(root / mode),
                "timing_trials": 10,
                "warmup": 3,
                "correctness_timeout_s": 180,
            }
        )
        for task_name, file in candidates:
            source = (REPO / "benchmarks" / "candidates" / file).read_text()
            row = {"mode": mode, "candidate": file, "task": task_name}
            if mode == "pool":
                started = time.perf_counter()
                outcome = evaluator.precompile(source, tiny[task_name])
                row.update(
                    precompile_s=round(time.perf_counter() - started, 3),
                    precompiled=outcome.jit if outcome else [],
                    precompile_note=outcome.jit_message if outcome else "",
                )
            result = evaluator.evaluate(tiny[task_name], source)
            jit = result.fingerprint.get("jit_ahead") or {}
            row.update(
                status=result.status.value,
                compile_s=_phase(result, "compile"),
                correctness_s=_phase(result, "correctness"),
                timing_s=_phase(result, "timing"),
                speedup=round(result.speedup.median, 3) if result.speedup else None,
                seeded=jit.get("kernels_seeded"),
                after_compile=jit.get("kernels_after"),
                at_end=jit.get("kernels_at_end"),
                jit_s=jit.get("seconds"),
                note=jit.get("note", ""),
            )
            failed |= result.status is not EvalStatus.CORRECT
            failed |= mode == "pool" and row["at_end"] != row["seeded"]
            rows.append(row)
            print(json.dumps(row), flush=True)
    (args.out / "jit_ahead.json").write_text(json.dumps(rows, indent=1))
    lines = [
        "| mode | candidate | status | precompile s | compile s | correctness s | kernels seeded / after compile / at end |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['mode']} | {r['candidate']} | {r['status']} | {r.get('precompile_s', '')} | {r['compile_s']} "
            f"| {r['correctness_s']} | {r['seeded']} / {r['after_compile']} / {r['at_end']} |"
        )
    (args.out / "jit_ahead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
