"""``cudaforge eval``: one candidate evaluated against one task."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app

HELP = """usage: cudaforge eval task=TASK candidate=PATH.py [key=value ...]

Evaluates one candidate kernel against a task: static checks, build, correctness trials against the reference,
and on a GPU the timing (speedup with its confidence interval) and the integrity guards. On a CPU, tasks sized
for a GPU are checked on their 'small' inputs, without timing.
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


def task_and_candidate(cfg: DictConfig):
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

    from cudaforge.eval.evaluator import Evaluator

    task, path = task_and_candidate(cfg)
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    where = f"GPU {evaluator.gpus[0]}" if evaluator.gpus else "the CPU (no GPU: no timing)"
    print(f"evaluating {path} against {task.id} on {where} ...", flush=True)
    result = evaluator.evaluate(task, path.read_text())
    print(result.report())
    if cfg.output:
        Path(cfg.output).write_text(result.to_json())
        print(f"result written to {cfg.output}")
    if result.status.value == "compiled":
        return EVAL_COMPILED_ONLY  # built, but nothing ran: a script must not read it as correct
    return 0 if result.status.value == "correct" else 1


def main(args: list[str]) -> int:
    return run_app("eval", _eval, args)
