"""The kernel-language registry: what a "kernel" is, decided in one place and asked by the guards, the evaluator's
backend and the profiler."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from cudaforge import languages
from cudaforge.eval.guards.source import vocab as guard_source
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.static import check_candidate

PACKAGE = Path(languages.__file__).resolve().parents[1]
CANDIDATES = PACKAGE / "resources" / "candidates"
REPO_HACKS = PACKAGE.parent / "benchmarks" / "hacks"

CUPY = '''
import cupy as cp
import torch
import torch.nn as nn

_SRC = r"""
extern "C" __global__ void scale_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""
_kernel = cp.RawKernel(_SRC, "scale_kernel")


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _kernel(((x.numel() + 255) // 256,), (256,), (cp.asarray(x), cp.asarray(y), cp.int32(x.numel())))
        return y
'''

TORCH_ONLY = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


@pytest.mark.parametrize("path", sorted(CANDIDATES.glob("*.py")), ids=lambda p: p.name)
def test_each_bundled_candidate_is_detected_as_its_language_and_its_kernels_are_named(path):
    source = path.read_text()
    expected = max((n for n in languages.names() if path.stem.startswith(n + "_")), key=len)  # cute_dsl_relu.py ...
    assert languages.detect(source) == expected
    assert check_candidate(source).backend == expected  # the evaluator's backend is the registry's answer
    names = languages.kernel_names(source)
    assert names, f"{path.name}: no kernel named"
    assert names <= languages.get(expected).kernel_names(source) | languages.kernel_names(source)
    for name in names:  # every named kernel is defined in the source as the language defines kernels
        assert f"{name}(" in source or f"{name} (" in source


def test_cupy_and_plain_torch_and_the_names_of_each():
    assert languages.detect(CUPY) == "cupy" and languages.get("cupy").kernel_names(CUPY) == {"scale_kernel"}
    assert languages.detect(TORCH_ONLY) == languages.NO_KERNEL == "torch"
    assert languages.kernel_names(TORCH_ONLY) == set()
    relu = (CANDIDATES / "triton_relu.py").read_text()
    assert languages.get("triton").kernel_names(relu) == {"relu_kernel"}
    assert languages.get("cuda").kernel_names(relu) == set()  # a language names only its own kernels


def test_an_unknown_language_is_refused_with_the_known_ones():
    with pytest.raises(
        ValueError, match="unknown kernel language 'hip'; known: cuda, cupy, cute_dsl, tilelang, triton"
    ):
        languages.get("hip")


def test_every_language_has_a_candidate_and_every_coder_language_a_worked_example():
    stems = [p.stem for p in CANDIDATES.glob("*.py")]
    examples = PACKAGE / "resources" / "agents" / "examples"
    for language in languages.languages():
        if language.name != "cupy":  # CuPy is evaluated, not asked of the Coder (tests/test_gpu_eval.py has one)
            assert any(s.startswith(language.name + "_") for s in stems), language.name
        if language.prompt_rule:
            folder = examples / language.example
            solution = (folder / "solution.py").read_text()
            assert (folder / "reference.py").is_file()
            assert languages.detect(solution) == language.name, language.example
            assert language.kernel_names(solution) and check_candidate(solution, dataclasses.asdict(EvalConfig())).ok
            assert language.title and language.follow_up


@pytest.mark.parametrize(
    "name, profiled, defined, own",
    [
        (
            "cute_dsl",
            "kernel_cutlass_relu_kernel_tensorptrf32generico10001_tensorptrf32generico10001__0",
            "relu_kernel",
            True,
        ),
        ("cute_dsl", "kernel_relu_kernel_0", "relu_kernel", True),  # CuTe DSL before it added the cutlass_ prefix
        ("cute_dsl", "kernel_cutlass_relu_kernel2_tensor_0", "relu_kernel", False),
        ("tilelang", "relu_main_kernel", "relu_main", True),
        ("tilelang", "relu_main_kernel_1", "relu_main", True),
        ("tilelang", "relu_main_kernel_x", "relu_main", False),
        ("tilelang", "other_main_kernel", "relu_main", False),
        ("cuda", "relu_kernel", "relu_kernel", True),
    ],
)
def test_each_language_says_how_its_kernels_are_named_once_compiled(name, profiled, defined, own):
    assert languages.get(name).profiled_match(profiled, defined) is own
    assert languages.is_own_kernel(f"{profiled}(float *, int)" if name == "cuda" else profiled, {defined}) is own


def test_cute_dsl_and_tilelang_sources_are_told_apart_and_their_kernels_named():
    cute = (CANDIDATES / "cute_dsl_softmax.py").read_text()
    tile = (CANDIDATES / "tilelang_softmax.py").read_text()
    assert languages.detect(cute) == "cute_dsl" and languages.kernel_names(cute) == {"softmax_kernel"}
    assert languages.detect(tile) == "tilelang" and languages.kernel_names(tile) == {"softmax_main"}
    assert languages.get("triton").kernel_names(tile) == set()  # @tilelang.jit is not a Triton kernel
    assert languages.get("cute_dsl").modules == ("cutlass",) and languages.get("tilelang").modules == ("tilelang",)
    assert languages.missing_modules("cuda") == []
    assert languages.missing_modules("tilelang") in ([], ["tilelang"])  # installed or not, it is said which


def test_a_kernel_named_like_the_torch_op_it_stands_beside_is_not_a_use_of_it():
    """A kernel factory called ``relu`` does not make ``torch.relu(x)`` in forward a launch of it."""
    source = (REPO_HACKS / "hack_tilelang_passthrough.py").read_text()
    cfg = dataclasses.asdict(EvalConfig())
    report = check_candidate(source, cfg)
    assert report.status == "rejected" and any(f["guard"] == "no_custom_kernel" for f in report.findings)
    fixed = source.replace("return torch.relu(x)", "return relu(x.numel())(x.view(-1)).view(x.shape)")
    assert check_candidate(fixed, cfg).ok


def test_every_language_module_is_registered_and_the_guards_vocabulary_is_the_registrys():
    modules = {p.stem for p in (PACKAGE / "languages").glob("*.py")} - {"__init__", "base", "names"}
    assert modules == set(languages.names())  # every module of the package is a language: no list to forget
    for name in modules:  # and each defines its LANGUAGE under its own name
        assert languages.get(name).name == name
    for language in languages.languages():
        assert set(language.decorators) <= set(guard_source.KERNEL_DECORATORS)
        assert set(language.builders) <= set(guard_source.KERNEL_BUILDERS)
    assert {"load_inline", "RawKernel", "jit", "SourceModule", "kernel"} <= set(guard_source.KERNEL_BUILDERS) | set(
        guard_source.KERNEL_DECORATORS
    )


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):  # function-level imports included
        if isinstance(node, ast.ImportFrom) and node.module == "cudaforge":  # from cudaforge import pyast
            found.update(f"cudaforge.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_eval_does_not_import_profile_and_the_registry_imports_nothing_heavy():
    offenders = {
        str(p.relative_to(PACKAGE)): sorted(m for m in _imports(p) if m.startswith("cudaforge.profile"))
        for p in (PACKAGE / "eval").rglob("*.py")
    }
    assert not {k: v for k, v in offenders.items() if v}
    for path in (PACKAGE / "languages").glob("*.py"):
        outside = {m for m in _imports(path) if m.startswith("cudaforge") and not m.startswith("cudaforge.languages")}
        stdlib_only = {"cudaforge.pyast", "cudaforge.plugins", "cudaforge.registry"}
        assert outside <= stdlib_only, (path.name, outside)
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, cudaforge.languages as l; l.languages(); "
            "print(sorted(m for m in ('torch', 'hydra', 'litellm', 'triton') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def _module_graph(root: Path) -> dict[str, set[str]]:
    """cudaforge module -> the cudaforge modules it imports anywhere in its text (lazy and type-only imports too)."""
    graph: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__")
        graph[name] = {m for m in _imports(path) if m.startswith("cudaforge.")}
    return graph


def test_the_report_writers_and_the_report_builder_do_not_import_each_other():
    graph = _module_graph(PACKAGE)
    report = {
        m: {d for d in deps if d.startswith("cudaforge.report.")}
        for m, deps in graph.items()
        if m.startswith("cudaforge.report.")
    }

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in report.get(start, ()):
            if nxt == goal or (nxt not in seen and (seen.add(nxt) or reaches(nxt, goal, seen))):
                return True
        return False

    cycles = sorted(m for m in report if reaches(m, m, set()))
    assert not cycles, cycles


def test_a_run_needs_nothing_of_teach():
    """``cudaforge run`` (runner, graph, agents) reads skill documents through the agents layer; ``teach/`` distils
    them and exports datasets, after runs."""
    graph = _module_graph(PACKAGE)
    users = sorted(
        m
        for m, deps in graph.items()
        if m.startswith(("cudaforge.run.", "cudaforge.graph.", "cudaforge.agents."))
        and any(d.startswith("cudaforge.teach") for d in deps)
    )
    assert not users, users


def test_a_candidate_in_a_language_whose_package_is_missing_is_unsupported_before_any_worker(monkeypatch):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus

    monkeypatch.setattr(languages, "missing_modules", lambda name: list(languages.get(name).modules))
    task = find_task(selection("tiny"), "level1/1_ReLU")
    result = Evaluator({"device": "cpu"}).evaluate(task, (CANDIDATES / "cute_dsl_relu.py").read_text())
    assert result.status is EvalStatus.UNSUPPORTED and [p.phase.value for p in result.phases] == ["static"]
    assert "CuTe DSL kernels need the Python module cutlass" in result.message
    assert "pip install nvidia-cutlass-dsl" in result.message


@pytest.mark.parametrize(
    "profiled, defined",
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
            "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
            "vectorized_elementwise_kernel",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >"
            "(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
            "vectorized_elementwise",
        ),  # TileLang's rule
        ("void cub::DeviceReduceKernel<cub::DeviceReducePolicy<float>, float*>(float*, int)", "DeviceReduceKernel"),
        (
            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
            "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32",
        ),
        ("nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTN", "nvjet_tst_128x64_64x4_1x2_h_bz_coopA_NTN"),
    ],
)
def test_a_kernel_named_like_torchs_or_a_librarys_does_not_make_theirs_the_candidates(profiled, defined):
    """An unused ``__global__`` named like torch's elementwise kernel (or cuBLAS's) would otherwise turn torch's own
    launches into the candidate's kernels, and a passthrough would pass the GPU's no_custom_kernel check."""
    assert not languages.is_own_kernel(profiled, {defined})
    assert languages.is_own_kernel("void my_gemm_kernel<float>(float const*, float*, int)", {"my_gemm_kernel"})


def test_a_sources_kept_jit_caches_are_those_of_the_languages_it_is_written_in():
    from cudaforge import languages

    candidates = Path(__file__).resolve().parents[1] / "benchmarks" / "candidates"
    named = lambda file: [lang.name for lang in languages.jit_caches((candidates / file).read_text())]  # noqa: E731
    assert named("triton_relu.py") == ["triton"] and named("tilelang_relu.py") == ["tilelang"]
    assert named("cuda_relu.py") == [] and named("cute_dsl_relu.py") == []
    assert [lang.name for lang in languages.jit_caches()] == ["tilelang", "triton"]
