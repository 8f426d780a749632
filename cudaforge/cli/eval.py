"""``cudaforge eval``: one candidate evaluated against one task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app

if TYPE_CHECKING:
    from cudaforge.types import Task

HELP = """usage: cudaforge eval task=TASK candidate=PATH.py [key=value ...]

Evaluates one candidate kernel against a task: static checks, build, correctness trials against the reference,
and on a GPU the timing (speedup with its confidence interval) and the integrity guards; then a correct candidate
on the task's held-out shapes (eval.held_out_shapes=false skips them; eval.held_out_decides=true makes a failed one
a failure). On a CPU, tasks sized for a GPU are checked on their 'small' inputs, without timing.
TASK is a task id (main/level1/1_GELU), a unique part of one (level1/1_GELU, 1_GELU; any bundled suite) or the
path of a problem file in KernelBench format.

examples:
  cudaforge eval task=level1/1_ReLU candidate=benchmarks/candidates/triton_relu.py
  cudaforge eval task=main/level1/1_GELU candidate=my_gelu.py output=result.json
  cudaforge eval task=problems/my_op.py candidate=my_op_kernel.py eval=quick

config groups: suite, eval
exit status: 0 correct, 1 evaluated and not correct, 2 a usage error, 3 compiled only, not verified (a CUDA
candidate on a machine without a GPU: nothing was run). See docs/evaluation.md."""


EVAL_COMPILED_ONLY = 3
"""``cudaforge eval``'s status for a candidate that compiled and was not run (no GPU): neither correct nor wrong."""


def task_and_candidate(cfg: DictConfig) -> tuple[Task, Path]:
    """The task named by ``task=`` and the path of ``candidate=``, or a clear error."""

    from cudaforge.tasks import find_task

    if not cfg.task or not cfg.candidate:
        raise ValueError("say which: task=<id> candidate=<path.py> (ids from `cudaforge tasks list`)")
    task = find_task(OmegaConf.to_object(cfg.suite), cfg.task)
    path = Path(cfg.candidate).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such candidate file")
    return task, path


def _eval(cfg: DictConfig) -> int:

    from cudaforge.eval import Evaluator

    task, path = task_and_candidate(cfg)
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    where = f"GPU {evaluator.gpus[0]}" if evaluator.gpus else "the CPU (no GPU: no timing)"
    print(f"evaluating {path} against {task.id} on {where} ...", flush=True)
    source = path.read_text()
    result = evaluator.evaluate(task, source)
    print(result.report())
    record = held_out(cfg, evaluator, task, source) if result.correct else {}
    if cfg.output:
        Path(cfg.output).write_text(json.dumps({**result.to_dict(), "held_out": record}, sort_keys=True))
        print(f"result written to {cfg.output}")
    if result.status.value == "compiled":
        return EVAL_COMPILED_ONLY  # built, but nothing ran: a script must not read it as correct
    if record and cfg.eval.held_out_decides and record.get("passed") is False:
        print("INCORRECT on held-out shapes (eval.held_out_decides=true): the scored inputs alone said correct")
        return 1
    return 0 if result.status.value == "correct" else 1


def held_out(cfg: DictConfig, evaluator: Any, task: Task, source: str) -> dict[str, Any]:
    """A correct candidate on the task's held-out shapes (``eval.held_out_shapes``), one line per shape printed; the
    record (``check_held_out``'s, with ``passed``), or {} when the setting is off."""
    if not cfg.eval.held_out_shapes:
        return {}
    from cudaforge.eval import CPU_INPUT_BYTES, check_held_out, shapes_pass

    limit = int(cfg.eval.held_out_max_input_mb) << 20
    if not evaluator.gpus:
        limit = min(limit, CPU_INPUT_BYTES)
    print("held-out shapes (eval.held_out_shapes; eval.held_out_shapes=false skips them) ...", flush=True)
    record = check_held_out(evaluator, task, source, max_input_bytes=limit)
    for row in record["shapes"]:
        sizes = ", ".join(f"{k}={v}" for k, v in row["sizes"].items())
        speed = f", {row['speedup']:.3f}x" if row.get("speedup") else ""
        print(
            f"  {row['shape']} ({sizes}): {row['status']}{speed}"
            + (f": {row['message']}" if not row.get("correct") else "")
        )
    if record.get("note"):
        print(f"  none checked: {record['note']}")
    record["passed"] = shapes_pass(record)
    return record


def main(args: list[str]) -> int:
    return run_app("eval", _eval, args)
