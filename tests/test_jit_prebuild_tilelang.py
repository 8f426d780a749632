"""TileLang kernels compiled ahead for the target GPU, without one (languages.tilelang through
cudaforge.eval.jit_prebuild). Needs ``tilelang`` (not a test dependency: ``pip install tilelang``) and nvcc; the
GPU side (the kept kernels found by the GPU worker) is in tests/test_gpu_eval.py."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import torch

from cudaforge import languages
from cudaforge.eval.jit_cache import count_kernels
from cudaforge.eval.jit_prebuild import _fork_safe, compile_ahead, fake_specs, input_sets, specs
from cudaforge.tasks import load_suite, selection
from cudaforge.tasks.runtime import load_module

pytest.importorskip("tilelang")
if shutil.which("nvcc") is None:
    pytest.skip("TileLang compiles its kernels with nvcc, which is not on PATH", allow_module_level=True)

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = REPO / "benchmarks" / "candidates"
H200 = ["cuda", 90, 32]
MARKS = languages.get("tilelang").jit_kernel_marks

DYNAMIC = textwrap.dedent("""
    import tilelang, tilelang.language as T, torch, torch.nn as nn

    @tilelang.jit(out_idx=[-1])
    def row_scale(n, block_m=32):
        m = T.dynamic("m")  # one kernel for every batch size: the output's rows come from the input's

        @T.prim_func
        def row_scale_main(X: T.Tensor((m, n), "float32"), S: T.Tensor((n,), "float32"),
                           Y: T.Tensor((m, n), "float32")):
            with T.Kernel(T.ceildiv(m, block_m), threads=128) as bx:
                for i, j in T.Parallel(block_m, n):
                    if bx * block_m + i < m:
                        Y[bx * block_m + i, j] = X[bx * block_m + i, j] * S[j]

        return row_scale_main

    class ModelNew(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(n))
            self.kernel = row_scale(n)  # compiled when the model is built, as many candidates do

        def forward(self, x):
            y = self.kernel(x.contiguous(), self.scale)
            assert y.shape == x.shape and y.dtype == x.dtype, (y.shape, y.dtype)  # the empty output stands in whole
            return y.relu()
""")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "tilelang"))
    return tmp_path / "tilelang"


def _printed(capfd):
    """What the copies printed (a fresh copy prints the candidate's output on stderr)."""
    captured = capfd.readouterr()
    return captured.out + captured.err


def _task(name):
    return {t.name: t for t in load_suite(selection("tiny"))}[name]


def test_tilelang_is_built_ahead_into_its_own_cache_folder():
    tilelang = languages.get("tilelang")
    assert tilelang.prebuild is not None and (tilelang.jit_cache, tilelang.jit_cache_env) == (
        "tilelang",
        "TILELANG_CACHE_DIR",
    )
    assert {lang.name for lang in languages.jit_caches()} == {"triton", "tilelang"}
    assert languages.jit_cache_env("/s") == {"TRITON_CACHE_DIR": "/s/triton", "TILELANG_CACHE_DIR": "/s/tilelang"}


@pytest.mark.parametrize(
    "candidate, task, kernel",
    [
        ("tilelang_relu.py", "ReLU", "relu_main"),
        ("tilelang_matmul_bias_relu.py", "MatmulBiasReLU", "linear_relu_main"),
    ],
)
def test_a_tilelang_candidate_compiles_ahead_once_per_size_without_a_gpu(cache, capfd, candidate, task, kernel):
    task = _task(task)
    ref = load_module(task.source, "ref_" + kernel)
    sets = input_sets(ref, task.input_variants)  # the default inputs and each variant of another shape
    assert len(sets) >= 2
    module = load_module((CANDIDATES / candidate).read_text(), "cand_" + kernel)
    report = compile_ahead(module, "tilelang", specs(list(ref.get_init_inputs())), sets, H200, timeout_s=240)
    assert report["error"] == "" and report["built"] == [kernel], report
    assert report["fresh"] is not _fork_safe()  # where no GPU is visible, a forked copy; else a fresh interpreter
    compiled = _printed(capfd).count(f"begins to compile kernel `{kernel}`")
    kernels = count_kernels(cache, MARKS)  # TileLang's own cache, one entry per size (and spelling of out_idx)
    assert 2 <= kernels <= compiled <= 2 * len(sets)
    sources = list(cache.rglob("device_kernel.cu"))
    assert len(sources) == kernels and all("__global__" in p.read_text() for p in sources)
    # the same sizes again, in another order: TileLang finds every one in its cache, as the GPU worker seeded with
    # this folder does (it rewrites a negative out_idx once it has loaded a kernel from the cache, and the index is
    # part of the key)
    again = compile_ahead(module, "tilelang", specs(list(ref.get_init_inputs())), sets[::-1], H200, timeout_s=240)
    assert again["error"] == "" and again["built"] == [kernel] and count_kernels(cache, MARKS) == kernels
    assert "begins to compile" not in _printed(capfd)


def test_a_kernel_built_in_init_with_a_dynamic_size_compiles_and_its_output_stands_in_whole(cache):
    module = load_module(DYNAMIC, "cand_dynamic")
    sets = [fake_specs(lambda: [torch.randn(64, 128)]), fake_specs(lambda: [torch.randn(129, 128)])]
    report = compile_ahead(module, "tilelang", specs([128]), sets, H200, timeout_s=240)
    assert report["error"] == "" and report["built"] == ["row_scale_main"], report
    assert count_kernels(cache, MARKS) == 2  # one kernel for both batch sizes, under both spellings of out_idx


def test_tilelang_is_built_ahead_only_for_cuda_targets(cache):
    module = load_module((CANDIDATES / "tilelang_relu.py").read_text(), "cand_relu_rocm")
    report = compile_ahead(
        module, "tilelang", specs([]), [fake_specs(lambda: [torch.randn(256)])], ["hip", "gfx942", 64], timeout_s=60
    )
    assert report["built"] == [] and "only for CUDA GPUs" in report["error"]
    assert count_kernels(cache, MARKS) == 0
