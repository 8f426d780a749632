"""Tests of cudaforge.eval.extensions: cache keys, module names, logs, precompile, timeouts, env scrubbing.

Runs without a GPU. Builds are kept small: tiny sources that include no torch header (a couple
of seconds each), and one realistic candidate (benchmarks/candidates/cuda_relu.py, light headers,
no precompiled header) built cold once per session and then hit from the cache.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from cudaforge.eval import extensions as build
from cudaforge.eval.extensions import (
    BuildSettings,
    FallbackMode,
    build_hooks,
    cache_key,
    keyed,
    light_cuda_source,
    missing_toolkit_header,
    precompile,
    scrubbed_env,
    trim_compiler_log,
)
from cudaforge.vendors import current

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
CANDIDATES = ROOT / "benchmarks" / "candidates"
HAS_NVCC = shutil.which("nvcc") is not None or os.path.exists("/usr/local/cuda/bin/nvcc")
CUDA_TORCH = torch.version.cuda is not None
needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory) -> str:
    """One build cache for the whole session, so each source is built cold at most once."""
    return str(tmp_path_factory.mktemp("build-cache"))


def settings_for(cache_dir: str, **overrides) -> BuildSettings:
    """Settings for CI: no precompiled header (a 750 MB, 30 s build), plain fallback in sequence."""
    values = dict(cache_dir=cache_dir, arch="9.0", use_pch=False, fallback=FallbackMode.SEQUENTIAL)
    values.update(overrides)
    return BuildSettings(**values)


def python_module_source(name: str, value: int) -> str:
    """A candidate whose extension is a bare CPython module (no torch headers: builds in ~1 s)."""
    cpp = textwrap.dedent(
        f"""
        #include <Python.h>
        #define CF_STR2(x) #x
        #define CF_STR(x) CF_STR2(x)
        #define CF_CAT2(a, b) a##b
        #define CF_CAT(a, b) CF_CAT2(a, b)
        static PyObject* value(PyObject*, PyObject*) {{ return PyLong_FromLong({value}); }}
        static PyMethodDef methods[] = {{{{"value", value, METH_NOARGS, ""}}, {{NULL, NULL, 0, NULL}}}};
        static struct PyModuleDef def = {{PyModuleDef_HEAD_INIT, CF_STR(TORCH_EXTENSION_NAME), NULL, -1, methods}};
        PyMODINIT_FUNC CF_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) {{ return PyModule_Create(&def); }}
        """
    )
    return textwrap.dedent(
        f"""
        from torch.utils.cpp_extension import load_inline
        CPP = {cpp!r}
        ext = load_inline(name={name!r}, cpp_sources=CPP, no_implicit_headers=True)
        VALUE = ext.value()
        """
    )


def exec_source(source: str, module_name: str) -> dict:
    namespace = {"__name__": module_name}
    exec(compile(source, f"<{module_name}>", "exec"), namespace)
    return namespace


# --------------------------------------------------------------------------- keys and names


def _key(settings: BuildSettings, **changes) -> tuple[str, str]:
    args = dict(
        name="my_cuda",
        cpp_sources="torch::Tensor f(torch::Tensor x);",
        cuda_sources="__global__ void k() {}",
        functions=["f"],
        extra_cflags=None,
        extra_cuda_cflags=None,
        extra_ldflags=None,
        extra_include_paths=None,
        with_cuda=None,
        is_python_module=True,
        with_pytorch_error_handling=True,
        no_implicit_headers=False,
    )
    args.update(changes)
    hooks = build.Hooks(settings.resolved(), build.BuildRecorder())
    spec, inputs = hooks.inline_spec(**args)
    key = cache_key(keyed(inputs), hooks.settings)
    return key, build.module_name_of(key)


def test_cache_key_changes_with_sources_flags_and_arch(tmp_path):
    settings = settings_for(str(tmp_path))
    base, _ = _key(settings)
    assert _key(settings)[0] == base, "same inputs, same key"
    assert _key(settings, cuda_sources="__global__ void k() { }")[0] != base
    assert _key(settings, cpp_sources="torch::Tensor g(torch::Tensor x);")[0] != base
    assert _key(settings, functions=["f", "g"])[0] != base
    assert _key(settings, extra_cuda_cflags=["-O3"])[0] != base
    assert _key(settings, extra_cflags=["-O2"])[0] != base
    assert _key(settings, extra_include_paths=[str(tmp_path)])[0] != base
    assert _key(settings_for(str(tmp_path), arch="8.0"))[0] != base
    # things that do not change the build do not change the key
    assert _key(settings_for(str(tmp_path / "elsewhere")))[0] == base
    assert _key(settings_for(str(tmp_path), max_jobs=3))[0] == base


def test_cache_key_includes_toolchain(tmp_path, monkeypatch):
    settings = settings_for(str(tmp_path))
    base, _ = _key(settings)
    fingerprint = dict(build.toolchain_fingerprint())
    monkeypatch.setattr(
        "cudaforge.eval.extensions.spec.toolchain_fingerprint", lambda: {**fingerprint, "nvcc": "release 99.9"}
    )
    assert _key(settings)[0] != base


def test_the_extension_name_is_not_part_of_the_key(tmp_path):
    """A name made per instance (``f"ext_{id(self)}"``) finds the library the first instance built."""
    settings = settings_for(str(tmp_path))
    first, module = _key(settings, name="relu_140233")
    second, _ = _key(settings, name="relu_140877")
    assert first == second and module == build.module_name_of(first)
    assert _key(settings, name="relu_140233", cuda_sources="__global__ void k2() {}")[0] != first


def test_same_module_name_gets_distinct_names(tmp_path):
    settings = settings_for(str(tmp_path))
    _, first = _key(settings, cuda_sources="__global__ void k(float* x) { x[0] = 1; }")
    _, second = _key(settings, cuda_sources="__global__ void k(float* x) { x[0] = 2; }")
    assert first.startswith("ext_") and second.startswith("ext_") and first != second


def test_toolchain_fingerprint_fields():
    fingerprint = build.toolchain_fingerprint()
    assert {"nvcc", "cxx", "torch", "torch_cuda", "python"} <= set(fingerprint)
    assert fingerprint["torch"] == torch.__version__


def test_arch_flags_come_from_the_vendor():
    nvidia = current()
    assert nvidia.name == "nvidia" and nvidia.arch_flags("9.0") == ["-gencode=arch=compute_90,code=sm_90"]
    assert nvidia.arch_flags("9.0a") == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert nvidia.names_arch(["-arch=sm_90a"]) and nvidia.names_arch(["-gencode=arch=compute_80,code=sm_80"])
    assert not nvidia.names_arch(["-O3", "--use_fast_math"])


def test_resolved_settings_fill_arch_and_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(
        "cudaforge.eval.extensions.settings.current", lambda: dataclasses.replace(current(), detect_arch=lambda: None)
    )  # no GPU visible
    resolved = BuildSettings(cache_dir=str(tmp_path)).resolved()
    assert resolved.arch == current().default_arch == "9.0" and Path(resolved.cache_dir).is_absolute()
    assert BuildSettings.from_dict(resolved.to_dict()) == resolved


# --------------------------------------------------------------------------- light headers


def test_light_sources_keep_line_numbers_and_skip_frontend_code():
    include = os.path.join(os.path.dirname(torch.__file__), "include")
    src = "#include <torch/extension.h>\n__global__ void k() {}\ntorch::Tensor f(torch::Tensor x) { return torch::empty_like(x); }\n"
    types = light_cuda_source(src, "types", include)
    assert types.splitlines()[0] == "#include <torch/types.h>" and len(types.splitlines()) == 3
    minimal = light_cuda_source(src, "min", include)
    assert "#include <ATen/ops/empty_like_ops.h>" in minimal and "inline at::Tensor empty_like(" in minimal
    assert "ATen/Context.h" not in minimal and "torch/extension.h" not in minimal
    streams = light_cuda_source(
        "#include <ATen/cuda/CUDAContext.h>\nauto s = at::cuda::getCurrentCUDAStream();\n", "min", include
    )
    assert "#include <c10/cuda/CUDAStream.h>" in streams and "CUDAContext.h" not in streams
    props = light_cuda_source(
        "#include <ATen/cuda/CUDAContext.h>\nauto p = at::cuda::getCurrentDeviceProperties();\n", "min", include
    )
    assert "#include <ATen/cuda/CUDAContext.h>" in props, "kept when the source needs more than streams"
    body = minimal.split('#line 1 "cuda_sources"\n', 1)[1]
    assert body.splitlines()[1] == "__global__ void k() {}", "lines keep their numbers"
    assert light_cuda_source(src + "namespace py = pybind11;\n", "min", include) is None
    assert light_cuda_source("__global__ void k() {}", "types", include) is None


# --------------------------------------------------------------------------- logs

NVCC_LOG = """[1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=relu_ext_c5ff -isystem /x/site-packages/torch/include -fPIC -std=c++20 -c /cache/k/plain/main.cpp -o main.o
[2/2] /usr/local/bin/nvcc  -DTORCH_EXTENSION_NAME=relu_ext_c5ff -isystem /x/site-packages/torch/include -gencode=arch=compute_90,code=sm_90 -c /cache/k/plain/cuda.cu -o cuda.cuda.o
FAILED: cuda.cuda.o 
/usr/local/bin/nvcc  -DTORCH_EXTENSION_NAME=relu_ext_c5ff -DTORCH_API_INCLUDE_EXTENSION_H -isystem /x/site-packages/torch/include -isystem /x/site-packages/torch/include/torch/csrc/api/include -gencode=arch=compute_90,code=sm_90 -c /cache/k/plain/cuda.cu -o cuda.cuda.o
cuda_sources(7): error: identifier "outt" is undefined
          outt[idx] = fmaxf(x[idx], 0.0f);
          ^

cuda_sources(14): error: argument of type "float *" is incompatible with parameter of type "int"
      relu_kernel<<<(size + 255) / 256, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), out.data_ptr<float>());
                                                                                           ^

2 errors detected in the compilation of "/cache/k/plain/cuda.cu".
ninja: build stopped: subcommand failed.
"""


def test_trim_nvcc_log_keeps_errors_and_source_lines():
    trimmed = trim_compiler_log(NVCC_LOG)
    assert "FAILED: cuda.cuda.o" in trimmed
    assert 'cuda_sources(7): error: identifier "outt" is undefined' in trimmed
    assert "outt[idx] = fmaxf(x[idx], 0.0f);" in trimmed
    assert "cuda_sources(14)" in trimmed and "2 errors detected" in trimmed
    assert "-isystem" not in trimmed, "command lines are dropped"
    assert len(trim_compiler_log(NVCC_LOG, max_errors=1).split("error:")) == 2


def test_trim_gcc_log_and_linker_errors():
    gcc = (
        "In file included from main.cpp:2:\n"
        "cpp_sources: In function 'std::vector<long int> shape_of(at::Tensor)':\n"
        "cpp_sources:3:55: error: conversion from 'at::Tensor' to non-scalar type 'std::vector<long int>' requested\n"
        "    3 | std::vector<int64_t> shape_of(torch::Tensor x) { std::vector<int64_t> v = x; return v; }\n"
        "      |                                                                         ^\n"
        + "".join(f"/x/site-packages/torch/include/c10/util/foo.h:{i}:1: note: candidate {i}\n" for i in range(300))
        + "/usr/bin/ld: main.o: undefined reference to `relu_cuda(at::Tensor)'\n"
        "collect2: error: ld returned 1 exit status\n"
    )
    trimmed = trim_compiler_log(gcc)
    assert "cpp_sources:3:55: error: conversion from 'at::Tensor'" in trimmed
    assert "std::vector<int64_t> v = x;" in trimmed
    assert "undefined reference to `relu_cuda(at::Tensor)'" in trimmed
    assert "candidate 299" not in trimmed and len(trimmed.splitlines()) < 20


def test_trim_without_errors_keeps_first_warnings():
    log = 'cuda_sources(3): warning #177-D: variable "y" was declared but never referenced\n  int y;\n      ^\n'
    assert "warning #177-D" in trim_compiler_log(log)
    assert trim_compiler_log("") == ""


def test_missing_toolkit_header_is_recognised():
    log = "<torch>/ATen/cuda/CUDAContextLight.h:10:10: fatal error: cusparse.h: No such file or directory\n"
    assert missing_toolkit_header(log) == "cusparse.h"
    assert (
        missing_toolkit_header('cuda.cu(3): catastrophic error: cannot open source file "cublas_v2.h"') == "cublas_v2.h"
    )
    assert missing_toolkit_header(NVCC_LOG) is None


# --------------------------------------------------------------------------- env


def test_scrubbed_env_drops_secrets():
    base = {
        "PATH": "/bin",
        "HOME": "/root",
        "OPENAI_API_KEY": "x",
        "ANTHROPIC_API_KEY": "x",
        "WANDB_API_KEY": "x",
        "HF_TOKEN": "x",
        "GITHUB_TOKEN": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "AWS_PROFILE": "p",
        "MY_SECRET_THING": "x",
        "DB_PASSWORD": "x",
        "SSH_AUTH_SOCK": "/s",
        "CUDA_VISIBLE_DEVICES": "0",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "NCCL_NVLS_ENABLE": "0",
    }
    env = scrubbed_env({"EXTRA": "1"}, base=base)
    assert env == {
        "PATH": "/bin",
        "HOME": "/root",
        "CUDA_VISIBLE_DEVICES": "0",
        "TORCH_CUDA_ARCH_LIST": "9.0",
        "NCCL_NVLS_ENABLE": "0",
        "EXTRA": "1",
    }


def test_precompile_child_sees_no_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("WANDB_API_KEY", "should-not-leak")
    source = "import os\nraise RuntimeError(repr(sorted(os.environ)) + os.environ['CUDA_VISIBLE_DEVICES'] + '|')\n"
    outcome = precompile(source, settings_for(str(tmp_path)), timeout_s=120)
    assert outcome.status == "crashed", outcome  # the import raised, and nothing was built
    seen = outcome.message
    assert "OPENAI_API_KEY" not in seen and "WANDB_API_KEY" not in seen and "]|" in seen, seen


# --------------------------------------------------------------------------- builds


def test_two_modules_with_one_name_in_one_process(cache_dir):
    settings = settings_for(cache_dir)
    with build_hooks(settings) as recorder:
        first = exec_source(python_module_source("my_cuda", 1), "cand_a")
        second = exec_source(python_module_source("my_cuda", 2), "cand_b")
    assert (first["VALUE"], second["VALUE"]) == (1, 2)
    names = [r.module_name for r in recorder.records]
    assert len(set(names)) == 2 and all(n.startswith("ext_") for n in names)
    assert all(r.status == "built" for r in recorder.records)
    with build_hooks(settings) as again:
        assert exec_source(python_module_source("my_cuda", 1), "cand_c")["VALUE"] == 1
    assert again.cached and again.records[0].seconds < 1.0


def test_the_same_sources_under_a_new_name_load_the_library_built_first(cache_dir):
    """An extension name made per instance is new in every process: the second build is a cache hit, loaded under
    the module name it was built with."""
    settings = settings_for(cache_dir)
    with build_hooks(settings) as first:
        assert exec_source(python_module_source("per_instance_7001", 5), "cand_p1")["VALUE"] == 5
    with build_hooks(settings) as second:
        assert exec_source(python_module_source("per_instance_9002", 5), "cand_p2")["VALUE"] == 5
    assert not first.records[0].cached and second.records[0].cached
    assert second.records[0].name == "per_instance_9002"
    assert second.records[0].module_name == first.records[0].module_name


def test_a_name_python_cannot_import_breaks_no_later_build_of_the_same_sources(cache_dir):
    """The library's module name comes from the key, never from a request's name: a first build named so that
    Python would import it through ``PyInitU_`` (non-ASCII) leaves a library every later name can load (red team)."""
    settings = settings_for(cache_dir)
    for name in ("模块_x²", "honest_ext"):
        with build_hooks(settings) as recorder:
            assert exec_source(python_module_source(name, 9), f"cand_{len(name)}")["VALUE"] == 9
        assert recorder.records[0].module_name.isascii() and recorder.records[0].module_name.startswith("ext_")


FILES_CPP = r"""#include <Python.h>
#include "value.h"
#define CF_STR2(x) #x
#define CF_STR(x) CF_STR2(x)
#define CF_CAT2(a, b) a##b
#define CF_CAT(a, b) CF_CAT2(a, b)
static PyObject* value(PyObject*, PyObject*) { return PyLong_FromLong(CF_VALUE); }
static PyMethodDef methods[] = {{"value", value, METH_NOARGS, ""}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, CF_STR(TORCH_EXTENSION_NAME), NULL, -1, methods};
PyMODINIT_FUNC CF_CAT(PyInit_, TORCH_EXTENSION_NAME)(void) { return PyModule_Create(&def); }
"""


def files_module_source(value: int, header: str = "value.h") -> str:
    """A candidate that writes a C++ source and its header (``header``, beside it or in a subfolder) to a fresh
    ``tempfile.mkdtemp()`` and builds them with ``load`` (a bare CPython module: no torch headers)."""
    cpp = FILES_CPP.replace('#include "value.h"', f'#include "{header}"')
    return textwrap.dedent(
        f"""
        import os
        import tempfile
        from torch.utils.cpp_extension import load

        folder = tempfile.mkdtemp(prefix="files_")
        for name, text in (("mod.cpp", {cpp!r}), ({header!r}, "#define CF_VALUE {value}\\n")):
            os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
            with open(os.path.join(folder, name), "w") as f:
                f.write(text)
        VALUE = load(name=f"files_{{id(folder)}}", sources=[os.path.join(folder, "mod.cpp")]).value()
        """
    )


def test_files_written_to_a_fresh_folder_each_run_hit_the_cache_and_key_their_headers(cache_dir):
    """``load`` of files written to ``tempfile.mkdtemp()``: the folder is not in the key, the header beside the
    source is (its text travels with the files), so a second run hits and a changed header builds again."""
    settings = settings_for(cache_dir)
    runs = []
    for value in (11, 11, 12):
        with build_hooks(settings) as recorder:
            namespace = exec_source(files_module_source(value), f"cand_files_{len(runs)}")
        runs.append((namespace["VALUE"], recorder.records[0]))
    assert [v for v, _ in runs] == [11, 11, 12]
    assert [r.cached for _, r in runs] == [False, True, False]
    assert runs[0][1].key == runs[1][1].key != runs[2][1].key


def test_the_trusted_side_bounds_a_raw_load_request(tmp_path):
    """The sandbox's hook sends at most 64 headers, but a candidate can send a raw request: the trusted side counts
    the files itself, and refuses too many in one line the Coder can read (red team: 70x its size in memory)."""
    from cudaforge.eval.extensions.service import FILES_SOURCES_MAX, serve_build

    files = {f"k{i}.cu": "__global__ void k() {}\n" for i in range(FILES_SOURCES_MAX + 1)}
    reply, record = serve_build(
        {"kind": "files", "name": "many", "files": files, "with_cuda": True}, settings_for(str(tmp_path)), None
    )
    assert reply["status"] == "failed" and "at most 16 sources" in record.error
    big = {"a.cu": "// " + "x" * (5 << 20) + "\n"}
    reply, record = serve_build(
        {"kind": "files", "name": "big", "files": big, "with_cuda": True}, settings_for(str(tmp_path)), None
    )
    assert reply["status"] == "failed" and "MiB in all" in record.error


def test_the_order_of_a_loads_files_is_in_the_key_and_a_surrogate_is_the_candidates_error(tmp_path):
    """The files' order is the link order, so it is in the key; a text that is not UTF-8 fails the build as the
    candidate's mistake, not as a crash of ours (second red-team round)."""
    from cudaforge.eval.extensions.service import serve_build

    a, b = "int a() { return 1; }\n", "int b() { return 2; }\n"
    forward = build.cache_key(keyed({"kind": "files", "files": {"a.cpp": a, "b.cpp": b}}), settings_for(str(tmp_path)))
    backward = build.cache_key(keyed({"kind": "files", "files": {"b.cpp": b, "a.cpp": a}}), settings_for(str(tmp_path)))
    assert forward != backward
    for request in (
        {"kind": "files", "name": "s", "files": {"a.cpp": "int x = 1;\ud800\n"}},
        {"kind": "inline", "name": "s", "cpp_sources": ["int x = 1;\ud800"]},
    ):
        reply, record = serve_build(request, settings_for(str(tmp_path)), None)
        assert reply["status"] == "failed" and "not UTF-8" in record.error


def test_a_source_calling_more_ops_than_the_min_tier_takes_gets_the_types_tier():
    from cudaforge.eval.extensions.headers import MIN_TIER_OPS, light_cuda_source

    torch_include = str(Path(torch.__file__).parent / "include")
    ops = sorted(p.stem for p in (Path(torch_include) / "ATen" / "ops").glob("*.h") if "_" not in p.stem)
    few = "#include <torch/extension.h>\n" + "".join(f"// torch::{op}(\n" for op in ops[:3])
    many = "#include <torch/extension.h>\n" + "".join(f"// torch::{op}(\n" for op in ops[: MIN_TIER_OPS + 1])
    assert light_cuda_source(few, "min", torch_include) is not None
    assert light_cuda_source(many, "min", torch_include) is None
    assert light_cuda_source(many, "types", torch_include) is not None


def test_the_light_tiers_of_a_loads_files_keep_the_candidates_names_and_lines():
    from cudaforge.eval.extensions.headers import BIND_HEADER, light_file_variants

    torch_include = str(Path(torch.__file__).parent / "include")
    cu = "#include <torch/extension.h>\n__global__ void k(float* x) { x[0] = 1; }\ntorch::Tensor f(torch::Tensor x);\n"
    cpp = (
        "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x);\n"
        'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }\n'
    )
    variants = dict(light_file_variants({"k.cu": cu, "bind.cpp": cpp, "k.h": "#pragma once\n"}, torch_include))
    assert list(variants) == ["light:min", "light:types"]
    for files in variants.values():
        assert files["bind.cpp"].startswith(f'#include <{BIND_HEADER}>\n#line 1 "bind.cpp"\n')
        assert '#line 1 "k.cu"' in files["k.cu"] and "torch/extension.h" not in files["k.cu"]
        assert files["k.h"] == "#pragma once\n"
    frontend = cpp.replace("PYBIND11_MODULE", "TORCH_LIBRARY(ops, m) {}\nPYBIND11_MODULE")
    kept = dict(light_file_variants({"k.cu": cu, "bind.cpp": frontend}, torch_include))["light:min"]
    assert kept["bind.cpp"] == frontend
    assert light_file_variants({"plain.cpp": "#include <Python.h>\n"}, torch_include) == []
    macro_first = "#define NDEBUG\n" + cpp  # the binding header would come before the macro: left as written
    assert (
        dict(light_file_variants({"k.cu": cu, "bind.cpp": macro_first}, torch_include))["light:min"]["bind.cpp"]
        == macro_first
    )


def test_hooks_restore_torch_functions(cache_dir):
    import torch.utils.cpp_extension as ce

    before = ce.load_inline, ce.load
    with build_hooks(settings_for(cache_dir)):
        assert ce.load_inline is not before[0]
    assert (ce.load_inline, ce.load) == before


@pytest.mark.slow
def test_concurrent_precompiles_of_one_source_build_once(cache_dir):
    from concurrent.futures import ThreadPoolExecutor

    source = python_module_source("shared_name", 7)
    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: precompile(source, settings_for(cache_dir), timeout_s=120), range(2)))
    assert [o.status for o in outcomes] == ["ok", "ok"], outcomes
    assert sorted(o.cached for o in outcomes) == [False, True], "one built, the other waited and hit"
    assert outcomes[0].keys == outcomes[1].keys


TINY_CUDA_ERROR = '''
from torch.utils.cpp_extension import load_inline
CUDA = """
__global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) outt[i] = 1.0f;
}
"""
ext = load_inline(name="fill_ext", cpp_sources="", cuda_sources=CUDA, no_implicit_headers=True)
'''


@pytest.mark.slow
@needs_nvcc
def test_compile_error_gives_failed_outcome_with_trimmed_log(cache_dir):
    outcome = precompile(TINY_CUDA_ERROR, settings_for(cache_dir), timeout_s=120)
    assert outcome.status == "failed", outcome.message
    assert not outcome.ok and not outcome.cached
    assert 'cuda_sources(4): error: identifier "outt" is undefined' in outcome.log_trimmed
    assert "if (i < n) outt[i] = 1.0f;" in outcome.log_trimmed
    assert "nvcc" in outcome.log, "the whole log keeps the commands"
    again = precompile(TINY_CUDA_ERROR, settings_for(cache_dir), timeout_s=120)
    assert again.status == "failed" and again.cached and again.log_trimmed == outcome.log_trimmed


@pytest.mark.slow
@needs_nvcc
def test_realistic_candidate_builds_then_hits_cache(cache_dir):
    source = (CANDIDATES / "cuda_relu.py").read_text()
    cold = precompile(source, settings_for(cache_dir), timeout_s=300)
    expected = "ok" if CUDA_TORCH else "compiled_only"
    assert cold.status == expected, (cold.message, cold.log_trimmed)
    record = cold.records[0]
    assert record["name"] == "relu" and record["module_name"].startswith("ext_")
    assert "arch=9.0" in record["measures"] and "headers=min" in record["measures"]
    if not CUDA_TORCH:
        assert "not linked or loaded" in cold.message
    hit = precompile(source, settings_for(cache_dir), timeout_s=120)
    assert hit.status == expected and hit.cached and hit.keys == cold.keys
    assert hit.build_seconds < 1.0


def test_triton_candidate_builds_nothing(tmp_path):
    pytest.importorskip("triton")
    outcome = precompile((CANDIDATES / "triton_relu.py").read_text(), settings_for(str(tmp_path)), timeout_s=120)
    assert outcome.status == "no_build" and outcome.ok, outcome


@pytest.mark.slow
def test_timeout_kills_the_process_group(tmp_path):
    mark = f"{time.time_ns() % 10**6}.{os.getpid()}"
    source = textwrap.dedent(
        f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "{mark}"])
        time.sleep(300)
        """
    )
    started = time.monotonic()
    scratch = set(Path(tempfile.gettempdir()).glob("cudaforge-cand-*"))
    outcome = precompile(source, settings_for(str(tmp_path)), timeout_s=6)
    assert outcome.status == "timeout" and not outcome.ok
    assert set(Path(tempfile.gettempdir()).glob("cudaforge-cand-*")) <= scratch  # the worker's scratch is removed
    assert time.monotonic() - started < 30
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _sleeping(mark):
        time.sleep(0.1)
    assert not _sleeping(mark), "the candidate's child (in its sandbox) was killed with the precompile"


def _sleeping(mark: str) -> list[int]:
    """Live processes running ``sleep MARK``."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            if (
                pid.isdigit()
                and Path(f"/proc/{pid}/cmdline").read_bytes() == f"sleep\0{mark}\0".encode()
                and _alive(int(pid))
            ):
                found.append(int(pid))
        except OSError:
            pass
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_crash_during_import_is_reported(tmp_path):
    outcome = precompile("import os\nos._exit(3)\n", settings_for(str(tmp_path)), timeout_s=60)
    assert outcome.status == "crashed" and "code 3" in outcome.message


@pytest.mark.gpu
def test_gpu_candidates_match_reference(cache_dir):
    import importlib.util

    with build_hooks(BuildSettings(cache_dir=cache_dir)) as recorder:
        spec = importlib.util.spec_from_file_location("cand_softmax", CANDIDATES / "cuda_softmax.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    x = torch.randn(128, 1024, device="cuda")
    torch.testing.assert_close(module.ModelNew()(x), torch.softmax(x, dim=-1))
    assert recorder.records[0].status == "built"


def test_warm_pch_prepares_the_header_a_build_would_use(tmp_path, monkeypatch):
    settings = settings_for(str(tmp_path), use_pch=True).resolved()
    hooks = build.Hooks(settings, build.BuildRecorder())
    spec, _ = hooks.inline_spec(
        "m",
        "torch::Tensor f(torch::Tensor x);",
        "__global__ void k() {}",
        ["f"],
        ["-O3"],
        None,
        None,
        None,
        None,
        True,
        True,
        False,
    )
    builder = build.Builder(settings)
    (tmp_path / "probe").mkdir()
    cflags = [*spec.extra_cflags, f"-I{builder.bind_include()}"]  # as a build writes them
    builder._write_ninja(spec, tmp_path / "probe", "m_0123", cflags, current().arch_flags("9.0"))
    expected = builder._pch_dir(tmp_path / "probe")[0]
    seen = []
    monkeypatch.setattr(
        build.Builder,
        "_ensure_pch",
        lambda self, pch_dir, cxx, cflags, name: (seen.append((pch_dir, name)), (True, ""))[1],
    )
    assert build.warm_pch(settings) == {"": "ready", "-O3": "ready"}
    assert {(expected, "torch/extension.h"), (expected, "cudaforge/bind.h")} <= set(seen)
    assert len({d for d, _ in seen}) == 2 and len(seen) == 4  # two flag sets, two headers each


def test_pch_dir_override_is_shared_across_caches(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDAFORGE_PCH_DIR", raising=False)
    a, b = settings_for(str(tmp_path / "a")), settings_for(str(tmp_path / "b"))
    assert a.pch_root() == tmp_path / "a" / "pch" and a.pch_root() != b.pch_root()
    monkeypatch.setenv("CUDAFORGE_PCH_DIR", str(tmp_path / "shared"))
    assert a.pch_root() == b.pch_root() == tmp_path / "shared"


@pytest.mark.slow
def test_cpp_compile_error_quotes_the_candidates_line(cache_dir):
    source = python_module_source("broken_cpp", 1).replace("PyLong_FromLong(1)", "PyLong_FromLong(undeclared_value)")
    outcome = precompile(source, settings_for(cache_dir), timeout_s=120)
    assert outcome.status == "failed"
    assert re.search(r"cpp_sources:\d+:\d+: error: .undeclared_value. was not declared", outcome.log_trimmed)
    assert "return PyLong_FromLong(undeclared_value);" in outcome.log_trimmed, outcome.log_trimmed


@pytest.mark.slow
def test_undefined_symbol_at_import_is_a_failed_build(cache_dir):
    source = python_module_source("half_defined", 1).replace(
        "static PyObject* value(PyObject*, PyObject*) {",
        "int missing_helper(); static PyObject* value(PyObject*, PyObject*) { missing_helper();",
    )
    outcome = precompile(source, settings_for(cache_dir), timeout_s=120)
    assert outcome.status == "failed" and "undefined symbol" in outcome.log_trimmed, outcome


# --------------------------------------------------------------------------- builds a candidate defers


def deferred_source(name: str, value: int, where: str = "forward") -> str:
    """A CPU-evaluable ReLU candidate whose extension (a bare CPython module) is built in ``__init__`` or
    ``forward``, as public releases' candidates often do, rather than at import."""
    module = python_module_source(name, value)
    cpp = module.split("CPP = ", 1)[1].split("\n", 1)[0]
    build = "load_inline(name=NAME, cpp_sources=CPP, no_implicit_headers=True)"
    init_line = f"self.ext = {build}" if where == "__init__" else "self.ext = None"
    forward_build = "" if where == "__init__" else f"        if self.ext is None:\n            self.ext = {build}\n"
    return (
        "import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
        f"CPP = {cpp}\nNAME = {name!r}\n\n\n"
        "class ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        {init_line}\n\n    def forward(self, x):\n{forward_build}"
        "        return torch.clamp_min(x, 0.0) * (self.ext.value() // " + str(value) + ")\n"
    )


def test_deferred_calls_are_found_when_their_arguments_are_plain_data():
    from cudaforge.eval.extensions.deferred import build_sites, deferred_calls

    source = deferred_source("lazy_ext", 3)
    namespace = exec_source(source, "cand_deferred")
    ((which, line, args, kwargs, guarded),) = deferred_calls(source, namespace)
    assert which == "load_inline" and kwargs["name"] == "lazy_ext" and kwargs["no_implicit_headers"] is True
    assert source.splitlines()[line - 1].strip().startswith("self.ext = load_inline(")
    shaped = source.replace("name=NAME", "name=NAME + str(x.shape[0])")  # known only at run time: left to it
    assert deferred_calls(shaped, exec_source(shaped, "cand_shaped")) == [] and not guarded
    assert build_sites(source) == {"import": 0, "deferred": 1}
    assert build_sites(python_module_source("eager", 1)) == {"import": 1, "deferred": 0}


@pytest.mark.slow
@needs_nvcc
@pytest.mark.parametrize("where", ["forward", "__init__"])
def test_a_load_inline_in_forward_or_init_is_built_in_the_compile_phase(cache_dir, where):
    """Built by the CPU pool's precompile and again (a cache hit) when the worker loads the candidate, so the call
    in forward or __init__ finds its module loaded; the correctness phase builds nothing."""
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus

    source = deferred_source(f"lazy_{where.strip('_')}", 5, where)
    outcome = precompile(source, settings_for(cache_dir), timeout_s=120)
    assert outcome.status == "ok" and len(outcome.records) == 1, outcome  # before: no_build, it was in forward
    task = find_task(selection("tiny"), "level1/1_ReLU")
    result = Evaluator({"device": "cpu", "build_cache_dir": cache_dir, "correctness_trials": 2}).evaluate(task, source)
    assert result.status is EvalStatus.CORRECT, result.report()
    compile_phase = result.phase(result.phases[1].phase.__class__("compile"))
    assert "built ahead: load_inline at line" in compile_phase.message and result.compile_log
    assert result.fingerprint["builds_ahead"] == [compile_phase.message.split("built ahead: ")[1]]


@pytest.mark.slow
@needs_nvcc
def test_a_deferred_build_that_fails_fails_in_the_compile_phase(cache_dir):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus

    source = deferred_source("lazy_broken", 1).replace("PyLong_FromLong(1)", "PyLong_FromLong(undeclared_value)")
    assert precompile(source, settings_for(cache_dir), timeout_s=120).status == "failed"
    task = find_task(selection("tiny"), "level1/1_ReLU")
    result = Evaluator({"device": "cpu", "build_cache_dir": cache_dir}).evaluate(task, source)
    assert result.status is EvalStatus.COMPILE_ERROR and "undeclared_value" in result.message
    assert [p.phase.value for p in result.phases][-1] == "compile"


def _pattern(source: str, pattern: str) -> str:
    """``deferred_source``'s candidate (its build in ``__init__``) rewritten the way public releases write the call."""
    plain = "self.ext = load_inline(name=NAME, cpp_sources=CPP, no_implicit_headers=True)"
    module_import = "from torch.utils.cpp_extension import load_inline\n"
    if pattern == "import inside __init__":
        return source.replace(module_import, "").replace(
            plain, "from torch.utils.cpp_extension import load_inline\n        " + plain
        )
    if pattern == "alias":
        return source.replace(module_import, "from torch.utils.cpp_extension import load_inline as li\n").replace(
            "= load_inline(", "= li("
        )
    if pattern == "module alias":
        return source.replace(module_import, "import torch.utils.cpp_extension as ce\n").replace(
            "= load_inline(", "= ce.load_inline("
        )
    if pattern == "torch.utils.cpp_extension.load_inline":
        return source.replace(module_import, "import torch.utils.cpp_extension\n").replace(
            "= load_inline(", "= torch.utils.cpp_extension.load_inline("
        )
    if pattern == "try/except with options":
        return source.replace(
            plain,
            "try:\n            self.ext = load_inline(name=NAME, cpp_sources=CPP, "
            "no_implicit_headers=True, verbose=False, extra_cflags=['-O3'], with_cuda=False, "
            "build_directory=tempfile.mkdtemp())\n        except Exception:\n"
            "            self.ext = None",
        ).replace("import torch\n", "import tempfile\nimport torch\n", 1)
    if pattern == "lambda":
        return source.replace(
            plain,
            "self.build = lambda: load_inline(name=NAME, cpp_sources=CPP, "
            "no_implicit_headers=True)\n        self.ext = self.build()",
        )
    if pattern == "helper":
        return source.replace(plain, "self.ext = _build()").replace(
            "\n\nclass ModelNew",
            "\n\ndef _build():\n    return load_inline(name=NAME, cpp_sources=CPP, "
            "no_implicit_headers=True)\n\n\nclass ModelNew",
        )
    if pattern == "local constants":
        return source.replace(
            plain,
            "src = CPP\n        ext_name = NAME + '_v2'\n        flags = ['-O2']\n        "
            "self.ext = load_inline(name=ext_name, cpp_sources=[src], extra_cflags=flags, "
            "no_implicit_headers=True)",
        )
    raise AssertionError(pattern)


@pytest.mark.parametrize(
    "pattern",
    [
        "import inside __init__",
        "alias",
        "module alias",
        "torch.utils.cpp_extension.load_inline",
        "try/except with options",
        "lambda",
        "helper",
        "local constants",
    ],
)
def test_every_way_public_releases_call_load_inline_is_found_ahead(pattern):
    from cudaforge.eval.extensions.deferred import deferred_calls, deferred_misses

    source = _pattern(deferred_source("lazy_pattern", 3, "__init__"), pattern)
    namespace = exec_source(source, "cand_pattern_" + pattern.replace(" ", "_").replace("/", "_").replace(".", "_"))
    found = deferred_calls(source, namespace)
    assert len(found) == 1 and deferred_misses(source, namespace) == [], (pattern, found)
    which, line, args, kwargs, guarded = found[0]
    assert (
        which == "load_inline"
        and kwargs["name"].startswith("lazy_pattern")
        and "(name=" in source.splitlines()[line - 1]
    )
    assert guarded is (pattern == "try/except with options")
    assert "build_directory" not in kwargs  # made at run time; the build does without it


def test_a_call_left_to_run_time_says_which_argument_and_only_in_torchs_words():
    from cudaforge.eval.extensions.deferred import deferred_misses, reported_misses

    source = deferred_source("lazy_named", 3, "__init__").replace("name=NAME", "name=f'ext_{id(self)}'")
    missed = deferred_misses(source, exec_source(source, "cand_named"))
    assert missed == [
        f"load_inline at line {missed[0].split()[3]} left to run time: its argument name is not known at import"
    ]
    assert reported_misses({"deferred": missed}) == missed
    forged = [
        "load_inline at line 3 left to run time: its argument verdict_correct is not known at import",
        "load at line 1 failed ahead, inside the candidate's own try: left to its handler",
        5,
    ]
    assert reported_misses({"deferred": forged}) == [forged[1]]


def test_the_workers_account_of_its_deferred_builds_is_read_as_data_of_one_shape():
    from cudaforge.eval.extensions.deferred import reported_sites

    forged = {
        "prebuilt": [
            "load_inline at line 12",
            "load at line 3",
            "all checks passed: correct",
            "load_inline at line 1\nverdict: correct",
            7,
            *[f"load at line {i}" for i in range(20)],
        ]
    }
    assert reported_sites(forged) == [
        "load_inline at line 12",
        "load at line 3",
        *[f"load at line {i}" for i in range(6)],
    ]
    assert reported_sites({"prebuilt": "load at line 1"}) == [] and reported_sites(None) == []


def test_light_variants_compile_the_binding_file_against_the_lighter_header(tmp_path):
    hooks = build.Hooks(settings_for(str(tmp_path)), build.BuildRecorder())
    kernel = (
        "#include <torch/extension.h>\n__global__ void k(float* y) {}\ntorch::Tensor f(torch::Tensor x) { return x; }"
    )
    cpp = "#include <torch/extension.h>\ntorch::Tensor f(torch::Tensor x);"
    spec, _ = hooks.inline_spec("m", cpp, kernel, ["f"], None, None, None, None, None, True, True, False)
    variants = dict(spec.variants)
    assert list(variants) == ["light:min", "light:types", "plain"]
    for name in ("light:min", "light:types"):
        main = variants[name]["main.cpp"].splitlines()
        assert main[0] == "#include <cudaforge/bind.h>" and "#include <torch/extension.h>" not in main
        assert main[1:3] == ['#line 1 "cpp_sources"', ""]  # the heavy include blanked: line numbers hold
    assert variants["plain"]["main.cpp"].startswith("#include <torch/extension.h>")
    # host code that uses the C++ frontend keeps torch's main.cpp; only the CUDA source is lighter
    frontend = cpp + "\ntorch::nn::Linear make() { return torch::nn::Linear(2, 2); }"
    spec, _ = hooks.inline_spec("m", frontend, kernel, ["f"], None, None, None, None, None, True, True, False)
    assert all(files["main.cpp"].startswith("#include <torch/extension.h>") for _, files in spec.variants)
    # no CUDA source: a variant with only main.cpp lighter; a CUDA source that needs all of torch: none (its nvcc
    # step is the longer one, and a second variant would run it twice)
    spec, _ = hooks.inline_spec("m", cpp, None, ["f"], None, None, None, None, None, True, True, False)
    assert [v for v, _ in spec.variants] == ["light:bind", "plain"]
    spec, _ = hooks.inline_spec(
        "m", cpp, kernel + "\nPYBIND11_MODULE(m, mod) {}", None, None, None, None, None, None, True, True, False
    )
    assert [v for v, _ in spec.variants] == ["plain"]
    spec, _ = hooks.inline_spec("m", cpp, None, ["f"], None, None, None, None, None, True, True, True)
    assert [v for v, _ in spec.variants] == ["plain"]  # no_implicit_headers: the sources are taken as written


@pytest.mark.slow
def test_a_binding_built_against_the_lighter_header_loads_and_runs(cache_dir):
    import torch
    import torch.utils.cpp_extension as ce

    cpp = "#include <torch/extension.h>\ntorch::Tensor add_two(torch::Tensor x) { return x + 2; }"
    with build_hooks(settings_for(cache_dir)) as recorder:
        module = ce.load_inline(name="light_bind_probe", cpp_sources=[cpp], functions=["add_two"])
    assert torch.equal(module.add_two(torch.zeros(3)), torch.full((3,), 2.0))
    record = recorder.records[-1]
    assert record.variant == "light:bind" and "headers=bind" in record.measures and not record.fallbacks
    assert record.steps["main.o"] > 0 and any(name.endswith(".so") for name in record.steps)


def _kernel_spec(settings):
    """The build spec of a small load_inline with one CUDA kernel and one bound function, under ``settings``."""
    spec, _ = build.Hooks(settings, build.BuildRecorder()).inline_spec(
        "m",
        "torch::Tensor f(torch::Tensor x);",
        "__global__ void k() {}\ntorch::Tensor f(torch::Tensor x) { return x; }",
        ["f"],
        None,
        None,
        None,
        None,
        None,
        True,
        True,
        False,
    )
    return spec


@pytest.mark.parametrize("mode", [FallbackMode.RACE, FallbackMode.SEQUENTIAL])
def test_the_plain_build_racing_a_light_one_never_waits_for_a_header_it_would_build(tmp_path, monkeypatch, mode):
    """Racing, a cancelled plain build must not hold the winner back while it makes torch/extension.h's header;
    in sequence (it runs because the light build failed) it makes the header as before."""
    settings = settings_for(str(tmp_path), use_pch=True, fallback=mode).resolved()
    spec = _kernel_spec(settings)
    asked = []
    monkeypatch.setattr(
        build.Builder, "_ensure_pch", lambda self, pch_dir, cxx, cflags, name: (asked.append(name), (False, ""))[1]
    )
    light_fails = mode is FallbackMode.SEQUENTIAL

    def ninja(self, attempt_id, directory, targets):
        if attempt_id == "light" and light_fails:
            return 1, "FAILED: main.o\nmain.cpp:1:1: error: something only the light file lacks\n"
        return 0, ""

    monkeypatch.setattr(build.Builder, "_ninja", ninja)
    winner, fallbacks = build.Builder(settings).build(spec, "k" * 48, "m_k")
    assert winner.ok and winner.variant == ("plain" if light_fails else "light:min")
    if light_fails:
        assert asked == ["cudaforge/bind.h", "torch/extension.h"] and fallbacks
    else:
        assert asked == ["cudaforge/bind.h"]  # the racing plain build used a header only if one was there


def test_a_light_build_that_raises_leaves_no_racing_plain_build_behind(tmp_path, monkeypatch):
    """The red team: a light attempt that raised (grep on a 140,000-character name) left the racing plain build
    compiling on its own, outside every limit, while the build was reported crashed; a candidate could start up to
    64 of them. The plain build is now cancelled and joined before the error goes on."""
    settings = settings_for(str(tmp_path), fallback=FallbackMode.RACE).resolved()
    spec = build.spec.BuildSpec.__new__(build.spec.BuildSpec)
    spec.variants = [("light:min", {}), ("plain", {})]
    seen = {}

    def run_variant(self, attempt_id, spec, files, directory, module_name, use_pch, fresh, make_pch=True):
        if attempt_id == "light":
            time.sleep(0.2)  # the plain build has started
            raise OSError(7, "Argument list too long")
        seen["cancelled"] = self._cancel["plain"].wait(20)
        return build.builder._Attempt("plain", False, "", [], directory, [])

    monkeypatch.setattr(build.Builder, "_run_variant", run_variant)
    with pytest.raises(OSError, match="Argument list too long"):
        build.Builder(settings)._build_in(spec, tmp_path, "m_k")
    assert seen == {"cancelled": True}  # cancelled and joined before the error went on


def test_a_header_build_that_raises_leaves_no_early_kernel_compile_behind(tmp_path, monkeypatch):
    """The red team, second look: while the precompiled header is made, nvcc starts on the kernels in a thread; a
    header build that raised (no space, a failed fork) left that compile running alone. It is cancelled and joined
    before the error goes on."""
    settings = settings_for(str(tmp_path), use_pch=True, fallback=FallbackMode.SEQUENTIAL).resolved()
    spec = _kernel_spec(settings)
    seen = {}

    def ensure_pch(self, pch_dir, cxx, cflags, name):
        time.sleep(0.2)  # the early compile has started
        raise OSError(28, "No space left on device")

    def ninja(self, attempt_id, directory, targets):
        seen[attempt_id] = self._cancel[attempt_id].wait(20)
        return -1, "(cancelled)\n"

    monkeypatch.setattr(build.Builder, "_ensure_pch", ensure_pch)
    monkeypatch.setattr(build.Builder, "_ninja", ninja)
    with pytest.raises(OSError, match="No space"):
        build.Builder(settings).build(spec, "k" * 48, "m_k")
    assert seen == {"light": True}  # cancelled and joined, not left compiling


def test_an_early_compile_that_cannot_start_is_a_failed_build_not_a_crash(tmp_path, monkeypatch):
    """The red team, third look: the early compile's thread stored nothing when the compiler could not start, and
    the build then raised KeyError in the verifier; it is now a failed attempt that says why."""
    settings = settings_for(str(tmp_path), use_pch=True, fallback=FallbackMode.SEQUENTIAL).resolved()
    spec = _kernel_spec(settings)

    def ninja(self, attempt_id, directory, targets):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(build.Builder, "_ensure_pch", lambda self, pch_dir, cxx, cflags, name: (False, ""))
    monkeypatch.setattr(build.Builder, "_ninja", ninja)
    attempt = build.Builder(settings)._run_variant(
        "light", spec, dict(spec.variants)["plain"], tmp_path / "w", "m_k", True, fresh=True
    )
    assert not attempt.ok and "could not start" in attempt.log


@pytest.mark.parametrize(
    "names, sources_alone",
    [
        (["j"], True),  # a forgotten loop index: no header declares a one-letter name, the untouched build fails alike
        (["j", "k"], True),
        (["FLT_MAX"], False),  # a macro a removed header may have brought (torch's headers use it): fall back
        (["j", "FLT_MAX"], False),
        (["my_kernel_helper_that_nobody_declares"], True),
        (["A" * 140_000], False),  # longer than an argument may be: grep raised, and the race's build ran on alone
        ([f"undeclared_{i}" for i in range(65)], False),  # more names than are looked up: fall back
    ],
)
def test_an_undefined_name_no_removed_header_declares_fails_fast(tmp_path, names, sources_alone):
    log = "".join(f'cuda_sources({n + 3}): error: identifier "{name}" is undefined\n' for n, name in enumerate(names))
    attempt = build.builder._Attempt("light", False, log, ["cuda.cuda.o"], tmp_path, [])
    assert build.Builder(settings_for(str(tmp_path)))._errors_are_the_sources(attempt) is sources_alone


def test_the_binding_header_lives_in_a_folder_named_by_its_text(tmp_path, monkeypatch):
    """GCC does not check a .gch against its header: a changed header (another cudaforge sharing the folder) must
    land in another folder, which changes the flags that sign its precompiled header; an unwritable header folder
    falls back to the build cache's."""
    settings = settings_for(str(tmp_path / "cache"), use_pch=True).resolved()
    first = build.Builder(settings).bind_include()
    assert (
        first.parent == settings.pch_root()
        and (first / "cudaforge" / "bind.h").read_text() == build.headers.BIND_HEADER_TEXT
    )
    monkeypatch.setattr(build.builder, "BIND_HEADER_TEXT", build.headers.BIND_HEADER_TEXT + "// another\n")
    second = build.Builder(settings).bind_include()
    assert second != first and (first / "cudaforge" / "bind.h").read_text() == build.headers.BIND_HEADER_TEXT
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # a precompiled-header folder nothing can be written under
    monkeypatch.setenv("CUDAFORGE_PCH_DIR", str(blocked))
    fallback = build.Builder(settings).bind_include()
    assert fallback.parent == settings.cache_root() and (fallback / "cudaforge" / "bind.h").is_file()


def test_ninja_step_times_read_a_bounded_and_parsed_part_of_the_build_folder(tmp_path):
    """The build folder is the sandboxed compiler's to write: a garbage or huge .ninja_log costs nothing."""
    assert build.artefacts.ninja_steps(tmp_path) == {}  # none
    log = (
        "# ninja log v5\n0\t1500\t1\tmain.o\tab\nnot\ta\tline\n5\tx\t1\tcuda.cuda.o\tcd\n"
        + "9\t10\t1\tjunk\th\n" * 200_000
    )
    (tmp_path / ".ninja_log").write_text(log)
    steps = build.artefacts.ninja_steps(tmp_path)
    assert steps["main.o"] == 1.5 and "cuda.cuda.o" not in steps and len(steps) <= 2


def test_known_load_inline_mistakes_are_said_in_one_line_each():
    from cudaforge.eval.extensions.logs import build_hints

    own = {
        "cpp_sources": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("relu", &relu); }',
        "load_inline_bindings": 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\nm.def("relu", relu, "relu");\n}',
    }
    hints = build_hints("main.cpp:9:1: error: redefinition of 'PyObject* PyInit_ext()'", own)
    assert len(hints) == 1 and hints[0].startswith("Two Python bindings collide") and "drop functions=[...]" in hints[0]
    kernel = {
        "cuda_sources": "__global__ void __launch_bounds__(256) relu_kernel(const float* x, float* y, int n) {}",
        "cpp_sources": "",
        "load_inline_bindings": 'm.def("relu_kernel", torch::wrap_pybind_function(relu_kernel));',
    }
    hints = build_hints("cpp_sources:1: error: 'relu_kernel' was not declared in this scope", kernel)
    assert hints == [h for h in hints if "'relu_kernel', a __global__ kernel" in h] and len(hints) == 1
    binding = {
        "cuda_sources": '__global__ void k() {}\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f); }',
        "cpp_sources": "",
        "load_inline_bindings": "",
    }
    log = 'cuda_sources(2): error: identifier "PYBIND11_MODULE" is undefined'
    assert len(build_hints(log, binding)) == 1 and "#include <torch/extension.h>" in build_hints(log, binding)[0]
    included = {**binding, "cuda_sources": "#include <torch/extension.h>\n" + binding["cuda_sources"]}
    assert build_hints(log, included) == []  # it has the header: some other mistake
    honest = {
        "cuda_sources": "__global__ void relu_kernel(const float* x) {}",
        "cpp_sources": "torch::Tensor relu(torch::Tensor x);",
        "load_inline_bindings": 'm.def("relu", torch::wrap_pybind_function(relu));',
    }
    assert build_hints('cuda_sources(3): error: expected a ";"', honest) == []  # a plain error: nothing to add


TWO_BINDINGS = '''
from torch.utils.cpp_extension import load_inline
CPP = """
#include <Python.h>
static PyObject* one(PyObject*, PyObject*) { return PyLong_FromLong(1); }
int two() { return 2; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("two", &two); }
"""
ext = load_inline(name="two_bindings", cpp_sources=CPP, functions=["two"])
'''


@pytest.mark.slow
@needs_nvcc
def test_two_bindings_of_one_module_fail_with_one_line_saying_which_to_drop(cache_dir):
    outcome = precompile(TWO_BINDINGS, settings_for(cache_dir), timeout_s=300)
    assert outcome.status == "failed", outcome.message
    assert outcome.log_trimmed.startswith("Two Python bindings collide"), outcome.log_trimmed[:500]
    assert "error" in outcome.log_trimmed  # the compiler's own first error follows


@pytest.mark.slow
@needs_nvcc
def test_a_build_in_the_candidates_own_try_that_fails_ahead_is_left_to_its_handler(cache_dir):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus

    source = (
        _pattern(deferred_source("lazy_guarded", 1, "__init__"), "try/except with options")
        .replace("PyLong_FromLong(1)", "PyLong_FromLong(undeclared_value)")
        .replace("(self.ext.value() // 1)", "(1 if self.ext is None else self.ext.value())")
    )  # its handler: plain torch
    task = find_task(selection("tiny"), "level1/1_ReLU")
    result = Evaluator(
        {
            "device": "cpu",
            "build_cache_dir": cache_dir,
            "correctness_trials": 2,
            "guards": {"no_custom_kernel": "report", "fallback": "report"},
            "torch_ops": "lenient",
        }
    ).evaluate(task, source)
    assert result.status is not EvalStatus.COMPILE_ERROR, result.report()  # its own handler decided, at run time
    left = result.fingerprint.get("builds_left_to_run_time") or []
    assert len(left) == 1 and left[0].endswith("failed ahead, inside the candidate's own try: left to its handler")


@pytest.mark.slow
@needs_nvcc
def test_a_build_only_run_time_can_make_counts_as_compile_time(cache_dir):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus, Phase

    source = deferred_source("lazy_runtime", 3, "forward").replace("name=NAME", "name=NAME + str(x.dim())")
    task = find_task(selection("tiny"), "level1/1_ReLU")
    result = Evaluator({"device": "cpu", "build_cache_dir": cache_dir, "correctness_trials": 2}).evaluate(task, source)
    assert result.status is EvalStatus.CORRECT, result.report()
    late = result.fingerprint["builds_after_compile"]
    assert late["count"] == 1 and late["seconds"] > 0
    compile_phase = result.phase(Phase.COMPILE)
    assert "left to run time: its argument name is not known at import" in compile_phase.message
    assert "1 build(s) at run time" in compile_phase.message and compile_phase.seconds >= late["seconds"]


def test_every_deferred_style_of_the_build_corpus_is_built_ahead_or_says_why_not(tmp_path):
    """The corpus of public-release styles (benchmarks/build_corpus.py): each deferred style's call is found ahead,
    or left to run time with torch's own name for the argument only run time knows."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import build_corpus

    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.eval.extensions.deferred import deferred_calls, deferred_misses
    from cudaforge.eval.static import check_candidate

    paths = build_corpus.write_corpus(tmp_path)
    assert len(paths) >= 30
    cfg = Evaluator({"device": "cpu"}).cfg
    for path in paths:  # every one passes the static checks, in the language it is written in
        checked = check_candidate(path.read_text(), cfg)
        expected = "triton" if "triton" in path.stem else "cupy" if "cupy" in path.stem else "cuda"
        assert checked.ok and checked.backend == expected, (path.stem, checked.message)
    why = {
        "per_instance": "its argument name is not known at import",
        "load_files": "its argument sources is not known at import",
    }
    for style in (*build_corpus.AHEAD_STYLES, *why):
        for op in build_corpus.OPS:
            source = (tmp_path / f"{style}_{op}.py").read_text()
            namespace = exec_source(source, f"corpus_{style}_{op}")  # no build at import in these styles
            found, missed = deferred_calls(source, namespace), deferred_misses(source, namespace)
            if style in why:
                assert not found and len(missed) == 1 and missed[0].endswith(why[style]), (style, op, missed)
            else:
                assert len(found) == 1 and not missed, (style, op, missed)
                assert found[0][4] is False  # public_try's handler re-raises: a failed build stays a compile error


def test_a_list_the_function_changes_in_place_is_not_taken_for_a_constant():
    from cudaforge.eval.extensions.deferred import deferred_calls, deferred_misses

    source = deferred_source("lazy_mutated", 3, "__init__")
    grown = source.replace(
        "self.ext = load_inline(name=NAME, cpp_sources=CPP,",
        "srcs = []\n        srcs.append(CPP)\n        self.ext = load_inline(name=NAME, cpp_sources=srcs,",
    )
    namespace = exec_source(grown, "cand_grown")
    assert deferred_calls(grown, namespace) == []
    assert deferred_misses(grown, namespace)[0].endswith("its argument cpp_sources is not known at import")
    flags = source.replace("NAME = ", "FLAGS = ['-O2']\nNAME = ").replace(
        "self.ext = load_inline(name=NAME,",
        "FLAGS.append('-DX')\n        self.ext = load_inline(name=NAME, extra_cflags=FLAGS,",
    )
    assert deferred_calls(flags, exec_source(flags, "cand_flags")) == []  # the module's list, changed first


def test_only_a_handler_of_the_calls_own_function_that_does_not_re_raise_takes_a_failed_build_ahead():
    from cudaforge.eval.extensions.deferred import deferred_calls

    source = _pattern(deferred_source("lazy_handlers", 3, "__init__"), "try/except with options")
    assert deferred_calls(source, exec_source(source, "cand_handled"))[0][4] is True
    reraised = source.replace("            self.ext = None", "            raise RuntimeError('no kernel')")
    assert deferred_calls(reraised, exec_source(reraised, "cand_reraised"))[0][4] is False  # surfaces anyway
    plain = deferred_source("lazy_outer", 3, "__init__")
    outer = (
        plain.replace("class ModelNew(nn.Module):", "try:\n  class ModelNew(nn.Module):").replace("\n    ", "\n      ")
        + "except ImportError:\n  pass\n"
    )
    assert deferred_calls(outer, exec_source(outer, "cand_outer"))[0][4] is False  # a try around the class


def test_a_build_failure_under_what_the_candidate_raises_keeps_its_verdict():
    from cudaforge.eval.extensions import BuildError, ModuleNotLoadable, ToolchainIncomplete
    from cudaforge.eval.worker.candidate_worker import _build_status

    def wrapped(inner):
        try:
            try:
                raise inner
            except Exception as exc:
                raise RuntimeError("could not build the kernel") from exc
        except RuntimeError as outer:
            return outer

    assert _build_status(wrapped(BuildError("nvcc failed", None))) == "compile_error"
    assert _build_status(wrapped(ToolchainIncomplete("no cusparse.h", None))) == "unsupported"
    assert _build_status(wrapped(ModuleNotLoadable("no CUDA in torch", None))) == "compiled"
    assert _build_status(ValueError("a plain bug")) is None


def test_a_load_request_takes_only_sources_and_headers(tmp_path):
    """Red team (2026-12-05): a ``load()`` whose "sources" held ``json.py`` got that file written into the build
    folder, where the compiler's launcher imported it as root. The trusted side now refuses any file that is not a C,
    C++ or CUDA source or header, in one line the Coder can read, before anything is written."""
    from cudaforge.eval.extensions.service import serve_build

    for name in ("json.py", "x.pth", "k.pyc", "build.ninja", "notes.txt"):
        files = {"k.cpp": "int f() { return 1; }\n", name: "import os\n"}
        reply, record = serve_build(
            {"kind": "files", "name": "k_ext", "files": files, "with_cuda": False}, settings_for(str(tmp_path)), None
        )
        assert reply["status"] == "failed" and f"{name!r} is neither a C, C++ or CUDA source nor a header" in (
            record.error
        ), (name, record.error)
        assert not list(tmp_path.rglob(name)), name


def test_the_worker_and_the_profiler_import_a_candidate_one_way(tmp_path):
    """``CandidateLoader`` is the one importer: the sandboxed worker and the profiler's child both use it and neither
    enters the build hooks itself; it names the module by the source's hash, leaves ``load_inline`` patched until
    closed, and a build service of delivered libraries refuses a build it was not given."""
    import ast

    import torch.utils.cpp_extension as cpp

    import cudaforge
    from cudaforge.eval.extensions import BuildSettings, CandidateLoader, candidate_module_name, delivered_builds

    package = Path(cudaforge.__file__).parent
    for rel in ("eval/worker/candidate_worker.py", "profile/child.py"):
        calls = {
            ast.unparse(n.func) for n in ast.walk(ast.parse((package / rel).read_text())) if isinstance(n, ast.Call)
        }
        assert "CandidateLoader" in calls and "build_hooks" not in calls, rel
    source = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\nSEEN = torch.utils.cpp_extension.load_inline\n"
    original = cpp.load_inline
    settings = BuildSettings(cache_dir=str(tmp_path / "cache"), arch="9.0")
    loader = CandidateLoader(settings)
    module = loader.load(source)
    try:
        assert module.__name__ == candidate_module_name(source) and hasattr(module, "ModelNew")
        assert module.SEEN is not original and cpp.load_inline is not original  # every call goes through the hooks
        assert loader.recorder is not None and loader.recorder.records == []
        with pytest.raises(RuntimeError, match="one candidate"):
            loader.load(source)
    finally:
        loader.close()
    assert cpp.load_inline is original
    serve = delivered_builds(settings, {})
    reply = serve(
        {"kind": "inline", "name": "ext", "cpp_sources": ["int f();"], "cuda_sources": [], "functions": {"f": "f"}}
    )
    assert reply["status"] == "failed" and "not built by the trusted side" in reply["error"]
