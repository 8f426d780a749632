"""The kernels we ship, under our protocol and the CudaForge paper's: which verdicts and speedups change, and why.

    python benchmarks/protocol_compare.py --out DIR [--device auto|cpu|cuda] [--jobs N] [--cache DIR] [--only NAME,...]
        [--protocols default,cudaforge_paper]

Every bundled candidate (with the tasks `benchmarks/compare_checkouts.py` pairs them with) and every hack-corpus
file (with its declared task and `CONFIG:` settings) is evaluated with `eval=default` and with
`eval=cudaforge_paper` (the presets' YAML files, so the script measures what the configs say). Writes
`protocols.json` (every result's verdict, speedup, message and what changed the verdict) and `protocols.md` (the
table and the counts), and prints the table. On a CPU only correctness is compared (no timing); on a GPU the
speedups too. The paper's timing includes the host's launch costs, so its speedups are only comparable when
measured one evaluation at a time (`--jobs 1 --protocols cudaforge_paper`). For a run's own kernels use `cudaforge rescore RUN_DIR eval=...` instead.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from compare_checkouts import PAIRS  # noqa: E402

from cudaforge.eval.evaluator import Evaluator  # noqa: E402
from cudaforge.eval.guards.corpus import check_result, find_entry_task, load_corpus  # noqa: E402
from cudaforge.run.rescore import changed_by  # noqa: E402
from cudaforge.tasks import find_task, selection  # noqa: E402

PRESETS = HERE.parent / "cudaforge" / "resources" / "configs" / "eval"
PROTOCOLS = ("default", "cudaforge_paper")


def preset(name: str) -> dict:
    """An eval option's settings as its YAML file states them (the schema's defaults fill the rest)."""
    data = yaml.safe_load((PRESETS / f"{name}.yaml").read_text()) or {}
    return {k: v for k, v in data.items() if k != "defaults"}


def kernels(only: set[str], cuda: bool) -> list[tuple[str, object, str, dict, object]]:
    """(name, task, source, extra eval settings, corpus entry or None) for every bundled candidate and corpus file (those that need CUDA
    only with ``cuda``)."""
    out = []
    for suite, task_id, file in PAIRS:
        name = f"{file} on {suite}/{task_id}"
        if not only or file.removesuffix(".py") in only:
            out.append((name, find_task(selection(suite), task_id), (HERE / "candidates" / file).read_text(), {}, None))
    for entry in load_corpus():
        if (not only or entry.name in only) and (cuda or not entry.needs_cuda):
            out.append((entry.name, find_entry_task(entry), entry.source, dict(entry.config), entry))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--jobs", type=int, default=1, help="evaluations at a time (their timed parts never overlap)")
    parser.add_argument("--cache", default=None, help="build cache folder (eval.build_cache_dir) for both protocols")
    parser.add_argument("--only", default="", help="comma-separated candidate or corpus file stems")
    parser.add_argument(
        "--protocols",
        default=",".join(PROTOCOLS),
        help="comma-separated eval presets to run (default: both); with one, no verdicts are compared",
    )
    args = parser.parse_args()
    protocols = [p.strip() for p in args.protocols.split(",") if p.strip()]
    if not protocols or any(p not in PROTOCOLS for p in protocols):
        parser.error(f"--protocols {args.protocols!r}: choose from {', '.join(PROTOCOLS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    only = {n.strip() for n in args.only.split(",") if n.strip()}
    rows = []
    print("| kernel | task | ours | paper's | what changed it |\n| --- | --- | --- | --- | --- |", flush=True)
    import torch

    cuda = args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available())
    partial = (args.out / "protocols.partial.jsonl").open("a")  # each finished row at once: a cut-off run keeps them
    lock = threading.Lock()

    def compare(item):
        name, task, source, extra, entry = item
        row = {"kernel": name, "task": task.id}
        for protocol in protocols:
            started = time.monotonic()
            cache = {"build_cache_dir": args.cache} if args.cache else {}
            with Evaluator({**preset(protocol), **extra, **cache, "device": args.device}) as evaluator:
                result = evaluator.evaluate(task, source)
            row[protocol] = {
                "status": result.status.value,
                "seconds": round(time.monotonic() - started, 1),
                "speedup": result.speedup.median if result.speedup else None,
                "changed_by": "" if result.status.value == "correct" else changed_by(result),
                "findings": [f["guard"] for f in result.guard_findings],
                "message": result.message[:600],
            }
            if protocol == "default" and entry is not None:  # our protocol must give the corpus its declared verdict
                row["declared_problems"] = check_result(entry, result)
        missing = {"status": "not run", "speedup": None, "changed_by": ""}
        ours, paper = row.get("default", missing), row.get("cudaforge_paper", missing)
        row["verdict_changed"] = len(protocols) == 2 and ours["status"] != paper["status"]
        shown = lambda r: r["status"] + (f" {r['speedup']:.3f}x" if r["speedup"] else "")  # noqa: E731
        why = ours["changed_by"] or paper["changed_by"] if row["verdict_changed"] else ""
        with lock:
            print(f"| {name} | {task.id} | {shown(ours)} | {shown(paper)} | {why} |", flush=True)
            partial.write(json.dumps(row) + "\n")
            partial.flush()
        return row

    # Evaluations at a time: the evaluator's GPU lock keeps their timed parts apart, the rest overlaps.
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(compare, kernels(only, cuda)))
    partial.close()
    if len(protocols) == 1:  # one protocol: its verdicts and speedups, nothing to compare
        (args.out / "protocols.json").write_text(
            json.dumps({"device": args.device, "protocols": protocols, "jobs": args.jobs, "rows": rows}, indent=1)
        )
        return 0
    flips = Counter((r["default"]["status"], r["cudaforge_paper"]["status"]) for r in rows if r["verdict_changed"])
    summary = [
        f"{sum(r['verdict_changed'] for r in rows)} of {len(rows)} kernels get another verdict under the "
        "paper's protocol than under ours:"
    ] + [f"- ours {a}, paper's {b}: {n}" for (a, b), n in sorted(flips.items())]
    timed = [
        (r["default"]["speedup"], r["cudaforge_paper"]["speedup"])
        for r in rows
        if r["default"]["speedup"] and r["cudaforge_paper"]["speedup"]
    ]
    if timed:
        ratios = sorted(p / o for o, p in timed)
        summary.append(
            f"Speedups timed under both ({len(timed)} kernels): paper's / ours median {ratios[len(ratios) // 2]:.3f} "
            f"(from {ratios[0]:.3f} to {ratios[-1]:.3f})."
        )
    undeclared = [f"{r['kernel']}: {'; '.join(r['declared_problems'])}" for r in rows if r.get("declared_problems")]
    summary.append(
        f"Corpus entries whose verdict under our protocol is not the declared one: {len(undeclared)}"
        + "".join(f"\n- {u}" for u in undeclared)
    )
    print("\n" + "\n".join(summary))
    (args.out / "protocols.json").write_text(
        json.dumps({"device": args.device, "rows": rows, "summary": summary}, indent=1)
    )
    table = ["| kernel | task | ours | paper's | what changed it |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        o, p = r["default"], r["cudaforge_paper"]
        table.append(
            f"| {r['kernel']} | {r['task']} | {o['status']} | {p['status']} | "
            f"{(o['changed_by'] or p['changed_by']) if r['verdict_changed'] else ''} |"
        )
    (args.out / "protocols.md").write_text("\n".join(table + [""] + summary) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
