"""The evaluator on a real GPU: realistic CUDA and Triton candidates, real faulting kernels.

Skipped without a GPU; scripts/gpu_check.py runs them on one (results in benchmarks/results/).
"""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.gpu

from cudaforge.eval.evaluator import Evaluator  # noqa: E402
from cudaforge.tasks import load_suite, selection  # noqa: E402
from cudaforge.types import EvalStatus  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CANDIDATES = REPO / "benchmarks" / "candidates"
FAULTS = Path(__file__).resolve().parent / "gpu_candidates"


@pytest.fixture(scope="module")
def tiny():
    cfg = selection("tiny")
    return {t.name: t for t in load_suite(cfg)}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    # guards off: the fault stand-ins (slow_relu, oom, segfault_host) are not custom kernels
    return Evaluator(
        {
            "timing_trials": 30,
            "warmup": 5,
            "correctness_timeout_s": 60,
            "guards_enforce": False,
            "build_cache_dir": str(tmp_path_factory.mktemp("build")),
        }
    )


@pytest.mark.parametrize(
    "task, file",
    [
        ("ReLU", "cuda_relu.py"),
        ("Softmax", "cuda_softmax.py"),
        ("MatmulBiasReLU", "cuda_matmul_bias_relu.py"),
        ("ReLU", "triton_relu.py"),
        ("Softmax", "triton_softmax.py"),
    ],
)
def test_realistic_candidates_are_correct_and_timed(evaluator, tiny, task, file):
    result = evaluator.evaluate(tiny[task], (CANDIDATES / file).read_text())
    assert result.status is EvalStatus.CORRECT, result.report()
    assert result.speedup is not None and result.speedup.ci_low <= result.speedup.median <= result.speedup.ci_high
    assert result.candidate_timing.n == 30 and result.candidate_timing.median > 0
    assert result.fingerprint["gpu"]["name"] and result.fingerprint["gpu_state_before"]
    # the launch-inclusive series (2 warm-ups, 6 checked calls) ran first and warmed the main series up: with
    # eval.warmup=5 the main series still makes 2 warm-ups of its own
    assert result.launch_inclusive and result.launch_inclusive["trials"] == 6, result.launch_inclusive
    assert result.fingerprint["trials_before_main"] == {"launch_inclusive": 8, "warmup": 2}


@pytest.mark.parametrize(
    "task, file",
    [
        ("ReLU", "cute_dsl_relu.py"),
        ("Softmax", "cute_dsl_softmax.py"),
        ("ReLU", "tilelang_relu.py"),
        ("Softmax", "tilelang_softmax.py"),
    ],
)
def test_cute_dsl_and_tilelang_candidates_are_correct_timed_and_profiled_as_their_own(tiny, task, file):
    """Each language's candidates through the guarded evaluator and ncu; skipped where its package is not installed
    (benchmarks/languages_gpu.py runs the same on the H200: benchmarks/results/2026-12-03_h200/ (call7) and _call9)."""
    from cudaforge import languages
    from cudaforge.profile import Profiler

    source = (CANDIDATES / file).read_text()
    missing = languages.missing_modules(languages.detect(source))
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    result = Evaluator({"timing_trials": 30, "warmup": 5}).evaluate(tiny[task], source)
    assert result.status is EvalStatus.CORRECT and not any(f["verdict"] == "reject" for f in result.guard_findings)
    assert result.speedup is not None and result.candidate_timing.median > 0
    profile = Profiler({"clock_control": "none"}, use_cache=False).profile(tiny[task], source)
    own = [k for k in profile.kernels if k.own]
    assert profile.status.value == "ok" and own and not profile.library_kernel_names, profile.message
    assert all(any(languages.is_own_kernel(k.name, {n}) for n in languages.kernel_names(source)) for k in own)


def test_a_repeated_cuda_candidate_hits_the_build_cache(evaluator, tiny):
    source = (CANDIDATES / "cuda_relu.py").read_text()
    evaluator.evaluate(tiny["ReLU"], source)
    again = evaluator.evaluate(tiny["ReLU"], source)
    assert again.status is EvalStatus.CORRECT and again.compile_cached
    compile_phase = [p for p in again.phases if p.phase.value == "compile"][0]
    assert compile_phase.seconds < 1.0, compile_phase


def test_what_is_measured_before_a_candidate_is_reused_by_the_next_of_its_task(tiny, tmp_path):
    evaluator = Evaluator({"timing_trials": 30, "warmup": 5, "build_cache_dir": str(tmp_path)})
    relu, softmax = (CANDIDATES / "triton_relu.py").read_text(), (CANDIDATES / "triton_softmax.py").read_text()
    first = evaluator.evaluate(tiny["ReLU"], relu)
    second = evaluator.evaluate(tiny["ReLU"], relu + "\n# another candidate\n")
    other = evaluator.evaluate(tiny["Softmax"], softmax)
    for result in (first, second, other):
        assert result.status is EvalStatus.CORRECT, result.report()
        assert result.fingerprint["reference_solo_ms"] > 0
    assert "measured_before_reused" not in first.fingerprint and "measured_before_reused" not in other.fingerprint
    reused = second.fingerprint["measured_before_reused"]
    assert reused["from"] == first.candidate_hash and 0 <= reused["age_s"] < 600
    for key in ("reference_solo_ms", "timing_crosscheck_exchange_ms"):
        assert second.fingerprint.get(key) == first.fingerprint.get(key)


def test_compile_error_is_trimmed_for_the_judge(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], (CANDIDATES / "cuda_compile_error.py").read_text())
    assert result.status is EvalStatus.COMPILE_ERROR
    assert "error" in result.compile_log_trimmed and len(result.compile_log_trimmed) < len(result.compile_log)


def test_slow_candidate_has_speedup_below_one(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], (FAULTS / "slow_relu.py").read_text())
    assert result.status is EvalStatus.CORRECT
    assert result.speedup.ci_high < 1.0, result.report()


def test_illegal_memory_access_is_a_clear_verdict(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], (FAULTS / "cupy_illegal_address.py").read_text())
    assert result.status in (EvalStatus.RUNTIME_ERROR, EvalStatus.CRASHED), result.report()
    assert "illegal" in result.message.lower() or "invalid" in result.message.lower(), result.message


def test_hanging_kernel_times_out(tiny, tmp_path):
    evaluator = Evaluator({"correctness_timeout_s": 15, "build_cache_dir": str(tmp_path)})
    result = evaluator.evaluate(tiny["ReLU"], (FAULTS / "cupy_hang.py").read_text())
    assert result.status is EvalStatus.TIMEOUT and "correctness" in result.message


def test_oom_is_a_runtime_error(evaluator, tiny):
    result = evaluator.evaluate(tiny["ReLU"], (FAULTS / "oom.py").read_text())
    assert result.status is EvalStatus.RUNTIME_ERROR and "out of memory" in result.message.lower()


def test_segfault_is_a_crash_and_the_next_candidate_is_fine(evaluator, tiny):
    jobs = [
        (tiny["ReLU"], (FAULTS / "segfault_host.py").read_text()),
        (tiny["ReLU"], (FAULTS / "cupy_illegal_address.py").read_text()),
        (tiny["ReLU"], (CANDIDATES / "triton_relu.py").read_text()),
    ]
    results = evaluator.evaluate_batch(jobs)
    assert results[0].status is EvalStatus.CRASHED and "SIGSEGV" in results[0].message
    assert results[2].status is EvalStatus.CORRECT


def test_compile_baseline_times_against_torch_compile(tiny, tmp_path):
    evaluator = Evaluator({"baseline": "compile", "timing_trials": 20, "warmup": 5, "build_cache_dir": str(tmp_path)})
    result = evaluator.evaluate(tiny["ReLU"], (CANDIDATES / "triton_relu.py").read_text())
    assert result.status is EvalStatus.CORRECT and result.speedup.baseline == "compile"


def test_baseline_times_eager_and_compiled_references(tiny):
    from cudaforge.eval.baseline import time_suite

    evaluator = Evaluator({"timing_trials": 20, "warmup": 3})
    (baseline,) = time_suite([tiny["Softmax"]], evaluator.cfg, evaluator.gpus[0])
    assert baseline.status == "ok", baseline.message
    assert baseline.eager.median > 0 and baseline.compile.median > 0 and baseline.fingerprint["gpu"]["name"]


def test_a_gpu_evaluation_is_sandboxed_with_the_arena_on_the_device(evaluator, tiny):
    """The candidate ran in a sandbox, its tensors crossed through GPU memory shared with the verifier (no host
    fallback), the reference was timed alone first, and the cross-check ran without firing on an honest kernel."""
    result = evaluator.evaluate(tiny["Softmax"], (CANDIDATES / "cuda_softmax.py").read_text())
    assert result.status is EvalStatus.CORRECT, result.report()
    sandbox = result.fingerprint["sandbox"]
    assert sandbox["capabilities"] == "none" and sandbox["landlock"], result.fingerprint["sandbox_summary"]
    assert not any("device arena unavailable" in n for n in result.fingerprint.get("guard_notes", []))
    assert result.fingerprint["reference_solo_ms"] > 0
    crosscheck = result.fingerprint["timing_crosscheck"]
    assert crosscheck["calls"] >= 2 and crosscheck["candidate_observed_ms"] > 0
    assert not [f for f in result.guard_findings if f["guard"] in ("timing_crosscheck", "reference_slowdown")]


def test_an_l2_persistence_window_buys_nothing(tmp_path):
    """The verifier resets persisting L2 lines before every timed call: the candidate that leaves a window set
    times like its twin without one (within 10%); back to back its stale lines slow its own calls, and the timing
    cross-check rejects it (H200, 2026-12-02)."""
    from cudaforge.tasks import find_task

    source = (REPO / "benchmarks" / "hacks" / "hack_l2_persistence.py").read_text()
    twin = source.replace("PERSIST = True", "PERSIST = False")
    task = find_task(selection("main"), "level1/3_Softmax")
    evaluator = Evaluator(
        {"timing_trials": 50, "warmup": 5, "guards": {"concurrency": "report"}, "build_cache_dir": str(tmp_path)}
    )
    with_window, without = evaluator.evaluate(task, source), evaluator.evaluate(task, twin)
    assert without.status is EvalStatus.CORRECT, without.report()
    assert with_window.status is EvalStatus.REJECTED, with_window.report()
    assert [f["guard"] for f in with_window.guard_findings if f["verdict"] == "reject"] == ["timing_crosscheck"]
    assert with_window.candidate_timing.median >= 0.9 * without.candidate_timing.median, (
        with_window.candidate_timing.median,
        without.candidate_timing.median,
    )


def _built_by_the_pool(tiny, tmp_path, language, task, file, kernel, seeded):
    """A ``jit_ahead=compile`` evaluator, and one candidate built by its CPU pool and then evaluated on the GPU: it
    is correct, the worker's cache of ``language`` held at least ``seeded`` entries from the pool, nothing was
    compiled in the compile phase or after it (counted by the trusted side)."""
    evaluator = Evaluator(
        {
            "timing_trials": 10,
            "warmup": 3,
            "correctness_timeout_s": 120,
            "jit_ahead": "compile",
            "build_cache_dir": str(tmp_path),
        }
    )
    source = (CANDIDATES / file).read_text()
    outcome = evaluator.precompile(source, tiny[task])
    assert outcome is not None and outcome.jit == [kernel], outcome
    ahead = evaluator.evaluate(tiny[task], source)
    assert ahead.status is EvalStatus.CORRECT, ahead.report()
    jit = ahead.fingerprint["jit_ahead"]
    assert jit["language"] == language and jit["kernels"] == [], jit  # prepared by the pool: not compiled again
    assert jit["kernels_seeded"] >= seeded, jit
    assert jit["kernels_after"] == jit["kernels_at_end"] == jit["kernels_seeded"], jit  # none on the GPU
    assert "found built ahead" in [p for p in ahead.phases if p.phase.value == "compile"][0].message
    return evaluator


def test_triton_kernels_compile_ahead_in_the_cpu_pool_and_otherwise_in_the_compile_phase(tiny, tmp_path):
    """Built by the CPU pool for this GPU's target, a Triton candidate's kernels are found in the GPU worker's cache
    and nothing compiles there; without the pool (``eval.jit_ahead=compile``), every kernel (an autotuned one's
    every config, for each input shape) compiles in the compile phase, in a fresh CPU-only process, and none in the
    correctness phase. Counted by the trusted side in the worker's Triton cache (benchmarks/jit_ahead_bench.py
    times the same)."""
    evaluator = _built_by_the_pool(tiny, tmp_path, "triton", "Softmax", "triton_softmax.py", "softmax_kernel", 1)

    matmul = (CANDIDATES / "triton_matmul_bias_relu.py").read_text()
    fresh = evaluator.evaluate(tiny["MatmulBiasReLU"], matmul)
    assert fresh.status is EvalStatus.CORRECT, fresh.report()
    jit = fresh.fingerprint["jit_ahead"]
    assert jit["kernels"] == ["linear_relu_kernel"], jit  # seeded: at most the kernel a standby worker warmed with
    # 4 configs x 2 specialisations (M = 256 and 64 divisible by 16, 129 not), measured 8 on the H200
    assert jit["kernels_after"] - jit["kernels_seeded"] >= 8 and jit["kernels_at_end"] == jit["kernels_after"], jit


def test_tilelang_kernels_compile_ahead_in_the_cpu_pool_and_otherwise_in_the_compile_phase(tiny, tmp_path):
    """As the Triton test above, for TileLang (skipped where it is not installed): built by the CPU pool for this
    GPU's target, the GPU worker finds every size in its TileLang cache and compiles nothing; with
    ``eval.jit_ahead=compile`` the fused matmul (a TileLang candidate of ours, checked correct here) compiles in
    the compile phase and nothing after it."""
    from cudaforge import languages

    if languages.missing_modules("tilelang"):
        pytest.skip("needs tilelang")
    assert languages.get("tilelang").jit_kernel_marks == ("device_kernel.cu",)
    # 2 or more: each size under both spellings of out_idx (6 for ReLU's 3 sizes on the H200)
    evaluator = _built_by_the_pool(tiny, tmp_path, "tilelang", "ReLU", "tilelang_relu.py", "relu_main", 2)

    matmul = (CANDIDATES / "tilelang_matmul_bias_relu.py").read_text()
    fresh = evaluator.evaluate(tiny["MatmulBiasReLU"], matmul)
    assert fresh.status is EvalStatus.CORRECT, fresh.report()
    jit = fresh.fingerprint["jit_ahead"]
    assert jit["kernels"] == ["linear_relu_main"] and jit["kernels_seeded"] == 0, jit
    assert jit["kernels_after"] >= 3 and jit["kernels_at_end"] == jit["kernels_after"], (
        jit
    )  # 3 sizes, before the trials
