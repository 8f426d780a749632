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
    groups = {**project["entry-points"], **(extra_entry_points or {})}
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
names = languages.names()
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


def test_an_entry_point_that_is_not_a_language_is_refused_by_name(tmp_path):
    (tmp_path / "site" / "broken_lang").mkdir(parents=True)
    (tmp_path / "site" / "broken_lang" / "__init__.py").write_text("LANGUAGE = 'not a language'\n")
    site = install(tmp_path / "site", {"cudaforge.languages": {"broken": "broken_lang:LANGUAGE"}})
    code = (
        "import json\nfrom cudaforge import languages\ntry:\n    languages.languages()\n"
        "except ValueError as exc:\n    print(json.dumps(str(exc)))\n"
    )
    message = ask(code, cwd=tmp_path, pythonpath=site)
    assert "'broken'" in message and "not a KernelLanguage" in message


def test_an_installed_package_adds_a_gpu_vendor(tmp_path):
    (tmp_path / "site" / "sim_vendor").mkdir(parents=True)
    (tmp_path / "site" / "sim_vendor" / "__init__.py").write_text(
        "import dataclasses\nfrom cudaforge.vendor.nvidia import NVIDIA\nVENDOR = dataclasses.replace(NVIDIA, name='sim')\n"
    )
    site = install(tmp_path / "site", {"cudaforge.vendors": {"sim": "sim_vendor:VENDOR"}})
    code = "import json, os\nfrom cudaforge import vendor\nprint(json.dumps(vendor.current().name))"
    env_code = "import os\nos.environ['CUDAFORGE_GPU_VENDOR'] = 'sim'\n" + code
    assert ask(env_code, cwd=tmp_path, pythonpath=site) == "sim"
    unknown = "import os, json\nos.environ['CUDAFORGE_GPU_VENDOR'] = 'other'\nfrom cudaforge import vendor\n"
    unknown += "try:\n    vendor.current()\nexcept ValueError as exc:\n    print(json.dumps(str(exc)))\n"
    message = ask(unknown, cwd=tmp_path, pythonpath=site)
    assert "known vendors are nvidia, sim" in message


@pytest.mark.parametrize("table", ["cudaforge.languages"])
def test_the_example_names_its_language_in_the_group_the_registry_reads(table):
    from cudaforge import plugins

    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    assert table == plugins.LANGUAGES and project["entry-points"][table] == {"numba": "cudaforge_numba_lang:LANGUAGE"}
