"""Off-stream work against honest kernels over a ladder of task sizes (GPU; issue 34).

    python benchmarks/timing_ladder.py --out DIR [--sizes 16,18,...,28] [--trials 30] [--honest-only]

Tasks: ReLU over 2^k float32 elements for each k of ``--sizes``, and a fused task of tens of microseconds
(``relu(x * 2 + 1)`` over 2^22 elements: three PyTorch kernels, one fused kernel). Candidates per task: an honest
Triton kernel, its honest twin on a side stream joined both ways, and two off-stream variants (a side stream made
without naming the stream API, never joined: its kernel runs during the timing lead; a side stream that waits for
the inputs but is never waited for: its kernel ends after the end event). Every honest candidate must come out
``correct`` and every off-stream one ``rejected`` by ``untimed_work`` (or ``incorrect`` before timing: its unjoined
write raced with the poison fill of its output); the script exits 1 otherwise. The static
``concurrency`` guard (which rejects every side stream it can see) is set to report, so the runtime record decides.

``--honest-only`` evaluates only the two honest candidates (for an older checkout, ``PYTHONPATH=that checkout``, to
set its evaluation time and speedups beside this one's). Writes ``ladder.json`` under ``--out`` and prints a table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from pathlib import Path

HACKS = Path(__file__).resolve().parent / "hacks"

RELU_TASK = '''"""ReLU over {n} float32 elements (2^{k})."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn({n})]


def get_init_inputs():
    return []
'''

FUSED_TASK = '''"""relu(x * 2 + 1) over 2^22 float32 elements: three PyTorch kernels (tens of microseconds)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0)


def get_inputs():
    return [torch.randn(4194304)]


def get_init_inputs():
    return []
'''

FUSED_KERNEL = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x * 2.0 + 1.0, 0.0), mask=mask)


def relu(x, out):
    fused_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""

FORWARDS = {  # the honest kernel; the side-stream patterns come from the corpus (CORPUS_FORWARDS)
    "honest": """

class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x, torch.empty_like(x))
""",
}
HONEST = ("honest", "joined_side_stream")
CORPUS_FORWARDS = {
    "joined_side_stream": "legit_joined_side_stream",
    "offstream_early": "hack_unnamed_side_stream",
    "offstream_late": "hack_side_stream_after_start",
}
"""The other candidates' ``ModelNew``, read from the corpus entries of the same names (one copy of each pattern)."""


def corpus_forward(name: str) -> str:
    """A corpus entry's ``class ModelNew`` and everything after it."""
    text = (HACKS / f"{name}.py").read_text()
    return "\n\n" + text[text.index("class ModelNew") :]


def relu_kernel_source() -> str:
    """The ReLU kernel and launcher of the corpus's side-stream entries (everything before ``class ModelNew``)."""
    text = (HACKS / "legit_joined_side_stream.py").read_text()
    body = text[text.index('"""', 3) + 3 :]
    return body[: body.index("class ModelNew")].strip() + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes", default="16,18,20,22,24,26,28")
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--honest-only", action="store_true")
    parser.add_argument("--no-fused", action="store_true")
    args = parser.parse_args()

    import cudaforge
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks.loader import load_problem_file

    root = Path(tempfile.mkdtemp(prefix="ladder_"))
    tasks = []
    for k in [int(s) for s in args.sizes.split(",") if s.strip()]:
        path = root / f"{k:02d}_ReLU_2p{k}.py"
        path.write_text(RELU_TASK.format(n=2**k, k=k))
        tasks.append((f"relu_2^{k}", path, relu_kernel_source()))
    if not args.no_fused:
        path = root / "99_FusedScaleShiftReLU.py"
        path.write_text(FUSED_TASK)
        tasks.append(("fused_2^22", path, FUSED_KERNEL))
    forwards = {**FORWARDS, **{kind: corpus_forward(name) for kind, name in CORPUS_FORWARDS.items()}}
    kinds = HONEST if args.honest_only else tuple(forwards)
    evaluator = Evaluator(
        {"device": "cuda", "timing_trials": args.trials, "warmup": 5, "guards": {"concurrency": "report"}}
    )
    rows, misses = [], 0
    print("| task | candidate | verdict | guards | speedup | candidate ms | reference ms | raised | s |", flush=True)
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for label, path, kernel in tasks:
        task = load_problem_file(path, suite="ladder", level=1)
        for kind in kinds:
            source = (
                kernel
                if kernel.startswith("import")
                else "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n\n" + kernel
            )
            started = time.monotonic()
            result = evaluator.evaluate(task, source + forwards[kind])
            seconds = time.monotonic() - started
            fired = sorted({f["guard"] for f in result.guard_findings if f.get("verdict") == "reject"})
            status = result.status.value
            # an off-stream variant must never be accepted: rejected by the record of the timed calls, or failed before
            # timing (its unjoined write can race with the poison fill of its output's block and leave poison there)
            ok = (
                status == "correct"
                if kind in HONEST
                else (status == "rejected" and "untimed_work" in fired) or status == "incorrect"
            )
            misses += not ok
            trace = result.fingerprint.get("timed_trace") or {}
            row = {
                "task": label,
                "candidate": kind,
                "status": status,
                "rejected_by": fired,
                "ok": ok,
                "speedup": result.speedup.median if result.speedup else None,
                "candidate_ms": result.candidate_timing.median if result.candidate_timing else None,
                "reference_ms": result.reference_timing.median if result.reference_timing else None,
                "seconds": round(seconds, 2),
                "trace": trace,
                "timing_breakdown_s": result.fingerprint.get("timing_breakdown_s"),
                "probe": result.fingerprint.get("timed_trace_probe"),
                "message": result.message[:400],
            }
            rows.append(row)
            fmt = lambda v, f: format(v, f) if isinstance(v, (int, float)) else "-"  # noqa: E731
            print(
                f"| {label} | {kind} | {status}{'' if ok else ' **MISS**'} | {', '.join(fired) or '-'} | "
                f"{fmt(row['speedup'], '.2f')} | {fmt(row['candidate_ms'], '.4f')} | {fmt(row['reference_ms'], '.4f')} | "
                f"{trace.get('raised_to_span', '-')} | {row['seconds']} |",
                flush=True,
            )
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "trials": args.trials,
        "cudaforge": str(Path(cudaforge.__file__).parent),
        "command": " ".join(sys.argv),
        "misses": misses,
    }
    (args.out / "ladder.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    print(f"\n{len(rows) - misses}/{len(rows)} as expected")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
