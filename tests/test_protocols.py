"""The evaluation protocols side by side: ours (the default) and the CudaForge authors' (``eval=cudaforge_paper``).

CPU parts here: the comparison of the first output by ``torch.allclose``, the ratio of means, timing on the same
inputs with the reference's calls in a block of their own, the settings' checks, and a whole CPU evaluation under
the paper's preset where our protocol says something else."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import yaml

from cudaforge.eval.correctness import compare_first, first_tensor
from cudaforge.eval.evaluator import Evaluator
from cudaforge.eval.guards import runtime as rt
from cudaforge.eval.timing import speedup
from cudaforge.tasks import find_task, selection
from cudaforge.types import EvalStatus

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
PRESET = Path(__file__).resolve().parents[1] / "cudaforge" / "resources" / "configs" / "eval" / "cudaforge_paper.yaml"


def paper_cfg(**extra):
    cfg = {k: v for k, v in yaml.safe_load(PRESET.read_text()).items() if k != "defaults"}
    return {**cfg, "device": "cpu", **extra}


def test_the_first_tensor_is_compared_cast_to_the_reference_dtype_by_allclose():
    ref = (torch.ones(4, 4), torch.zeros(3))
    assert first_tensor(ref) is ref[0] and first_tensor(5) is None
    ok = compare_first(
        ref,
        (torch.ones(4, 4, dtype=torch.float64) + 5e-4, torch.full((3,), 9.0)),
        atol=1e-3,
        rtol=1e-3,
        trial=0,
        variant="default",
    )
    assert ok is None  # the second output is never looked at, the dtype is cast
    diff = compare_first(ref, torch.ones(4, 4) + 0.01, atol=1e-3, rtol=1e-3, trial=0, variant="default")
    assert diff is not None and "torch.allclose" in diff.message and diff.max_abs_error == pytest.approx(0.01, rel=1e-3)


def test_allclose_broadcasts_and_nan_fails_without_equal_nan():
    ref = torch.ones(4, 4)
    assert compare_first(ref, torch.ones(4), atol=1e-3, rtol=1e-3, trial=0, variant="default") is None  # broadcasts
    unfit = compare_first(ref, torch.ones(3), atol=1e-3, rtol=1e-3, trial=0, variant="default")
    assert unfit is not None and "cannot be compared" in unfit.message
    nan = torch.full((4, 4), float("nan"))
    assert compare_first(nan, nan.clone(), atol=1e-3, rtol=1e-3, trial=0, variant="default") is not None
    assert compare_first(nan, nan.clone(), atol=1e-3, rtol=1e-3, trial=0, variant="default", equal_nan=True) is None


def test_a_wrong_output_that_broadcasts_is_summarised_without_a_relative_error():
    """Shapes that broadcast but differ ((4, 1) against (4,)) and values that do not agree: the diff has the
    absolute errors allclose's message gives and no relative one, and its summary (what the Judge and the report
    read) says so instead of raising."""
    diff = compare_first(torch.ones(4, 1), torch.full((4,), 2.0), atol=1e-3, rtol=1e-3, trial=3, variant="default")
    assert diff is not None and diff.max_abs_error == pytest.approx(1.0) and diff.max_rel_error is None
    text = diff.summary()
    assert "max abs error 1, max rel error n/a" in text and "expected shape [4, 1]" in text


def test_the_speedup_can_be_the_ratio_of_the_means():
    ref, cand = [1.0, 1.0, 1.0, 5.0], [1.0, 1.0, 1.0, 1.0]
    assert speedup(ref, cand).median == pytest.approx(1.0) and speedup(ref, cand).statistic == "median"
    mean = speedup(ref, cand, paired=False, statistic="mean")
    assert mean.median == pytest.approx(2.0) and mean.statistic == "mean" and mean.ci_low <= 2.0 <= mean.ci_high
    with pytest.raises(ValueError, match="unknown speedup statistic"):
        speedup(ref, cand, statistic="mode")


def test_same_inputs_timed_in_blocks_still_check_every_candidate_output():
    """``fresh_inputs=false, interleave=false``: inputs drawn once, the reference's calls first, then each candidate
    output compared with the reference's; a wrong one is still found."""
    drawn = []

    def make(trial):
        drawn.append(trial)
        return [torch.arange(8.0)]

    def check(expected, actual, trial):
        return None if torch.equal(expected, actual) else type("D", (), {"summary": lambda self: "differs"})()

    calls = rt.TimedCalls(make, check, torch.device("cpu"), [], same_inputs=True)
    for trial in range(-2, 3):
        args = calls.make_args(trial)
        calls.on_output("reference", trial, args, torch.relu(args[0]))
    for trial in range(-2, 3):
        args = calls.make_args(trial)
        out = torch.relu(args[0]) if trial < 2 else torch.zeros(8)
        calls.on_output("candidate", trial, list(calls.pristine), out)
    assert drawn == [-2]  # one draw for every call
    assert calls.failure is not None and "timed trial 2" in calls.failure["evidence"]


def test_the_paper_settings_are_checked_together():
    with pytest.raises(ValueError, match="needs the same inputs"):
        Evaluator({"device": "cpu", "interleave": False})
    with pytest.raises(ValueError, match="eval.speedup_statistic='mode'"):
        Evaluator({"device": "cpu", "speedup_statistic": "mode"})
    assert Evaluator(paper_cfg()).cfg.compare_outputs == "first"


TUPLE_RELU = (
    (Path(__file__).resolve().parents[1] / "benchmarks" / "candidates" / "triton_relu.py")
    .read_text()
    .replace("        return triton_relu(x)", "        return triton_relu(x), x.sum()")
)  # the reference returns one tensor


@pytest.mark.slow
def test_a_kernel_right_only_in_its_first_output_passes_the_paper_check_and_fails_ours(tmp_path):
    """The same candidate under both protocols on the CPU: the paper's check compares the first tensor only, ours
    the whole output; one verdict changes, with the check that changed it in the message."""
    task = find_task(selection("tiny"), "level1/1_ReLU")
    common = {"device": "cpu", "build_cache_dir": str(tmp_path), "guards_enforce": False}
    paper = Evaluator(paper_cfg(**common)).evaluate(task, TUPLE_RELU)
    ours = Evaluator({**common, "correctness_trials": 2}).evaluate(task, TUPLE_RELU)
    assert paper.status is EvalStatus.CORRECT, paper.report()
    assert paper.fingerprint["weights"].startswith("copy_matching")
    assert ours.status is EvalStatus.INCORRECT and "expected 1 outputs, got 2" in ours.message, ours.report()
    assert any(f["guard"] == "output_type" for f in ours.guard_findings)  # what our structure check found
