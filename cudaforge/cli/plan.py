"""``cudaforge plan``: the dollars, calls and hours to expect; with a run directory, beside what it took."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app, single_run
from cudaforge.track.store import RESULTS_FILE, RunDir

if TYPE_CHECKING:
    from cudaforge.config import CudaforgeConfig

HELP = """usage: cudaforge plan [RUN_DIR] [key=value ...]

Before a campaign: the dollars, LLM calls, tokens and hours to expect for the selected suite under a config (the
same overrides as `cudaforge run`), from the models' prices, the strategy's rounds, per-call figures (plan.* defaults
calibrated on the CudaForge paper, or measured in a finished run with plan.from_run=DIR) and per-round time (the
stored benchmark for this machine's device, or plan.round_seconds). With RUN_DIR: the run's plan beside what it
measured.

examples:
  cudaforge plan experiment=cudaforge_table1 suite.root=~/KernelBench/KernelBench plan.nodes=8 concurrency=4
  cudaforge plan suite=main coder=claude_sonnet_4 judge=openai_o3 plan.from_run=outputs/runs/PILOT
  cudaforge plan outputs/runs/A

keys: plan.* (nodes, gpus, from_run, input_tokens_per_call, output_tokens_per_call, llm_seconds_per_call,
round_seconds), output=FILE (the plan as JSON). exit status: 0 planned, 2 a usage error. See docs/campaigns.md."""


def _run_config(run_dir: Path) -> Any:
    """A run directory's own config (``.hydra/config.yaml``) as a ``CudaforgeConfig`` object."""
    from cudaforge.config import CudaforgeConfig

    saved = RunDir(run_dir).config_path
    if not saved.is_file():
        raise FileNotFoundError(f"{run_dir}: its config (.hydra/config.yaml) is missing, so it cannot be planned")
    from cudaforge.eval import upgrade_saved

    loaded = OmegaConf.to_container(OmegaConf.load(saved))
    if isinstance(loaded, dict) and isinstance(loaded.get("eval"), dict):  # a run of before the guards' nesting
        loaded["eval"] = upgrade_saved(loaded["eval"])
    merged = OmegaConf.merge(OmegaConf.structured(CudaforgeConfig), loaded)
    return OmegaConf.to_object(merged)


def _plan(cfg: DictConfig) -> int:
    from cudaforge.run import plan as planning

    config = cast("CudaforgeConfig", OmegaConf.to_object(cfg))
    device, count = planning.local_device()
    gpus = config.plan.gpus or max(1, count)
    if config.plan.run:
        run_dir = Path(config.plan.run)
        if not (run_dir / RESULTS_FILE).is_file():
            raise FileNotFoundError(f"{run_dir}: not a run directory (no results.jsonl)")
        plan = planning.load(run_dir)
        if plan is None:  # a run made before runs wrote their plan, or a merged campaign: plan it now
            from cudaforge.tasks.identity import read_problem_set

            run_config = _run_config(run_dir)
            n = len((read_problem_set(run_dir) or {}).get("tasks") or {}) or planning.measured(run_dir)["tasks"]
            plan = planning.make_plan(run_config, n, planning.default_figures(run_config.plan, device), gpus)
            print(f"NOTE: {run_dir} holds no {planning.PLAN_FILE}; planned now from its config")
        print(planning.explain(plan))
        print(planning.table(plan, planning.measured(run_dir)))
        return 0
    from cudaforge.tasks import load_suite

    tasks = load_suite(config.suite)
    figures = (
        planning.measured_figures(config.plan.from_run)
        if config.plan.from_run
        else planning.default_figures(config.plan, device)
    )
    plan = planning.make_plan(config, len(tasks), figures, gpus)
    print(planning.explain(plan))
    print(planning.table(plan))
    if cfg.output:
        Path(cfg.output).write_text(json.dumps(plan, indent=2))
    return 0


def main(args: list[str]) -> int:
    return run_app("plan", _plan, single_run(args, "plan.run"))
