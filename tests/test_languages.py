"""The kernel-language registry: what a "kernel" is, decided in one place and asked by the guards, the evaluator's
backend and the profiler."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from cudaforge import languages
from cudaforge.eval.guards import source as guard_source
from cudaforge.eval.static import check_candidate

PACKAGE = Path(languages.__file__).resolve().parents[1]
CANDIDATES = PACKAGE / "resources" / "candidates"

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
    expected = path.name.split("_")[0]  # cuda_relu.py, triton_softmax.py ...
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
    with pytest.raises(ValueError, match="unknown kernel language 'cute_dsl'; known: cuda, triton, cupy"):
        languages.get("cute_dsl")


def test_every_language_module_is_registered_and_the_guards_vocabulary_is_the_registrys():
    modules = {p.stem for p in (PACKAGE / "languages").glob("*.py")} - {"__init__", "base", "names"}
    assert modules == set(languages.names())  # a language module left out of the registry fails here
    for language in languages.languages():
        assert set(language.decorators) <= set(guard_source.KERNEL_DECORATORS)
        assert set(language.builders) <= set(guard_source.KERNEL_BUILDERS)
    assert {"load_inline", "RawKernel", "jit", "SourceModule", "kernel"} <= set(guard_source.KERNEL_BUILDERS) | set(
        guard_source.KERNEL_DECORATORS)  # fmt: skip


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
    offenders = {str(p.relative_to(PACKAGE)): sorted(m for m in _imports(p) if m.startswith("cudaforge.profile"))
                 for p in (PACKAGE / "eval").rglob("*.py")}  # fmt: skip
    assert not {k: v for k, v in offenders.items() if v}
    for path in (PACKAGE / "languages").glob("*.py"):
        outside = {m for m in _imports(path) if m.startswith("cudaforge") and not m.startswith("cudaforge.languages")}
        assert outside <= {"cudaforge.pyast"}, (path.name, outside)
    loaded = subprocess.run([sys.executable, "-c", "import sys, cudaforge.languages as l; l.languages(); "
                             "print(sorted(m for m in ('torch', 'hydra', 'litellm', 'triton') if m in sys.modules))"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
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
    report = {m: {d for d in deps if d.startswith("cudaforge.report.")} for m, deps in graph.items()
              if m.startswith("cudaforge.report.")}  # fmt: skip

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
    users = sorted(m for m, deps in graph.items() if m.startswith(("cudaforge.run.", "cudaforge.graph.", "cudaforge.agents."))
                   and any(d.startswith("cudaforge.teach") for d in deps))  # fmt: skip
    assert not users, users
