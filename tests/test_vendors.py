"""The GPU vendor seam (cudaforge/vendors/__init__.py): NVIDIA's facts in one module, asked by the build path, the
profiler, the fingerprint and the sandbox; another vendor is refused by name until it has a module."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from cudaforge import vendors
from cudaforge.vendors import GpuVendor, current

PACKAGE = Path(vendors.__file__).resolve().parents[1]


def test_the_current_vendor_is_nvidia_with_every_fact_of_the_interface(monkeypatch):
    nvidia = current()
    assert nvidia.name == "nvidia" and nvidia.default_arch == "9.0"
    for f in dataclasses.fields(GpuVendor):
        assert getattr(nvidia, f.name) is not None, f.name
    assert nvidia.arch_flags("9.0+PTX") == [
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_90,code=compute_90",
    ]
    assert nvidia.model_name("no-such-gpu").startswith(("gpu-", "NVIDIA"))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert nvidia.visible_devices() == ["3", "1"]
    monkeypatch.setenv("CUDAFORGE_GPU_VENDOR", "amd")
    with pytest.raises(ValueError, match="CUDAFORGE_GPU_VENDOR='amd': known vendors are nvidia "):
        current()


def test_the_sandbox_the_build_and_the_profiler_ask_the_vendor(monkeypatch, tmp_path):
    from cudaforge.eval.extensions import BuildSettings
    from cudaforge.proc.sandbox import default_device_paths
    from cudaforge.profile import ncu

    fake = dataclasses.replace(
        current(),
        name="other",
        default_arch="x1",
        detect_arch=lambda: None,
        device_nodes=lambda: ["/dev/other0"],
        visible_devices=lambda: ["7"],
        profiler=lambda path: f"/opt/other/{path}",
    )
    for module in ("cudaforge.proc.sandbox", "cudaforge.eval.extensions.settings", "cudaforge.profile.ncu"):
        monkeypatch.setattr(f"{module}.current", lambda: fake)
    assert "/dev/other0" in default_device_paths() and "/dev/null" in default_device_paths()
    assert BuildSettings(cache_dir=str(tmp_path)).resolved().arch == "x1"
    assert ncu.visible_gpu_ids() == ["7"] and ncu.resolve_ncu("ncu") == "/opt/other/ncu"


def test_no_module_but_the_nvidia_one_looks_for_nvidias_tools_or_devices():
    """Finding nvcc, ncu or nvidia-smi, NVIDIA's device files and architecture flags is vendors/nvidia.py's job
    (``nvcc`` as a record's key elsewhere is a name, not a lookup); reading NVML is vendors/nvml.py's (the fingerprint's
    telemetry and the spec sheet ask ``current().telemetry``)."""
    allowed = {"vendors/nvidia.py", "vendors/nvml.py"}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        if rel in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and (node.value == "nvidia-smi" or node.value.startswith(("/dev/nvidia", "-gencode")))
            ):
                offenders.append(f"{rel}:{node.lineno} {node.value!r}")
            elif (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == "shutil.which"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in ("nvcc", "ncu", "nvidia-smi")
            ):
                offenders.append(f"{rel}:{node.lineno} {ast.unparse(node)}")
            elif isinstance(node, ast.Import) and any(a.name == "pynvml" for a in node.names):
                offenders.append(f"{rel}:{node.lineno} import pynvml")
            elif isinstance(node, ast.Constant) and node.value == "pynvml":  # importlib.import_module("pynvml")
                offenders.append(f"{rel}:{node.lineno} 'pynvml'")
    assert not offenders, offenders
