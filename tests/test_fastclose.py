"""The one-pass closeness screen never calls close what torch.isclose would not (CPU: Triton's interpreter)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from cudaforge.eval import fastclose
from cudaforge.eval.correctness import compare

REPO = Path(__file__).resolve().parent.parent
pytest.importorskip("triton")

CASES = r"""
import json, math, torch
from cudaforge.eval.fastclose import screen, MIN_ELEMENTS

def cases():
    g = torch.Generator().manual_seed(0)
    n = MIN_ELEMENTS + 1234  # not a multiple of the block
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        e = torch.randn(n, generator=g).to(dtype)
        yield "identical", dtype, e, e.clone()
        noise = (torch.rand(n, generator=g) - 0.5) * 1e-6
        yield "tiny noise", dtype, e, (e.float() + noise).to(dtype)
        for where in (0, n // 2, n - 1):
            a = e.clone(); a[where] += 1.0
            yield f"one off at {where}", dtype, e, a
            a = e.clone(); a[where] = float("nan")
            yield f"NaN at {where}", dtype, e, a
            a = e.clone(); a[where] = float("inf")
            yield f"inf at {where}", dtype, e, a
        both = e.clone(); both[7] = float("nan")
        yield "NaN in both", dtype, both, both.clone()
        inf = e.clone(); inf[9] = float("inf"); inf[11] = -float("inf")
        yield "equal infs", dtype, inf, inf.clone()
        flipped = inf.clone(); flipped[9] = -float("inf")
        yield "opposite infs", dtype, inf, flipped
        finite = inf.clone(); finite[9] = 1e4 if dtype == torch.float16 else 1e30
        yield "finite against inf", dtype, inf, finite
    # right at the tolerance, in fp32: |a - e| = atol + rtol*|e| up to rounding, both sides of it
    e = torch.full((MIN_ELEMENTS,), 1.0)
    yield "just inside", torch.float32, e, e + torch.linspace(1.9e-4, 1.99e-4, MIN_ELEMENTS)
    yield "straddling", torch.float32, e, e + torch.linspace(1.995e-4, 2.005e-4, MIN_ELEMENTS)
    for k in range(-3, 4):  # the fp32 neighbours of 1 + 2e-4, one ulp at a time
        a = torch.full((MIN_ELEMENTS,), 1.0 + 2e-4)
        step = torch.full_like(a, 2.0 if k > 0 else 0.0)
        for _ in range(abs(k)):
            a = torch.nextafter(a, step)
        yield f"ulp {k}", torch.float32, e, a

out = []
for name, dtype, e, a in cases():
    atol = rtol = 1e-4 if dtype == torch.float32 else 1e-2
    full = bool(torch.isclose(a.float(), e.float(), atol=atol, rtol=rtol, equal_nan=True).all())
    fast = screen(e, a, atol, rtol, cpu_interpreter=True)
    out.append({"case": f"{name} {dtype}", "isclose_all": full, "screen": fast})
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def verdicts():
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", CASES], env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_screen_is_never_more_lenient_than_isclose(verdicts):
    lenient = [v["case"] for v in verdicts if v["screen"] is True and not v["isclose_all"]]
    assert lenient == []


@pytest.mark.slow
def test_the_screen_passes_what_is_clearly_close_and_flags_what_is_not(verdicts):
    by_case = {v["case"]: v for v in verdicts}
    for dtype in ("torch.float32", "torch.float16", "torch.bfloat16"):
        for name in ("identical", "tiny noise", "NaN in both", "equal infs"):
            assert by_case[f"{name} {dtype}"]["screen"] is True, (name, dtype)
        for name in ("one off at 0", "NaN at 1049088", "inf at 1049089", "opposite infs", "finite against inf"):
            case = by_case.get(f"{name} {dtype}")
            if case is not None:
                assert case["screen"] is None and not case["isclose_all"], (name, dtype)
    assert by_case["just inside torch.float32"]["isclose_all"] and by_case["just inside torch.float32"]["screen"]
    assert (
        not by_case["straddling torch.float32"]["isclose_all"] and by_case["straddling torch.float32"]["screen"] is None
    )
    ulps = [by_case[f"ulp {k} torch.float32"]["isclose_all"] for k in range(-3, 4)]
    assert ulps[0] and not ulps[-1]  # the ulp steps do cross the tolerance (the first test checks each)


def test_tensors_the_screen_does_not_handle_go_to_the_full_comparison():
    small = torch.ones(10)
    big = torch.ones(fastclose.MIN_ELEMENTS)
    assert fastclose.screen(small, small, 1e-4, 1e-4) is None  # too small
    assert fastclose.screen(big, big, 1e-4, 1e-4) is None  # CPU without the interpreter flag
    assert fastclose.screen(big.double(), big.double(), 1e-4, 1e-4, cpu_interpreter=True) is None  # fp64
    assert fastclose.screen(big.int(), big.int(), 0, 0, cpu_interpreter=True) is None  # integers
    wide = torch.ones(1024, 2048)
    assert fastclose.screen(wide.t(), wide.t(), 1e-4, 1e-4, cpu_interpreter=True) is None  # not contiguous


def test_compare_still_explains_a_mismatch_the_screen_flags():
    e = torch.zeros(fastclose.MIN_ELEMENTS)
    a = e.clone()
    a[-5:] = 1.0
    diff = compare(e, a, atol=1e-4, rtol=1e-4, trial=0, variant="default")
    assert diff is not None and diff.mismatch_count == 5 and "tail" in diff.region


@pytest.mark.gpu
def test_the_screen_on_a_gpu_agrees_with_isclose():
    g = torch.Generator(device="cuda").manual_seed(1)
    e = torch.randn(50_000_000, device="cuda", generator=g)
    a = e + (torch.rand(e.shape, device="cuda", generator=g) - 0.5) * 1e-5
    assert fastclose.screen(e, a, 1e-4, 1e-4) is True
    for bad_value in (float("nan"), float("inf"), 1.0):
        b = a.clone()
        b[-1] = bad_value if bad_value != 1.0 else b[-1] + 1.0
        assert fastclose.screen(e, b, 1e-4, 1e-4) is None
        assert not bool(torch.isclose(b, e, atol=1e-4, rtol=1e-4, equal_nan=True).all())
    for dtype in (torch.float16, torch.bfloat16):
        h = e.to(dtype)
        assert fastclose.screen(h, h.clone(), 1e-2, 1e-2) is True


WORD_CASES = r"""
import json, torch
from cudaforge.eval.fastclose import same_words, MIN_ELEMENTS

out = []
g = torch.Generator().manual_seed(0)
n = MIN_ELEMENTS + 1234  # not a multiple of the block
for words in (torch.int32, torch.int64):
    x = torch.randint(-2**31, 2**31 - 1, (n,), generator=g).to(words)
    out.append({"case": f"identical {words}", "fast": same_words(x, x.clone(), cpu_interpreter=True), "torch": True})
    for where in (0, 4095, 4096, n // 2, n - 1):
        y = x.clone(); y[where] ^= 1  # one bit of one word
        out.append({"case": f"one bit at {where} {words}", "fast": same_words(x, y, cpu_interpreter=True),
                    "torch": bool(torch.equal(x, y))})
f = torch.randn(n, generator=g)
nan = f.clone(); nan[5] = float("nan"); other = nan.clone(); other.view(torch.int32)[5] ^= 1  # two NaN payloads
out.append({"case": "two NaN payloads", "fast": same_words(nan.view(torch.int32), other.view(torch.int32),
            cpu_interpreter=True), "torch": False})
zero = f.clone(); zero[6] = 0.0; neg = zero.clone(); neg[6] = -0.0
out.append({"case": "0.0 against -0.0", "fast": same_words(zero.view(torch.int32), neg.view(torch.int32),
            cpu_interpreter=True), "torch": False})
out.append({"case": "small", "fast": same_words(x[:100], x[:100].clone(), cpu_interpreter=True), "torch": None})
out.append({"case": "float", "fast": same_words(f, f.clone(), cpu_interpreter=True), "torch": None})
out.append({"case": "strided", "fast": same_words(x[::2], x[::2].clone(), cpu_interpreter=True), "torch": None})
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_word_comparison_is_exact_and_hands_back_what_it_does_not_handle():
    """``same_words`` (the inputs' bit-for-bit check on large GPU tensors) finds one flipped bit anywhere (block
    edges, the ragged end), tells NaN payloads and signed zeros apart (bits, not values), and returns None for what
    it does not handle (small, non-integer, strided), where ``torch.equal`` decides."""
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", WORD_CASES], env=env, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(rows) == 17
    wrong = [r for r in rows if r["fast"] is not r["torch"]]
    assert not wrong, wrong


@pytest.mark.slow
def test_the_word_comparison_on_a_gpu_agrees_with_torch_equal():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    from cudaforge.eval.guards.runtime import same_bits

    x = torch.randn(400_000_000, device="cuda")
    y = x.clone()
    assert fastclose.same_words(x.view(torch.int32), y.view(torch.int32)) is True and same_bits(x, y)
    for where in (0, 123_456_789, x.numel() - 1):
        z = y.clone()
        z.view(torch.int32)[where] ^= 1
        assert fastclose.same_words(x.view(torch.int32), z.view(torch.int32)) is False
        assert not same_bits(x, z) and not torch.equal(x, z)
