"""Run the hack corpus through the Evaluator and print each file's verdict beside the declared one.

    python benchmarks/hacks/run_corpus.py [--device auto|cpu|cuda] [--only NAME,...] [--out FILE.json]

Every file of benchmarks/hacks/ (one candidate per known reward hack, and legitimate kernels that
must pass every guard) declares its task and expected verdict in its docstring (see
cudaforge/eval/guards/corpus.py). Without a GPU, the entries that need one are listed as skipped.
Exit status 1 when any verdict differs from the declared one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from cudaforge.eval.evaluator import Evaluator  # noqa: E402
from cudaforge.eval.guards.corpus import check_result, find_entry_task, load_corpus, verdict_line  # noqa: E402


def main() -> int:
    """Evaluate the corpus; print the table; write JSON rows to --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--only", default="", help="comma-separated file stems")
    parser.add_argument("--timing-trials", type=int, default=30)
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()

    import torch

    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    chosen = {n.strip() for n in args.only.split(",") if n.strip()}
    entries = [e for e in load_corpus() if not chosen or e.name in chosen]
    rows, failed = [], 0
    print("| file | task | expected | got | ok | seconds |\n| --- | --- | --- | --- | --- | --- |")
    for entry in entries:
        row = {"file": entry.name, "task": entry.task, "expected": entry.expected()}
        if entry.needs_cuda and not cuda:
            row.update(got="skipped (needs CUDA)", ok=None, seconds=0.0, problems=[])
        elif entry.missing_modules():
            row.update(got=f"skipped (needs {', '.join(entry.missing_modules())})", ok=None, seconds=0.0, problems=[])
        else:
            cfg = {"device": "cuda" if cuda else "cpu", "timing_trials": args.timing_trials, "warmup": 5, **entry.config}
            started = time.monotonic()
            result = Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)
            problems = check_result(entry, result)
            failed += bool(problems)
            row.update(got=verdict_line(result), ok=not problems, seconds=round(time.monotonic() - started, 1),
                       problems=problems, message=result.message, findings=result.guard_findings)
        ok = {True: "yes", False: "**NO**", None: "-"}[row["ok"]]
        print(f"| {entry.name} | {entry.task} | {row['expected']} | {row['got']} | {ok} | {row['seconds']} |", flush=True)
        for problem in row["problems"]:
            print(f"|   | | | {problem} | | |")
        rows.append(row)
    ran = [r for r in rows if r["ok"] is not None]
    print(f"\n{len(ran) - failed}/{len(ran)} verdicts as declared; {len(rows) - len(ran)} skipped (need CUDA or a module)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"cuda": cuda, "rows": rows}, indent=1, default=str))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
