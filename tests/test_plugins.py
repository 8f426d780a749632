"""Languages and vendors shipped as packages of their own (entry points, ``cudaforge.plugins``).

The worked example is ``tests/fixtures/out_of_tree_language/``: a real package (pyproject.toml and its module) that adds
Numba CUDA kernels as a language. Here it is installed the way pip lays a package out (the module and a
``.dist-info`` folder with its ``entry_points.txt``, read from its pyproject.toml) into a folder on ``PYTHONPATH``,
and a fresh interpreter is asked what it sees.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

EXAMPLE = REPO / "tests" / "fixtures" / "out_of_tree_language"

NUMBA_SOURCE = textwrap.dedent(
    """
    import torch
    from numba import cuda

    @cuda.jit
    def relu_kernel(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = max(x[i], 0.0)

    class ModelNew(torch.nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            relu_kernel[(x.numel() + 255) // 256, 256](cuda.as_cuda_array(x), cuda.as_cuda_array(out))
            return out
    """
)


def install(site: Path, extra_entry_points: dict[str, dict[str, str]] | None = None) -> Path:
    """Lay the example out in ``site`` as pip would: its module and a dist-info naming its entry points."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    shutil.copytree(EXAMPLE / "cudaforge_numba_lang", site / "cudaforge_numba_lang")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = {group: dict(eps) for group, eps in project["entry-points"].items()}
    for group, eps in (extra_entry_points or {}).items():
        groups.setdefault(group, {}).update(eps)
    (info / "entry_points.txt").write_text(
        "".join(f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n" for g, eps in groups.items())
    )
    return site


def ask(code: str, *, cwd: Path, pythonpath: Path | None = None, inherited: str | None = None):
    """Run ``code`` in a fresh interpreter; its stdout read as JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CUDAFORGE_ENTRY_POINTS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath) if pythonpath else "", str(REPO)]))
    if inherited is not None:
        env["CUDAFORGE_ENTRY_POINTS"] = inherited
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


LIST = f"""
import json
from cudaforge import languages
src = {NUMBA_SOURCE!r}
names = [lang.name for lang in languages.languages()]
found = {{"names": names, "detect": languages.detect(src), "kernels": sorted(languages.kernel_names(src))}}
if "numba" in names:
    lang = languages.get("numba")
    found.update(install=lang.install, missing=languages.missing_modules("numba"), builders=list(languages.kernel_builders()))
print(json.dumps(found))
"""


def test_an_installed_package_adds_a_kernel_language_that_the_registry_uses(tmp_path):
    site = install(tmp_path / "site")
    seen = ask(LIST, cwd=tmp_path, pythonpath=site)
    assert seen["names"][-1] == "numba" and "cuda" in seen["names"] and "triton" in seen["names"]
    assert seen["detect"] == "numba" and seen["kernels"] == ["relu_kernel"]
    assert seen["install"] == "pip install numba-cuda"
    # without the package the same source is no kernel language's at all
    plain = ask(LIST, cwd=tmp_path)
    assert "numba" not in plain["names"] and plain["detect"] == "torch"


def test_a_package_in_the_working_directory_is_never_loaded(tmp_path):
    """A process started in a folder sees it on sys.path; a dist-info there (a candidate's scratch) adds nothing."""
    scratch = install(tmp_path / "scratch")
    seen = ask(LIST, cwd=scratch)
    assert "numba" not in seen["names"] and seen["detect"] == "torch"


def test_children_take_the_scan_of_their_parent_from_the_environment(tmp_path):
    site = install(tmp_path / "site")
    parent = ask(
        "import json, os\nfrom cudaforge import plugins\nplugins.declared()\nprint(json.dumps(os.environ[plugins.ENV]))",
        cwd=tmp_path,
        pythonpath=site,
    )
    assert json.loads(parent)["cudaforge.languages"] == {"numba": "cudaforge_numba_lang:LANGUAGE"}
    # a child handed an empty scan does not look again, though the package is on its path
    empty = json.dumps({"cudaforge.languages": {}, "cudaforge.vendors": {}})
    assert "numba" not in ask(LIST, cwd=tmp_path, pythonpath=site, inherited=empty)["names"]
    assert ask(LIST, cwd=tmp_path, pythonpath=site, inherited=parent)["names"][-1] == "numba"


def test_a_broken_package_is_left_out_with_a_warning_and_refused_by_name(tmp_path):
    """One package that is not a language, one that raises on import: the rest of the languages still work."""
    for name, body in [
        ("broken_lang", "LANGUAGE = 'not a language'\n"),
        ("raising_lang", "raise RuntimeError('boom')\n"),
    ]:
        (tmp_path / "site" / name).mkdir(parents=True)
        (tmp_path / "site" / name / "__init__.py").write_text(body)
    site = install(
        tmp_path / "site",
        {"cudaforge.languages": {"broken": "broken_lang:LANGUAGE", "raising": "raising_lang:LANGUAGE"}},
    )
    code = (
        "import json, warnings\nfrom cudaforge import languages\nwith warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n    names = [lang.name for lang in languages.languages()]\n"
        "errors = []\nfor name in ('broken', 'raising'):\n    try:\n        languages.get(name)\n"
        "    except ValueError as exc:\n        errors.append(str(exc))\n"
        "print(json.dumps({'names': names, 'warned': [str(x.message) for x in w], 'errors': errors}))\n"
    )
    seen = ask(code, cwd=tmp_path, pythonpath=site)
    assert seen["names"][-1] == "numba" and "broken" not in seen["names"] and "raising" not in seen["names"]
    assert any("'broken'" in m and "not a KernelLanguage" in m for m in seen["warned"]), seen["warned"]
    assert any("raising" in m and "boom" in m for m in seen["warned"]), seen["warned"]
    assert "not a KernelLanguage" in seen["errors"][0] and "boom" in seen["errors"][1]


def test_a_module_in_the_working_directory_never_stands_in_for_an_installed_plugin(tmp_path):
    """The installed package's entry point names ``cudaforge_numba_lang``; a file of that name where the process
    starts is not what gets imported (red team, 2026-12-05)."""
    site = install(tmp_path / "site")
    here = tmp_path / "here"
    here.mkdir()
    (here / "cudaforge_numba_lang.py").write_text("raise SystemExit('imported from the working directory')\n")
    code = LIST.replace(
        "from cudaforge import languages", "import sys; sys.path.insert(0, '')\nfrom cudaforge import languages"
    )
    seen = ask(code, cwd=here, pythonpath=site)
    assert "numba" not in seen["names"]  # refused (with a warning), never imported from there


def test_an_installed_package_adds_a_gpu_vendor(tmp_path):
    (tmp_path / "site" / "sim_vendor").mkdir(parents=True)
    (tmp_path / "site" / "sim_vendor" / "__init__.py").write_text(
        "import dataclasses\nfrom cudaforge.vendors.nvidia import NVIDIA\nVENDOR = dataclasses.replace(NVIDIA, name='sim')\n"
    )
    site = install(tmp_path / "site", {"cudaforge.vendors": {"sim": "sim_vendor:VENDOR"}})
    code = "import json, os\nfrom cudaforge import vendors\nprint(json.dumps(vendors.current().name))"
    env_code = "import os\nos.environ['CUDAFORGE_GPU_VENDOR'] = 'sim'\n" + code
    assert ask(env_code, cwd=tmp_path, pythonpath=site) == "sim"
    unknown = "import os, json\nos.environ['CUDAFORGE_GPU_VENDOR'] = 'other'\nfrom cudaforge import vendors\n"
    unknown += "try:\n    vendors.current()\nexcept ValueError as exc:\n    print(json.dumps(str(exc)))\n"
    message = ask(unknown, cwd=tmp_path, pythonpath=site)
    assert "known vendors are nvidia, sim" in message


@pytest.mark.parametrize("table", ["cudaforge.languages"])
def test_the_example_names_its_language_in_the_group_the_registry_reads(table):
    from cudaforge import plugins

    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    assert table == plugins.LANGUAGES and project["entry-points"][table] == {"numba": "cudaforge_numba_lang:LANGUAGE"}


SECTION_PACKAGE = """
from cudaforge.report.sections import ReportSection

def _count(runs):
    return ["", "## Runs counted", "", f"{len(runs)} runs."]

def _fail(runs):
    raise RuntimeError("no data")

def _quiet(runs):
    return []

SECTION = ReportSection("run_count", _count)
FAILING = ReportSection("failing", _fail)
QUIET = ReportSection("quiet", _quiet)
SHADOW = ReportSection("protocols", _count)
"""

REPORT = """
import json, warnings
from cudaforge.report import tables
from cudaforge.report.model import Report
from cudaforge.report.sections import SECTIONS, section_lines
from cudaforge.report.stats import FailedAs
report = Report([], [], [], [], [], FailedAs.zero)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    report.sections = section_lines([])
print(json.dumps({"names": SECTIONS.names(), "md": tables.markdown(report), "warned": [str(x.message) for x in w]}))
"""


def test_an_installed_package_adds_a_report_section_written_after_the_built_in_ones(tmp_path):
    (tmp_path / "site" / "count_section").mkdir(parents=True)
    (tmp_path / "site" / "count_section" / "__init__.py").write_text(SECTION_PACKAGE)
    entries = {"run_count": "count_section:SECTION", "failing": "count_section:FAILING", "quiet": "count_section:QUIET"}
    site = install(tmp_path / "site", {"cudaforge.report_sections": {**entries, "protocols": "count_section:SHADOW"}})
    seen = ask(REPORT, cwd=tmp_path, pythonpath=site)
    assert seen["names"] == ["protocols", "integrations", "search", "failing", "quiet", "run_count"]
    assert seen["md"].endswith("## Notes\n\n\n## Runs counted\n\n0 runs.\n"), seen["md"][-200:]
    assert any("'protocols' of an installed package is left out" in m for m in seen["warned"]), seen["warned"]
    assert any("'failing' failed (no data)" in m for m in seen["warned"]), seen["warned"]
    plain = ask(REPORT, cwd=tmp_path)
    assert plain["names"] == ["protocols", "integrations", "search"] and plain["md"].endswith("## Notes\n\n")


SHAPE = """
import json
from types import SimpleNamespace
from cudaforge.graph.loop import build_graph
from cudaforge.graph.strategies import LOOP_SHAPES, Strategy
node = {"name": "mine", "judge_corrects": True, "judge_optimizes": True, "profile": True}
drawn = {}
for graph in ("no_judge", "alternating"):
    strategy = Strategy.from_config({**node, "graph": graph})
    drawn[graph] = sorted(build_graph(SimpleNamespace(strategy=strategy)).get_graph().nodes)
try:
    build_graph(SimpleNamespace(strategy=Strategy.from_config({**node, "graph": "broken"})))
except ValueError as exc:
    drawn["broken"] = str(exc)
print(json.dumps({"names": LOOP_SHAPES.names(), **drawn}))
"""


def test_an_installed_package_adds_a_loop_shape_that_a_strategy_names(tmp_path):
    """The worked example of tests/fixtures/loop_shapes/, shipped as a package: ``graph: no_judge`` in a strategy."""
    (tmp_path / "site").mkdir()
    shutil.copy(REPO / "tests" / "fixtures" / "loop_shapes" / "no_judge_loop.py", tmp_path / "site")
    (tmp_path / "site" / "not_a_shape.py").write_text("SHAPE = 3\n")
    shapes = {"no_judge": "no_judge_loop:shape", "broken": "not_a_shape:SHAPE"}
    seen = ask(SHAPE, cwd=tmp_path, pythonpath=install(tmp_path / "site", {"cudaforge.strategies": shapes}))
    assert seen["names"] == ["alternating", "best_of_n", "beam", "tree", "broken", "no_judge"]
    assert seen["no_judge"] == ["__end__", "__start__", "coder", "evaluate"]
    assert seen["alternating"] == ["__end__", "__start__", "coder", "evaluate", "judge", "profile"]
    assert "strategy.graph='broken'" in seen["broken"] and "names int, not a function" in seen["broken"]
