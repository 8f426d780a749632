"""``cudaforge baseline``: a suite's references timed, eager and torch.compile."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import Exit, run_app

HELP = """usage: cudaforge baseline [key=value ...]

Times a suite's reference implementations on the GPU, eager and torch.compile, with confidence intervals, and
writes baseline.jsonl in a run directory. Needs a GPU.

examples:
  cudaforge baseline suite=main
  cudaforge baseline suite=main suite.levels=[1] eval.timing_trials=50
  cudaforge baseline suite=kernelbench suite.root=~/KernelBench/KernelBench output=base.jsonl

config groups: suite, eval
exit status: 0 every reference timed, 1 some failed, 2 no GPU or a usage error."""


def _baseline(cfg: DictConfig) -> int:

    from hydra.core.hydra_config import HydraConfig

    from cudaforge.eval import Evaluator, time_suite
    from cudaforge.tasks import load_suite

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    if not evaluator.gpus:
        print("cudaforge baseline: error: no GPU visible; baselines are GPU timings", file=sys.stderr)
        Exit.refused = True
        return 2
    out = Path(cfg.output) if cfg.output else Path(HydraConfig.get().runtime.output_dir) / "baseline.jsonl"
    print(f"timing {len(tasks)} references on GPU {evaluator.gpus[0]} (eager and torch.compile) -> {out}", flush=True)

    def show(b: Any) -> None:
        with out.open("a") as f:
            f.write(b.to_json() + "\n")
        times = "  ".join(
            f"{m} {s.median:.4f} ms [{s.ci_low:.4f}, {s.ci_high:.4f}]"
            for m in ("eager", "compile")
            if (s := getattr(b, m))
        )
        print(f"{b.task_id}\t{b.status}\t{times}\t{b.message}", flush=True)

    results = time_suite(tasks, evaluator.cfg, evaluator.gpus[0], on_result=show)
    print(f"{sum(b.status == 'ok' for b in results)}/{len(results)} timed; written to {out}")
    return 0 if all(b.status == "ok" for b in results) else 1


def main(args: list[str]) -> int:
    return run_app("baseline", _baseline, args)
