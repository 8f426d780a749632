"""``cudaforge profile``: one candidate profiled with Nsight Compute."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.eval import task_and_candidate
from cudaforge.cli.hydra_args import run_app

if TYPE_CHECKING:
    from cudaforge.config import ProfileConfig

HELP = """usage: cudaforge profile task=TASK candidate=PATH.py [key=value ...]

Profiles one candidate with Nsight Compute (its own kernels only; a named metric set), with the task's roofline
and the GPU's spec sheet. Without a GPU it reports the task's FLOPs and minimum bytes only. TASK as for eval.

examples:
  cudaforge profile task=level1/3_MatmulBiasReLU candidate=benchmarks/candidates/cuda_matmul_bias_relu.py
  cudaforge profile task=level1/2_Softmax candidate=k.py profile=basic output=profile.json
  cudaforge profile task=level1/1_ReLU candidate=k.py profile=cudaforge24_hopper

config groups: suite, profile, eval
exit status: 0 profiled (or only the roofline, without a GPU), 1 the profile failed, 2 a usage error."""


def _profile(cfg: DictConfig) -> int:

    from cudaforge.eval import Evaluator
    from cudaforge.profile import Profiler

    task, path = task_and_candidate(cfg)
    profile_cfg = cast("ProfileConfig", OmegaConf.to_object(cfg.profile))
    build = Evaluator(OmegaConf.to_object(cfg.eval)).build_settings().to_dict()  # the evaluator's cache: no rebuild
    profiler = Profiler(profile_cfg, cache_dir=profile_cfg.cache_dir, lock_dir=profile_cfg.lock_dir, build=build)
    where = f"GPU {profiler.gpus[0]}" if profiler.gpus else "no GPU (FLOPs and bytes only)"
    print(f"profiling {path} for {task.id} on {where} ({profile_cfg.metric_set.value}) ...", flush=True)
    source = path.read_text()
    if profiler.gpus:
        Evaluator(OmegaConf.to_object(cfg.eval)).precompile(source)  # the trusted side builds: the sandbox only reads
    result = profiler.profile(task, source)
    print(result.summary())
    if cfg.output:
        Path(cfg.output).write_text(result.to_json())
        print(f"result written to {cfg.output}")
    return 0 if result.status.value in ("ok", "fallback", "unavailable") else 1


def main(args: list[str]) -> int:
    return run_app("profile", _profile, args)
