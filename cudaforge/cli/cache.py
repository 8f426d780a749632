"""``cudaforge cache info | clear``: where the caches are, their sizes; emptying them."""

from __future__ import annotations

HELP = """usage: cudaforge cache info | cudaforge cache clear [KIND ...]

Where cudaforge keeps its caches and how big they are: build (CUDA builds), pch (precompiled headers), tilelang
and triton (a source's own TileLang and Triton kernels; triton also the verifier's own), profiles (profiles and
task costs), llm (the file llm_cache.path names; by default each run keeps its own). `clear` empties the kinds
named (without a name: all but llm). Settings such as eval.build_cache_dir=DIR point it elsewhere;
eval.build_cache_max_gb (20) caps build + tilelang + triton.

examples:
  cudaforge cache info
  cudaforge cache clear build
  cudaforge cache clear pch profiles eval.build_cache_dir=/scratch/cudaforge

exit status: 0, or 2 an unknown kind. See docs/evaluation.md, "Caches"."""


def main(rest: list[str]) -> int:
    """``cudaforge cache info`` / ``cudaforge cache clear [KIND ...]`` (no Hydra app: the default locations)."""
    from cudaforge.cache_admin import main_cache

    return main_cache(rest)
