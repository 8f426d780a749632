"""NVIDIA's facts for the vendor seam (``cudaforge.vendors``): nvcc and ``sm_XX`` architectures, Nsight
Compute, NVML and the ``/dev/nvidia*`` device files."""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from cudaforge.vendors.base import GpuVendor
from cudaforge.vendors.nvml import telemetry

DEFAULT_ARCH = "9.0"
"""Architecture built when none is configured and no GPU is visible (H100/H200, sm_90)."""


def detect_arch() -> str | None:
    """Compute capability (``"9.0"``) of the GPU this process would use, or ``None``.

    Asks nvidia-smi first (no CUDA context is created), honouring a numeric
    ``CUDA_VISIBLE_DEVICES``; falls back to torch when CUDA is available to it.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return None
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=index,compute_cap", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=20,
                check=True,
            ).stdout
            caps = dict(line.replace(" ", "").split(",", 1) for line in out.strip().splitlines() if "," in line)
            first = (visible or "").split(",")[0].strip()
            if first in caps:
                return caps[first]
            if caps and not (first and not first.isdigit()):
                return next(iter(caps.values()))
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    torch = sys.modules.get("torch")  # only a process that already uses torch asks it
    try:
        if torch is not None and torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability(0)
            return f"{major}.{minor}"
    except Exception:  # noqa: BLE001 - any failure here just means "unknown"
        pass
    return None


def cuda_home() -> str | None:
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home:
        return home
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return "/usr/local/cuda" if os.path.exists("/usr/local/cuda/bin/nvcc") else None


def nvcc_path(home: str | None = None) -> str | None:
    """nvcc's path: ``$PYTORCH_NVCC``, else ``<home>/bin/nvcc`` (``home``: a toolkit root, else :func:`cuda_home`),
    else nvcc on ``PATH``."""
    if os.environ.get("PYTORCH_NVCC"):
        return os.environ["PYTORCH_NVCC"]
    home = home or cuda_home()
    if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
        return os.path.join(home, "bin", "nvcc")
    return shutil.which("nvcc")


def compiler_version(nvcc: str) -> str:
    """nvcc's version ("Cuda compilation tools, release 13.0, V13.0.88" and its build id), or ``missing``."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "missing"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return " ".join(lines[-2:]) if lines else "unknown"


def arch_flags(arch: str) -> list[str]:
    """nvcc flags that build exactly one architecture: ``"9.0"`` -> ``-gencode=arch=compute_90,code=sm_90``."""
    num = arch.replace("+PTX", "").replace(".", "")
    flags = [f"-gencode=arch=compute_{num},code=sm_{num}"]
    if arch.endswith("+PTX"):
        flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def jit_target(arch: str) -> list[Any] | None:
    """Triton's target for an architecture: ``"9.0a"`` -> ``["cuda", 90, 32]`` (backend, capability, warp size)."""
    match = re.fullmatch(r"(\d+)\.(\d)[a-z]?(\+PTX)?", arch.strip())
    return ["cuda", int(match[1]) * 10 + int(match[2]), 32] if match else None


def names_arch(flags: list[str]) -> bool:
    return any(re.search(r"(^|-)(arch|gencode|code|gpu-architecture|gpu-code)\b", f) for f in flags)


def toolkit_roots() -> list[str]:
    roots = set()
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            roots.add(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.add(str(Path(os.path.realpath(nvcc)).parents[1]))
        roots.add(str(Path(nvcc).parent))
    roots.update(glob.glob("/usr/local/cuda*"))
    roots.update(p for p in ("/usr/local/nvidia", "/opt/nvidia") if os.path.isdir(p))
    return sorted(roots)


def device_nodes() -> list[str]:
    """The NVIDIA GPU device files (``/dev/nvidia*``, ``/dev/nvidia-caps/*``) that exist here."""
    nodes = glob.glob("/dev/nvidia*") + glob.glob("/dev/nvidia-caps/*")
    return [n for n in nodes if os.path.exists(n) and not os.path.isdir(n)]


@functools.lru_cache(maxsize=8)
def ncu_version(ncu: str) -> str | None:
    """``ncu --version``'s version (``2025.3.1.0``), or None."""
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"Version\s+([\d.]+)", out)
    return match.group(1) if match else None


def resolve_ncu(ncu_path: str) -> str | None:
    """The ncu executable's path, or None when there is none (also tries /usr/local/cuda/bin)."""
    found = shutil.which(ncu_path)
    if found is None and os.sep not in ncu_path:
        cuda_home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
        candidate = Path(cuda_home) / "bin" / ncu_path
        found = str(candidate) if os.access(candidate, os.X_OK) else None
    return found


def gpu_model_name(gpu: str | int) -> str:
    """The model name of physical GPU ``gpu`` (index or UUID) from NVML, for cache keys; never raises."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            text = str(gpu)
            handle = (
                pynvml.nvmlDeviceGetHandleByIndex(int(text))
                if text.isdigit()
                else pynvml.nvmlDeviceGetHandleByUUID(text)
            )
            name = pynvml.nvmlDeviceGetName(handle)
            return name.decode() if isinstance(name, bytes) else str(name)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no NVML: a key that still separates devices
        return f"gpu-{gpu}"


def device_lost(gpu: str | int) -> str | None:
    """Why NVML cannot reach physical GPU ``gpu`` any more (``GPU is lost``, the driver not loaded, the device
    gone), or None when it answers a memory query or NVML itself is not installed (nothing can tell)."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError (driver not loaded), OSError (libnvidia-ml gone)
        if "LibraryNotFound" in type(exc).__name__ or isinstance(exc, OSError):
            return None  # no NVML on this machine at all: nothing can tell (GPUs named by configuration only)
        return f"NVML does not start any more: {exc}"
    try:
        text = str(gpu)
        handle = (
            pynvml.nvmlDeviceGetHandleByIndex(int(text)) if text.isdigit() else pynvml.nvmlDeviceGetHandleByUUID(text)
        )
        pynvml.nvmlDeviceGetMemoryInfo(handle)
        return None
    except Exception as exc:  # noqa: BLE001 - NVMLError_GpuIsLost, NVMLError_NotFound, NVMLError_Unknown ...
        return f"NVML: {type(exc).__name__}: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def visible_devices() -> list[str]:
    """Physical GPU ids this process may use, without torch: ``CUDA_VISIBLE_DEVICES`` when set,
    else NVML's device indices; ``[]`` when neither shows a GPU."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no NVML: no GPU
        return []


def device_flags() -> dict[str, Any]:
    """nvcc's flags a candidate may pass: fast math, relaxed constexpr and lambdas, line info, register limits,
    architectures (``-arch``, ``-gencode``, ``--gpu-architecture``), ptxas options, cache modifiers, the default
    stream, diagnostics suppressed, compile threads; nothing that names a file (``--keep-dir``, ``-odir``) or swaps a
    tool (``-ccbin``)."""
    arch = r"(sm|compute|lto)_\d+[a-z]?"
    return {
        "plain": {
            "--use_fast_math",
            "-use_fast_math",
            "--expt-relaxed-constexpr",
            "-expt-relaxed-constexpr",
            "--expt-extended-lambda",
            "-expt-extended-lambda",
            "--extended-lambda",
            "-extended-lambda",
            "--restrict",
            "-restrict",
            "--resource-usage",
            "-res-usage",
            "--generate-line-info",
            "-lineinfo",
            "-G",
            "--disable-warnings",
            "-Wno-deprecated-gpu-targets",
            "-Xptxas=-v",
            "--ptxas-options=-v",
            "-rdc=true",
            "-rdc=false",
            "--relocatable-device-code=true",
            "--relocatable-device-code=false",
            "-dc",
        },
        "patterns": [
            rf"-(arch|code)[= ]?{arch}",
            rf"--gpu-(architecture|code)[= ]{arch}(,{arch})*",
            r"-arch=(native|all|all-major)",
            rf"-gencode[= ]arch=compute_\d+[a-z]?,code=\[?({arch},?)+\]?",
            r"--?maxrregcount[= ]?\d+",
            r"--(ftz|prec-div|prec-sqrt|fmad|extra-device-vectorization)=(true|false)",
            r"-(ftz|prec-div|prec-sqrt|fmad)=(true|false)",
            r"(-Xptxas[= ]|--ptxas-options[= ])-?-?[A-Za-z0-9_=,\-]+",
            r"-(dlcm|dscm)=(ca|cg|cs|cv|wb|wt)",
            r"--?default-stream[= ](per-thread|legacy|null)",
            r"(-Xcudafe[= ])?--diag[_-]suppress[= ][A-Za-z0-9_,]+",
            r"--?(threads|split-compile)[= ]?\d+",
            r"-t\d+",
        ],
        "split": {
            "-arch",
            "-code",
            "--gpu-architecture",
            "--gpu-code",
            "-gencode",
            "--maxrregcount",
            "-maxrregcount",
            "-Xptxas",
            "--ptxas-options",
            "-Xcudafe",
            "--diag-suppress",
            "--default-stream",
            "--threads",
            "-t",
        },
    }


NVIDIA = GpuVendor(
    name="nvidia",
    default_arch=DEFAULT_ARCH,
    detect_arch=detect_arch,
    arch_flags=arch_flags,
    names_arch=names_arch,
    toolkit_home=cuda_home,
    compiler=nvcc_path,
    compiler_version=compiler_version,
    toolkit_roots=toolkit_roots,
    device_nodes=device_nodes,
    profiler=resolve_ncu,
    profiler_version=ncu_version,
    model_name=gpu_model_name,
    visible_devices=visible_devices,
    telemetry=telemetry,
    jit_target=jit_target,
    device_flags=device_flags,
    device_lost=device_lost,
)
"""The NVIDIA implementation of the vendor seam."""
