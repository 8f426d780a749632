"""``cudaforge doctor``: what this machine has for a run, and what would stop one."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app

if TYPE_CHECKING:
    from cudaforge.config import CudaforgeConfig

HELP = """usage: cudaforge doctor [key=value ...]

Checks the whole setup and prints one line per check: the GPU, nvcc, ncu and its counters, Triton, the sandbox,
the configured models' keys and servers, and the caches with their sizes. Changes nothing.

examples:
  cudaforge doctor
  cudaforge doctor coder=openai_o3 judge=openai_o3
  cudaforge doctor suite=main

exit status: 0 nothing stops a run, 1 something does (each such line starts with 'x')."""


def _doctor(cfg: DictConfig) -> int:
    from cudaforge.doctor import run_checks
    from cudaforge.tasks import load_suite

    config = cast("CudaforgeConfig", OmegaConf.to_object(cfg))
    tasks = load_suite(config.suite)
    print(
        f"cudaforge doctor: suite {config.suite.name} ({len(tasks)} tasks), coder {config.coder.model}, "
        f"judge {config.judge.model}",
        flush=True,
    )
    checks = run_checks(config, [t.id for t in tasks], say=lambda line: print(line, flush=True))
    blocking = [c for c in checks if c.blocking and not c.ok]
    print("nothing stops a run" if not blocking else f"{len(blocking)} problem(s) stop a run (lines marked x)")
    return 1 if blocking else 0


def main(args: list[str]) -> int:
    if args[:1] and not args[0].startswith("-") and "=" not in args[0]:
        print(f"cudaforge doctor: takes only key=value overrides, not {args[0]!r}", file=sys.stderr)
        return 2
    return run_app("doctor", _doctor, args)
