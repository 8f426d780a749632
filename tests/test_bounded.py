"""Bounded trust at every crossing (issue 32): what a worker, a compiler, a candidate or a model hands the trusted
side is bounded before it is materialised, analysed or stored.

Each test runs the real component: the arena and the value codec, the evaluator with its verifier and sandboxed
worker on the CPU (candidates that write forged replies into the worker's own channel), the static analysis child,
and the agent loop with scripted models.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest
import torch

from cudaforge.eval.evaluator import Evaluator
from cudaforge.tasks import find_task, load_suite, selection
from cudaforge.types import EvalStatus, Phase

REPO = Path(__file__).resolve().parent.parent
GIB = 1 << 30


@pytest.fixture(scope="module")
def tiny():
    return {t.name: t for t in load_suite(selection("tiny"))}


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    cfg = {
        "device": "cpu",
        "correctness_trials": 1,
        "guards_enforce": False,
        "build_cache_dir": str(tmp_path_factory.mktemp("build")),
    }
    return Evaluator(cfg)


# ----------------------------------------------------------------------------- 1. output descriptors


def _descriptor(shape, stride, dtype="float32", offset=0):
    return {"t": {"dtype": dtype, "shape": shape, "stride": stride, "offset": offset}}


def test_a_descriptor_claiming_12_gib_through_a_zero_stride_is_refused_before_anything_is_copied():
    from cudaforge.eval.worker.exchange import Budget, OutputsTooLarge, decode, host_arena

    arena = host_arena(1 << 20)
    copied = []

    def get(desc):
        copied.append(desc)
        return arena.view(desc).clone()

    forged = _descriptor([3 * GIB], [0])  # 12 GiB of float32 over a 4-byte span of the arena
    with pytest.raises(OutputsTooLarge) as caught:
        decode(forged, get, Budget(66_560))
    assert str(caught.value).startswith("outputs larger than the reference's: a float32 tensor of shape [3221225472]")
    assert "\n" not in str(caught.value) and copied == []
    honest = _descriptor([4, 3], [0, 1])  # a broadcast that materialises 48 bytes is fine
    assert decode(honest, get, Budget(66_560)).shape == (4, 3) and len(copied) == 1


def test_180000_descriptors_in_one_reply_stop_at_the_tensor_cap():
    from cudaforge.eval.worker.exchange import MAX_OUTPUT_TENSORS, Budget, OutputsTooLarge, decode, host_arena

    arena = host_arena(1 << 20)
    copied = []

    def get(desc):
        copied.append(desc)
        return arena.view(desc).clone()

    reply = {"l": [_descriptor([0], [1])] * 180_000}
    with pytest.raises(OutputsTooLarge, match=f"more than {MAX_OUTPUT_TENSORS:,} tensors"):
        decode(reply, get, Budget(1 << 40))
    assert len(copied) == MAX_OUTPUT_TENSORS
    copied.clear()
    with pytest.raises(OutputsTooLarge):  # each tensor is charged its arena slot, so a small budget stops sooner
        decode(reply, get, Budget(66_560))
    assert len(copied) < 200


def test_the_budget_the_verifier_derives_holds_what_an_honest_candidate_returns():
    from cudaforge.eval.verifier import output_budget
    from cudaforge.eval.worker.exchange import Budget, decode, encode, host_arena

    reference = (torch.randn(64, 33), torch.zeros(7, dtype=torch.int64), [torch.ones(3)])
    arena = host_arena(1 << 20)
    for candidate in (reference, tuple(t.double() if isinstance(t, torch.Tensor) else t for t in reference)):
        arena.reset()
        encoded = json.loads(json.dumps(encode(candidate, arena.put)))
        value = decode(encoded, lambda desc: arena.view(desc).clone(), Budget(output_budget(reference)))
        assert torch.equal(value[0].float(), reference[0].float()) and len(value[2]) == 1


def test_a_value_of_too_many_parts_or_sizes_torch_cannot_hold_is_malformed_not_a_crash():
    from cudaforge.eval.worker.exchange import MAX_NODES, ArenaError, decode, host_arena

    arena = host_arena(1 << 20)
    with pytest.raises(ArenaError, match="parts"):
        decode({"l": [{"v": 0}] * (MAX_NODES + 1)}, arena.view)
    for shape, stride in (([1 << 61] * 4, [0] * 4), ([1 << 63], [1]), ([-1], [1])):
        with pytest.raises(ArenaError):
            arena.view(_descriptor(shape, stride)["t"])


FORGED_REPLY = """
import json, socket, struct, sys, time
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        channel = socket.socket(fileno=int(sys.argv[1]))  # the worker's own channel to the verifier
        body = json.dumps({{"ok": True, "outputs": {outputs}}}).encode()
        channel.sendall(struct.pack(">I", len(body)) + body)
        time.sleep(60)
        return torch.relu(x)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "outputs, words",
    [
        ('{"t": {"dtype": "float32", "shape": [3 << 30], "stride": [0], "offset": 0}}', "a float32 tensor of shape"),
        (
            '{"l": [{"t": {"dtype": "float32", "shape": [0], "stride": [1], "offset": 0}}] * 180000}',
            "tensors in one reply",
        ),
    ],
)
def test_forged_oversized_outputs_are_incorrect_with_one_line_for_the_judge(evaluator, tiny, outputs, words):
    result = evaluator.evaluate(tiny["ReLU"], FORGED_REPLY.format(outputs=outputs))
    assert result.status is EvalStatus.INCORRECT, result.message
    assert result.message.startswith("outputs larger than the reference's: ") and words in result.message
    assert "\n" not in result.message


# ----------------------------------------------------------------------------- 2. the arena's memfd


def test_whoever_holds_the_host_arenas_fd_can_neither_shrink_nor_grow_it():
    from cudaforge.eval.worker.exchange import host_arena

    arena = host_arena(1 << 20)
    worker = f"""
import errno, os, sys
from cudaforge.eval.worker.exchange import host_arena
arena = host_arena({arena.size}, {arena.fd})  # the worker's side maps it read-write
arena.base[100:104] = 7
for size in (0, 4096, {arena.size} * 2):
    try:
        os.ftruncate({arena.fd}, size)
        print("resized", size)
    except OSError as exc:
        print(errno.errorcode[exc.errno])
"""
    done = subprocess.run(
        [sys.executable, "-c", worker], pass_fds=(arena.fd,), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["EPERM"] * 3
    assert os.fstat(arena.fd).st_size == arena.size
    assert arena.base[100:104].tolist() == [7] * 4 and int(arena.base[-1]) == 0  # the verifier still reads it all


# ----------------------------------------------------------------------------- 3. logs in the result


NOISY_BUILD = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

CUDA = """
{warnings}
__global__ void fill(float* out, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 1.0f;
}}
"""
ext = load_inline(name="noisy_ext", cpp_sources="", cuda_sources=CUDA, no_implicit_headers=True)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
'''


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_a_compile_that_prints_a_megabyte_of_warnings_keeps_its_head_and_tail_in_the_result(evaluator, tiny):
    from cudaforge.eval.bounded import TEXT_LIMIT

    warnings = "\n".join(
        f'#warning "noisy warning number {i} of a candidate that prints far too much"' for i in range(2500)
    )
    result = evaluator.evaluate(tiny["ReLU"], NOISY_BUILD.format(warnings=warnings))
    assert result.status in (EvalStatus.COMPILED, EvalStatus.CORRECT), result.message
    log = result.compile_log
    assert len(log) <= TEXT_LIMIT and "characters cut here" in log
    assert log.startswith("[1/") and "noisy warning number 2499" in log[-2000:]


def test_cap_text_keeps_head_and_tail_and_caps_once():
    from cudaforge.eval.bounded import cap_strings, cap_text

    text = "".join(f"line {i}\n" for i in range(100_000))
    capped = cap_text(text, 10_000)
    assert len(capped) <= 10_000 and capped.startswith("line 0\n") and capped.endswith("line 99999\n")
    cut, head, tail = (int(n.replace(",", "")) for n in re.findall(r"[\d,]+\d", capped.split("[... ")[1])[:3])
    assert cut + head + tail == len(text) and capped[:head] == text[:head] and capped[-tail:] == text[-tail:]
    assert cap_text(capped, 10_000) == capped
    assert cap_text("short", 10_000) == "short"
    nested = cap_strings({"a": [text, ("x", 1)], "k" * 20_000: None}, 10_000)
    assert len(nested["a"][0]) <= 10_000 and nested["a"][1] == ["x", 1] and max(map(len, nested)) <= 10_000


SURROGATE_RAISER = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        raise RuntimeError("bad input " + chr(0xD800) + " here")
"""


def test_a_lone_surrogate_in_a_candidates_message_reaches_the_result_as_text_that_can_be_written(evaluator, tiny):
    """JSON carries a lone surrogate ("\\ud800") across the channel; the result's message must still encode as
    UTF-8 (the run directory, the Judge's prompt and its cache key all do), so it arrives as U+FFFD."""
    from cudaforge.llm.cache import request_key

    result = evaluator.evaluate(tiny["ReLU"], SURROGATE_RAISER)
    assert result.status is EvalStatus.RUNTIME_ERROR, result.message
    assert "bad input \ufffd" in result.message
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")  # raised UnicodeEncodeError before
    request_key({"messages": [{"role": "user", "content": result.message}]})


def test_plain_strings_replace_lone_surrogates_everywhere_and_leave_the_rest():
    from cudaforge.proc.text import plain_strings, plain_text

    decoded = json.loads('{"k\\udc80": ["a\\ud800b", 1, {"x": "\\ud83d\\ude00 \\u00e9"}], "n": null}')
    clean = plain_strings(decoded)
    json.dumps(clean, ensure_ascii=False).encode("utf-8")
    assert clean["k\ufffd\ufffd\ufffd"][0] == "a\ufffd\ufffd\ufffdb" and clean["k\ufffd\ufffd\ufffd"][1] == 1
    assert clean["k\ufffd\ufffd\ufffd"][2] == {"x": "\U0001f600 \u00e9"} and clean["n"] is None  # pairs kept
    assert plain_text("plain ascii") == "plain ascii"


def test_the_parent_caps_every_text_of_a_verifiers_result(evaluator, tiny, monkeypatch):
    import cudaforge.eval.evaluator as evaluator_module
    from cudaforge.eval.bounded import TEXT_LIMIT
    from cudaforge.proc.isolation import IsolatedOutcome

    huge = "w" * (8 << 20)
    result = {
        "task_id": "t",
        "candidate_hash": "h",
        "status": "compiled",
        "message": huge,
        "compile_log": huge,
        "guard_findings": [{"guard": "io", "verdict": "report", "evidence": huge}],
        "fingerprint": {"guard_notes": [huge]},
    }
    monkeypatch.setattr(evaluator_module, "run_isolated", lambda *a, **k: IsolatedOutcome(status="ok", result=result))
    got = evaluator.evaluate(tiny["ReLU"], (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text())
    assert got.status is EvalStatus.COMPILED
    assert len(json.dumps(got.to_dict())) < 5 * TEXT_LIMIT + 10_000


# ----------------------------------------------------------------------------- 4. the static analysis


def test_a_source_over_the_limit_is_invalid_before_anything_parses_it(evaluator, tiny):
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text() + "#" * (1 << 20)
    started = time.monotonic()
    result = evaluator.evaluate(tiny["ReLU"], source)
    assert result.status is EvalStatus.INVALID and "eval.max_source_bytes" in result.message
    assert "\n" not in result.message and [p.phase for p in result.phases] == [Phase.STATIC]
    assert time.monotonic() - started < 5


def _slow_source() -> str:
    """A plain source well under the size limit whose analysis takes seconds (the guards' walks grow faster than
    the source: about 4 s for these 0.24 MB on one core)."""
    body = "".join(f"def helper_{i}(x):\n    y = x + {i}\n    return y * 2\n" for i in range(5000))
    return (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text() + "\n" + body


def test_the_static_analysis_has_a_deadline_and_a_memory_cap():
    from cudaforge.eval.static import check_candidate

    source = _slow_source()
    started = time.monotonic()
    late = check_candidate(source, {"static_timeout_s": 0.5})
    assert time.monotonic() - started < 5
    assert late.status == "invalid" and "eval.static_timeout_s" in late.message
    large = check_candidate(source, {"static_memory_gb": 0.08})
    assert large.status == "invalid" and "eval.static_memory_gb" in large.message
    plain = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    assert check_candidate(plain, {"static_memory_gb": 0.08, "static_timeout_s": 5}).ok  # an honest one fits both


def test_the_worker_side_guards_refuse_an_oversized_source_too(tiny, tmp_path):
    """The verifier checks the size itself before its own static guards read the source, whatever its caller did."""
    from cudaforge.eval.evaluator import WORKER_ENTRY
    from cudaforge.proc.isolation import run_isolated

    ev = Evaluator({"device": "cpu", "correctness_trials": 1, "build_cache_dir": str(tmp_path)})
    payload = {
        "task": tiny["ReLU"].to_dict(),
        "candidate": (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text(),
        "eval": {**ev.cfg.to_dict(), "max_source_bytes": 100},
        "build": ev.build_settings().to_dict(),
        "device": "cpu",
    }
    outcome = run_isolated(WORKER_ENTRY, payload, timeouts=ev._timeouts(), env=ev._env("cpu"))
    assert outcome.status == "ok", outcome.error
    assert outcome.result["status"] == "invalid" and "more than 100 bytes" in outcome.result["message"]


# ----------------------------------------------------------------------------- 5. replies stored capped


@pytest.mark.slow
def test_a_huge_reply_and_long_feedback_are_stored_and_kept_in_the_state_capped(tmp_path):
    """A 4 MB Coder reply (refused by the reply parser, then sent back in the follow-up) and a Judge field of
    39,000 characters: the round's files keep each text capped, the graph's state a shorter cut of the feedback."""
    from cudaforge.config import CudaforgeConfig
    from cudaforge.graph.loop import STATE_TEXT_LIMIT, STORED_TEXT_LIMIT
    from cudaforge.llm.scripted import install_script, remove_script
    from cudaforge.run.runner import make_context, run_one

    task = find_task(selection("tiny"), "level1/1_ReLU")
    wrong = (
        "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
        "        return x * 1.0\n"
    )
    huge = f"```python\n{wrong}\nTABLE = '" + "0123456789" * 400_000 + "'\n```"
    advice = "zero the negative values. " * 1_500  # 39,000 characters: the Judge's JSON may have 64 Ki
    correction = json.dumps({"critical_issue": advice, "why_it_matters": "ReLU", "minimal_fix_hint": "max(x, 0)"})
    install_script("t_bounded_coder", [huge] + [f"```python\n{wrong}```"] * 2)
    install_script("t_bounded_judge", [correction])
    cfg = CudaforgeConfig()
    cfg.coder.model, cfg.judge.model = "scripted/t_bounded_coder", "scripted/t_bounded_judge"
    cfg.strategy.max_rounds = 2
    cfg.eval.device, cfg.eval.guards_enforce, cfg.eval.correctness_trials = "cpu", False, 1
    cfg.eval.check_variants, cfg.eval.build_cache_dir = False, str(tmp_path / "build")
    try:
        ctx = make_context(cfg, tmp_path / "run")
        result = run_one(ctx, task)
    finally:
        remove_script("t_bounded_coder")
        remove_script("t_bounded_judge")
    assert [r.status for r in result.history] == ["incorrect", "incorrect"]
    assert result.history[0].judge_mode == "correction"
    kept = result.history[0].feedback["critical_issue"]
    assert len(kept) <= STATE_TEXT_LIMIT < len(advice) and kept.startswith("zero the negative values.")
    store = ctx.store.task(task.id)
    first = store.read_json(1, "coder.json")["conversation"]
    assert len(first["replies"][0]) <= STORED_TEXT_LIMIT < len(huge)
    assert all(len(m["content"]) <= STORED_TEXT_LIMIT for m in first["messages"])
    assert len(store.read_json(2, "coder.json")["conversation"]["messages"][-1]["content"]) < 2 * STATE_TEXT_LIMIT
    task_files = sum(p.stat().st_size for p in store.root.rglob("*") if p.is_file())
    assert task_files < 4 * STORED_TEXT_LIMIT  # uncapped, these rounds wrote 8 MB


def test_the_workers_kernel_share_is_rebuilt_from_what_is_well_formed():
    """The red team: the worker's ``share`` reply went into the fingerprint as it came (up to 16 MB) and its values
    into format strings. Only two finite times, a fraction and five short [name, ms] pairs a side are kept."""
    from cudaforge.eval.verifier.probes import checked_share

    honest = {"own_ms": 0.5, "library_ms": 0.1, "library_share": 1 / 6, "own": [["k", 0.5]], "library": [["g", 0.1]]}
    assert checked_share(json.loads(json.dumps(honest))) == honest
    long = {**honest, "own": [["x" * 10_000, 0.5]] * 9, "junk": "y" * 1_000_000}
    kept = checked_share(long)
    assert kept is not None and len(kept["own"]) == 5 and len(kept["own"][0][0]) == 120 and "junk" not in kept
    for forged in (
        {**honest, "own_ms": "0.5"},
        {**honest, "library_ms": 10**4000},
        {**honest, "library_share": 2.0},
        {**honest, "library": [["g", "fast"]]},
        {**honest, "library": "g"},
        ["not", "a", "dict"],
    ):
        assert checked_share(forged) is None


def test_only_a_message_with_a_surrogate_escape_is_rebuilt(monkeypatch):
    """The red team: rebuilding every list and dict of a 16 MiB message doubled the verifier's peak memory; the
    rebuild now happens only when the text holds a surrogate escape (the only way one gets in)."""
    from cudaforge.proc import text
    from cudaforge.proc.text import loads_plain

    plain = json.dumps({"a": [[1, 2], {"b": "\u00e9"}]}).encode()
    with monkeypatch.context() as patched:
        patched.setattr(text, "plain_strings", lambda value: pytest.fail("rebuilt a message with no surrogate escape"))
        assert loads_plain(plain) == {"a": [[1, 2], {"b": "\u00e9"}]}
    assert loads_plain(b'{"a": ["x\\ud800"]}') == {"a": ["x\ufffd\ufffd\ufffd"]}
    assert loads_plain(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
    with pytest.raises(ValueError):
        loads_plain(b"\xff{}")
