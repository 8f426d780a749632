"""Held-out shapes: sizes derived from a task's top-level globals, checked by the reference on the meta device, and
the best kernel evaluated there by the real evaluator after the loop; the report's two columns."""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from test_report import write_run

import cudaforge
from cudaforge.eval.evaluator import Evaluator
from cudaforge.eval.held_out import check_held_out, held_out_shapes
from cudaforge.report import build_report
from cudaforge.report.stats import held_out_summary
from cudaforge.tasks.held_out import odd_size, proposals, size_globals, with_sizes
from cudaforge.tasks.loader import parse_problem
from cudaforge.types import TaskResult

RELU_TASK = (Path(cudaforge.__file__).parent / "resources" / "suites" / "tiny" / "level1" / "1_ReLU.py").read_text()
"""The tiny suite's ReLU: ``batch_size = 256``, ``dim = 1024``, three declared input variants."""


HEADS_TASK = """import torch
import torch.nn as nn

batch_size = 8
embed = 64
num_heads = 4
kernel_size = 3
dim = 1
N = 16 * 2
width = 32
width = width + 1


class Model(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed, heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0].sum(dim=dim) * N


def get_inputs():
    return [torch.randn(batch_size, 10, embed)]


def get_init_inputs():
    return [embed, num_heads]
"""


def task(source: str, name: str = "ReLU"):
    return parse_problem(source, suite="t", level=1, problem_id=1, name=name, path=f"<{name}>")


def test_size_globals_are_the_top_level_sizes_and_nothing_else():
    found = {g.name: g.value for g in size_globals(HEADS_TASK)}
    # kernel_size, num_heads: not sizes by name; dim = 1: an axis; width: reassigned from an expression
    assert found == {"batch_size": 8, "embed": 64, "N": 32}
    assert {g.name for g in size_globals(RELU_TASK)} == {"batch_size", "dim"}
    assert size_globals("ATOL = 100\nINPUT_VARIANTS = 7\n") == []  # constants, not sizes
    assert size_globals("x = (") == []
    # chained, augmented and multi-line assignments are not sizes a rewrite could change
    assert [g.name for g in size_globals("n = 4096\nm = n = 1024\nk = 64\nk *= 4\nw = (64 *\n     2)\nh = 32\n")] == [
        "h"
    ]


@pytest.mark.parametrize("value", [4, 5, 8, 64, 100, 128, 1000, 1024, 4096, 50257])
def test_odd_sizes_are_smaller_odd_and_never_a_power_of_two(value):
    odd = odd_size(value)
    assert 3 <= odd <= value and odd % 2 == 1 and odd & (odd - 1) != 0


def test_sizes_are_changed_in_place_so_derived_sizes_follow():
    source = "a = 64\nb = a * 4\nN = 16 * 2\n"
    changed = with_sizes(source, size_globals(source), {"a": 49, "N": 25})
    scope: dict = {}
    exec(changed, scope)
    assert (scope["a"], scope["b"], scope["N"]) == (49, 196, 25)
    assert changed.endswith("# cudaforge held-out shape: a=49, N=25\n")
    feed = '"""doc\x0cmore"""\nsize = 64\n'  # str.splitlines would split at the form feed, ast does not
    assert with_sizes(feed, size_globals(feed), {"size": 49}).startswith('"""doc\x0cmore"""\nsize = 49\n')
    unicode = 'label = "\u00e9\u00e9"; size = 64\n'  # ast's columns count UTF-8 bytes, not characters
    assert with_sizes(unicode, size_globals(unicode), {"size": 49}).startswith('label = "\u00e9\u00e9"; size = 49\n')
    names = [p.name for p in proposals(RELU_TASK)]
    assert names == ["odd", "odd_batch_size", "odd_dim", "large"]
    assert next(p for p in proposals(RELU_TASK) if p.name == "large").sizes == {"batch_size": 512}


def test_the_reference_on_the_meta_device_decides_which_shapes_are_kept():
    shapes, note = held_out_shapes(task(RELU_TASK))
    assert note == "" and [(s.name, s.sizes) for s in shapes] == [
        ("odd", {"batch_size": 193, "dim": 769}),
        ("large", {"batch_size": 512}),
    ]
    assert shapes[0].meta["inputs"] == [[193, 769]] and shapes[1].meta["input_bytes"] == 512 * 1024 * 4
    # embed 64 -> 49 is not divisible by 4 heads: `odd` is refused, the sizes one at a time are kept where valid
    shapes, note = held_out_shapes(task(HEADS_TASK, "Attn"))
    # N only scales the output: its shape reaches neither the inputs nor the outputs, so it tests nothing new
    assert note == "" and [s.name for s in shapes] == ["odd_batch_size", "large"]
    no_sizes = RELU_TASK.replace("batch_size = 256\ndim = 1024\n", "").replace("randn(batch_size, dim)", "randn(8, 8)")
    assert "sets no size at top level" in held_out_shapes(task(no_sizes))[1]
    on_host_only = RELU_TASK.replace("return torch.relu(x)", "return torch.relu(x) + float(x.sum().item())")
    assert "does not run on torch's meta device" in held_out_shapes(task(on_host_only))[1]


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    # guards off: the candidates are pure-PyTorch stand-ins for kernels (tests/test_guards.py covers the guards)
    return Evaluator(
        {
            "device": "cpu",
            "correctness_trials": 2,
            "correctness_timeout_s": 60,
            "guards_enforce": False,
            "build_cache_dir": str(tmp_path_factory.mktemp("build")),
        }
    )


HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
ROWS_OF_1024 = HONEST.replace("return torch.relu(x)", "return torch.relu(x.reshape(-1, 1024)).reshape(x.shape)")


@pytest.mark.slow
def test_a_kernel_written_for_the_scored_shape_fails_the_held_out_one(evaluator):
    relu = dataclasses.replace(task(RELU_TASK), input_variants=[])  # its declared second shape would catch it too
    assert evaluator.evaluate(relu, ROWS_OF_1024).correct  # right on the shape it was scored on
    record = check_held_out(evaluator, relu, ROWS_OF_1024, max_input_bytes=64 << 20)
    rows = {r["shape"]: r for r in record["shapes"]}
    assert rows["odd"]["status"] == "runtime_error" and rows["odd"]["correct"] is False  # 193 x 769: no rows of 1024
    assert rows["large"]["correct"] is True  # 512 x 1024 still has rows of 1024
    assert rows["odd"]["sizes"] == {"batch_size": 193, "dim": 769} and record["seconds"] > 0
    honest = check_held_out(evaluator, relu, HONEST, max_input_bytes=64 << 20)
    assert [r["correct"] for r in honest["shapes"]] == [True, True]
    capped = check_held_out(evaluator, relu, HONEST, max_input_bytes=1 << 20)  # large's 2 MiB of inputs: skipped
    assert [r["status"] for r in capped["shapes"]] == ["correct", "skipped"]
    assert "exceed the limit" in capped["shapes"][1]["message"]


def _result(task_id, correct, shapes=None, note=""):
    held = {"shapes": shapes or [], "note": note, "seconds": 1.0} if correct else {}
    return TaskResult(task_id=task_id, correct=correct, best_speedup=1.5 if correct else None, held_out=held)


def _row(shape, correct, speedup=None, status=None):
    return {
        "shape": shape,
        "sizes": {"n": 7},
        "status": status or ("correct" if correct else "incorrect"),
        "correct": correct,
        "speedup": speedup,
    }


def test_the_report_tables_held_out_correct_and_speedup_by_hand(tmp_path):
    results = [
        _result("t/level1/1_A", True, [_row("odd", True, 2.0), _row("large", True, 8.0)]),  # geo 4
        _result("t/level1/2_B", True, [_row("odd", False), _row("large", True, 1.0)]),
        _result("t/level1/3_C", True, [_row("odd", True, 1.0), _row("large", None, status="skipped")]),  # geo 1
        _result("t/level1/4_D", True, [], note="the task sets no size at top level"),
        _result("t/level1/5_E", False),
    ]
    assert held_out_summary(results[0]) == {"checked": 2, "correct": True, "speedup": pytest.approx(4.0)}
    assert held_out_summary(results[3])["correct"] is None and held_out_summary(results[4])["checked"] == 0
    report = build_report([write_run(tmp_path / "r", results)], bootstrap=0)
    assert [m.key for m in report.metrics if m.key.startswith("held_out")] == ["held_out_pct", "held_out_geomean"]
    values = report.rows("overall")[0].values
    assert values["held_out_pct"].value == pytest.approx(100 * 2 / 3)
    assert values["held_out_geomean"].value == pytest.approx(math.sqrt(4.0 * 1.0))
    notes = "\n".join(report.notes)
    assert "t/level1/2_B [odd (n=7): incorrect]" in notes
    assert "1 task(s) without a held-out shape: the task sets no size at top level" in notes
    plain = build_report([write_run(tmp_path / "p", [TaskResult(task_id="t/level1/1_A", correct=True)])], bootstrap=0)
    assert not any(m.key.startswith("held_out") for m in plain.metrics)  # runs without held-out shapes: no columns


def test_a_failing_held_out_check_never_costs_the_task_its_result(monkeypatch, evaluator):
    from types import SimpleNamespace

    import cudaforge.eval.held_out as held_out_module
    from cudaforge.run.runner import _held_out
    from cudaforge.types import GpuUnavailable

    relu = task(RELU_TASK)
    ctx = SimpleNamespace(
        cfg=SimpleNamespace(eval=SimpleNamespace(held_out_shapes=True, held_out_max_input_mb=64)), evaluator=evaluator
    )
    store = SimpleNamespace(candidate=lambda digest: HONEST)
    result = TaskResult(task_id=relu.id, correct=True, best_candidate_hash="abc")

    def broken(task):
        raise RuntimeError("a bug in the shapes")

    monkeypatch.setattr(held_out_module, "held_out_shapes", broken)
    _held_out(ctx, relu, store, result)
    assert result.held_out["shapes"] == [] and "RuntimeError: a bug in the shapes" in result.held_out["note"]
    assert "held_out" in result.time_split

    def lost(task):
        raise GpuUnavailable("GPU 0 is lost")

    monkeypatch.setattr(held_out_module, "held_out_shapes", lost)
    with pytest.raises(GpuUnavailable):  # the machine's failure still stops the task, to be run again
        _held_out(ctx, relu, store, TaskResult(task_id=relu.id, correct=True, best_candidate_hash="abc"))
    untouched = TaskResult(task_id=relu.id, correct=False)
    _held_out(ctx, relu, store, untouched)  # no correct kernel: nothing checked
    assert untouched.held_out == {}
