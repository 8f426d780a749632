"""One GPU call for issue 37's GPU figures: held-out shapes, torch.compile beside eager, and a model end to end.

    python benchmarks/paper_extras_gpu.py OUT_DIR [cudaforge run overrides ...]

1. ``benchmarks/campaign_main.py OUT_DIR/run`` over the ``main`` suite's GELU, Softmax and LayerNorm, one round each,
   with the scripted agents (the bundled Triton GELU and softmax; the LayerNorm task gets the reference with a Triton
   copy of its output): each task's kernel timed against eager, checked on its held-out shapes and timed there, and
   the reference timed under torch.compile (max-autotune) beside it.
2. ``cudaforge integrate OUT_DIR/run recipe=transformer_block``: the GELU and LayerNorm kernels patched into two
   GPT-2-small-sized decoder blocks, checked and timed end to end against eager and torch.compile.
3. ``cudaforge report OUT_DIR/run``, and ``OUT_DIR/summary.json``: per task the speedup over eager and over
   torch.compile and the held-out verdicts; the model's speedups.

Without a GPU every step runs and says what it could not time (the kernels are checked on the CPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

TASKS = "[GELU,Softmax,LayerNorm]"


def _cudaforge(*args: str) -> int:
    print("+ cudaforge " + " ".join(args), flush=True)
    return subprocess.call([sys.executable, "-m", "cudaforge.cli", *args])


def summary(run: Path) -> dict:
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    tasks = {}
    for r in rows:
        pair = r.get("compile_beside") or {}
        ratio = pair.get("compile_over_eager")
        tasks[r["task_id"]] = {
            "correct": r["correct"],
            "speedup": r.get("best_speedup"),
            "precision": (r.get("best_measurement") or {}).get("precision"),
            "compile_over_eager": ratio,
            "compile_status": pair.get("status"),
            "compile_cached": pair.get("cached"),
            "speedup_over_compile": r["best_speedup"] / ratio if r.get("best_speedup") and ratio else None,
            "held_out": [
                {k: s.get(k) for k in ("shape", "sizes", "status", "correct", "speedup")}
                for s in (r.get("held_out") or {}).get("shapes", [])
            ],
            "held_out_note": (r.get("held_out") or {}).get("note"),
            "seconds": {k: r.get("time_split", {}).get(k) for k in ("held_out", "compile_beside")},
        }
    integrated = {}
    for file in sorted((run / "integrate").glob("*.json")):
        record = json.loads(file.read_text())
        integrated[record["recipe"]] = {
            k: record.get(k)
            for k in (
                "status",
                "correct",
                "in_model_speedup",
                "in_model_ci",
                "precision",
                "in_model_over_compile",
                "compile",
                "patches",
                "seconds",
            )
        }
    return {"tasks": tasks, "integrate": integrated}


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-") or "=" in argv[0]:
        sys.exit(__doc__)
    out = Path(argv[0]).resolve()
    run = out / "run"
    codes = {
        "run": subprocess.call(
            [
                sys.executable,
                str(HERE / "campaign_main.py"),
                str(run),
                f"suite.names={TASKS}",
                "strategy.max_rounds=1",
                "profile.enabled=false",
                *argv[1:],
            ]
        )
    }
    codes["integrate"] = _cudaforge("integrate", str(run), "recipe=transformer_block")
    codes["report"] = _cudaforge("report", str(run), "report.compare=[]", f"report.out_dir={out / 'report'}")
    result = {"exit_codes": codes, **summary(run)}
    (out / "summary.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if codes["integrate"] in (0, 1) and codes["report"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
