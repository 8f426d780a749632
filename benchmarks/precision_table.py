"""The same kernels under strict fp32, PyTorch's default TF32 and the precision probe (GPU; issue 34).

    python benchmarks/precision_table.py --out DIR [--trials 30]

Each (task, candidate) pair is evaluated twice, with ``eval.tf32=off`` (strict fp32, our default) and
``eval.tf32=torch_default`` (cuDNN in TF32, as KernelBench's harness leaves it). Each result names its precision;
the probe times the reference itself under strict fp32, TF32 and bf16 and checks each with the task's tolerance.
Prints a markdown table and writes ``precision.json`` under ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

MATMUL_TASK = '''"""relu(x @ W^T + b) at 2048 x 2048 x 2048, checked with KernelBench's tolerances (1e-2)."""
import torch
import torch.nn as nn

ATOL = 1e-2
RTOL = 1e-2


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(2048, 2048)]


def get_init_inputs():
    return [2048, 2048]
'''

RELU_TASK = '''"""ReLU over 2^24 float32 elements{title}."""
import torch
import torch.nn as nn
{tolerance}

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16777216)]


def get_init_inputs():
    return []
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--trials", type=int, default=30)
    args = parser.parse_args()

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.tasks.loader import load_problem_file

    root = Path(tempfile.mkdtemp(prefix="precision_"))
    files = {
        "matmul_2048_tol1e-2": MATMUL_TASK,
        "relu_2^24": RELU_TASK.format(title="", tolerance=""),
        "relu_2^24_tol1e-2": RELU_TASK.format(title=", checked at 1e-2", tolerance="\nATOL = 1e-2\nRTOL = 1e-2\n"),
    }
    tasks = {}
    for k, (name, text) in enumerate(files.items()):
        path = root / f"{k + 1}_{name.replace('^', 'p').replace('-', '_').replace('.', '_')}.py"
        path.write_text(text)
        tasks[name] = load_problem_file(path, suite="precision", level=1)
    tasks["tiny_matmul_bias_relu"] = find_task(selection("tiny"), "tiny/level1/3_MatmulBiasReLU")
    candidates = {
        "matmul_2048_tol1e-2": "triton_matmul_bias_relu",
        "tiny_matmul_bias_relu": "triton_matmul_bias_relu",
        "relu_2^24": "triton_relu",
        "relu_2^24_tol1e-2": "triton_relu",
    }
    rows = []
    print(
        "| task | candidate | eval.tf32 | verdict | speedup (precision) | over strict fp32 | best allowed | over best "
        "allowed | probe reproduces win | launch-inclusive | reference solo ms |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, task in tasks.items():
        source = (REPO / "benchmarks" / "candidates" / f"{candidates[name]}.py").read_text()
        for tf32 in ("off", "torch_default"):
            started = time.monotonic()
            result = Evaluator({"device": "cuda", "timing_trials": args.trials, "warmup": 5, "tf32": tf32}).evaluate(
                task, source
            )
            p = result.precision or {}
            s = p.get("speedups") or {}
            li = result.launch_inclusive or {}
            row = {
                "task": name,
                "candidate": candidates[name],
                "tf32": tf32,
                "status": result.status.value,
                "speedup": result.speedup.to_dict() if result.speedup else None,
                "precision": p,
                "launch_inclusive": li,
                "telemetry": {k: v for k, v in (result.telemetry or {}).items() if k != "batches"},
                "seconds": round(time.monotonic() - started, 2),
                "message": result.message[:300],
            }
            rows.append(row)
            fmt = lambda v: f"{v:.3f}" if isinstance(v, (int, float)) else "-"  # noqa: E731
            sp = f"{fmt(result.speedup.median)} ({result.speedup.precision})" if result.speedup else "-"
            solo = ", ".join(f"{k} {v:.4f}" for k, v in (p.get("reference_solo_ms") or {}).items())
            print(
                f"| {name} | {candidates[name]} | {tf32} | {result.status.value} | {sp} | {fmt(s.get('over_strict_fp32'))} "
                f"| {s.get('best_allowed', '-')} | {fmt(s.get('over_best_allowed'))} | {s.get('probe_reproduces_win', '-')} "
                f"| {fmt(li.get('speedup'))} | {solo} |",
                flush=True,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "command": " ".join(sys.argv)}
    (args.out / "precision.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
