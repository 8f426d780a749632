"""The planted-fault benchmark: how often the checker is wrong, measured (issue 52).

    python benchmarks/faults/run.py --out DIR [--protocols default,cudaforge_authors,kernelbench,kernelbench_verified]
        [--language triton|cuda] [--kernels GLOB] [--per-operator 3] [--jobs 2] [--faults FILE.json]

Fault operators (``operators.py``) are applied automatically to the honest kernels under ``kernels/<language>/``
(each kernel names its task in ``tasks/`` by its file name: ``level2_1_LinearScale_folded.py`` is a kernel for
``level2/1_LinearScale``); at most ``--per-operator`` faults per kernel and operator are kept, evenly spread over the
sites. The oracle (``oracle.py``) runs each fault beside its honest kernel on every shape, parameter state and input
distribution it has, and only faults that change an output count. Each honest kernel and each counted fault is then
evaluated by the real ``Evaluator`` under every protocol (with the held-out shapes after a correct verdict where the
protocol checks them), and the verdict is read as:

- ``rejected``: not correct (incorrect, rejected by a guard, crashed ...);
- ``flagged``: correct, but carrying a finding that the report counts apart (``precision``, ``precision_fp64``,
  ``parameters_not_varied``) or failing a held-out shape;
- ``missed``: correct and unflagged.

The catch rate is (rejected + flagged) / faults, by kind and overall; honest kernels must all be correct. ``--faults``
evaluates faults written elsewhere instead (a JSON list of ``{kernel, kind, name, source}``), so that faults written
by someone else are measured the same way; it also takes an earlier run's ``faults.json`` (with ``--no-oracle``, its
oracle's verdicts are kept, and where a results folder kept no sources the operators make them again). Writes ``faults.json`` (every row) and ``summary.md`` under ``--out``.
Triton runs on the CPU in the interpreter; CUDA kernels need a GPU.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

PROTOCOLS = ["default", "cudaforge_authors", "kernelbench", "kernelbench_verified"]


def preset(name: str, overrides: list[str]) -> Any:
    """The ``EvalConfig`` of the ``eval=<name>`` preset, composed by Hydra as ``cudaforge`` composes it."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from cudaforge.config import register_configs
    from cudaforge.paths import CONFIG_DIR

    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3", job_name="faults"):
        cfg = compose("cudaforge", overrides=[f"eval={name}", *[f"eval.{o}" for o in overrides]])
    return OmegaConf.to_object(cfg.eval)


def task_of(kernel: Path, tasks: dict[str, Any]) -> Any:
    """The task a kernel file names: the longest ``level<L>_<task>`` prefix of its stem."""
    level, _, rest = kernel.stem.partition("_")
    matches = [
        t for tid, t in tasks.items() if tid.startswith(f"faults/{level}/") and rest.startswith(tid.split("/")[-1])
    ]
    if not matches:
        raise SystemExit(f"{kernel.name}: names no task of benchmarks/faults/tasks")
    return max(matches, key=lambda t: len(t.id))


def spread(faults: list[Any], per_operator: int) -> list[Any]:
    """At most ``per_operator`` faults of each operator, evenly spread over its sites (deterministic)."""
    kept = []
    for operator in dict.fromkeys(f.operator for f in faults):
        group = [f for f in faults if f.operator == operator]
        if len(group) <= per_operator:
            kept += group
        else:
            step = len(group) / per_operator
            kept += [group[int(i * step)] for i in range(per_operator)]
    return kept


def make_faults(
    kernels: list[Path], tasks: dict[str, Any], per_operator: int, jobs: int = 1
) -> tuple[list[dict], list[dict]]:
    """(honest rows, fault rows) with the oracle's verdict on each fault (``jobs`` oracles at once)."""
    import oracle
    from operators import all_faults

    honest, faults = [], []
    for path in kernels:
        task = task_of(path, tasks)
        source = path.read_text()
        wrong = oracle.honest_is_right(task.source, source)
        honest.append({"kernel": path.name, "task": task.id, "source": source, "oracle_wrong": wrong})
        constants = oracle.parameter_constants(task.source, source)
        sizes = oracle.scored_sizes(task.source, source)
        for fault in spread(all_faults(source, constants, sizes), per_operator):
            faults.append(
                {"kernel": path.name, "task": task.id, "kind": fault.kind, "name": fault.name, "source": fault.source}
            )
    judge_all(faults, tasks, {h["kernel"]: h["source"] for h in honest}, jobs)
    return honest, faults


def with_sources(faults: list[dict], paths: dict[str, Path], tasks: dict[str, Any]) -> None:
    """Each fault's ``source``, made again by the operators from its honest kernel (a results folder's faults.json
    keeps the verdicts, not the sources): matched by kernel and fault name; one the operators no longer make stops
    the run, said which."""
    import oracle
    from operators import all_faults

    made: dict[tuple[str, str], str] = {}
    for kernel in sorted({f["kernel"] for f in faults}):
        task = task_of(paths[kernel], tasks)
        source = paths[kernel].read_text()
        constants = oracle.parameter_constants(task.source, source)
        sizes = oracle.scored_sizes(task.source, source)
        made.update({(kernel, fault.name): fault.source for fault in all_faults(source, constants, sizes)})
    lost = [f"{f['kernel']} {f['name']}" for f in faults if (f["kernel"], f["name"]) not in made]
    if lost:
        raise SystemExit(f"faults the operators no longer make (the kernels or operators changed): {lost[:5]}")
    for f in faults:
        f["source"] = made[(f["kernel"], f["name"])]


def judge_all(faults: list[dict], tasks: dict[str, Any], honest: dict[str, str], jobs: int) -> None:
    """The oracle's verdict on each fault, ``jobs`` at once, each in a process of its own."""
    import oracle

    def one(row: dict) -> None:
        started = time.monotonic()
        verdict = oracle.judge_isolated(tasks[row["task"]].source, honest[row["kernel"]], row["source"])
        row.update(
            equivalent=verdict.equivalent,
            compiles=verdict.compiles,
            witness=verdict.witness,
            oracle_s=round(time.monotonic() - started, 2),
        )
        state = "equivalent" if verdict.equivalent else "changes" if verdict.compiles else "does not compile"
        print(f"  {row['kernel']} {row['kind']:18} {row['name'][:60]:60} {state}", flush=True)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, faults))


def outcome(result: Any, held: dict[str, Any] | None) -> tuple[str, str]:
    """(``rejected`` | ``flagged`` | ``missed``, why) for one evaluation and its held-out record."""
    from cudaforge.eval.held_out import shapes_pass
    from cudaforge.types import CHECK_FLAGS

    if not result.correct:
        return (
            "rejected",
            f"{result.status.value}: {(result.message or '').strip().splitlines()[0][:160] if result.message else ''}",
        )
    flags = sorted({f["guard"] for f in result.guard_findings if f.get("guard") in CHECK_FLAGS})
    if flags:
        return "flagged", "findings: " + ", ".join(flags)
    if held and shapes_pass(held) is False:
        failed = [
            r["shape"] + (f" ({', '.join(r['flags'])})" if r.get("flags") else "")
            for r in held["shapes"]
            if r.get("status") != "skipped" and (not r.get("correct") or r.get("flags"))
        ]
        return "flagged", "held-out shapes failed: " + ", ".join(failed)
    return "missed", "correct, no finding"


def evaluate_all(
    rows: list[dict], tasks: dict[str, Any], protocol: str, cfg: Any, jobs: int, progress=lambda: None
) -> None:
    """Each row evaluated under ``protocol`` (its held-out shapes too, when the protocol checks them);
    ``progress()`` after each."""
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.eval.held_out import check_held_out
    from cudaforge.eval.verifier import CPU_INPUT_BYTES

    evaluator = Evaluator(cfg)
    limit = CPU_INPUT_BYTES if not evaluator.gpus else int(cfg.held_out_max_input_mb) << 20

    def one(row: dict) -> None:
        task = tasks[row["task"]]
        started = time.monotonic()
        result = evaluator.evaluate(task, row["source"])
        held = None
        if result.correct and cfg.held_out_shapes:
            held = check_held_out(evaluator, task, row["source"], max_input_bytes=limit)
        verdict, why = outcome(result, held)
        row.setdefault("protocols", {})[protocol] = {
            "outcome": verdict,
            "why": why,
            "status": result.status.value,
            "findings": sorted({f["guard"] for f in result.guard_findings}),
            "fp64_ratio": (result.checks.get("fp64") or {}).get("ratio"),
            "seconds": round(time.monotonic() - started, 2),
        }
        label = row.get("name", "honest")
        print(f"  [{protocol}] {row['kernel']} {label[:50]:50} {verdict}: {why[:90]}", flush=True)
        progress()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, rows))
    evaluator.close()


def summary(honest: list[dict], faults: list[dict], protocols: list[str]) -> dict[str, Any]:
    """Catch rates by protocol and kind, and the honest kernels' verdicts."""
    counted = [f for f in faults if not f["equivalent"] and f.get("compiles", True)]
    kinds = sorted({f["kind"] for f in counted})
    out: dict[str, Any] = {
        "faults": len(faults),
        "counted": len(counted),
        "equivalent": sum(bool(f["equivalent"]) for f in faults),
        "not_compiling": sum(not f.get("compiles", True) for f in faults),
    }
    for protocol in protocols:
        rows = [f["protocols"][protocol] for f in counted if protocol in f.get("protocols", {})]
        entry = {
            "caught": sum(r["outcome"] != "missed" for r in rows),
            "rejected": sum(r["outcome"] == "rejected" for r in rows),
            "flagged": sum(r["outcome"] == "flagged" for r in rows),
            "total": len(rows),
            "honest_correct": sum(
                h["protocols"][protocol]["status"] == "correct" for h in honest if protocol in h.get("protocols", {})
            ),
            "honest_flagged": sum(
                h["protocols"][protocol]["outcome"] == "flagged" for h in honest if protocol in h.get("protocols", {})
            ),
            "honest_total": sum(protocol in h.get("protocols", {}) for h in honest),
            "by_kind": {},
        }
        for kind in kinds:
            krows = [
                f["protocols"][protocol] for f in counted if f["kind"] == kind and protocol in f.get("protocols", {})
            ]
            entry["by_kind"][kind] = {
                "caught": sum(r["outcome"] != "missed" for r in krows),
                "rejected": sum(r["outcome"] == "rejected" for r in krows),
                "total": len(krows),
            }
        out[protocol] = entry
    return out


def markdown(stats: dict[str, Any], protocols: list[str], faults: list[dict], command: str) -> str:
    """The summary table: catch rate (rejected + flagged) and rejected alone, by kind and protocol."""

    def pct(a: int, b: int) -> str:
        return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "-"

    lines = [
        "# Planted faults: the checker's catch rate",
        "",
        f"Command: `{command}`",
        "",
        f"{stats['faults']} faults made: {stats['equivalent']} equivalent on every input the oracle tried and "
        f"{stats['not_compiling']} that do not compile are left out; {stats['counted']} counted.",
        "",
        "| kind | " + " | ".join(protocols) + " |",
        "| --- | " + " | ".join("---:" for _ in protocols) + " |",
    ]
    kinds = sorted({k for p in protocols for k in stats[p]["by_kind"]})
    for kind in kinds:
        cells = [pct(stats[p]["by_kind"][kind]["caught"], stats[p]["by_kind"][kind]["total"]) for p in protocols]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines.append(
        "| **all: caught** | "
        + " | ".join(f"**{pct(stats[p]['caught'], stats[p]['total'])}**" for p in protocols)
        + " |"
    )
    lines.append(
        "| all: rejected | " + " | ".join(pct(stats[p]["rejected"], stats[p]["total"]) for p in protocols) + " |"
    )
    lines.append(
        "| honest correct | "
        + " | ".join(pct(stats[p]["honest_correct"], stats[p]["honest_total"]) for p in protocols)
        + " |"
    )
    lines.append("| honest flagged | " + " | ".join(str(stats[p]["honest_flagged"]) for p in protocols) + " |")
    missed = [f for f in faults if any(v["outcome"] == "missed" for v in f.get("protocols", {}).values())]
    if missed:
        lines += ["", "Missed (by at least one protocol):", ""]
        for f in missed:
            which = [p for p in protocols if f.get("protocols", {}).get(p, {}).get("outcome") == "missed"]
            lines.append(
                f"- `{f['kernel']}` {f['kind']} `{f['name']}`: missed by {', '.join(which)}; oracle: {f['witness']}"
            )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--protocols", default=",".join(PROTOCOLS))
    parser.add_argument("--language", default="triton", choices=["triton", "cuda"])
    parser.add_argument("--kernels", default="*", help="a glob over kernels/<language>/ file names")
    parser.add_argument("--per-operator", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2, help="evaluations at once")
    parser.add_argument("--faults", type=Path, help="evaluate these faults (JSON) instead of the operators'")
    parser.add_argument("--set", action="append", default=[], help="an eval override for every protocol (key=value)")
    parser.add_argument(
        "--no-oracle",
        action="store_true",
        help="with --faults: no oracle run; an earlier run's faults.json keeps its oracle's verdicts, other faults "
        "count as changing an output, as their author checked",
    )
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import torch

    if not torch.cuda.is_available():
        os.environ["TRITON_INTERPRET"] = "1"  # the oracle runs Triton kernels in this process: on the CPU, interpreted

    from cudaforge.tasks import load_directory

    tasks = {t.id: t for t in load_directory(HERE / "tasks", suite="faults")}
    kernels = sorted(
        p for p in (HERE / "kernels" / args.language).glob("*.py") if fnmatch.fnmatch(p.name, args.kernels)
    )
    protocols = [p for p in args.protocols.split(",") if p]
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if args.faults:
        given = json.loads(args.faults.read_text())
        if isinstance(given, dict):  # an earlier run's faults.json: its faults, without their verdicts
            given = [{k: v for k, v in f.items() if k != "protocols"} for f in given["faults"]]
        paths = {f["kernel"]: HERE / "kernels" / args.language / f["kernel"] for f in given}
        sourceless = [f for f in given if "source" not in f]
        if sourceless:  # a packed faults.json keeps no sources: the operators make them again, the same
            with_sources(sourceless, paths, tasks)
        honest = [
            {"kernel": name, "task": task_of(path, tasks).id, "source": path.read_text(), "oracle_wrong": ""}
            for name, path in sorted(paths.items())
        ]
        faults = [{**f, "task": task_of(paths[f["kernel"]], tasks).id} for f in given]
        if args.no_oracle:
            for f in faults:
                if "equivalent" not in f:  # a faults.json of an earlier run keeps its oracle's verdicts
                    f.update(equivalent=False, compiles=True, witness="as its author checked it (no oracle run)")
        else:
            judge_all(faults, tasks, {h["kernel"]: h["source"] for h in honest}, args.jobs)
    else:
        honest, faults = make_faults(kernels, tasks, args.per_operator, args.jobs)
    wrong = [h for h in honest if h["oracle_wrong"]]
    if wrong:
        raise SystemExit(f"honest kernels that do not match their reference: {wrong}")
    counted = [f for f in faults if not f["equivalent"] and f.get("compiles", True)]
    print(f"{len(faults)} faults, {len(counted)} change an output; evaluating under {', '.join(protocols)}", flush=True)
    command = "python benchmarks/faults/run.py " + " ".join(sys.argv[1:])
    done: list[str] = []
    lock = threading.Lock()

    def write(current: str | None = None) -> None:  # what is done so far: a run stopped early keeps it
        with lock:
            names = done + ([current] if current else [])
            stats = summary(honest, faults, names)
            stats["seconds"] = round(time.monotonic() - started, 1)
            (args.out / "faults.json").write_text(json.dumps({"summary": stats, "honest": honest, "faults": faults}))
            (args.out / "summary.md").write_text(markdown(stats, names, faults, command))

    write()
    for protocol in protocols:
        cfg = preset(protocol, args.set)
        evaluate_all(honest + counted, tasks, protocol, cfg, args.jobs, progress=lambda p=protocol: write(p))
        done.append(protocol)
        write()
    print((args.out / "summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
