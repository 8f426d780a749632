"""CuPy: CUDA C++ compiled at run time through ``cupy.RawKernel`` / ``RawModule``."""

from __future__ import annotations

from cudaforge.languages.base import KernelLanguage
from cudaforge.languages.names import RAW_KERNEL, cuda_kernel_names


def _detect(source: str) -> bool:
    return "cupy" in source and ("RawKernel" in source or "RawModule" in source)


def _kernel_names(source: str) -> set[str]:
    return cuda_kernel_names(source) | set(RAW_KERNEL.findall(source))  # a RawKernel's named entry too


LANGUAGE = KernelLanguage(
    name="cupy",
    summary="CUDA C++ compiled at run time by cupy.RawKernel / RawModule",
    detect=_detect,
    kernel_names=_kernel_names,
    builders=("RawKernel", "RawModule", "ElementwiseKernel", "ReductionKernel", "compile_with_cache"),
    prebuild_note="not built ahead: a RawKernel compiles its CUDA source with NVRTC at its first launch, in the "
    "correctness phase (into CuPy's cache under the worker's HOME, its scratch directory).",
)
