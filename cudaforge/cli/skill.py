"""``cudaforge skill distill`` and ``cudaforge skill compare``: a skill document from a run, and its effect."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import group_keys, positional_runs, run_app

if TYPE_CHECKING:
    from cudaforge.config import CudaforgeConfig

HELP: dict[str, str] = {
    "skill distill": """usage: cudaforge skill distill RUN_DIR [RUN_DIR ...] [key=value ...]

Writes a skill document from the Judge's advice that led to verified speedups in finished runs.

examples:
  cudaforge skill distill RUN
  cudaforge skill distill RUN_A RUN_B model=openai/o3
  cudaforge skill distill RUN allow_untimed=true

keys: skill.* (given without the prefix). exit status: 0 written, 2 a usage error. See docs/teaching.md.""",
    "skill compare": """usage: cudaforge skill compare WITH_RUN WITHOUT_RUN [key=value ...]

The paired difference between a run with a skill and one without it, with confidence intervals.

examples:
  cudaforge skill compare RUN_WITH RUN_WITHOUT
  cudaforge skill compare SWEEP_DIR
  cudaforge skill compare RUN_WITH RUN_WITHOUT output=effect.json

keys: skill.*, report.*. exit status: 0, or 2 a usage error. See docs/teaching.md.""",
}


def _skill_distill(cfg: DictConfig) -> int:
    from cudaforge.llm import LLMError
    from cudaforge.llm.scripted import DEMO_MODEL
    from cudaforge.teach.demo import BANNER, install_demo_distiller
    from cudaforge.teach.skills import distill_from_config, distiller_config

    config = cast("CudaforgeConfig", OmegaConf.to_object(cfg))
    if distiller_config(config.judge, config.skill.model).model == DEMO_MODEL:
        install_demo_distiller()
        print(BANNER, flush=True)
    try:
        result = distill_from_config(config.skill, config.judge, config.llm_cache)
    except LLMError as exc:
        print(f"cudaforge skill distill: error: {exc}", file=sys.stderr)
        return 2
    print(result.document.body())
    print(f"skill written to {result.path} ({len(result.evidence)} pieces of advice as evidence)")
    return 0


def _skill_compare(cfg: DictConfig) -> int:

    from cudaforge.teach.experiment import arms, effect_table, skill_effect

    (with_run, without_run), report = arms(list(cfg.skill.runs)), cfg.report
    effects, notes = skill_effect(
        with_run,
        without_run,
        failed_as=report.failed_as.value,
        bootstrap=report.bootstrap,
        confidence=report.confidence,
        seed=report.seed,
    )
    print(f"with the skill: {with_run}\nwithout: {without_run}\n\n{effect_table(effects, notes)}")
    if cfg.output:
        Path(cfg.output).write_text(json.dumps({"effects": [e.__dict__ for e in effects], "notes": notes}, indent=1))
    return 0


def main(args: list[str], action: str) -> int:
    from cudaforge.config import SkillConfig

    app = {"distill": _skill_distill, "compare": _skill_compare}[action]
    return run_app(f"skill {action}", app, positional_runs(group_keys("skill", SkillConfig, args), "skill.runs"))
