"""Triton kernels compiled ahead for the target GPU, without one (cudaforge.eval.jit_prebuild, languages.triton)."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest
import torch

from cudaforge import languages
from cudaforge.eval.jit_prebuild import compile_ahead, fake_specs, reported_kernels, specs
from cudaforge.eval.settings import EvalConfig
from cudaforge.tasks import load_suite, selection
from cudaforge.tasks.runtime import load_module
from cudaforge.vendors import current

triton = pytest.importorskip("triton")

REPO = Path(__file__).resolve().parents[1]
CANDIDATES = REPO / "benchmarks" / "candidates"
H200 = ["cuda", 90, 32]

AUTOTUNED = textwrap.dedent("""
    import torch, torch.nn as nn, triton, triton.language as tl

    @triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=2), triton.Config({"BLOCK": 1024}, num_warps=4),
                              triton.Config({"BLOCK": 2048}, num_warps=8)], key=["n"])
    @triton.jit
    def scale_kernel(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * tl.load(s_ptr), mask=offs < n)

    _BUFFERS = {}
    CALLS = []

    class ModelNew(nn.Module):
        def __init__(self, scale):
            super().__init__()
            self.scale = nn.Parameter(torch.full((1,), scale))  # a parameter: on the (fake) GPU too

        def forward(self, x):
            CALLS.append(x.shape)
            out = _BUFFERS.setdefault(tuple(x.shape), torch.empty_like(x))  # a module-level cache of outputs
            scale_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, self.scale, out, x.numel())
            return out
""")


def _kernels(cache: Path) -> dict[str, dict]:
    """Compiled kernels in a Triton cache: folder -> metadata."""
    found = {}
    for meta in cache.rglob("*.json"):
        if not meta.name.startswith("__grp__") and any(meta.parent.glob("*.cubin")):
            found[meta.parent.name] = json.loads(meta.read_text())
    return found


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return tmp_path / "triton"


def _inputs(*shapes):
    """One input set: a fake tensor of each shape."""
    return [fake_specs(lambda: [torch.randn(*s) for s in shapes])]


def test_the_vendor_names_the_triton_target_of_an_architecture():
    vendor = current()
    assert vendor.jit_target("9.0") == vendor.jit_target("9.0a") == H200
    assert vendor.jit_target("10.0") == ["cuda", 100, 32] and vendor.jit_target("12.0+PTX") == ["cuda", 120, 32]
    assert vendor.jit_target("gfx942") is None
    assert languages.get("triton").prebuild is not None and languages.get("tilelang").prebuild is not None
    assert languages.get("cute_dsl").prebuild is None and languages.get("cute_dsl").prebuild_note


def test_specs_describe_tensors_as_the_arena_hands_them_over():
    x = torch.randn(8, 16)
    encoded = specs([x.t(), x[:, 1:], 3, [torch.zeros(2, dtype=torch.float16)]])
    t, sliced, number, nested = encoded["l"]
    assert t["t"] == {"dtype": "float32", "shape": [16, 8], "stride": [1, 16], "offset": 0}  # a transpose is kept
    assert sliced["t"]["stride"] == [15, 1]  # not compact: crosses as a contiguous copy
    assert number == {"v": 3} and nested["l"][0]["t"]["dtype"] == "float16"
    started = time.perf_counter()
    huge = fake_specs(lambda: [torch.randn(64, 8192, 8192)])  # 16 GiB described, none allocated
    assert huge["l"][0]["t"]["shape"] == [64, 8192, 8192] and time.perf_counter() - started < 30
    with pytest.raises(TypeError):
        specs([object()])


def test_the_input_sets_are_the_distinct_shapes_of_the_task_and_its_variants():
    from cudaforge.eval.jit_prebuild import input_sets

    task = {t.name: t for t in load_suite(selection("tiny"))}["MatmulBiasReLU"]
    ref = load_module(task.source, "ref_jit_sets")
    sets = input_sets(ref, task.input_variants)  # default and heavy_tail share a shape; shape2 and small do not
    assert [s["l"][0]["t"]["shape"] for s in sets] == [[256, 256], [129, 256], [64, 256]]
    assert len(input_sets(ref)) == 1


def test_reported_kernel_names_are_read_as_data():
    assert reported_kernels({"built": ["relu_kernel", "relu_kernel", "x; rm -rf /", 3, "a" * 500]}) == ["relu_kernel"]
    assert reported_kernels({"built": "relu_kernel"}) == [] and reported_kernels(None) == []


def test_a_triton_kernel_compiles_for_the_gpu_without_one_and_the_second_time_is_a_cache_hit(cache):
    module = load_module((CANDIDATES / "triton_softmax.py").read_text(), "cand_jit_softmax")
    report = compile_ahead(module, "triton", specs([]), _inputs((128, 1024)), H200)
    assert report["built"] == ["softmax_kernel"] and report["error"] == "", report
    kernels = _kernels(cache)
    assert len(kernels) == 1
    (meta,) = kernels.values()
    assert meta["target"] == {"backend": "cuda", "arch": 90, "warp_size": 32} and meta["num_warps"] == 4
    again = compile_ahead(module, "triton", specs([]), _inputs((128, 1024)), H200)
    assert again["built"] == ["softmax_kernel"] and _kernels(cache).keys() == kernels.keys()  # nothing new
    other = compile_ahead(module, "triton", specs([]), _inputs((128, 4096)), H200)  # BLOCK_SIZE and num_warps differ
    assert other["built"] == ["softmax_kernel"] and len(_kernels(cache)) == 2
    both = compile_ahead(module, "triton", specs([]), _inputs((128, 1024)) + _inputs((64, 512)), H200)
    assert both["built"] == ["softmax_kernel"] and len(_kernels(cache)) == 3  # one more: the second set's


@pytest.mark.parametrize("fresh", [False, True], ids=["forked", "fresh"])
def test_every_autotuned_config_compiles_and_the_evaluated_process_is_untouched(cache, fresh):
    from cudaforge.eval.jit_prebuild import _fork_safe

    if not fresh and not _fork_safe():
        pytest.skip(
            "a GPU is visible to this process: a forked copy cannot make fake GPU tensors here, so the "
            "evaluator never forks here either (the fresh case runs)"
        )
    module = load_module(AUTOTUNED, f"cand_jit_autotuned_{fresh}")
    report = compile_ahead(module, "triton", specs([2.0]), _inputs((4096,)), ["cuda", 100, 32], fresh=fresh)
    assert report["built"] == ["scale_kernel"] and not report["error"] and report["fresh"] is fresh, report
    kernels = _kernels(cache)
    assert sorted(m["num_warps"] for m in kernels.values()) == [2, 4, 8]
    assert {m["target"]["arch"] for m in kernels.values()} == {100}
    # the fake forward ran in a forked copy: the module-level cache of this process holds no fake tensor
    assert module.CALLS == [] and module._BUFFERS == {}


def test_what_compiled_before_the_forward_failed_is_kept_and_a_stuck_forward_is_stopped(cache):
    source = (
        (CANDIDATES / "triton_relu.py")
        .read_text()
        .replace(
            "        return triton_relu(x)", "        y = triton_relu(x)\n        return y + float(y.sum().item())"
        )
    )
    module = load_module(source, "cand_jit_item")
    report = compile_ahead(module, "triton", specs([]), _inputs((256, 1024)), H200)
    assert report["built"] == ["relu_kernel"] and report["error"] and len(_kernels(cache)) == 1
    stuck = load_module(
        "import time, torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        time.sleep(600)\n",
        "cand_jit_stuck",
    )
    started = time.perf_counter()
    report = compile_ahead(stuck, "triton", specs([]), _inputs((4,)), H200, timeout_s=3)
    assert report["built"] == [] and "stopped after 3 s" in report["error"] and time.perf_counter() - started < 10
    assert compile_ahead(module, "cute_dsl", specs([]), _inputs((4,)), H200)["error"].startswith(
        "cute_dsl kernels cannot"
    )


def test_a_process_the_copy_leaves_behind_does_not_hold_up_the_report(cache, tmp_path):
    pidfile = tmp_path / "lingering.pid"
    source = (
        (CANDIDATES / "triton_relu.py")
        .read_text()
        .replace(
            "        return triton_relu(x)",
            f"        import os, time\n        if os.fork() == 0:\n            open({str(pidfile)!r}, 'w').write(str(os.getpid()))"
            "\n            time.sleep(600)\n        return triton_relu(x)",
        )
    )
    module = load_module(source, "cand_jit_linger")
    started = time.perf_counter()
    try:
        report = compile_ahead(module, "triton", specs([]), _inputs((256, 1024)), H200, timeout_s=120)
        assert report["built"] == ["relu_kernel"] and time.perf_counter() - started < 60, report
    finally:
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), 9)


def test_the_cpu_pool_compiles_a_triton_candidate_for_the_gpu_and_keeps_it_for_the_source(tmp_path, monkeypatch):
    from cudaforge.eval.extensions import BuildSettings, precompile
    from cudaforge.types import source_hash

    monkeypatch.setenv("TRITON_INTERPRET", "1")  # as in CPU evaluations: the pool compiles for the GPU anyway
    tiny = {t.name: t for t in load_suite(selection("tiny"))}
    source = (CANDIDATES / "triton_relu.py").read_text()
    settings = BuildSettings(cache_dir=str(tmp_path / "build"), arch="9.0")
    outcome = precompile(source, settings, timeout_s=180, task_source=tiny["ReLU"].source)
    assert outcome.status == "no_build" and outcome.jit == ["relu_kernel"], outcome
    assert "compiled ahead for the GPU: relu_kernel" in outcome.message
    kept = _kernels(tmp_path / "build" / "triton-own" / source_hash(source))
    assert kept and {m["target"]["arch"] for m in kept.values()} == {90}  # the task's shapes and its variants'
    plain = precompile(source, settings, timeout_s=180)  # without the task: nothing to run it on
    assert plain.status == "no_build" and plain.jit == [] and plain.jit_message == ""
    broken = precompile(source, settings, timeout_s=180, task_source="def get_inputs(:\n")
    assert broken.jit == [] and "could not be described" in broken.jit_message
    if os.environ.get("CUDAFORGE_TEST_TMP_CHECK"):
        assert not list(Path(settings.cache_dir).glob("precompile/*"))


def test_a_fresh_copy_compiles_where_forking_is_unsafe(cache):
    """Where this process may have started the CUDA driver (the GPU worker), the copy is a new interpreter that sees
    no GPU and imports the source again; the candidate's prints do not spoil its report."""
    source = (CANDIDATES / "triton_softmax.py").read_text() + "\nprint('hello from the candidate')\n"
    module = load_module(source, "cand_jit_fresh")
    report = compile_ahead(module, "triton", specs([]), _inputs((128, 1024)), H200, fresh=True)
    assert report["fresh"] is True and report["built"] == ["softmax_kernel"] and not report["error"], report
    assert len(_kernels(cache)) == 1
    broken = compile_ahead(module, "triton", specs([]), _inputs((4,)), H200, fresh=True, source="raise SystemExit(3)\n")
    assert broken["built"] == [] and "importing the candidate again raised SystemExit" in broken["error"], broken


def test_the_sandboxed_worker_compiles_ahead_in_a_fresh_copy_inside_its_sandbox(tmp_path):
    from cudaforge.eval.extensions import BuildSettings
    from cudaforge.eval.jit_cache import count_kernels
    from cudaforge.eval.worker.remote import CandidateProcess
    from cudaforge.proc.sandbox import SandboxMode

    settings = BuildSettings(cache_dir=str(tmp_path / "build"), arch="9.0")
    worker = CandidateProcess(
        device="cpu", mode=SandboxMode.auto, logs_dir=str(tmp_path), env={"TRITON_INTERPRET": "0"}
    )
    try:
        worker.wait_hello(120.0)
        worker.request(
            {
                "op": "load",
                "source": (CANDIDATES / "triton_relu.py").read_text(),
                "module": "cand_relu",
                "build": settings.to_dict(),
            },
            timeout_s=120,
        )
        reply = worker.request(
            {
                "op": "prebuild",
                "language": "triton",
                "init": specs([]),
                "target": H200,
                "inputs": _inputs((256, 1024)),
                "fresh": True,
                "timeout_s": 120,
            },
            timeout_s=150,
        )
        assert reply["fresh"] is True and reported_kernels(reply) == ["relu_kernel"] and not reply["error"], reply
        assert count_kernels(Path(worker.scratch) / "triton") == 1
    finally:
        worker.close()


def test_the_evaluator_compiles_triton_ahead_in_its_pool_unless_told_not_to(tmp_path):
    from cudaforge.eval.evaluator import Evaluator

    with pytest.raises(ValueError, match="eval.jit_ahead='sometimes': expected pool or compile or off"):
        Evaluator({"jit_ahead": "sometimes"})
    task = {t.name: t for t in load_suite(selection("tiny"))}["Softmax"]
    source = (CANDIDATES / "triton_softmax.py").read_text()
    off = Evaluator({"jit_ahead": "off", "build_cache_dir": str(tmp_path / "off"), "target_arch": "9.0"})
    assert off.precompile(source, task) is None  # nothing to build: Triton compiles at its first call
    pool = Evaluator({"build_cache_dir": str(tmp_path / "pool"), "target_arch": "9.0"})
    assert pool.cfg.jit_ahead == "pool" and pool.precompile(source) is None  # no task: nothing to run it on
    outcome = pool.precompile(source, task)
    assert outcome is not None and outcome.jit == ["softmax_kernel"], outcome


def test_the_verifier_compiles_ahead_through_its_sandboxed_worker_and_never_raises_for_the_task(tmp_path, monkeypatch):
    """``eval.jit_ahead=compile`` as the verifier runs it in the compile phase (here with a CPU worker standing in
    for the GPU's and the capability of an H200): compiled; skipped with a note when too little time is left; only
    counted when not asked; a task whose inputs cannot be faked is a note, not an exception."""
    import dataclasses

    from cudaforge.eval import verifier
    from cudaforge.eval.extensions import BuildSettings
    from cudaforge.eval.worker.remote import CandidateProcess
    from cudaforge.proc.sandbox import SandboxMode

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    task = {t.name: t for t in load_suite(selection("tiny"))}["ReLU"]
    source = (CANDIDATES / "triton_relu.py").read_text()
    cfg = EvalConfig(seed=42, check_variants=True)
    worker = CandidateProcess(
        device="cpu", mode=SandboxMode.auto, logs_dir=str(tmp_path), env={"TRITON_INTERPRET": "0"}
    )
    try:
        worker.wait_hello(120.0)
        worker.request(
            {
                "op": "load",
                "source": source,
                "module": "cand_relu_v",
                "build": BuildSettings(cache_dir=str(tmp_path / "b")).to_dict(),
            },
            timeout_s=120,
        )
        gpu = torch.device("cuda")
        built = verifier.jit_ahead(source, task, [], worker, gpu, cfg, 150.0, True)
        assert built["kernels"] == ["relu_kernel"] and built["kernels_seeded"] == 0 < built["kernels_after"], built
        assert built["note"] == "triton kernels compiled ahead: relu_kernel"
        late = verifier.jit_ahead(source, task, [], worker, gpu, cfg, 12.0, True)
        assert late["kernels"] == [] and "12 s of the compile phase left" in late["note"]
        counted = verifier.jit_ahead(source, task, [], worker, gpu, cfg, 150.0, False)
        assert counted["kernels_seeded"] == counted["kernels_after"] == built["kernels_after"]
        assert "found built ahead" in counted["note"]
        data_dependent = dataclasses.replace(
            task,
            source=task.source.replace(
                "def get_inputs():",
                "def get_inputs():\n    int(torch.randn(1).item())\n    return _inputs()\n\n\ndef _inputs():",
                1,
            ),
        )
        failed = verifier.jit_ahead(source, data_dependent, [], worker, gpu, cfg, 150.0, True)
        assert failed["kernels"] == [] and failed["note"].startswith("triton kernels not compiled ahead"), failed
        assert verifier.jit_ahead("import torch\n", task, [], worker, gpu, cfg, 150.0, True) is None
    finally:
        worker.close()


def test_the_cpu_pool_keeps_no_jit_cache_from_a_sandbox_that_outlived_its_kill(tmp_path):
    """The precompile child reads a worker's JIT cache only once every process of its sandbox is known dead: a
    kill() that cannot say so leaves the cache unread, and the reason is said."""
    from cudaforge.eval.extensions.precompile import _compile_jit
    from cudaforge.eval.extensions.settings import BuildSettings

    scratch = tmp_path / "scratch"
    (scratch / ".triton" / "cache" / "k").mkdir(parents=True)
    (scratch / ".triton" / "cache" / "k" / "relu.json").write_text("{}")

    class Process:
        def __init__(self, dead: bool) -> None:
            self.dead, self.killed = dead, 0

        def kill(self) -> bool:
            self.killed += 1
            return self.dead

    class Worker:
        def __init__(self, dead: bool) -> None:
            self.process, self.scratch = Process(dead), str(scratch)

        def request(self, request, timeout_s):
            return {"built": ["relu_kernel"]}

        def sandbox_status(self):
            return {"namespaces": ["user", "pid", "mount"]}

    source = "import triton\n@triton.jit\ndef relu_kernel(x):\n    pass\n"
    settings = BuildSettings(cache_dir=str(tmp_path / "cache")).resolved()
    worker = Worker(dead=False)
    kernels, message = _compile_jit(worker, {"op": "prebuild"}, settings, source)
    assert worker.process.killed == 1 and kernels == ["relu_kernel"]
    assert "outlived its kill" in message
    assert not any((tmp_path / "cache").rglob("relu.json"))  # nothing was read out of the scratch
