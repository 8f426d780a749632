"""The profiler without a GPU: metric sets, ncu output parsing, kernel filtering, specs, roofline,
fallbacks, cache keys and the GPU lock. GPU tests (marked ``gpu``) run ncu for real."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from cudaforge.hardware.specs import derived_peaks, peak_for_dtype  # noqa: E402
from cudaforge.profile import (  # noqa: E402
    CUDAFORGE24,
    PEAK_TABLE,
    GpuLockTimeout,
    KernelProfile,
    MetricValue,
    ProfileCache,
    Profiler,
    ProfileResult,
    ProfileSettings,
    ProfileStatus,
    UnknownGPUWarning,
    cache_key,
    candidate_kernel_names,
    gpu_lock,
    is_own_kernel,
    kernel_base_name,
    make_roofline,
    metric_list,
    parse_ncu_csv,
    peak_rates,
    selection_args,
    table_key,
)
from cudaforge.profile.metrics import DURATION_METRIC, is_additive  # noqa: E402
from cudaforge.profile.ncu import totals  # noqa: E402
from cudaforge.profile.parse import NcuParseError, parse_value  # noqa: E402
from cudaforge.types import Task  # noqa: E402


@pytest.fixture(autouse=True)
def prebuilds(request, monkeypatch):
    """Off a GPU, the trusted side's build before a sandboxed profile is recorded instead of run (nvcc would take
    tens of seconds per test here); GPU tests build for real."""
    calls: list[str] = []
    if request.node.get_closest_marker("gpu") is None:
        from cudaforge.eval.extensions import BuildOutcome

        def fake_precompile(source, settings=None, timeout_s=600.0, env=None):
            calls.append(source)
            return BuildOutcome(status="ok", cached=True)

        monkeypatch.setattr("cudaforge.eval.extensions.precompile", fake_precompile)
    return calls


REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ncu"
CANDIDATES = REPO / "benchmarks" / "candidates"
TINY = REPO / "benchmarks" / "suites" / "tiny" / "level1"
RECORDED_CSV = sorted(p for p in FIXTURES.glob("*.csv") if not p.name.startswith("synthetic_"))
RECORDED_REP = sorted(FIXTURES.glob("*.ncu-rep"))


def tiny_task(file: str) -> Task:
    path = TINY / file
    pid, name = path.stem.split("_", 1)
    return Task(
        id=f"tiny/level1/{path.stem}",
        suite="tiny",
        level=1,
        problem_id=int(pid),
        name=name,
        source=path.read_text(),
        path=str(path),
    )


def canned_cost(monkeypatch, cost: dict | None = None, complete: bool = True) -> list:
    """Replace the task-cost child by ``cost`` (default: the ReLU task's), and the spec-sheet child by the H200's
    sheet (both trusted children, never the candidate's process); returns the list of cost calls."""
    monkeypatch.setattr(
        Profiler, "gpu_spec", lambda self, gpu=None: {"name": "NVIDIA H200", "peaks": peak_rates("NVIDIA H200")}
    )
    calls = []
    cost = cost if cost is not None else {"flops": 0.0, "min_bytes": 2097152, "dtype": "float32", "notes": []}

    def fake(task_source, *, seed=0, gpu=None, timeout_s=0.0):
        calls.append({"source": task_source, "seed": seed, "gpu": gpu})
        return json.loads(json.dumps(cost)), complete

    monkeypatch.setattr("cudaforge.profile.profiler.task_cost_child", fake)
    return calls


# --------------------------------------------------------------------------- metric sets


def test_cudaforge24_is_the_papers_24_metrics():
    assert len(CUDAFORGE24) == len(set(CUDAFORGE24)) == 24
    assert CUDAFORGE24[0] == "sm__cycles_active.avg"
    assert CUDAFORGE24[-1] == "smsp__sass_average_branch_targets_threads_uniform.pct"
    assert metric_list("cudaforge24") == [*CUDAFORGE24, DURATION_METRIC]


def test_the_hopper_option_adds_the_stand_ins_for_the_two_na_metrics(repo):
    import yaml

    from cudaforge.profile.metrics import NEWER_EQUIVALENTS

    assert set(NEWER_EQUIVALENTS) <= set(CUDAFORGE24)
    option = yaml.safe_load((repo / "configs" / "profile" / "cudaforge24_hopper.yaml").read_text())
    assert option["metric_set"] == "cudaforge24" and option["metrics"] == list(NEWER_EQUIVALENTS.values())
    assert metric_list("cudaforge24", option["metrics"]) == [*CUDAFORGE24, *NEWER_EQUIVALENTS.values(), DURATION_METRIC]


def test_selection_args_for_each_kind_of_set():
    assert selection_args("cudaforge24")[:1] == ["--metrics"]
    assert selection_args("basic") == ["--set", "basic", "--metrics", DURATION_METRIC]
    assert selection_args("full", ["a__b.sum"]) == ["--set", "full", "--metrics", f"a__b.sum,{DURATION_METRIC}"]
    assert selection_args("custom", ["x__y.sum", "x__y.sum"]) == ["--metrics", f"x__y.sum,{DURATION_METRIC}"]
    with pytest.raises(ValueError, match="custom"):
        metric_list("custom")
    with pytest.raises(ValueError):
        metric_list("nonsense")


def test_ncu_command_defaults_to_no_clock_control_and_profiling_off(tmp_path):
    command = Profiler(use_cache=False).ncu_command("/opt/ncu", tmp_path)
    joined = " ".join(command)
    assert command[0] == "/opt/ncu"
    assert "--profile-from-start off" in joined and "--clock-control none" in joined
    assert "--target-processes all" in joined and "--csv --page details" in joined
    assert f"--log-file {tmp_path / 'ncu.log'}" in joined
    locked = Profiler({"clock_control": "base", "output": "report"}, use_cache=False).ncu_command("ncu", tmp_path)
    assert "--clock-control base" in " ".join(locked) and "--export" in locked and "--csv" not in locked
    assert "--print-units base" in joined  # ours: every value in its base unit
    authors = Profiler({"units": "auto"}, use_cache=False)
    assert "--print-units auto" in " ".join(authors.ncu_command("ncu", tmp_path))
    assert authors.settings.cache_fields()["units"] == "auto"  # a profile in other units is another cache entry


def test_settings_from_a_config_object_ignore_unknown_keys():
    from cudaforge.profile.settings import MetricSet, ProfileConfig

    settings = ProfileSettings.from_config(ProfileConfig(metric_set=MetricSet.basic, clock_control="base"))
    assert settings.metric_set == "basic" and settings.clock_control == "base" and settings.warmup == 3
    assert ProfileSettings.from_config({"enabled": False, "warmup": 7}).warmup == 7


# --------------------------------------------------------------------------- parsing


def test_parse_value_handles_ncu_number_formats():
    assert parse_value("1,215,000,000.00") == 1215000000.0
    assert parse_value("2.41") == 2.41 and parse_value("1e-05") == 1e-05
    assert parse_value("n/a") is None and parse_value("") is None
    assert parse_value("(!) 3") == 3.0
    assert parse_value("Warp") == "Warp"


def test_parse_synthetic_details_csv():
    kernels = parse_ncu_csv((FIXTURES / "synthetic_details.csv").read_text())
    assert [k.base_name for k in kernels] == ["vectorized_elementwise_kernel", "row_stats_kernel", "normalize_kernel"]
    stats = kernels[1]
    assert stats.id == 1 and stats.grid == "(128, 1, 1)" and stats.block == "(256, 1, 1)"
    assert stats.metrics["dram__bytes_read.sum"] == MetricValue(524288.0, "byte", "GPU Speed Of Light Throughput")
    assert stats.metrics["launch__registers_per_thread"].unit == "register/thread"
    assert stats.metrics["l1tex__t_sector_hit_rate.pct"].value is None
    assert stats.duration_ms == pytest.approx(0.006112)
    (rule,) = stats.rules
    assert (rule.rule, rule.type, rule.speedup_pct, rule.kernel) == ("SOLBottleneck", "OPT", 87.5, "row_stats_kernel")
    assert kernels[2].rules[0].type == "WRN"


def test_parse_synthetic_raw_csv_with_units_row():
    kernels = parse_ncu_csv((FIXTURES / "synthetic_raw.csv").read_text())
    assert [k.id for k in kernels] == [0, 1]
    assert kernels[0].metrics["gpu__time_duration.sum"] == MetricValue(4.38, "usecond", "raw")
    assert kernels[0].duration_ms == pytest.approx(0.00438)
    assert kernels[1].metrics["dram__bytes_read.sum"].value == 1048576.0


def test_parse_rejects_output_without_a_table():
    with pytest.raises(NcuParseError):
        parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n")


@pytest.mark.skipif(not RECORDED_CSV, reason="no recorded ncu CSV in tests/fixtures/ncu yet")
@pytest.mark.parametrize("path", RECORDED_CSV, ids=lambda p: p.name)
def test_parse_recorded_csv(path):
    kernels = parse_ncu_csv(path.read_text())
    assert kernels and all(k.duration_ms and k.duration_ms > 0 for k in kernels)
    if "cudaforge24" in path.name:
        assert all(set(CUDAFORGE24) <= set(k.metrics) for k in kernels)
    else:
        assert any(k.rules for k in kernels)
    candidate = path.name.rsplit("_", 1)[0]
    source = (
        (CANDIDATES / f"{candidate}.py") if (CANDIDATES / f"{candidate}.py").exists() else FIXTURES / f"{candidate}.py"
    )
    own = candidate_kernel_names(source.read_text())
    assert {k.base_name for k in kernels if is_own_kernel(k.name, own)} == own


@pytest.mark.skipif(not RECORDED_REP, reason="no recorded .ncu-rep in tests/fixtures/ncu yet")
@pytest.mark.parametrize("path", RECORDED_REP, ids=lambda p: p.name)
def test_parse_recorded_report(path):
    pytest.importorskip("ncu_report")
    from cudaforge.profile import parse_ncu_report

    kernels = parse_ncu_report(path, metric_list("cudaforge24"))
    assert kernels and all(set(CUDAFORGE24) <= set(k.metrics) for k in kernels)
    csv = FIXTURES / path.name.replace(".ncu-rep", ".csv")
    if csv.exists():
        assert [k.base_name for k in kernels] == [k.base_name for k in parse_ncu_csv(csv.read_text())]


# --------------------------------------------------------------------------- kernel filtering


def test_candidate_kernel_names_from_cuda_and_triton_sources():
    assert candidate_kernel_names((CANDIDATES / "cuda_relu.py").read_text()) == {"relu_kernel"}
    assert candidate_kernel_names((CANDIDATES / "triton_softmax.py").read_text()) == {"softmax_kernel"}
    assert candidate_kernel_names((FIXTURES / "two_kernel_softmax.py").read_text()) == {
        "row_stats_kernel",
        "normalize_kernel",
    }
    source = '''
import triton
code = """
template <int N> __global__ void __launch_bounds__(256, 2) tiled(float* x) {}
extern "C" __global__ void raw_entry(float* y) {}
"""
k = cp.RawKernel(code, "raw_entry")
@triton.autotune(configs=[], key=["n"])
@triton.jit
def tuned(x_ptr, n): pass
def helper(): pass
'''
    assert candidate_kernel_names(source) == {"tiled", "raw_entry", "tuned"}


@pytest.mark.parametrize(
    "name, base",
    [
        ("relu_kernel(const float *, float *, int)", "relu_kernel"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1>>(int, T2, T3)",
            "vectorized_elementwise_kernel",
        ),
        ("void ns::tiled<256, float>(float *)", "tiled"),
        ("softmax_kernel", "softmax_kernel"),
    ],
)
def test_kernel_base_name(name, base):
    assert kernel_base_name(name) == base


def test_own_kernels_versus_library_kernels():
    own = {"row_stats_kernel", "normalize_kernel"}
    assert is_own_kernel("row_stats_kernel(const float *, float *, int)", own)
    assert not is_own_kernel("void at::native::vectorized_elementwise_kernel<4>(int)", own)
    from cudaforge.languages import is_copy_or_fill

    assert is_copy_or_fill("Memcpy HtoD (Pageable -> Device)") and is_copy_or_fill("Memset (Device)")
    assert not is_copy_or_fill("row_stats_kernel(const float *, float *, int)")
    # names unknown (kernels built from files): everything but torch's and libraries' kernels is kept
    assert is_own_kernel("my_kernel(float *)", set())
    assert not is_own_kernel("void at::native::elementwise_kernel<128, 2>(int)", set())
    assert not is_own_kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32", set())


def test_totals_sum_counters_and_weight_rates_by_duration():
    def kernel(i, ms, pct, nbytes, regs):
        return KernelProfile(
            id=i,
            name=f"k{i}",
            base_name=f"k{i}",
            own=True,
            duration_ms=ms,
            metrics={
                DURATION_METRIC: MetricValue(ms * 1e6, "nsecond"),
                "dram__throughput.avg.pct_of_peak_sustained_elapsed": MetricValue(pct, "%"),
                "dram__bytes_read.sum": MetricValue(nbytes, "byte"),
                "launch__registers_per_thread": MetricValue(regs, "register/thread"),
            },
        )

    out = totals([kernel(0, 0.003, 10.0, 100.0, 16.0), kernel(1, 0.001, 50.0, 300.0, 32.0)])
    assert out[DURATION_METRIC].value == pytest.approx(4000.0)
    assert out["dram__bytes_read.sum"] == MetricValue(400.0, "byte", "total")
    assert out["dram__throughput.avg.pct_of_peak_sustained_elapsed"].value == pytest.approx(20.0)
    assert "launch__registers_per_thread" not in out
    assert is_additive("dram__bytes.sum.per_second", "byte/second") is False
    # under profile.units=auto ncu scales each value: a Kbyte and a Mbyte are not summed
    scaled = [kernel(0, 0.003, 10.0, 100.0, 16.0), kernel(1, 0.001, 50.0, 3.0, 32.0)]
    scaled[0].metrics["dram__bytes_read.sum"] = MetricValue(100.0, "Kbyte")
    scaled[1].metrics["dram__bytes_read.sum"] = MetricValue(3.0, "Mbyte")
    assert "dram__bytes_read.sum" not in totals(scaled) and DURATION_METRIC in totals(scaled)


# --------------------------------------------------------------------------- specs


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 3090", "rtx-3090"),
        ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"),
        ("Quadro RTX 6000", "quadro-rtx-6000"),
        ("NVIDIA B200", "b200"),
    ],
)
def test_table_lookup_of_common_gpus(name, key):
    assert table_key(name) == key
    rates = peak_rates(name)
    assert rates["source"] == "table" and rates["table_key"] == key and not rates["warnings"]
    assert rates["memory_gbs"] > 0 and rates["fp32_tflops"] > 0


def test_peak_table_numbers_are_dense_and_ordered():
    h200 = PEAK_TABLE["h200"]
    assert (h200.memory_gbs, h200.bf16_tflops, h200.fp32_tflops) == (4800, 989.5, 67.0)
    for key, peaks in PEAK_TABLE.items():
        if peaks.tf32_tflops is not None and peaks.bf16_tflops is not None:
            assert peaks.tf32_tflops <= peaks.bf16_tflops, key
    assert PEAK_TABLE["t4"].bf16_tflops is None and PEAK_TABLE["t4"].tf32_tflops is None


def test_unknown_gpu_warns_and_derives_what_it_can():
    with pytest.warns(UnknownGPUWarning, match="not in cudaforge's peak table"):
        rates = peak_rates(
            "NVIDIA Future GPU 9000",
            sm_count=132,
            compute_capability="9.0",
            max_sm_clock_mhz=1980,
            max_memory_clock_mhz=2619,
            memory_bus_width_bits=5120,
        )
    assert rates["source"] == "derived" and rates["warnings"]
    assert rates["memory_gbs"] == pytest.approx(3352.3, rel=1e-3)  # an H100 SXM's HBM3, derived
    assert rates["fp32_tflops"] == pytest.approx(66.9, rel=1e-2)
    assert rates["bf16_tflops"] is None
    with pytest.warns(UnknownGPUWarning):
        bare = peak_rates("")
    assert bare["memory_gbs"] is None and bare["fp32_tflops"] is None
    assert derived_peaks(None, None, None, None, None)["memory_gbs"] is None


@pytest.mark.parametrize("name, source", [("NVIDIA H200", "table"), ("NVIDIA Future GPU 9000", "derived")])
def test_spec_sheet_from_device_properties(name, source, monkeypatch):
    """The sheet as a GPU machine builds it, with torch's device properties stood in (NVML absent)."""
    from cudaforge.hardware import specs

    props = SimpleNamespace(
        name=name,
        major=9,
        minor=0,
        multi_processor_count=132,
        total_memory=150_000_000_000,
        L2_cache_size=60 * 2**20,
        shared_memory_per_block=49152,
        shared_memory_per_block_optin=232448,
        shared_memory_per_multiprocessor=233472,
        regs_per_multiprocessor=65536,
        max_threads_per_multi_processor=2048,
        warp_size=32,
        memory_bus_width=5120,
        uuid="5a1b2c3d-0000-1111-2222-333344445555",
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(
        specs,
        "_nvml_static",
        lambda uuid, notes: dict.fromkeys(
            ("max_sm_clock_mhz", "max_memory_clock_mhz", "memory_bus_width_bits", "power_limit_w", "driver_version")
        ),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownGPUWarning)
        sheet = specs.gpu_spec_sheet(0)
    assert sheet["name"] == name and sheet["sm_count"] == 132 and sheet["uuid"].startswith("GPU-5a1b")
    assert sheet["memory_bus_width_bits"] == 5120 and sheet["peaks"]["source"] == source
    assert bool(sheet["warnings"]) == (source == "derived") and json.dumps(sheet)


def test_peak_for_dtype():
    rates = peak_rates("NVIDIA H200")
    assert peak_for_dtype(rates, "float32") == (67.0e12, "fp32_tflops")
    assert peak_for_dtype(rates, "float32", allow_tf32=True) == (494.5e12, "tf32_tflops")
    assert peak_for_dtype(rates, "bfloat16") == (989.5e12, "bf16_tflops")
    assert peak_for_dtype(peak_rates("Tesla T4"), "bfloat16") == (8.1e12, "fp32_tflops")


# --------------------------------------------------------------------------- roofline


def test_task_cost_of_a_matmul_is_exact_and_runs_on_meta():
    from cudaforge.profile import task_cost
    from cudaforge.tasks.runtime import load_module

    cost = task_cost(load_module(tiny_task("3_MatmulBiasReLU.py").source, "roofline_test_task"))
    assert cost["flops"] == 2 * 256 * 256 * 256
    assert cost["input_bytes"] == cost["output_bytes"] == 256 * 256 * 4
    assert cost["parameter_bytes"] == (256 * 256 + 256) * 4
    assert cost["min_bytes"] == 3 * 256 * 256 * 4 + 256 * 4
    assert cost["dtype"] == "float32"


def test_task_cost_of_a_task_that_fails_on_meta_is_a_note():
    from cudaforge.profile import task_cost
    from cudaforge.tasks.runtime import load_module

    source = tiny_task("1_ReLU.py").source.replace("return torch.relu(x)", "return torch.relu(x) + x.sum().item()")
    cost = task_cost(load_module(source, "roofline_meta_fail"))
    assert cost["flops"] is None and "meta" in cost["notes"][0]


def test_roofline_floor_bound_and_speed_of_light():
    peaks = peak_rates("NVIDIA H200")
    matmul = make_roofline({"flops": 2 * 4096.0**3, "min_bytes": 3 * 4096 * 4096 * 2, "dtype": "bfloat16"}, peaks)
    assert matmul.bound == "compute"
    assert matmul.floor_ms == pytest.approx(2 * 4096.0**3 / 989.5e12 * 1e3)
    relu = make_roofline(
        {"flops": 0.0, "min_bytes": 2 * 256 * 1024 * 4, "dtype": "float32"},
        peaks,
        measured_ms=0.004,
        measured_from="evaluator",
    )
    assert relu.bound == "memory"
    assert relu.floor_ms == pytest.approx(2 * 256 * 1024 * 4 / 4800e9 * 1e3)
    assert relu.sol_fraction == pytest.approx(relu.floor_ms / 0.004)
    assert any("memory-bound" in n for n in relu.notes)
    unknown = make_roofline({"flops": 1.0, "min_bytes": 8, "dtype": "float32"}, None)
    assert unknown.floor_ms is None and unknown.sol_fraction is None


# --------------------------------------------------------------------------- fallbacks, records, cache


@pytest.mark.slow
def test_no_gpu_and_no_ncu_is_a_result_not_an_exception(tmp_path):
    profiler = Profiler(
        {"ncu_path": str(tmp_path / "no" / "ncu")}, cache_dir=tmp_path / "cache", lock_dir=tmp_path, gpus=[]
    )
    assert profiler.gpu_spec() == {}
    task = tiny_task("3_MatmulBiasReLU.py")
    result = profiler.profile(task, (CANDIDATES / "cuda_matmul_bias_relu.py").read_text(), gpu=None)
    assert result.status is ProfileStatus.UNAVAILABLE
    assert "no GPU" in result.message
    assert result.roofline.flops == 2 * 256**3 and result.kernels == []
    assert ProfileResult.from_json(result.to_json()) == result
    assert "roofline" in result.summary()


def test_missing_ncu_on_a_gpu_id_runs_the_fallback_and_never_raises(tmp_path, monkeypatch):
    """No ncu: the torch.profiler fallback runs; here (no GPU) it reports the worker's error."""
    calls = []

    def fake_run_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        calls.append((mode, wrapper))
        assert self._payload(task, source, mode, gpu)["want_cost"] is False  # never from the candidate's process
        return SimpleNamespace(
            sandbox=None,
            status="ok",
            phase_seconds={"profile": 0.1},
            error="",
            stderr_tail="",
            stdout_tail="",
            result={
                "kernels": [
                    {"name": "relu_kernel(const float *, float *, int)", "duration_ms": 0.004},
                    {"name": "void at::native::elementwise_kernel<128>(int)", "duration_ms": 0.002},
                ],
                "cost": None,
                "spec": {"name": "NVIDIA H200", "peaks": peak_rates("NVIDIA H200")},
                "versions": {"torch": "x"},
            },
        )

    monkeypatch.setattr(Profiler, "run_worker", fake_run_worker)
    monkeypatch.setattr("cudaforge.profile.profiler.gpu_model_name", lambda gpu: "NVIDIA H200")
    cost_calls = canned_cost(monkeypatch)
    profiler = Profiler({"ncu_path": str(tmp_path / "nowhere")}, cache_dir=tmp_path / "cache", lock_dir=tmp_path)
    result = profiler.profile(tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text(), gpu="0")
    assert calls == [("torch_profiler", None)]
    assert [c["gpu"] for c in cost_calls] == ["0"]  # the task's cost, in a child that sees the GPU but no candidate
    assert result.status is ProfileStatus.FALLBACK and "ncu not found" in result.message
    assert [k.base_name for k in result.kernels] == ["relu_kernel"]
    assert result.own_kernel_ms == pytest.approx(0.004) and result.library_kernel_names == ["elementwise_kernel"]
    assert result.roofline.measured_from == "torch.profiler"
    assert result.roofline.sol_fraction == pytest.approx(2097152 / 4800e9 * 1e3 / 0.006)
    assert not ProfileCache(tmp_path / "cache").path(result.cache_key).exists(), "fallbacks are not cached"

    monkeypatch.undo()
    real = Profiler({"ncu_path": str(tmp_path / "nowhere"), "timeout_s": 120}, use_cache=False, lock_dir=tmp_path)
    no_gpu = real.profile(tiny_task("1_ReLU.py"), (CANDIDATES / "triton_relu.py").read_text(), gpu="0")
    assert no_gpu.status is ProfileStatus.ERROR
    assert "ncu not found" in no_gpu.message and "no GPU visible" in no_gpu.message


def test_counter_permission_error_falls_back_with_a_clear_message(tmp_path, monkeypatch, prebuilds):
    fake_ncu = tmp_path / "ncu"
    fake_ncu.write_text("#!/bin/sh\necho 'Version 2025.3.1.0'\n")
    fake_ncu.chmod(0o755)
    modes, sandboxes = [], []

    def fake_run_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        modes.append(mode)
        if mode == "ncu":
            log = Path(wrapper[wrapper.index("--log-file") + 1])
            log.write_text(
                "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                "Performance Counters on the target device 0.\n"
            )
            sandboxes.append(sandbox)
            if collect is not None:  # ncu wrote into the sandbox's scratch; the profiler copies it out
                assert log.parent == Path(sandbox.scratch)
                collect(Path(sandbox.scratch))
        return SimpleNamespace(
            sandbox=None,
            status="ok",
            phase_seconds={},
            error="",
            stderr_tail="",
            stdout_tail="",
            result={"kernels": [], "cost": {}, "spec": {}, "versions": {}},
        )

    monkeypatch.setattr(Profiler, "run_worker", fake_run_worker)
    canned_cost(monkeypatch)
    result = Profiler({"ncu_path": str(fake_ncu)}, use_cache=False, lock_dir=tmp_path).profile(
        tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text(), gpu="0"
    )
    assert modes == ["ncu", "torch_profiler"] and len(prebuilds) == 1  # a CUDA source, built by the trusted side
    assert result.status is ProfileStatus.FALLBACK and "ERR_NVGPUCTRPERM" in result.message
    assert "not readable from the candidate's sandbox" in result.message and "profile.sandbox=off" in result.message
    assert result.tools["ncu"] == "2025.3.1.0"
    off = Profiler({"ncu_path": str(fake_ncu), "sandbox": "off"}, use_cache=False, lock_dir=tmp_path).profile(
        tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text(), gpu="0"
    )
    assert sandboxes == [sandboxes[0], None] and sandboxes[0] is not None  # auto: sandboxed; off: a plain child
    assert "this user may not read" in off.message and "sandbox" not in off.message


def test_ncu_csv_becomes_a_result_with_own_kernels_totals_and_cache(tmp_path, monkeypatch):
    fake_ncu = tmp_path / "ncu"
    fake_ncu.write_text("#!/bin/sh\necho 'Version 2025.3.1.0'\n")
    fake_ncu.chmod(0o755)
    runs = []

    def fake_run_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        runs.append(mode)
        shutil.copyfile(FIXTURES / "synthetic_details.csv", wrapper[wrapper.index("--log-file") + 1])
        if collect is not None:
            collect(Path(sandbox.scratch))
        return SimpleNamespace(
            sandbox=None,
            status="ok",
            phase_seconds={"profile": 1.0},
            error="",
            stderr_tail="",
            stdout_tail="",
            result={
                "kernels": [],
                "cost": None,
                "spec": {"name": "NVIDIA H200", "peaks": peak_rates("NVIDIA H200")},
                "versions": {"torch": "2.x"},
            },
        )

    monkeypatch.setattr(Profiler, "run_worker", fake_run_worker)
    monkeypatch.setattr("cudaforge.profile.profiler.gpu_model_name", lambda gpu: "NVIDIA H200")
    canned_cost(monkeypatch, {"flops": 0.0, "min_bytes": 1048576, "dtype": "float32"})
    profiler = Profiler({"ncu_path": str(fake_ncu)}, cache_dir=tmp_path / "cache", lock_dir=tmp_path)
    task, source = tiny_task("2_Softmax.py"), (FIXTURES / "two_kernel_softmax.py").read_text()
    result = profiler.profile(task, source, gpu="0", measured_ms=0.012, artifact_dir=tmp_path / "run")
    assert result.status is ProfileStatus.OK and not result.message
    assert [k.base_name for k in result.kernels] == ["row_stats_kernel", "normalize_kernel"]
    assert result.own_kernel_ms == pytest.approx(0.009632)
    assert result.library_kernel_names == ["vectorized_elementwise_kernel"]
    assert result.totals["dram__bytes_read.sum"].value == 524288 + 525312
    assert [r.rule for r in result.rules] == ["SOLBottleneck", "SOLBottleneck"]
    assert result.roofline.measured_from == "evaluator" and result.roofline.sol_fraction > 0
    assert Path(result.artifacts["ncu_log"]).read_text().startswith("==SYNTHETIC==")
    assert "row_stats_kernel" in result.summary() and "SOLBottleneck" in result.summary()
    table = result.to_dict()["judge_metrics"]
    assert table["[row_stats_kernel#1] dram__bytes_read.sum"] == {"value": 524288.0, "unit": "byte"}
    assert table["[total] dram__bytes_read.sum"]["value"] == 524288 + 525312
    assert table["other kernels in the forward"] == "vectorized_elementwise_kernel"
    assert "fraction of speed of light" in table and any(k.startswith("rule SOLBottleneck") for k in table)

    again = profiler.profile(task, source, gpu="0")
    assert again.cached and runs == ["ncu"] and again.kernels == result.kernels
    with_library = Profiler(
        {"ncu_path": str(fake_ncu), "include_library_kernels": True}, use_cache=False, lock_dir=tmp_path
    ).profile(task, source, gpu="0")
    assert [k.own for k in with_library.kernels] == [False, True, True]


def test_cache_keys_separate_sources_gpus_and_metric_sets(tmp_path):
    settings = ProfileSettings().cache_fields()
    base = cache_key("cand", "task", "NVIDIA H200", settings)
    assert base == cache_key("cand", "task", "NVIDIA H200", dict(settings))
    assert base != cache_key("cand2", "task", "NVIDIA H200", settings)
    assert base != cache_key("cand", "task2", "NVIDIA H200", settings)
    assert base != cache_key("cand", "task", "NVIDIA H100 80GB HBM3", settings)
    assert base != cache_key("cand", "task", "NVIDIA H200", ProfileSettings(metric_set="basic").cache_fields())
    assert base != cache_key("cand", "task", "NVIDIA H200", ProfileSettings(clock_control="base").cache_fields())
    cache = ProfileCache(tmp_path)
    assert cache.get(base) is None
    stored = ProfileResult(
        task_id="t",
        candidate_hash="cand",
        status=ProfileStatus.OK,
        cache_key=base,
        totals={"x__y.sum": MetricValue(3.0, "byte")},
    )
    cache.put(base, stored)
    assert cache.get(base) == stored
    cache.path(base).write_text("{not json")
    assert cache.get(base) is None


@pytest.mark.slow
def test_the_task_cost_is_computed_once_per_task_and_cached_by_its_source_hash(tmp_path, monkeypatch):
    """The roofline's cost runs in one child per task (the real child, spied on); later profiles of the
    task, by this profiler or a new one on the same cache directory, reuse it; a changed source does not."""
    from cudaforge.profile import task_cost
    from cudaforge.profile.cache import cost_key
    from cudaforge.tasks.cost import task_cost_child as real
    from cudaforge.tasks.runtime import load_module

    calls: list[str] = []

    def spy(task_source, **kwargs):
        calls.append(task_source)
        return real(task_source, **kwargs)

    monkeypatch.setattr("cudaforge.profile.profiler.task_cost_child", spy)
    task, source = tiny_task("3_MatmulBiasReLU.py"), (CANDIDATES / "cuda_matmul_bias_relu.py").read_text()
    profiler = Profiler(cache_dir=tmp_path / "cache", lock_dir=tmp_path, gpus=[])
    first = profiler.profile(task, source)
    assert len(calls) == 1 and not first.cached and first.phase_seconds["task_cost"] > 0
    module = load_module(task.source, "cost_cache_test_task")
    uncached = task_cost(module, seed=42)  # in this process, no cache (seed 0, as before, gives the same)
    assert uncached == task_cost(module, seed=0) and first.roofline == make_roofline(uncached, None)
    key = cost_key(task.source_hash, 42, "cpu")
    assert json.loads(ProfileCache(tmp_path / "cache").cost_path(key).read_text())["cost"] == uncached

    again = profiler.profile(task, source + "\n# another candidate\n")
    fresh = Profiler(cache_dir=tmp_path / "cache", lock_dir=tmp_path, gpus=[]).profile(task, source)
    assert len(calls) == 1
    for result in (again, fresh):
        assert result.cached and "task_cost" not in result.phase_seconds and result.roofline == first.roofline
    assert fresh.to_dict() == {**first.to_dict(), "cached": True, "phase_seconds": {}, "seconds": fresh.seconds}

    changed = Task.from_dict({**task.to_dict(), "source": task.source.replace("batch_size = 256", "batch_size = 128")})
    assert cost_key(changed.source_hash, 42, "cpu") != key
    other = profiler.profile(changed, source)
    assert len(calls) == 2 and not other.cached and other.roofline.flops == 2 * 128 * 256 * 256


def test_a_failed_cost_child_is_not_kept_and_a_prefetch_readies_the_cost(tmp_path, monkeypatch):
    task, source = tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text()
    failed = canned_cost(
        monkeypatch, {"flops": None, "min_bytes": None, "dtype": "", "notes": ["cost child timeout"]}, complete=False
    )
    profiler = Profiler(cache_dir=tmp_path / "cache", lock_dir=tmp_path, gpus=[])
    assert [profiler.profile(task, source).cached for _ in range(2)] == [False, False] and len(failed) == 2
    assert not (tmp_path / "cache").exists()

    calls = canned_cost(monkeypatch)
    profiler.prefetch(task).join()
    assert len(calls) == 1 and calls[0]["gpu"] is None and profiler.prefetch(task) is None
    result = profiler.profile(task, source)
    assert result.cached and result.roofline.min_bytes == 2097152 and len(calls) == 1
    gpu_profiler = Profiler(cache_dir=tmp_path / "other", lock_dir=tmp_path, gpus=["0"])
    assert gpu_profiler.prefetch(task) is None and calls == [calls[0]]  # on a GPU: computed under its lock


def test_profile_result_round_trips_through_json():
    result = ProfileResult(
        task_id="t",
        candidate_hash="h",
        status=ProfileStatus.FALLBACK,
        message="ncu not found",
        kernels=[
            KernelProfile(
                id=0,
                name="k(int)",
                base_name="k",
                own=True,
                duration_ms=0.01,
                metrics={"a__b.sum": MetricValue(1.0, "byte", "s"), "c__d.pct": MetricValue("n", "%")},
            )
        ],
        roofline=make_roofline(
            {"flops": 10.0, "min_bytes": 100, "dtype": "float32"}, peak_rates("NVIDIA L4"), 1.0, "x"
        ),
    )
    assert ProfileResult.from_json(result.to_json()) == result
    assert json.loads(result.to_json())["status"] == "fallback"


# --------------------------------------------------------------------------- the GPU lock


def test_gpu_lock_excludes_a_second_holder_and_times_out(tmp_path):
    with gpu_lock(0, tmp_path) as waited:
        assert waited < 1.0
        with pytest.raises(GpuLockTimeout):
            with gpu_lock("0", tmp_path, timeout_s=0.2):
                pass
        with gpu_lock(1, tmp_path, timeout_s=0.2):  # another GPU is not blocked
            pass
    with gpu_lock(0, tmp_path, timeout_s=0.2):  # released
        pass


def test_gpu_lock_waits_for_the_holder(tmp_path):
    released = threading.Event()

    def hold():
        with gpu_lock("GPU-abc", tmp_path):
            released.wait(5)
            time.sleep(0.2)

    thread = threading.Thread(target=hold)
    thread.start()
    time.sleep(0.1)
    released.set()
    with gpu_lock("GPU-abc", tmp_path, timeout_s=5) as waited:
        assert waited >= 0.1
    thread.join()


# --------------------------------------------------------------------------- on a GPU


@pytest.mark.gpu
@pytest.mark.parametrize("metric_set", ["cudaforge24", "basic"])
@pytest.mark.parametrize("file, task_file", [("cuda_relu.py", "1_ReLU.py"), ("two_kernel_softmax.py", "2_Softmax.py")])
def test_profile_on_a_gpu(file, task_file, metric_set, tmp_path):
    source = ((CANDIDATES / file) if (CANDIDATES / file).exists() else FIXTURES / file).read_text()
    profiler = Profiler(
        {"metric_set": metric_set},
        cache_dir=tmp_path / "cache",
        lock_dir=tmp_path,
        build={"cache_dir": str(tmp_path / "build")},
    )
    result = profiler.profile(tiny_task(task_file), source, gpu="0")
    assert result.status in (ProfileStatus.OK, ProfileStatus.FALLBACK), result.message
    assert {k.base_name for k in result.kernels} == candidate_kernel_names(source)
    assert result.spec["name"] and result.spec["peaks"]["memory_gbs"]
    assert result.roofline.floor_ms and 0 < result.roofline.sol_fraction <= 1.5
    if result.status is ProfileStatus.OK and metric_set == "cudaforge24":
        assert all(set(CUDAFORGE24) <= set(k.metrics) for k in result.kernels)


@pytest.mark.gpu
def test_fallback_on_a_gpu_without_ncu(tmp_path):
    profiler = Profiler(
        {"ncu_path": str(tmp_path / "nowhere")},
        use_cache=False,
        lock_dir=tmp_path,
        build={"cache_dir": str(tmp_path / "build")},
    )
    result = profiler.profile(tiny_task("2_Softmax.py"), (CANDIDATES / "triton_softmax.py").read_text(), gpu="0")
    assert result.status is ProfileStatus.FALLBACK and "ncu not found" in result.message
    assert [k.base_name for k in result.kernels] == ["softmax_kernel"] and result.kernels[0].duration_ms > 0


@pytest.mark.gpu
def test_spec_sheet_of_this_gpu():
    from cudaforge.profile import gpu_spec_sheet

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownGPUWarning)
        sheet = gpu_spec_sheet(0)
    assert sheet["sm_count"] > 0 and sheet["l2_cache_bytes"] > 0 and sheet["shared_memory_per_sm_bytes"] > 0
    assert sheet["peaks"]["memory_gbs"] and json.dumps(sheet)


@pytest.mark.skipif(
    "wrapper"
    not in __import__("inspect")
    .signature(__import__("cudaforge.proc.isolation").proc.isolation.run_isolated)
    .parameters,
    reason="run_isolated has no wrapper argument yet",
)
@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["off", "auto"])
def test_a_real_wrapper_process_reporting_ERR_NVGPUCTRPERM(tmp_path, sandbox):
    """A stand-in ncu (a script) writes ncu's permission error to its log and runs the worker: in a plain child, and
    inside the candidate's sandbox (the stand-in then lives where the sandbox may read: beside these tests)."""
    where = tmp_path if sandbox == "off" else Path(tempfile.mkdtemp(prefix="fake-ncu-", dir=Path(__file__).parent))
    fake_ncu = where / "ncu"
    fake_ncu.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        "args = sys.argv[1:]\n"
        "if args == ['--version']: print('Version 2025.3.1.0'); sys.exit(0)\n"
        "open(args[args.index('--log-file') + 1], 'w').write('==ERROR== ERR_NVGPUCTRPERM - The user does not '\n"
        "    'have permission to access NVIDIA GPU Performance Counters on the target device 0.\\n')\n"
        "command = args[args.index('-m') - 1:]\n"
        "os.execv(command[0], command)\n"
    )
    fake_ncu.chmod(0o755)
    fake_ncu.parent.chmod(0o755)
    profiler = Profiler(
        {"ncu_path": str(fake_ncu), "timeout_s": 120, "sandbox": sandbox}, use_cache=False, lock_dir=tmp_path
    )
    try:
        result = profiler.profile(
            tiny_task("1_ReLU.py"), (CANDIDATES / "triton_relu.py").read_text(), gpu="0", artifact_dir=tmp_path / "run"
        )
    finally:
        if where != tmp_path:
            shutil.rmtree(where, ignore_errors=True)
    assert "ERR_NVGPUCTRPERM" in result.message
    assert ("from the candidate's sandbox" in result.message) == (sandbox == "auto")
    assert "ERR_NVGPUCTRPERM" in Path(result.artifacts["ncu_log"]).read_text()
    if not torch.cuda.is_available():  # the torch.profiler fallback then finds no GPU either
        assert result.status is ProfileStatus.ERROR and "no GPU visible" in result.message


def test_profiles_without_a_named_gpu_take_turns_over_the_gpus(tmp_path, monkeypatch):
    seen = []

    def fake_run_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        seen.append(gpu)
        return SimpleNamespace(
            sandbox=None,
            status="ok",
            phase_seconds={},
            error="",
            stderr_tail="",
            stdout_tail="",
            result={"kernels": [], "cost": None, "spec": None, "versions": {}},
        )

    monkeypatch.setattr(Profiler, "run_worker", fake_run_worker)
    monkeypatch.setattr("cudaforge.profile.profiler.gpu_model_name", lambda gpu: "NVIDIA H200")
    canned_cost(monkeypatch)
    profiler = Profiler({"ncu_path": str(tmp_path / "nowhere")}, use_cache=False, lock_dir=tmp_path, gpus=["2", "5"])
    for _ in range(3):
        profiler.profile(tiny_task("1_ReLU.py"), (CANDIDATES / "triton_relu.py").read_text())
    assert seen == ["2", "5", "2"]


def test_ncu_output_is_copied_out_of_the_sandbox_without_following_links(tmp_path):
    """The profiling sandbox's scratch is the candidate's to write: a link left as ncu's log is not read through."""
    from cudaforge.profile.ncu import copy_ncu_output

    secret = tmp_path / "secret.txt"
    secret.write_text("sk-not-for-candidates")
    scratch, out = tmp_path / "scratch", tmp_path / "out"
    scratch.mkdir()
    out.mkdir()
    (scratch / "ncu.log").symlink_to(secret)
    (scratch / "profile.ncu-rep").write_bytes(b"report")
    copy_ncu_output(scratch, out)
    assert not (out / "ncu.log").exists() and (out / "profile.ncu-rep").read_bytes() == b"report"


def test_a_sandboxed_profile_child_builds_nothing_itself(tmp_path):
    """In the profiling sandbox each load_inline gets the library the trusted side built before the profile, by build
    key; an extension it did not build is a build error naming why, and nothing is written to the build cache."""
    from cudaforge.eval.extensions import BuildError
    from cudaforge.profile.child import _import_candidate

    cache = tmp_path / "build"
    with pytest.raises(BuildError, match="not built by the trusted side"):
        _import_candidate((CANDIDATES / "cuda_relu.py").read_text(), {"cache_dir": str(cache)}, delivered={})
    assert not cache.exists() or not any(cache.iterdir())


def test_a_spec_sheet_from_the_candidates_process_is_never_used(tmp_path, monkeypatch):
    """The red team's eleventh finding: the profiled process answered the GPU's spec sheet, and a forged one would set
    the peaks and roofline of every later profile on that GPU. The sheet comes from a trusted child only."""

    def forging_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        assert self._payload(task, source, mode, gpu)["want_spec"] is False
        return SimpleNamespace(
            sandbox=None,
            status="ok",
            phase_seconds={},
            error="",
            stderr_tail="",
            stdout_tail="",
            result={
                "kernels": [{"name": "relu_kernel(float*)", "duration_ms": 0.004}],
                "cost": None,
                "spec": {"name": "forged", "peaks": {"fp32_tflops": 1e9}},
                "versions": {},
            },
        )

    monkeypatch.setattr(Profiler, "run_worker", forging_worker)
    canned_cost(monkeypatch)
    profiler = Profiler({"ncu_path": str(tmp_path / "nowhere")}, use_cache=False, lock_dir=tmp_path)
    result = profiler.profile(tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text(), gpu="0")
    assert result.spec["name"] == "NVIDIA H200" and "forged" not in json.dumps(result.spec)


@pytest.mark.parametrize(
    "forged",
    [
        {"kernels": [], "versions": "xy"},
        {
            "kernels": [],
            "versions": {"torch": "x" * 100_000, "k" * 500: "1", "n": 5, **{str(i): "v" for i in range(99)}},
        },
        {"error": {"not": "a string"}},
        {"kernels": [{"name": "relu_kernel(float*)", "duration_ms": 10**4000}], "versions": {}},
        {"kernels": [{"name": "relu_kernel(float*)", "duration_ms": float("nan")}], "versions": {}},
    ],
)
def test_a_forged_result_file_in_the_profiling_sandbox_is_data_not_a_crash(tmp_path, monkeypatch, forged):
    """The red team: the candidate may write the profiling child's result.json itself. A versions field that is not
    a dict, an error that is not a string, or a duration too large for a float raised in the trusted profiler and
    stopped the whole run; each is now dropped or bounded, and the profile still comes back."""

    def forging_worker(
        self, task, source, gpu, mode, wrapper=None, time_iters=0, *, sandbox=None, collect=None, libraries=None
    ):
        return SimpleNamespace(
            sandbox=None, status="ok", phase_seconds={}, error="", stderr_tail="", stdout_tail="", result=forged
        )

    monkeypatch.setattr(Profiler, "run_worker", forging_worker)
    canned_cost(monkeypatch)
    profiler = Profiler({"ncu_path": str(tmp_path / "nowhere")}, use_cache=False, lock_dir=tmp_path)
    result = profiler.profile(tiny_task("1_ReLU.py"), (CANDIDATES / "cuda_relu.py").read_text(), gpu="0")
    json.dumps(result.to_dict(), allow_nan=False)  # stored as strict JSON
    assert len(json.dumps(result.tools)) < 20_000 and all(len(k) <= 64 for k in result.tools)
    assert all(k.duration_ms is None for k in result.kernels)
    if "error" in forged:
        assert result.status is ProfileStatus.ERROR and "failed" in result.message
