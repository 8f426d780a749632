"""What the trusted side parses of a candidate's text takes time linear in it (red team, round 5): each input below
took seconds to hours with the patterns it replaced; the bound is generous, a regression is orders of magnitude."""

from __future__ import annotations

import time

import pytest

BOUND_S = 3.0


def _timed(fn, *args):
    started = time.monotonic()
    out = fn(*args)
    assert time.monotonic() - started < BOUND_S, fn.__name__
    return out


def test_kernel_names_are_read_from_a_source_in_one_pass():
    from cudaforge.languages.names import RAW_KERNEL, cuda_kernel_names

    src = (
        "__global__ void __launch_bounds__(256, 2) relu_kernel(const float* x) {}\n"
        'template <int B> __global__ void softmax_kernel(float* x) {}\nextern "C" __global__\nvoid k3 (int a) {}\n'
        "static __global__ inline void k4(int) {}\n__global__ void (*not_a_kernel)(int);\n"
    )
    assert cuda_kernel_names(src) == {"relu_kernel", "softmax_kernel", "k3", "k4"}
    assert RAW_KERNEL.findall("cp.RawKernel(code, 'relu_k')") == ["relu_k"]
    # 80 KB took 17 s before (1 MiB, the source cap: ~45 min); in a comment the guards never see
    _timed(cuda_kernel_names, "# " + "__global__ " * 100_000)
    _timed(cuda_kernel_names, "__launch_bounds__(" * 60_000)
    _timed(RAW_KERNEL.findall, "RawKernel(" * 100_000)


def test_a_kernel_base_name_of_any_nesting_is_read_in_one_pass():
    from cudaforge.languages.names import kernel_base_name

    assert (
        kernel_base_name("void at::native::vectorized_elementwise_kernel<4, at::native::X<float> >(int, float)")
        == "vectorized_elementwise_kernel"
    )
    assert kernel_base_name("relu_kernel(const float *, float *, int)") == "relu_kernel"
    assert kernel_base_name(5) == ""  # a forged fallback result's name that is no string
    _timed(kernel_base_name, "k" + "<" * 100_000 + ">" * 100_000)


def test_own_kernels_are_matched_without_a_pattern_per_name():
    from cudaforge.languages import is_own_kernel

    names = {f"k{i}" for i in range(50_000)}
    for kernel in ("void at::native::elementwise_kernel<4>(int)", "main_kernel_1", "kernel_cutlass_foo_f32_0") * 70:
        _timed(is_own_kernel, kernel, names)
    assert is_own_kernel("main_kernel_1", {"main"}) and is_own_kernel("kernel_cutlass_foo_f32_0", {"foo"})
    assert not is_own_kernel("main_kernel_x", {"main"}) and not is_own_kernel("kernel_cutlass_foobar_0", {"foo"})


def test_a_forged_ncu_output_is_read_up_to_a_bounded_number_of_launches():
    from cudaforge.profile.parse import MAX_LAUNCHES, parse_ncu_csv

    header = '"ID","Process ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
    rows = "".join(f'"{i}","1","k{i}(int)","S","gpu__time_duration.sum","usecond","1.0"\n' for i in range(20_000))
    kernels = _timed(parse_ncu_csv, header + rows)
    assert len(kernels) == MAX_LAUNCHES and kernels[0].base_name == "k0"


def test_a_long_build_log_of_warnings_is_trimmed_in_linear_time():
    from cudaforge.eval.extensions.logs import trim_compiler_log

    log = "".join(f"/b/main.cpp:{i}:1: warning: #warning w{i}\n" for i in range(40_000))
    out = _timed(trim_compiler_log, log)
    assert out.startswith("main.cpp:0:1: warning") and "more warnings not shown" in out


@pytest.mark.parametrize("text", ["/* " * 120_000, "x = torch.q" + "int" * 40_000 + "\u00b7"])
def test_the_guards_scan_a_hostile_source_in_linear_time(text):
    from cudaforge.eval.guards.source.module import strip_c_comments
    from cudaforge.eval.guards.source.strict_vocab import TORCH_CONSTANT

    _timed(strip_c_comments, text)
    _timed(TORCH_CONSTANT.match, text.rsplit(".", 1)[-1])
    assert TORCH_CONSTANT.match("qint8") and TORCH_CONSTANT.match("quint4x2")
    assert strip_c_comments("a /* b */ c // d\ne") == "a   c  \ne"


def test_thinking_blocks_are_dropped_in_linear_time():
    from cudaforge.agents.parsing import _strip_think

    assert _strip_think("a<think>x</think>b<THINKING>y</thinking>c<think>never") == "abc<think>never"
    _timed(_strip_think, "<think>" * 80_000)
