"""``cudaforge export``: verified kernels, trajectories, preference pairs or every turn, as datasets."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import group_keys, positional_runs, run_app

if TYPE_CHECKING:
    from cudaforge.config import ExportConfig

HELP = """usage: cudaforge export RUN_DIR [RUN_DIR ...] format=sft|trajectories|preferences|turns [key=value ...]

Datasets (JSONL, loadable with Hugging Face datasets) of verified kernels from finished runs, or of every agent turn
labelled with its verdict (format=turns: hacks and failures included), with a card that says how they were made.

examples:
  cudaforge export RUN format=sft
  cudaforge export RUN_A RUN_B format=preferences min_speedup=1.2
  cudaforge export RUN format=turns out_dir=data/

keys: export.* (given without the prefix). exit status: 0 written, 2 a usage error. See docs/teaching.md."""


def _export(cfg: DictConfig) -> int:
    from cudaforge.teach import export_dataset

    result = export_dataset(cast("ExportConfig", OmegaConf.to_object(cfg.export)))
    for notice in getattr(result, "notices", []):
        print(f"NOTE: {notice}", flush=True)
    print(f"{result.rows} {result.format} rows from {len(result.runs)} run(s) written to {result.out_dir}")
    return 0


def main(args: list[str]) -> int:
    from cudaforge.config import ExportConfig

    return run_app("export", _export, positional_runs(group_keys("export", ExportConfig, args), "export.runs"))
