"""The CudaForge authors' harness as an exact mode (issue 35, item 2): their aligner of weights, no poisoning, and
only their checks deciding (eval=cudaforge_authors)."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest
import torch
import torch.nn as nn

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from cudaforge.eval.align import authors_alignment, map_shape  # noqa: E402


def _state(model: nn.Module) -> dict:
    """What the worker's ``state`` request answers for ``model``."""
    return {
        "state": {k: [list(v.shape), str(v.dtype).replace("torch.", "")] for k, v in model.state_dict().items()},
        "params": [n for n, _ in model.named_parameters()],
    }


def test_renamed_parameters_are_aligned_by_their_unique_shapes():
    ref = nn.Linear(8, 4)
    cand = nn.Module()
    cand.w, cand.b = nn.Parameter(torch.zeros(4, 8)), nn.Parameter(torch.zeros(4))
    out, stats = authors_alignment(ref, _state(cand))
    assert stats["rule"] == "generic" and stats["unique_shape_copied"] == 2
    assert torch.equal(out["w"], ref.weight) and torch.equal(out["b"], ref.bias)


def test_a_forged_state_reply_cannot_make_the_verifier_load_more_than_the_reference_holds():
    """The red team: 200 names of one mapped shape (a 1024x1024 weight as [1024, 1024, 1, 1]) each got a copy, and
    the verifier filled an arena of 800 MiB from an 8 KB reply. What is loaded now holds at most twice the
    reference's bytes (and 1 MiB), and at most four names per reference tensor (and 64) are read."""
    ref = nn.Linear(1024, 1024, bias=False)
    forged = {"state": {f"w{i}": [[1024, 1024, 1, 1], "float32"] for i in range(200)}, "params": []}
    out, stats = authors_alignment(ref, forged)
    loaded = sum(v.numel() * v.element_size() for v in out.values())
    assert loaded <= 2 * 4 * 1024 * 1024 + (1 << 20) and len(out) == 2
    assert stats["over_budget"] > 0 and stats["mapped_shape"] + stats["skipped"] <= 4 + 64
    wider = {"state": {"w": [[1024, 1024, 1, 1], "float64"]}, "params": ["w"]}  # a dtype twice as wide still loads
    assert authors_alignment(ref, wider)[0]["w"].dtype == torch.float64
    for forged in ("qint8", "_dynamo", "uint1", "nonsense"):  # the worker's word: only plain dtypes are taken
        state = {"state": {"w": [[1024, 1024, 1, 1], forged]}, "params": ["w"]}
        assert authors_alignment(ref, state)[0]["w"].dtype == torch.float32


def test_same_names_win_and_two_tensors_of_one_shape_are_not_guessed():
    ref = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    cand = nn.Module()
    cand.x, cand.y = nn.Parameter(torch.zeros(4, 4)), nn.Parameter(torch.zeros(4, 4))
    out, stats = authors_alignment(ref, _state(cand))
    assert "x" not in out and "y" not in out and stats["skipped"] >= 2  # ambiguous shapes: left alone
    twin = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    out, stats = authors_alignment(ref, _state(twin))
    assert stats["copied_same_shape"] == 4 and torch.equal(out["1.weight"], ref[1].weight)


def test_a_single_convolution_weight_is_copied_as_it_is_or_transposed():
    ref = nn.ConvTranspose2d(3, 5, 3)  # weight (in=3, out=5, 3, 3)
    cand = nn.Module()
    cand.kernel, cand.bias = nn.Parameter(torch.zeros(5, 3, 3, 3)), nn.Parameter(torch.zeros(5))
    out, stats = authors_alignment(ref, _state(cand))
    assert stats["rule"] == "pair"
    assert torch.equal(out["kernel"], ref.weight.permute(1, 0, 2, 3)) and torch.equal(out["bias"], ref.bias)


def test_shape_mappings():
    w = torch.arange(24.0).reshape(4, 1, 6, 1)
    assert map_shape(w, (4, 6)).shape == (4, 6)
    assert map_shape(torch.zeros(4, 6), (4, 1, 6, 1)).shape == (4, 1, 6, 1)
    assert map_shape(torch.zeros(8, 3, 1, 1), (8, 3)).shape == (8, 3)
    assert map_shape(torch.zeros(2, 3, 4, 4, 4), (3, 2, 4, 4, 4)).shape == (3, 2, 4, 4, 4)
    assert map_shape(torch.zeros(6, 1, 2, 3, 3), (6, 2, 3, 3)).shape == (6, 2, 3, 3)
    assert map_shape(torch.zeros(3, 3), (9,)) is None


RENAMED = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.w = nn.Parameter(torch.randn(out_features, in_features))  # not the reference's names, nor its init
        self.b = nn.Parameter(torch.randn(out_features))

    def forward(self, x):
        return torch.relu(x @ self.w.t() + self.b)
"""


@pytest.mark.parametrize("weights, status", [("copy_matching", "incorrect"), ("authors", "correct")])
def test_a_model_with_renamed_parameters_passes_only_the_authors_aligner(weights, status, tmp_path):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/3_MatmulBiasReLU")
    cfg = {
        "device": "cpu",
        "weights": weights,
        "guards_enforce": False,
        "correctness_trials": 1,
        "check_variants": False,
        "build_cache_dir": str(tmp_path),
    }
    result = Evaluator(cfg).evaluate(task, RENAMED)
    assert result.status.value == status, result.report()
    if weights == "authors":
        assert result.fingerprint["weights"].startswith("authors (2 tensors copied, generic rule)")


def test_the_authors_preset_decides_as_their_harness():
    from test_config import compose_with

    cfg = compose_with(["eval=cudaforge_authors"]).eval
    assert cfg.weights.value == "authors" and cfg.poison_memory is False and cfg.stricter_checks_decide is False
    assert cfg.guards_enforce is False and cfg.correctness_trials == 1 and cfg.tf32.value == "torch_default"


def test_without_poisoning_no_memory_is_poisoned_and_a_wrong_timed_output_is_reported():
    from cudaforge.eval.guards.policy import Policies
    from cudaforge.eval.settings import EvalConfig
    from cudaforge.eval.verifier import Timing, Trials

    trials = Trials()
    trials.poison = False
    trials.record("default", [torch.zeros(4)], torch.zeros(4), torch.zeros(4))
    assert trials.poison_sizes == []
    result = SimpleNamespace(guard_findings=[])
    timing = SimpleNamespace(
        cfg=EvalConfig(stricter_checks_decide=False),
        result=result,
        guard=SimpleNamespace(policies=Policies({"guards_enforce": False})),
    )
    timing.reported_wrong = lambda evidence, diff: Timing.reported_wrong(timing, evidence, diff)
    calls = SimpleNamespace(failure={"guard": "", "evidence": "timed trial 3", "diff": "values differ"})
    assert Timing._only_reported(timing, calls) is True and calls.failure is None
    assert result.guard_findings[0]["guard"] == "timed_output" and result.guard_findings[0]["verdict"] == "report"
    mutated = SimpleNamespace(failure={"guard": "input_mutation", "evidence": "x", "diff": ""})
    assert Timing._only_reported(timing, mutated) is False  # an input changed keeps its guard's policy
    timing.cfg = EvalConfig()
    assert Timing._only_reported(timing, calls) is False
