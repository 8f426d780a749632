"""The toolchain a build depends on (nvcc, the host compiler, torch, ninja): where it is and what it is. The vendor's
facts (nvcc's path and version, architectures and their flags) come from ``cudaforge.vendors``."""

from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys
from pathlib import Path

from cudaforge.vendors import current

# --------------------------------------------------------------------------- environment


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "missing"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[0] if lines else "unknown"


def _nvcc_path() -> str | None:
    import torch.utils.cpp_extension as ce

    return current().compiler(ce.CUDA_HOME)  # torch's idea of the toolkit first, as its own builds use


@functools.lru_cache(maxsize=1)
def toolchain_fingerprint() -> dict[str, str]:
    """What a build depends on besides its sources: nvcc, host compiler, torch, Python, ninja."""
    import torch
    import torch.utils.cpp_extension as ce

    nvcc = _nvcc_path()
    cxx = ce.get_cxx_compiler() if hasattr(ce, "get_cxx_compiler") else os.environ.get("CXX", "c++")
    return {
        "nvcc": current().compiler_version(nvcc) if nvcc else "missing",
        "cxx": f"{cxx}: {_first_line([cxx, '--version'])}",
        "torch": torch.__version__,
        "torch_cuda": str(torch.version.cuda),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "ninja": _first_line(["ninja", "--version"]),
    }


def pip_cuda_includes() -> list[str]:
    """Header folders of pip's CUDA library wheels (``nvidia/cu13/include`` ...) on ``sys.path``."""
    found = []
    for entry in sys.path:
        base = Path(entry or ".") / "nvidia"
        if base.is_dir():
            found += sorted(
                str(p) for p in base.glob("*/include") if (p / "cusparse.h").exists() or (p / "cublas_v2.h").exists()
            )
    return list(dict.fromkeys(found))
