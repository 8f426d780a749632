"""``cudaforge integrate``: a run's best kernels patched into a whole model, checked and timed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import group_keys, positional_runs, run_app

if TYPE_CHECKING:
    from cudaforge.config import CudaforgeConfig

HELP = """usage: cudaforge integrate RUN_DIR [RUN_DIR ...] [recipe=NAME|FILE] [key=value ...]

The runs' best kernels patched into a whole model (a recipe: the model built from its config with random weights,
and which module class each task's kernel replaces), checked against the eager model in the sandbox and, on a GPU,
timed end to end against eager and torch.compile. Writes <recipe>.json and .md into <first run>/integrate/, which
`cudaforge report` shows beside each kernel's standalone speedup.

examples:
  cudaforge integrate outputs/runs/A                                  # recipe tiny_mlp: the tiny suite's kernels
  cudaforge integrate RUN recipe=transformer_block                    # a main-suite run's LayerNorm and GELU
  cudaforge integrate RUN_A RUN_B recipe=tiny_mlp out_dir=results/     # recipe=PATH.py: a recipe of your own

keys: integrate.* (given without the prefix: recipe, out_dir), eval.* (the protocol). exit status: 0 the patched model
is correct, 1 it is not (or nothing could be patched), 2 a usage error. See docs/reports.md, "In a model"."""


def _integrate(cfg: DictConfig) -> int:
    import dataclasses

    from cudaforge.eval import Evaluator
    from cudaforge.run.integrate import evaluation_config, integrate, summary_lines

    config = cast("CudaforgeConfig", OmegaConf.to_object(cfg))
    evaluator = Evaluator(evaluation_config(dataclasses.asdict(config.eval)))
    try:
        record = integrate(config.integrate.recipe, list(config.integrate.runs), evaluator, config.integrate.out_dir)
    finally:
        evaluator.close()
    print("\n".join(summary_lines(record)))
    print(f"written to {record['written'][0]} and {Path(record['written'][1]).name}")
    return 0 if record.get("correct") else 1


def main(args: list[str]) -> int:
    from cudaforge.config import IntegrateConfig

    return run_app(
        "integrate", _integrate, positional_runs(group_keys("integrate", IntegrateConfig, args), "integrate.runs")
    )
