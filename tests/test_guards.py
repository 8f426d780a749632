"""The integrity guards: the hack corpus gets its declared verdicts, legitimate kernels pass them all.

The corpus (benchmarks/hacks/) is run three ways: every file through the static check (no worker);
the files whose verdict needs a running candidate through the CPU evaluator (Triton in the
interpreter), in one pool of two workers; on a GPU, every file whose verdict is not static through
the GPU evaluator (skipped without CUDA; scripts/gpu_check.py runs it). Then the guards' parts one
by one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from cudaforge.eval.evaluator import Evaluator, default_eval_config
from cudaforge.eval.guards import GUARDS, Policies, static_findings
from cudaforge.eval.guards import runtime as rt
from cudaforge.eval.guards.corpus import check_result, check_static, find_entry_task, load_corpus, parse_entry
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.static import check_candidate
from cudaforge.types import EvalStatus, Phase

REPO = Path(__file__).resolve().parent.parent
CORPUS = load_corpus()
CPU_RUNTIME = [
    e for e in CORPUS if not e.static and not e.needs_cuda and not e.threat
]  # threats: tests/test_sandbox.py
CUDA = torch.cuda.is_available()


def ids(entries):
    return [e.name for e in entries]


# --------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("entry", CORPUS, ids=ids(CORPUS))
def test_static_verdicts_of_the_corpus(entry):
    task = find_entry_task(entry)
    assert check_static(entry, default_eval_config(), task.source) == []


@pytest.fixture(scope="module")
def cpu_results(tmp_path_factory):
    """Every CPU-runnable corpus entry evaluated once, two workers at a time."""
    cache = str(tmp_path_factory.mktemp("build"))

    def run(entry):
        cfg = {"device": "cpu", "correctness_trials": 3, "build_cache_dir": cache, **entry.config}
        return entry.name, Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)

    with ThreadPoolExecutor(2) as pool:
        return dict(pool.map(run, CPU_RUNTIME))


@pytest.mark.slow
@pytest.mark.parametrize("entry", CPU_RUNTIME, ids=ids(CPU_RUNTIME))
def test_runtime_verdicts_of_the_corpus_on_the_cpu(entry, cpu_results):
    result = cpu_results[entry.name]
    assert check_result(entry, result) == [], result.report()
    if entry.status != "correct" and entry.guard:
        assert entry.guard in result.message and result.guard_findings


GPU_RUNTIME = [e for e in CORPUS if not e.static]


@pytest.fixture(scope="module")
def gpu_results(tmp_path_factory):
    """Every runtime corpus entry evaluated once on the GPU, CUDAFORGE_THREAT_THREADS (default 2) at a time: the
    evaluator's GPU lock keeps the timed parts of two evaluations apart; each entry's outcome printed as it ends."""
    cache = str(tmp_path_factory.mktemp("build"))

    def run(entry):
        cfg = {"timing_trials": 30, "warmup": 5, "build_cache_dir": cache, **entry.config}
        started = time.monotonic()
        result = Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)
        print(f"corpus {entry.name}: {result.status.value} in {time.monotonic() - started:.1f} s", flush=True)
        return entry.name, result

    with ThreadPoolExecutor(int(os.environ.get("CUDAFORGE_THREAT_THREADS", "2"))) as pool:
        return dict(pool.map(run, [e for e in GPU_RUNTIME if not e.missing_modules()]))


@pytest.mark.gpu
@pytest.mark.parametrize("entry", GPU_RUNTIME, ids=ids(GPU_RUNTIME))
def test_runtime_verdicts_of_the_corpus_on_a_gpu(entry, gpu_results):
    if entry.missing_modules():  # a CuTe DSL or TileLang entry where that language is not installed
        pytest.skip(f"needs {', '.join(entry.missing_modules())}")
    result = gpu_results[entry.name]
    assert check_result(entry, result) == [], (
        result.report() + f"\n{result.guard_findings}\n{result.fingerprint.get('kernel_share')}"
    )


def test_a_static_rejection_is_a_rejected_result_before_any_worker(tmp_path):
    entry = next(e for e in CORPUS if e.name == "hack_side_stream")
    result = Evaluator({"device": "cpu", "build_cache_dir": str(tmp_path)}).evaluate(
        find_entry_task(entry), entry.source
    )
    assert result.status is EvalStatus.REJECTED and result.message.startswith("rejected by the concurrency guard")
    assert [p.phase for p in result.phases] == [Phase.STATIC] and result.phases[-1].status == "failed"
    assert result.seconds < 2  # the parent rejected it: no worker was started
    assert {f["guard"] for f in result.guard_findings} == {"concurrency"}


@pytest.mark.slow
def test_a_report_policy_lets_the_candidate_through_with_the_finding(tmp_path):
    entry = next(e for e in CORPUS if e.name == "hack_input_mutation")
    cfg = {
        "device": "cpu",
        "correctness_trials": 2,
        "guards": {"input_mutation": "report"},
        "build_cache_dir": str(tmp_path),
    }
    result = Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)
    assert result.status is EvalStatus.CORRECT, result.report()
    assert [f["verdict"] for f in result.guard_findings if f["guard"] == "input_mutation"] == ["report"]


def test_corpus_declarations_are_checked(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('"""TASK: tiny/level1/1_ReLU\nEXPECTED: rejected by no_such_guard\n"""\n')
    with pytest.raises(ValueError, match="unknown guard"):
        parse_entry(bad)
    bad.write_text('"""EXPECTED: correct"""\n')
    with pytest.raises(ValueError, match="TASK"):
        parse_entry(bad)
    good = tmp_path / "good.py"
    good.write_text(
        '"""TASK: tiny/level1/1_ReLU\nEXPECTED: correct\n'
        'CONFIG: guards.concurrency=report, guards.io=report, torch_ops=strict, correctness_timeout_s=4\n"""\n'
    )
    config = parse_entry(good).config  # a guard's policy sits under eval.guards, as on the command line
    assert config == {
        "guards": {"concurrency": "report", "io": "report"},
        "torch_ops": "strict",
        "correctness_timeout_s": 4,
    }
    assert Policies(config).verdict("concurrency") == "report" and Policies(config).verdict("fallback") == "reject"


# --------------------------------------------------------------------------- static guards, one by one


def guards_of(source: str, **cfg) -> dict[str, str]:
    """{guard: verdict} of the static findings (the last verdict per guard)."""
    return {f["guard"]: f["verdict"] for f in static_findings(textwrap.dedent(source), Policies(cfg))}


KERNEL = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

def launch(x):
    out = torch.empty_like(x)
    k[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out
"""


def model(body: str, extra: str = "") -> str:
    return (
        KERNEL
        + textwrap.dedent(extra)
        + "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


@pytest.mark.parametrize(
    "body, extra, guard",
    [
        ("return launch(x)", "", None),
        ("return launch(x) + 1", "", None),
        ("return r(launch(x))", "from torch import relu as r", "torch_compute"),
        ("return getattr(torch, 'tanh')(launch(x))", "", "torch_compute"),
        ("return F.gelu(launch(x))", "import torch.nn.functional as F", "torch_compute"),
        ("return launch(x) @ x.T", "", "torch_compute"),
        ("return launch(x).sum(dim=0)", "", "torch_compute"),
        ("return torch.compile(launch)(x)", "", "torch_compute"),
        ("return launch(x).view(-1).reshape(x.shape).contiguous()", "", None),
    ],
)
def test_torch_compute_is_found_through_aliases(body, extra, guard):
    found = guards_of(model(body, extra))
    assert set(found) == ({guard} if guard else set()), found
    if guard:
        assert found[guard] == "report" and guards_of(model(body, extra), torch_ops="strict")[guard] == "reject"


@pytest.mark.parametrize(
    "body, extra, guard",
    [
        ("s = S()\nreturn launch(x)", "S = torch.cuda.Stream", "concurrency"),
        ("g = torch.cuda.CUDAGraph()\nreturn launch(x)", "", "concurrency"),
        ("return launch(x)", "import concurrent.futures", "concurrency"),
        ("return launch(x)", "torch.backends.cuda.matmul.allow_tf32 = True", "monkey_patch"),
        ("return launch(x)", "torch.set_default_dtype(torch.float16)", "monkey_patch"),
        ("return launch(x)", "setattr(torch, 'relu', launch)", "monkey_patch"),
        ("return launch(x)", "torch.nn.modules.module.register_module_forward_hook(print)", "monkey_patch"),
        ("return launch(x)", "LIB = torch.library.Library('aten', 'IMPL')", "monkey_patch"),
        ("return launch(x)", "import os\nDEBUG = os.environ.get('DEBUG')", "io"),
        ("return launch(x)", "SPEC = open('payload.json').read()", "io"),
        ("return launch(x)", "import socket", "io"),
        ("return launch(x)", "import sys\nREF = sys.modules.get('cudaforge_reference')", "introspection"),
        ("return launch(x)", "import cudaforge_reference", "introspection"),
        ("return eval('launch')(x)", "", "dynamic_code"),
        ("f = sys._getframe(1)\nreturn launch(x)", "import sys", "introspection"),
    ],
)
def test_side_effects_are_rejected(body, extra, guard):
    found = guards_of(model(body, extra))
    assert found.get(guard) == "reject", found
    assert guards_of(model(body, extra), guards_enforce=False).get(guard) == "report"


@pytest.mark.parametrize(
    "extra",
    [
        "import os\nos.environ['TORCH_CUDA_ARCH_LIST'] = '9.0'",  # writing the environment: only reported
        "with open('/tmp/kernel.cu', 'w') as f:\n    f.write('// generated')",  # writing a source file
        "import time\nif __name__ == '__main__':\n    time.perf_counter = None\n    import threading",
        "S = torch.cuda.current_stream()",
        "LIB = torch.library.Library('mylib', 'DEF')",
        "CODE = '''#include <torch/extension.h>\n// no std::thread, no cudaStreamCreate here\n__global__ void f() {}'''",
    ],
)
def test_benign_code_is_not_rejected(extra):
    found = guards_of(model("return launch(x)", extra))
    assert "reject" not in found.values(), found


def test_cuda_sources_are_read_for_streams_threads_and_aten_overrides():
    for snippet, guard in [
        ("cudaStream_t s; cudaStreamCreateWithFlags(&s, 1);", "concurrency"),
        ("std::thread t(work);", "concurrency"),
        ('TORCH_LIBRARY_IMPL(aten, CUDA, m) { m.impl("relu", &slow); }', "monkey_patch"),
        ('FILE* f = fopen("payload.json", "r");', "io"),
    ]:
        source = model("return launch(x)", f"SRC = '''#include <torch/extension.h>\n{snippet}'''")
        assert guards_of(source).get(guard) == "reject", (snippet, guards_of(source))


def test_passthrough_and_unlaunched_kernels_are_found():
    passthrough = "import torch\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    assert guards_of(passthrough)["no_custom_kernel"] == "reject"
    assert guards_of(model("return torch.relu(x)"))["no_custom_kernel"] == "reject"  # kernel defined, never used
    through_self = model("return self.fn(x)", "").replace(
        "def forward", "def __init__(self):\n        super().__init__()\n        self.fn = launch\n    def forward"
    )
    assert "no_custom_kernel" not in guards_of(through_self)


def test_fallbacks_and_empty_bodies_are_found():
    swallowed = model("try:\n    return launch(x)\nexcept RuntimeError:\n    return x")
    assert guards_of(swallowed)["fallback"] == "reject"
    reraised = model(
        "try:\n    return launch(x)\nexcept RuntimeError as e:\n    raise RuntimeError('kernel failed') from e"
    )
    assert "fallback" not in guards_of(reraised)
    guarded_import = model("return launch(x)", "try:\n    import numpy\nexcept ImportError:\n    numpy = None")
    assert "fallback" not in guards_of(guarded_import)
    assert guards_of(model('"""Nothing yet."""'))["empty_body"] == "reject"


def test_check_candidate_runs_the_guards_only_with_a_config():
    source = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    assert check_candidate(source).ok  # the worker still guards a caller that gives no config
    report = check_candidate(source, default_eval_config())
    assert not report.ok and report.status == "rejected" and "no_custom_kernel" in report.message
    assert check_candidate("class Other: pass\n", {}).status == "invalid"


@pytest.mark.parametrize("torch_ops", ["lenient", "strict"])
@pytest.mark.parametrize(
    "path",
    sorted(
        str(p.relative_to(REPO))
        for pattern in (
            "benchmarks/candidates/*.py",
            "tests/fixtures/ncu/*.py",
            "agents/examples/*/solution.py",
            "tests/gpu_candidates/cupy_*.py",
        )
        for p in REPO.glob(pattern)
        if "compile_error" not in p.name
    ),
)
def test_bundled_kernels_pass_every_static_guard(path, torch_ops):
    found = static_findings((REPO / path).read_text(), Policies({"torch_ops": torch_ops}))
    assert not [f for f in found if f["verdict"] == "reject"], found


def test_recorded_coder_candidates_get_no_dynamic_code_finding():
    """Every candidate a Coder model wrote in the recorded GPU runs (one copy of each, kept by
    scripts/pack_results.py in tests/fixtures/recorded_candidates): real model output."""
    paths = sorted((REPO / "tests" / "fixtures" / "recorded_candidates").rglob("*.py"))
    assert len(paths) >= 35 and all("class ModelNew" in p.read_text() for p in paths)
    for path in paths:
        for torch_ops in ("lenient", "strict"):
            found = static_findings(path.read_text(), Policies({"torch_ops": torch_ops}))
            assert not [f for f in found if f["guard"] == "dynamic_code"], (path, found)


# --------------------------------------------------------------------------- the candidate is one closed unit


def dynamic_code(source: str, **cfg) -> list[dict[str, str]]:
    """The dynamic_code findings of a candidate."""
    return [f for f in static_findings(textwrap.dedent(source), Policies(cfg)) if f["guard"] == "dynamic_code"]


@pytest.mark.parametrize(
    "body, extra, seen",
    [
        ("return launch(x)", "exec('import os')", "exec(...) runs code the guards cannot see"),
        ("return launch(x)", "run = exec\nrun('y = 1')", "exec, taken as a value,"),
        ("return launch(x)", "CODE = compile('1', 'k', 'eval')", "compile(...) runs code"),
        ("return __import__('helper').relu(launch(x))", "", "__import__(...) runs code"),
        ("return launch(x)", "import importlib\nM = importlib.import_module('helper')", "import importlib loads"),
        ("return launch(x)", "from importlib.util import spec_from_file_location", "import importlib.util loads"),
        ("return launch(x)", "import runpy", "import runpy"),
        ("return launch(x)", "import zipimport", "import zipimport"),
        ("return launch(x)", "import marshal", "import marshal"),
        ("return launch(x)", "import cloudpickle", "import cloudpickle"),
        ("return launch(x)", "import copyreg", "import copyreg"),
        ("return ACT(launch(x))", "import pickle\nACT = pickle.loads(b'ctorch\\nrelu\\n.')", "import pickle"),
        ("return ACT(launch(x))", "ACT = torch.serialization.pickle.loads(b'')", "torch.serialization.pickle.loads"),
        ("return launch(x)", "import os, sys\nsys.path.insert(0, os.getcwd())", "can change sys.path"),
        ("return launch(x)", "import sys\nsys.path += ['.']", "sys.path = ... changes where imports come from"),
        ("return launch(x)", "import sys\nsys.modules['helper'] = sys", "sys.modules['helper'] = ..."),
        ("return launch(x)", "import sys\nsys.meta_path.append(None)", "sys.meta_path"),
        ("return launch(x)", "import types\nM = types.ModuleType('helper')", "types.ModuleType"),
        ("return launch(x)", "import ctypes\nLIB = ctypes.cdll.LoadLibrary('./k.so')", "ctypes.cdll.LoadLibrary"),
        ("return launch(x)", "torch.ops.load_library('./ops.so')", "torch.ops.load_library"),
        ("return launch(x)", "L = __loader__", "__loader__ hands the import machinery"),
        ("return helper.relu(launch(x))", "import helper", "import helper: helper is neither"),
        ("return launch(x)", "import einops", "import einops: einops is neither"),
        ("return launch(x)", "from . import helper", "the candidate is a single file"),
        ("return launch(x)", "open('helper.py', 'w').write('X = 1')", "writes 'helper.py'"),
        ("return launch(x)", "import pathlib\npathlib.Path('k.so').write_bytes(b'')", "writes 'k.so'"),
        ("return launch(x)", "import os\nos.replace('k.txt', os.path.join('.', 'helper.py'))", "writes 'helper.py'"),
        ("return launch(x)", "import tempfile\nT = tempfile.NamedTemporaryFile('w', suffix='.pth')", "in '.pth'"),
        ("return launch(x)", "NAME = str(id(x))\nopen(NAME + '.txt' if x else NAME, 'w')", "cannot work out"),
        ("return launch(x)", "def save(path):\n    open(path, 'w').write('')\nsave(input())", "cannot work out"),
        ("return getattr(launch(x), NAME)()", "NAME = 're' + 'lu'", "getattr(launch(x), NAME) looks an attribute up"),
        ("setattr(self, 'a' + 'ct', torch.relu)\nreturn self.act(launch(x))", "", "setattr(self, 'a' + 'ct')"),
        ("return functools.reduce(getattr, ['relu'], launch(x))()", "import functools", "getattr, taken as a value,"),
        ("return F.__dict__[NAME](launch(x))", "import torch.nn.functional as F\nNAME = 'relu'", "F.__dict__ looks"),
        ("return object.__getattribute__(launch(x), 'relu')()", "", "object.__getattribute__ looks"),
        ("return ACT(launch(x))", "import operator\nACT = operator.methodcaller('relu')", "kept or passed"),
        # a name bound somewhere else is still the builtin where that binding does not reach
        ("return launch(x)", "def unused():\n    eval = None\nR = eval('1')", "eval(...) runs code"),
        ("return launch(x)", "def run(code, exec=exec):\n    exec(code)", "exec, taken as a value,"),
        ("return getattr(launch(x), 'relu')()", "getattr = getattr", "binds getattr, a builtin"),
    ],
)
def test_dynamic_code_is_found(body, extra, seen):
    found = dynamic_code(model(body, extra))
    assert found and {f["verdict"] for f in found} == {"reject"}, found
    assert any(seen in f["evidence"] for f in found), found
    assert all(re.match(r"line \d+: ", f["evidence"]) and "\n" not in f["evidence"] for f in found), found


def test_dynamic_code_follows_the_introspection_policy_and_always_rejects_under_strict():
    source = model("return launch(x)", "exec('pass')")
    assert GUARDS["dynamic_code"].field == "introspection" and GUARDS["dynamic_code"].where == "static"
    assert guards_of(source)["dynamic_code"] == "reject"
    assert guards_of(source, guards={"introspection": "report"})["dynamic_code"] == "report"
    assert guards_of(source, guards={"introspection": "report"}, torch_ops="strict")["dynamic_code"] == "reject"
    assert guards_of(source, torch_ops="strict", guards_enforce=False)["dynamic_code"] == "report"  # the paper's preset


def test_dynamic_code_findings_are_one_per_place_and_capped():
    found = dynamic_code(model("return launch(x)", "\n".join(f"exec('y = {i}')" for i in range(9))))
    assert len(found) == 6 and found[0]["evidence"].startswith("line 16: exec(...)")
    assert found[-1]["evidence"].endswith("(and 3 more such places).")


@pytest.mark.parametrize(
    "body, extra, what",
    [
        ("return getattr(launch(x), 'relu')()", "", ".relu()"),
        ("return getattr(torch, 'relu')(launch(x))", "", "torch.relu"),
        ("return getattr(getattr(torch, 'nn'), 'functional').gelu(launch(x))", "", "F.gelu"),
        ("return operator.methodcaller('clamp', min=0)(launch(x))", "import operator", ".clamp()"),
        ("return mc('relu')(launch(x))", "from operator import methodcaller as mc", ".relu()"),
        ("return operator.attrgetter('nn.functional.relu')(torch)(launch(x))", "import operator", "F.relu"),
        ("return F.__dict__['relu'](launch(x))", "import torch.nn.functional as F", "F.relu"),
        ("return F.__dict__.get('relu')(launch(x))", "import torch.nn.functional as F", "F.relu"),
        ("setattr(self, 'act', torch.relu)\nreturn self.act(launch(x))", "", "torch.relu"),
        ("return list(map(torch.relu, [launch(x)]))[0]", "", "torch.relu (taken as a value)"),
        ("return ACTS['relu'](launch(x))", "ACTS = {'relu': torch.relu}", "torch.relu (taken as a value)"),
        ("return f(launch(x))", "@torch.compile\ndef f(y):\n    return y", "torch.compile"),
        ("return getattr(launch(x), 'relu')(x)", "def getattr(obj, name):\n    return torch.relu", "torch.relu"),
    ],
)
def test_literal_names_are_read_as_the_attributes_they_name(body, extra, what):
    source = model(body, extra)
    strict = static_findings(textwrap.dedent(source), Policies({"torch_ops": "strict"}))
    compute = [f for f in strict if f["guard"] == "torch_compute"]
    assert compute and compute[0]["verdict"] == "reject" and what in compute[0]["evidence"], strict
    assert not [f for f in strict if f["guard"] == "dynamic_code"], strict
    assert guards_of(source)["torch_compute"] == "report"


WRITE_CU = """
import os
import tempfile
from pathlib import Path

BUILD = tempfile.mkdtemp()
os.makedirs(BUILD, exist_ok=True)
SRC = os.path.join(BUILD, "relu.cu")
with open(SRC, "w") as f:
    f.write("// kernel")
(Path(BUILD) / "relu.cpp").write_text("// binding")

def write(path, text):
    with open(path, "w") as f:
        f.write(text)

write(f"{BUILD}/relu.h", "// header")
with tempfile.NamedTemporaryFile("w", suffix=".cuh", delete=False) as header:
    header.write("// header")
fd, OTHER = tempfile.mkstemp(suffix=".cu")
with open(OTHER, "w") as f:
    f.write("// kernel")
"""


@pytest.mark.parametrize(
    "body, extra",
    [
        ("return launch(getattr(self, 'weight'))", ""),
        ("from torch.utils.cpp_extension import load_inline\nreturn launch(x)", ""),
        ("return launch(x)", "from torch.utils.cpp_extension import load_inline\nimport math\nimport numpy as np"),
        (
            "return launch(x)",
            "import hashlib\nimport functools\nKEY = hashlib.sha256(b'k').hexdigest()\n"
            "@functools.lru_cache(None)\ndef config(n):\n    return n",
        ),
        ("return launch(x)", WRITE_CU),
        (
            "return launch(x)",
            "import cutlass\nimport cutlass.cute as cute\nimport cuda.bindings.driver as cuda\n"
            "import tilelang.language as T\nimport cupy as cp",
        ),
        (
            "return launch(x)",
            "from torch.utils.cpp_extension import load_inline\n"
            "EXT = load_inline(name='relu_ext', cpp_sources='', functions=['relu'])\nimport relu_ext",
        ),
        (
            "return launch(x).view(-1)[: int(x.numel() * torch.pi) // 4]",
            "def compile(src):\n    return src\nS = compile('x')",
        ),
    ],
)
def test_legitimate_patterns_get_no_new_finding(body, extra):
    source = textwrap.dedent(model(body, extra))
    for torch_ops in ("lenient", "strict"):
        found = static_findings(source, Policies({"torch_ops": torch_ops}))
        assert not [f for f in found if f["verdict"] == "reject" or f["guard"] == "dynamic_code"], found


def test_reading_the_environment_stays_the_io_guards_alone():
    found = static_findings(model("return launch(x)", "import os\nDEBUG = os.environ.get('DEBUG')"), Policies())
    assert [f["guard"] for f in found] == ["io"]


def test_a_deep_expression_is_analysed_without_recursion():
    size = " + ".join(["getattr(x, 'numel')()"] * 1500)  # plain integer arithmetic, 1500 deep
    source = model(f"return launch(x).view(-1)[: ({size}) // 1500].view_as(x)")
    assert not [f for f in static_findings(source, Policies({"torch_ops": "strict"})) if f["verdict"] == "reject"]
    tensors = model("return " + " + ".join(["getattr(launch(x), 'contiguous')()"] * 1500))  # tensor additions
    strict = static_findings(tensors, Policies({"torch_ops": "strict"}))
    assert [f["guard"] for f in strict if f["verdict"] == "reject"] == ["torch_compute"], strict
    assert "computes with PyTorch's + operator" in strict[0]["evidence"]


# --------------------------------------------------------------------------- torch_ops=strict: an allow-list


def model_with_init(init: str, body: str, extra: str = "") -> str:
    """A candidate whose ModelNew has an ``__init__`` (``init``) and a forward (``body``)."""
    return (
        KERNEL + textwrap.dedent(extra) + "\nclass ModelNew(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n"
        + textwrap.indent(textwrap.dedent(init), "        ")
        + "\n    def forward(self, x):\n"
        + textwrap.indent(textwrap.dedent(body), "        ")
    )


def strict_compute(source: str) -> str:
    """The evidence of the torch_compute rejection under strict ('' when there is none)."""
    found = static_findings(textwrap.dedent(source), Policies({"torch_ops": "strict"}))
    return " ".join(f["evidence"] for f in found if f["guard"] == "torch_compute" and f["verdict"] == "reject")


REFERENCE_BASE = "class Ref(nn.Module):\n    def forward(self, y):\n        return torch.tanh(y)\n"
PROPERTY = "@property\n    def act(self):\n        return torch.sigmoid\n    def forward"
GETATTR = "def __getattr__(self, name):\n        return torch.sigmoid\n    def forward"
CALL_IMPL = "def _call_impl(self, x):\n        return torch.sigmoid(launch(x))\n    def forward"


@pytest.mark.parametrize(
    "source, seen",
    [
        # star imports: bare names the guards cannot tell from the candidate's
        (model("return relu(launch(x))", "from torch.nn.functional import *"), "import * puts PyTorch's functions"),
        # Python's operators on tensors
        (model("y = launch(x)\nreturn y * (y > 0)"), "line 20: y * (y > 0) computes with PyTorch's * operator"),
        (model("return -launch(x)"), "-launch(x) applies PyTorch's unary -"),
        (model("y = launch(x)\ny += 1\nreturn y"), "y += 1 computes with PyTorch's += operator"),
        (model("return launch(x) > 0"), "compares with PyTorch's > operator"),
        (model("return sum([launch(x), x])"), "sum(...) applies Python's operators"),
        (model("return operator.mul(launch(x), 2)", "import operator"), "operator.mul(...) applies"),
        (model("return functools.reduce(operator.add, [launch(x), x])", "import functools, operator"), "operator.add"),
        (
            model("return list(itertools.accumulate([launch(x), x]))[-1]", "import itertools"),
            "itertools.accumulate(...)",
        ),
        (model("return launch(x)[x > 0]"), "launch(x)[x > 0] indexes a tensor with a tensor"),
        # tensor methods, whatever the list of compute methods once said, and through the class
        (model("return launch(x).__mul__(2)"), "launch(x).__mul__() is a PyTorch tensor op"),
        (model("return launch(x).fmax(x)"), "launch(x).fmax() is a PyTorch tensor op"),
        (model("return torch.Tensor.tan(launch(x))"), "torch.Tensor.tan is a PyTorch tensor op"),
        (model("return type(x).tan(launch(x))"), "torch.Tensor.tan is a PyTorch tensor op"),
        (model("return x.__class__.tan(launch(x))"), "torch.Tensor.tan is a PyTorch tensor op"),
        # a decorator of the candidate's own, whatever it is called, makes no kernel: the body is read
        (
            model("return k2(launch(x))", "def jit(fn):\n    return fn\n@jit\ndef k2(y):\n    return torch.relu(y)"),
            "torch.relu",
        ),
        (
            model(
                "return k2(launch(x))",
                "from triton import jit\njit = lambda f: f\n@jit\ndef k2(y):\n    return y.tan()",
            ),
            "y.tan() is a PyTorch tensor op",
        ),
        # lambdas and nested defs kept on self, containers, module-level layers, functools.partial
        (model_with_init("self.act = lambda t: torch.relu(t)", "return self.act(launch(x))"), "torch.relu"),
        (
            model_with_init("def act(t):\n    return t.clamp_min(0)\nself.act = act", "return self.act(launch(x))"),
            "t.clamp_min() is a PyTorch tensor op",
        ),
        (
            model_with_init("self.ops = []\nself.ops.append(nn.ReLU())", "return self.ops[0](launch(x))"),
            "the nn layer self.ops[0] (nn.ReLU)",
        ),
        (model_with_init("self.register_module('act', nn.ReLU())", "return self.act(launch(x))"), "the nn layer"),
        (model_with_init("self.act = nn.ReLU()", "return self.act.forward(launch(x))"), "the nn layer"),
        (model("return OPS['c'](launch(x), x)", "OPS = {'c': torch.fmax}"), "torch.fmax (taken as a value)"),
        (model("return ACT[0](launch(x))", "ACT = [nn.ReLU()]"), "the nn layer ACT[0] (nn.ReLU)"),
        (model("return NS.act(launch(x))", "import types\nNS = types.SimpleNamespace(act=nn.GELU())"), "the nn layer"),
        (
            model(
                "return act(launch(x))", "import functools\nact = functools.partial(torch.fmax, other=torch.zeros(()))"
            ),
            "torch.fmax",
        ),
        (
            model(
                "return act(launch(x))",
                "import functools\ndef mine(y, s):\n    return y * s\nact = functools.partial(mine, s=2)",
            ),
            "y * s computes with PyTorch's * operator",
        ),
        # private and unknown torch paths, torch's own op namespaces
        (model("return torch._C._VariableFunctions.relu(launch(x))"), "torch._C._VariableFunctions.relu"),
        (model("return torch.nn.modules.activation.F.relu(launch(x))"), "torch.nn.modules.activation.F.relu"),
        (model("return torch.ops.aten.relu(launch(x))"), "torch.ops.aten.relu"),
        (model("return torch.ops.quantized_decomposed.relu(launch(x))"), "torch.ops.quantized_decomposed.relu"),
        # array libraries on tensors, callees that cannot be resolved, forward reached some other way
        (model("return launch(torch.as_tensor(np.maximum(x.numpy(), 0)))", "import numpy as np"), "numpy.maximum(...)"),
        (model("return CALLBACK(launch(x))"), "CALLBACK(...) calls what the guards cannot resolve"),
        (
            model("return super().forward(launch(x))", REFERENCE_BASE).replace("ModelNew(nn.Module)", "ModelNew(Ref)"),
            "torch.tanh",
        ),
        (model("return launch(x)") + "\nModelNew.forward = lambda self, x: torch.relu(launch(x))\n", "torch.relu"),
        (KERNEL + "\nclass ModelNew(nn.Linear):\n    pass\n", "ModelNew's forward is nn.Linear's"),
        (
            KERNEL + "\nModelNew = type('ModelNew', (nn.Module,), {'forward': lambda self, x: torch.relu(x)})\n",
            "ModelNew is not a class the candidate's text defines",
        ),
        (model("return self.act(launch(x))").replace("def forward", PROPERTY), "torch.sigmoid"),
        (model("return self.act(launch(x))").replace("def forward", GETATTR), "torch.sigmoid"),
        (model("return launch(x)").replace("def forward", CALL_IMPL), "torch.sigmoid"),
    ],
)
def test_strict_is_an_allow_list(source, seen):
    evidence = strict_compute(source)
    assert seen in evidence, evidence
    assert "eval.torch_ops=strict allows only your own kernels" in evidence


AUTOGRAD_AND_CUSTOM_OP = """
class Fn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, y):
        ctx.save_for_backward(y)
        return launch(y)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * (y > 0)

@torch.library.custom_op("mylib::relu", mutates_args=())
def relu_op(y: torch.Tensor) -> torch.Tensor:
    return launch(y)
"""

SIZES = """
x = x.contiguous()
M, K = x.shape
n = x.numel()
blocks = (n + 1023) // 1024 * max(1, x.size(0) // M) + x.stride(0) * 0
assert x.dim() == 2 and x.is_contiguous() and x.dtype in (torch.float32, torch.float16)
if x.dtype != torch.float32 or x.shape[-1] % 16:
    x = x.float()
BLOCK = min(1024, triton.next_power_of_2(x.shape[-1]))
out = torch.empty(x.shape[0], K, device=x.device, dtype=x.dtype)
k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, BLOCK=BLOCK)
for i in range(x.shape[0] // 64):
    pass
with torch.no_grad():
    y = launch(out.view(-1)).view_as(x).to(x.dtype)
outs = [launch(t) for t in y.unbind(0)]
return torch.stack(outs) if len(outs) > blocks * 0 else y.new_empty(0)
"""

LEGIT_STRICT = [
    # sizes, grids and shapes are plain Python; views, casts and copies are layout
    model(SIZES),
    # launchers kept on self (a lambda, functools.partial of its own function), a kernel table, a lazy extension
    model_with_init(
        "self.run = lambda t: launch(t)\nself.run2 = functools.partial(launch)\nself.table = {}\nself._ext = None",
        "if x.dtype not in self.table:\n    self.table[x.dtype] = k\n"
        "grid = (triton.cdiv(x.numel(), 1024),)\nout = torch.empty_like(x)\n"
        "self.table[x.dtype][grid](x, out, x.numel(), BLOCK=1024)\n"
        "if self._ext is None:\n    self._ext = load_inline(name='e', cpp_sources='')\n"
        "return self.run2(self.run(out))",
        "import functools\nfrom torch.utils.cpp_extension import load_inline",
    ),
    # an autograd.Function (its backward, in torch, never runs under no_grad) and a custom op of its own
    model("return Fn.apply(x) if x.requires_grad else torch.ops.mylib.relu(x)", AUTOGRAD_AND_CUSTOM_OP),
    # a kernel factory (tilelang's jit returns the kernel), a CuTe-style cache of compiled kernels
    model(
        "kernel = make(x.shape[0])\nout = kernel(x)\nif x.shape not in CACHE:\n    CACHE[x.shape] = cute_compile(k)\n"
        "CACHE[x.shape](x, out)\nreturn out",
        "import tilelang\nCACHE = {}\n@tilelang.jit(out_idx=[-1])\ndef make(n):\n    return n\n"
        "from cutlass.cute import compile as cute_compile",
    ),
]


@pytest.mark.parametrize("source", LEGIT_STRICT, ids=["sizes", "launchers", "autograd_custom_op", "factories"])
def test_strict_lets_kernels_layout_and_plain_python_through(source):
    for torch_ops in ("lenient", "strict"):
        found = static_findings(textwrap.dedent(source), Policies({"torch_ops": torch_ops}))
        assert not [f for f in found if f["verdict"] == "reject"], (torch_ops, found)


FAKE_JIT = "def jit(fn):\n    return fn\n@jit"


def test_a_decorator_makes_a_kernel_only_when_it_is_a_kernel_languages():
    fake = (
        "import torch\nimport torch.nn as nn\n" + FAKE_JIT + "\ndef relu_kernel(x):\n    return torch.relu(x)\n"
        "class ModelNew(nn.Module):\n    def forward(self, x):\n        return relu_kernel(x)\n"
    )
    assert guards_of(fake)["no_custom_kernel"] == "reject"  # no kernel at all, whatever the decorator is called
    for real in (
        "import triton\n@triton.jit",
        "from triton import jit\n@jit",
        "import triton\njit = triton.jit\n@jit",
        "import triton\n@triton.autotune(configs=[], key=[])\n@triton.jit",
    ):
        assert guards_of(fake.replace(FAKE_JIT, real)).get("no_custom_kernel") is None, real
    shadowed = fake.replace(
        FAKE_JIT,
        "from triton import jit\ndef make(jit=lambda f: f):\n    @jit\n"
        "    def relu_kernel(x):\n        return torch.relu(x)\n    return relu_kernel\n@jit",
    )
    assert "torch.relu" in strict_compute(shadowed.replace("return relu_kernel(x)", "return make()(x)"))


def test_the_tensor_attribute_list_is_torchs():
    """The strict allow-list knows every attribute of torch.Tensor: a method it did not know would pass as some
    other object's. A new torch adds names: regenerate TENSOR_ATTRIBUTES in cudaforge/eval/guards/source/strict_vocab.py."""
    from cudaforge.eval.guards.source import strict_vocab as source

    skipped = ("__doc__", "__module__", "__annotations__", "__weakref__", "__dict__")
    missing = {n for n in dir(torch.Tensor) if n not in skipped} - source.TENSOR_ATTRIBUTES
    assert not missing, sorted(missing)
    assert source.TENSOR_LAYOUT_METHODS | source.TENSOR_SCALAR_METHODS <= source.TENSOR_ATTRIBUTES


def test_lenient_still_reports_only_what_it_names():
    found = static_findings(model("y = launch(x)\nreturn y * (y > 0)"), Policies())
    assert not [f for f in found if f["guard"] == "torch_compute"], found  # operators: strict's business
    assert guards_of(model("return torch.relu(launch(x))"))["torch_compute"] == "report"


@pytest.mark.parametrize(
    "extra, seen",
    [
        ("import torch.fx\nG = torch.fx.Graph()", "torch.fx"),
        ("from torch.fx import symbolic_trace", "import torch.fx"),
        ("CU = torch.jit.CompilationUnit('def f(x):\\n    return x')", "torch.jit.CompilationUnit"),
        ("M = torch.jit.load('m.pt')", "torch.jit.load"),
        ("N = ('__getattribute__', '__globals__')", "the string '__getattribute__' names an interpreter internal"),
        ("def f():\n    pass\nB = f.__globals__['__builtins__']", "f.__globals__ reaches the interpreter's internals"),
        ("S = ().__class__.__mro__", "().__class__.__mro__ reaches"),
        ("F = launch.__code__", "launch.__code__ reaches"),
    ],
)
def test_dynamic_code_covers_code_from_strings_in_torch_and_interpreter_internals(extra, seen):
    found = dynamic_code(model("return launch(x)", extra))
    assert any(seen in f["evidence"] for f in found), found


LIBRARY = """
LIB = torch.library.Library("mylib", "DEF")
LIB.define("relu(Tensor x) -> Tensor")
LIB.impl("relu", launch, "CPU")
torch.library.define("mylib::twice(Tensor x) -> Tensor")
"""


def test_torch_library_schemas_are_declarations_not_code():
    source = model("return torch.ops.mylib.relu(x)", LIBRARY)
    for torch_ops in ("lenient", "strict"):
        found = static_findings(textwrap.dedent(source), Policies({"torch_ops": torch_ops}))
        assert not [f for f in found if f["verdict"] == "reject"], found
    impl_in_torch = source.replace('LIB.impl("relu", launch, "CPU")', 'LIB.impl("relu", lambda y: y.relu(), "CPU")')
    assert "y.relu() is a PyTorch tensor op" in strict_compute(impl_in_torch)


@pytest.mark.parametrize(
    "extra",
    [
        "import linecache\nA = linecache.getline('/etc/passwd', 1)",
        "import io\nB = io.open_code('/etc/passwd').read()",
        "import tokenize\nC = tokenize.open('/etc/passwd').read()",
        "D = torch.from_file('/etc/passwd', size=10, dtype=torch.uint8)",
        "E = torch.UntypedStorage.from_file('/etc/passwd', False, 10)",
        "import netrc\nF = netrc.netrc()",
        "import codecs\nG = codecs.open('/etc/passwd').read()",
        "import fileinput\nH = list(fileinput.input('/etc/passwd'))",
        "import pathlib\nI = pathlib.Path('/etc/passwd').open().read()",
        "import pathlib\nJ = pathlib.Path('/etc/passwd').read_text()",
    ],
)
def test_io_covers_every_way_to_read_a_file(extra):
    assert guards_of(model("return launch(x)", extra)).get("io") == "reject"


@pytest.mark.parametrize(
    "snippet",
    [
        'int fd = open("/etc/passwd", 0);',
        'std::ifstream f("/etc/passwd");',
        "auto p = std::filesystem::current_path();",
        "pid_t p = fork();",
        'execve("/bin/sh", 0, 0);',
        'system("ls");',
        'FILE* f = popen("ls", "r");',
        'std::string s = std::getenv("HOME");',
    ],
)
def test_io_reads_the_c_sources_the_candidate_builds(snippet):
    marked = model("return launch(x)", f"SRC = r'''#include <torch/extension.h>\nvoid f() {{ {snippet} }}'''")
    assert guards_of(marked).get("io") == "reject", snippet
    # a source with none of the usual markers is still read when it goes to a build
    unmarked = model(
        "return launch(x)",
        f"from torch.utils.cpp_extension import load_inline\n"
        f"BODY = r'''void f() {{ {snippet} }}'''\nCPP = 'int g();' + BODY\n"
        "EXT = load_inline(name='e', cpp_sources=CPP)",
    )
    assert guards_of(unmarked).get("io") == "reject", snippet
    assert guards_of(model("return launch(x)", "MSG = 'could not open (file) or fork'")).get("io") is None


def test_every_guard_with_a_policy_has_a_config_field_and_a_default():
    from cudaforge.config import EvalConfig

    fields = {f for f in EvalConfig.__dataclass_fields__}
    defaults = default_eval_config()
    for guard in GUARDS.values():
        if guard.field == "torch_ops":
            assert guard.field in fields and guard.field in defaults, guard
        elif guard.field:
            assert guard.field in defaults["guards"], guard  # under eval.guards
    for name in fields:
        assert name in defaults, f"default_eval_config() lacks {name}"
        value = getattr(EvalConfig(), name)
        assert (value.to_dict() if name == "guards" else getattr(value, "value", value)) == defaults[name], name
    with pytest.raises(ValueError, match="reject or report"):
        Policies({"guards": {"io": "maybe"}}).verdict("io")


def test_the_eval_package_imports_no_orchestration_stack():
    code = (
        "import sys, cudaforge.eval.verifier, cudaforge.eval.worker.candidate_worker, cudaforge.eval.guards.runtime, cudaforge.eval.guards.corpus, "
        "cudaforge.eval.evaluator; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'litellm', 'hydra', 'wandb')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- runtime guards, one by one

CPU = torch.device("cpu")


def test_bits_mutation_and_output_types():
    x = torch.tensor([1.0, float("nan"), -0.0])
    assert rt.same_bits(x, x.clone()) and not rt.same_bits(x, torch.tensor([1.0, float("nan"), 0.0]))
    changed = x.clone()
    changed[0] = 2.0
    assert "1 of 3 elements changed" in rt.mutated_inputs([x], [changed])
    assert rt.mutated_inputs([x, 3], [x.clone(), 3]) is None

    class Lazy(torch.Tensor):
        pass

    assert "subclass" in rt.output_type_problem(x.as_subclass(Lazy), x, CPU)
    assert rt.output_type_problem(x.clone(), x, CPU) is None
    assert "layout" in rt.output_type_problem(torch.eye(3).to_sparse(), torch.eye(3), CPU)


def test_poison_is_recognised():
    out = torch.zeros(4)
    out.view(torch.uint8)[:8] = rt.POISON_BYTE_CPU
    assert rt.poisoned_elements(out, CPU) == (2, 4)
    guard, evidence = rt.explain_mismatch(out, None, CPU, "trial 0")
    assert guard == "uninitialised_memory" and "2 of 4" in evidence
    assert rt.explain_mismatch(torch.ones(4), torch.ones(4), CPU, "trial 1")[0] == "result_caching"
    assert rt.explain_mismatch(torch.ones(4), torch.zeros(4), CPU, "trial 1") == ("", "")


def test_precision_downgrade_is_reported_and_fp32_reordering_is_not():
    torch.manual_seed(0)
    a, b = torch.randn(128, 256), torch.randn(256, 64)
    exact = a.double() @ b.double()
    assert rt.precision_downgrade(exact.float(), (a @ b)) is None  # fp32 in another order
    assert "float16" in rt.precision_downgrade(exact.float(), (a.half().float() @ b.half().float()))
    assert "bfloat16" in rt.precision_downgrade(exact.float(), exact.bfloat16().float())
    assert rt.precision_downgrade(torch.relu(a), torch.relu(a)) is None


def test_sensitivity_probe_tells_a_constant_from_a_kernel():
    x = torch.randn(4, 1, 8)
    ones = torch.ones_like(x)
    softmax = lambda xs: torch.softmax(xs[0], dim=1)  # noqa: E731
    constant = lambda xs: torch.ones_like(xs[0])  # noqa: E731
    verdict = rt.sensitivity_probe(softmax, constant, [x], ones, ones)
    assert verdict[0] == "reject" and "NaN" in verdict[1]
    assert rt.sensitivity_probe(softmax, softmax, [x], ones, ones) is None
    assert rt.sensitivity_probe(constant, constant, [x], ones, ones)[0] == "report"  # a degenerate task


@pytest.mark.parametrize("owned", [False, True])
def test_timed_calls_check_every_output_on_fresh_inputs(owned):
    """``owned``: each candidate output is the caller's own copy (the verifier's, read out of the arena), kept as
    the previous output without another copy; the verdicts are the same."""

    def make(trial):
        g = torch.Generator().manual_seed(trial + 100)
        return [torch.randn(64, generator=g)]

    def check(expected, actual, trial):
        return None if torch.equal(expected, actual) else type("Diff", (), {"summary": lambda self: "values differ"})()

    def drive(candidate, trials=6, warmup=2):
        calls = rt.TimedCalls(make, check, CPU, [256], reference=torch.relu, owned_outputs=owned)
        for trial in range(-warmup, trials):
            for role in ("reference", "candidate") if trial % 2 == 0 else ("candidate", "reference"):
                args = calls.make_args(trial)
                fn = torch.relu if role == "reference" else candidate
                out = fn(*args)
                if role == "candidate":
                    out = cand_out = out.clone() if owned else out  # owned: as the verifier's copy out of the arena
                if trial >= 0:
                    calls.on_output(role, trial, args, out)
            if trial >= 0 and calls.failure is None:
                assert (calls.previous is cand_out) == owned  # copied again only when the caller does not own it
        assert calls.seconds["inputs"] > 0 and calls.seconds["checks"] > 0  # the timing phase's breakdown
        return calls.failure

    assert drive(torch.relu) is None
    buffer = torch.empty(64)  # an honest in-process candidate that writes every call's result into one buffer
    assert drive(lambda x: buffer.copy_(torch.relu(x))) is None
    cache = {}
    cached = drive(lambda x: cache.setdefault("y", torch.relu(x)))  # filled in the first warm-up call
    assert cached["guard"] == "result_caching" and "warm-up call -2" in cached["evidence"]
    assert drive(lambda x: x.relu_())["guard"] == "input_mutation"
    wrong = drive(lambda x: torch.relu(x) + 1)
    assert wrong["guard"] == "timed_output" and wrong["diff"] == "values differ"


def test_the_timed_reference_runs_once_on_its_own_copy():
    """The reference's timed call gets ``make_args``'s copy as it is (no second clone, a whole input's worth of
    device traffic per trial), and a reference that works in place changes only that copy, never the inputs the
    candidate gets next."""
    from types import SimpleNamespace

    from cudaforge.eval import verifier

    timing = verifier.Timing.__new__(verifier.Timing)
    frozen = []
    timing.cand = SimpleNamespace(
        process=SimpleNamespace(stop=lambda: frozen.append("stop") or True, cont=lambda: frozen.append("cont"))
    )
    timing.stopwatch = SimpleNamespace(measure=lambda fn, args: (1.0, 1.0, fn(*args)))
    timing.reference_fn = lambda x: x.relu_()
    calls = rt.TimedCalls(
        lambda trial: [torch.randn(64, generator=torch.Generator().manual_seed(trial))],
        lambda expected, actual, trial: None,
        CPU,
        [],
    )
    args = calls.make_args(0)
    _, _, out = timing.reference_call(args)
    assert out.data_ptr() == args[0].data_ptr()
    assert (calls.pristine[0] < 0).any() and not (args[0] < 0).any()
    assert frozen == ["stop", "cont"]


def test_the_reference_gets_its_copy_right_before_its_own_call():
    """In interleaved trials the reference's copy of the inputs is made right before its call (candidate first on
    odd trials: after the candidate's call), the candidate's call reads the trial's drawn inputs."""

    from cudaforge.eval import verifier

    events = []
    calls = rt.TimedCalls(lambda trial: [torch.full((4,), float(trial))], lambda e, a, t: None, CPU, [])
    make_args, draw = calls.make_args, calls.draw
    calls.make_args = lambda trial: events.append(f"copy {trial}") or make_args(trial)
    calls.draw = lambda trial: events.append(f"draw {trial}") or draw(trial)
    timing = verifier.Timing.__new__(verifier.Timing)
    timing.cfg = EvalConfig()

    def timed(role, trial, inputs, calls_, times):
        assert float(inputs[0][0]) == trial and (inputs is calls.pristine) == (role == "candidate")
        events.append(f"{role} {trial}")

    timing._timed = timed
    timing._series(range(2), calls, {})
    assert [e for e in events if not e.startswith("draw")] == [
        "copy 0",
        "reference 0",
        "candidate 0",
        "candidate 1",
        "copy 1",
        "reference 1",
    ]
    assert events.index("draw 1") < events.index("candidate 1")


def test_hidden_work_and_speed_of_light_numbers():
    ref_event, ref_host = [1.0] * 9, [1.01] * 9
    assert rt.hidden_work(ref_event, ref_host, [0.5] * 9, [0.51] * 9, 0.05) is None
    evidence = rt.hidden_work(ref_event, ref_host, [0.005] * 9, [0.9] * 9, 0.05)
    assert "outside torch's current stream" in evidence
    peaks = {"memory_gbs": 4800, "fp32_tflops": 67.0, "tf32_tflops": 494.5, "fp16_tflops": 989.5, "bf16_tflops": 989.5}
    cost = {"flops": 0.0, "input_bytes": 1 << 30, "output_bytes": 1 << 30, "parameter_bytes": 0}
    evidence, numbers = rt.speed_of_light(cost, peaks, 0.01, 0.5, 50 << 20)
    assert "No kernel can be that fast" in evidence and numbers["floor_ms"] == pytest.approx(
        2 * (1 << 30) / 4.8e12 * 1e3
    )
    assert rt.speed_of_light(cost, peaks, 0.5, 0.5, 50 << 20)[0] is None
    assert rt.speed_of_light({"flops": 1.0}, None, 0.01, 0.5, None)[0] is None


REEXPORT_HEAD = "import torch, torch.nn as nn\nimport torch.utils.cpp_extension as ce\n"
REEXPORT_TAIL = "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


@pytest.mark.parametrize(
    "line, guard",
    [
        ("A = ce.subprocess.check_output(['id'])", "concurrency"),
        ("A = ce.glob.glob('/*')", "io"),
        ("A = ce.os.environ.get('DB_URL')", "io"),
        ("A = ce.importlib.import_module('ctypes')", "dynamic_code"),
        ("A = ce.sys.modules['torch']", "introspection"),
    ],
)
def test_a_module_reached_through_another_is_judged_as_imported(line, guard):
    """The second red-team round: ``ce.subprocess`` (a module that ``torch.utils.cpp_extension`` holds) passed every
    guard an ``import subprocess`` would have met."""
    found = static_findings(REEXPORT_HEAD + line + REEXPORT_TAIL, Policies({}))
    assert guard in {f["guard"] for f in found if f["verdict"] == "reject"}, found


@pytest.mark.parametrize(
    "call",
    [
        "torch.library.torch.relu(y)",
        "torch.types.torch.relu(y)",
        "torch.autograd.function._C._VariableFunctions.relu(y)",
    ],
)
def test_strict_sees_torch_through_modules_that_hold_it(call):
    source = textwrap.dedent(f"""
        import torch, torch.nn as nn
        import triton, triton.language as tl

        @triton.jit
        def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)

        class ModelNew(nn.Module):
            def forward(self, x):
                y = torch.empty_like(x)
                copy[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
                return {call}
    """)
    found = static_findings(source, Policies({"torch_ops": "strict"}))
    assert "torch_compute" in {f["guard"] for f in found if f["verdict"] == "reject"}, found


def test_the_models_own_attributes_by_a_prefixed_name_are_no_dynamic_code():
    """Buffers and layers registered in a loop and read back by ``getattr(self, f"scale_{i}")`` are honest code (the
    second red-team round's false positive); under strict, calling what such a lookup returns is still compute."""
    source = textwrap.dedent("""
        import torch, torch.nn as nn
        import triton, triton.language as tl

        @triton.jit
        def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                for i in range(2):
                    self.register_buffer(f"scale_{i}", torch.ones(1))
                    setattr(self, f"act_{i}", nn.ReLU())

            def forward(self, x):
                s = getattr(self, f"scale_{0}")
                y = torch.empty_like(x)
                copy[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
                return RESULT
    """)

    def rejected(result, policy):
        found = static_findings(source.replace("RESULT", result), Policies(policy))
        return {f["guard"] for f in found if f["verdict"] == "reject"}

    assert rejected("y", {}) == set() and rejected("y", {"torch_ops": "strict"}) == set()
    assert "torch_compute" in rejected("getattr(self, f'act_{0}')(y)", {"torch_ops": "strict"})
    assert "dynamic_code" in rejected("getattr(self, NAME)(y)".replace("NAME", "str(len(x.shape))"), {})


def test_a_guard_absent_from_the_config_has_the_protocols_default():
    """The policies hold no second copy of the defaults: an empty config gives ``EvalConfig``'s every guard verdict
    and threshold (issue 38)."""
    import dataclasses

    from cudaforge.eval.guards.policy import GUARDS, Policies
    from cudaforge.eval.settings import EvalConfig

    empty, full = Policies({}), Policies(dataclasses.asdict(EvalConfig()))
    for name in GUARDS:
        assert empty.verdict(name) == full.verdict(name), name
    for key in (
        "hidden_work_ms",
        "speed_of_light_margin",
        "library_share_max",
        "crosscheck_ratio",
        "crosscheck_slack_ms",
        "reference_slowdown_tolerance",
    ):
        assert empty.threshold(key) == full.threshold(key) == getattr(EvalConfig(), key), key
    assert (empty.enforce, empty.strict) == (full.enforce, full.strict)
