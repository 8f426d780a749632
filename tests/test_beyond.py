"""Verdicts beyond the scored inputs (issue 52): hidden input distributions, parameters away from their initial
values, the error against an fp64 reference, peak memory, held-out shapes in the verdict, and the report's columns.

Every evaluation here is the real CPU ``Evaluator`` (Triton in its interpreter, the sandbox as the machine allows).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch

from cudaforge.eval.evaluator import Evaluator
from cudaforge.eval.hidden import DISTRIBUTIONS, degenerate, derive, precision_against_fp64
from cudaforge.eval.params import constant_value, covers, varied_constants
from cudaforge.eval.settings import HIDDEN_DISTRIBUTIONS, EvalConfig
from cudaforge.tasks import parse_problem
from cudaforge.types import EvalStatus

REPO = Path(__file__).resolve().parent.parent
TRITON_HEAD = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

RELU_RAND = """
import torch
import torch.nn as nn

batch_size = 16
dim = 256

class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""

COPY_KERNEL = (
    TRITON_HEAD
    + """
@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        copy_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
        return y
"""
)

SCALE_TASK = """
import torch
import torch.nn as nn

batch_size = 16
features = 64

class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.scale = nn.Parameter(torch.ones(features))

    def forward(self, x):
        return torch.relu(self.linear(x) * self.scale)

def get_inputs():
    return [torch.randn(batch_size, features)]

def get_init_inputs():
    return [features]
"""

SCALE_KERNEL = (
    TRITON_HEAD
    + """
@triton.jit
def scale_relu_kernel(h_ptr, s_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    h = tl.load(h_ptr + offs, mask=mask)
    s = tl.load(s_ptr + offs % cols, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(h * s, 0.0), mask=mask)

class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        {scale}
        {fold}

    def forward(self, x):
        h = torch.nn.functional.linear(x, {weight}, {bias}).contiguous()
        y = torch.empty_like(h)
        scale_relu_kernel[(triton.cdiv(h.numel(), 1024),)](h, {scale_arg}, y, h.numel(), h.shape[1], BLOCK=1024)
        return y
"""
)


def scale_kernel(**parts: str) -> str:
    values = {
        "scale": "self.scale = nn.Parameter(torch.ones(features))",
        "fold": "",
        "weight": "self.linear.weight",
        "bias": "self.linear.bias",
        "scale_arg": "self.scale",
    }
    return SCALE_KERNEL.format(**{**values, **parts})


def task(source: str, name: str = "1_T"):
    pid, label = name.split("_", 1)
    return parse_problem(textwrap.dedent(source), suite="beyond", level=1, problem_id=int(pid), name=label, path=name)


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    return Evaluator({"device": "cpu", "correctness_trials": 2, "build_cache_dir": str(tmp_path_factory.mktemp("b"))})


def test_a_relu_that_returns_its_input_fails_the_negated_distribution_and_the_agents_see_its_kind(evaluator):
    result = evaluator.evaluate(task(RELU_RAND), COPY_KERNEL)
    assert result.status is EvalStatus.INCORRECT, result.report()
    assert result.diff.variant == "hidden:negated"
    assert "hidden input distribution 'negated'" in result.message and "floating inputs negated" in result.message
    assert result.diff.worst == [] and result.diff.max_abs_error > 0  # the error's size, not the values
    assert result.checks["hidden"]["kept"] == ["x3", "x0.01", "negated"]

    shown = Evaluator({**evaluator.cfg.to_dict(), "hidden_inputs_show_values": True})
    assert shown.evaluate(task(RELU_RAND), COPY_KERNEL).diff.worst


def test_the_scored_inputs_alone_pass_the_same_kernel(evaluator):
    plain = Evaluator({**evaluator.cfg.to_dict(), "hidden_inputs": []})
    result = plain.evaluate(task(RELU_RAND), COPY_KERNEL)
    assert result.status is EvalStatus.CORRECT, result.report()
    assert "hidden" not in result.checks


SQRT_TASK = RELU_RAND.replace("torch.relu(x)", "torch.sqrt(x)")
SQRT_KERNEL = COPY_KERNEL.replace("tl.load(x_ptr + offs, mask=mask)", "tl.sqrt(tl.load(x_ptr + offs, mask=mask))")


def test_a_distribution_the_reference_cannot_judge_is_dropped_with_why_and_the_honest_kernel_stays_correct(evaluator):
    result = evaluator.evaluate(task(SQRT_TASK), SQRT_KERNEL)
    assert result.status is EvalStatus.CORRECT, result.report()
    hidden = result.checks["hidden"]
    assert "negated" in hidden["dropped"] and "non-finite" in hidden["dropped"]["negated"]
    assert set(hidden["kept"]) | set(hidden["dropped"]) == set(HIDDEN_DISTRIBUTIONS)
    assert result.trials_total == result.trials_passed == 2 + len(hidden["kept"])
    assert hidden["decided"]["negated"] == hidden["dropped"]["negated"] and hidden["decided"]["x3"] == ""
    assert result.checks["fp64"]["reference"] == {"trusted": True, "base_nonfinite": 0}
    again = evaluator.evaluate(task(SQRT_TASK), SQRT_KERNEL)  # the reference's decisions kept by the evaluator
    assert again.status is EvalStatus.CORRECT and again.checks["hidden"]["decided"] == {}
    assert again.checks["hidden"]["dropped"] == hidden["dropped"] and again.checks["hidden"]["kept"] == hidden["kept"]
    assert "reference" not in again.checks["fp64"] and again.checks["fp64"]["reference_known"] is True


def test_an_earlier_evaluations_fp64_decision_is_taken_only_when_well_formed():
    from cudaforge.eval.verifier.correctness import known_fp64

    assert known_fp64({"trusted": False, "base_nonfinite": 3}) == {"trusted": False, "base_nonfinite": 3}
    for bad in (
        None,
        {},
        {"trusted": 1, "base_nonfinite": 0},
        {"trusted": True, "base_nonfinite": -1},
        {"trusted": True, "base_nonfinite": True},
        {"trusted": True, "base_nonfinite": 0, "x": 1},
    ):
        assert known_fp64(bad) is None, bad


def test_a_kernel_that_ignores_a_scale_built_as_ones_is_wrong_and_one_that_folds_it_at_construction_is_right(
    evaluator,
):
    ignored = evaluator.evaluate(task(SCALE_TASK), scale_kernel(scale_arg="torch.ones_like(self.scale)"))
    assert ignored.status is EvalStatus.INCORRECT, ignored.report()
    assert ignored.checks["parameters"]["varied"] == 1 and ignored.checks["parameters"]["candidate_matched"]

    folded = scale_kernel(
        fold="self.register_buffer('w', self.linear.weight.detach() * self.scale.detach()[:, None])\n"
        "        self.register_buffer('b', self.linear.bias.detach() * self.scale.detach())\n"
        "        self.register_buffer('one', torch.ones(features) + 0 * self.scale.detach())",
        weight="self.w",
        bias="self.b",
        scale_arg="self.one",
    )
    result = evaluator.evaluate(task(SCALE_TASK), folded)
    assert result.status is EvalStatus.CORRECT, result.report()
    assert result.checks["parameters"]["varied"] == 1 and not any(
        f["guard"] == "parameters_not_varied" for f in result.guard_findings
    )


def test_a_candidate_that_cannot_receive_the_varied_values_runs_with_the_initial_ones_and_says_so(evaluator):
    unregistered = scale_kernel(scale="scale = torch.ones(features)", scale_arg="torch.ones_like(h[0])")
    result = evaluator.evaluate(task(SCALE_TASK), unregistered)
    assert result.status is EvalStatus.CORRECT, result.report()  # a finding, not a rejection (the rule)
    (finding,) = [f for f in result.guard_findings if f["guard"] == "parameters_not_varied"]
    assert finding["verdict"] == "report" and "scale [64] (built as 1)" in finding["evidence"]
    assert result.checks["parameters"]["candidate_matched"] is False
    assert result.checks_summary()["flags"] == ["parameters_not_varied"]


HALF_KERNEL = COPY_KERNEL.replace(
    "tl.load(x_ptr + offs, mask=mask)", "tl.load(x_ptr + offs, mask=mask).to(tl.float16).to(tl.float32) * 1.0"
)
GELU_LOOSE = RELU_RAND.replace("torch.relu(x)", "x * 1.0").replace(
    "batch_size = 16", "ATOL = 1e-2\nRTOL = 1e-2\nbatch_size = 16"
)


def test_an_fp16_round_trip_inside_a_loose_tolerance_is_named_against_the_fp64_reference(evaluator):
    result = evaluator.evaluate(task(GELU_LOOSE), HALF_KERNEL)
    assert result.status is EvalStatus.CORRECT, result.report()
    (finding,) = [f for f in result.guard_findings if f["guard"] == "precision_fp64"]
    assert finding["verdict"] == "report" and "fp64 evaluation" in finding["evidence"]
    assert result.checks["fp64"]["ratio"] > 32 and result.checks["fp64"]["available"]
    honest = evaluator.evaluate(task(GELU_LOOSE), COPY_KERNEL)
    assert not any(f["guard"] == "precision_fp64" for f in honest.guard_findings)
    assert honest.checks["fp64"]["ratio"] <= 1


def test_the_hidden_transforms_touch_floating_tensors_only():
    x, idx, mask = torch.ones(4), torch.arange(4), torch.ones(4, dtype=torch.bool)
    for name in DISTRIBUTIONS:
        out = derive([x.clone(), idx.clone(), mask.clone(), 3], name)
        assert torch.equal(out[1], idx) and torch.equal(out[2], mask) and out[3] == 3
        assert not torch.equal(out[0], x)
    assert torch.equal(derive([torch.ones(2)], "offset")[0], torch.full((2,), 4.0))  # + 3 x its RMS


def test_degeneracy_is_judged_against_the_default_inputs_and_fp64():
    assert degenerate(torch.tensor([1.0, float("nan")]), None, atol=1e-4, rtol=1e-4).startswith("the reference's")
    assert degenerate(torch.tensor([1.0, float("nan")]), None, atol=1e-4, rtol=1e-4, base_nonfinite=1) == ""
    off = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1], dtype=torch.float64)
    assert "fp64 evaluation" in degenerate(*off, atol=1e-4, rtol=1e-4)
    assert degenerate(*off, atol=1e-4, rtol=1e-4, fp64_trusted=False) == ""
    exact = torch.linspace(-3, 3, 1000, dtype=torch.float64)
    evidence, figures = precision_against_fp64(exact.float(), exact.float(), exact, 32)
    assert evidence == "" and figures["ratio"] < 1


def test_constants_are_varied_as_they_are_registered_alike_on_both_sides_and_variances_stay_positive():
    def build():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4), torch.nn.LayerNorm(4))

    with varied_constants(7) as first:
        a = build()
    with varied_constants(7) as second:
        b = build()
    with varied_constants(8):
        c = build()
    plain = build()
    assert first.keys == second.keys and len(first.keys) == 6  # bn weight, bias, mean, var; ln weight, bias
    for (name, x), y, z, p in zip(
        a.state_dict().items(), b.state_dict().values(), c.state_dict().values(), plain.state_dict().values()
    ):
        assert torch.equal(x, y), name  # the same values for the same key and seed
        if name.startswith("0."):
            assert torch.equal(x, p), name  # random weights untouched: the global generator is not consumed
        elif x.is_floating_point():
            assert constant_value(x) is None and not torch.equal(x, z), name
    assert bool((a[1].running_var > 0).all())
    assert covers(first.keys, first.keys) == [] and covers(first.keys[:2], first.keys) == first.keys[2:]


def test_the_new_settings_are_checked():
    assert EvalConfig().hidden_inputs == list(HIDDEN_DISTRIBUTIONS)
    with pytest.raises(ValueError, match="precision_fp64_ratio"):
        EvalConfig.from_dict({"precision_fp64_ratio": 0.5})
    with pytest.raises(ValueError, match="expected off or torch_default or on"):
        EvalConfig.from_dict({"tf32": "maybe"})


@pytest.mark.parametrize(
    "preset, expected",
    [
        ("kernelbench_verified", {"hidden_inputs": ["x3", "x0.01", "negated"], "atol_fp32": 1e-3, "tf32": "on"}),
        ("kernelbench", {"hidden_inputs": [], "atol_fp32": 1e-2, "correctness_trials": 5, "vary_parameters": False}),
        ("cudaforge_authors", {"hidden_inputs": [], "vary_parameters": False}),
    ],
)
def test_the_protocol_presets_compose(preset, expected):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from cudaforge.config import register_configs
    from cudaforge.paths import CONFIG_DIR

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        composed = OmegaConf.to_object(compose(config_name="cudaforge", overrides=[f"eval={preset}"]).eval)
    for key, value in expected.items():
        got = getattr(composed, key)
        assert getattr(got, "value", got) == value, (key, got)


def test_memory_from_the_worker_is_read_as_numbers_never_below_the_outputs():
    from cudaforge.eval.verifier.correctness import Memory

    memory = Memory(torch.nn.Linear(2, 2), torch.device("cpu"))
    out = torch.ones(1000)
    for forged in ({"peak": -5}, {"peak": 10**30}, {"peak": "1"}, None, {"peak": 10}):
        memory.of_candidate(forged, out)
        assert memory.candidate == 4000
    memory.of_candidate({"held": 0, "peak": 123456}, out)
    assert memory.candidate == 123456


@pytest.mark.slow
def test_eval_reports_the_held_out_shapes_and_they_decide_when_asked(tmp_path, capsys):
    from cudaforge.cli import main

    path = tmp_path / "k.py"
    path.write_text(COPY_KERNEL.replace("x.numel()", "4096"))  # the scored shape's size, baked in
    problem = tmp_path / "1_Copy.py"
    problem.write_text(RELU_RAND.replace("torch.relu(x)", "x.clone()"))
    args = ["eval", f"task={problem}", f"candidate={path}", "eval.hidden_inputs=[]", "eval.correctness_trials=1"]
    assert main(args + [f"output={tmp_path / 'r.json'}"]) == 0
    assert "large (batch_size=32): incorrect" in capsys.readouterr().out
    record = json.loads((tmp_path / "r.json").read_text())["held_out"]
    assert record["passed"] is False and [r["correct"] for r in record["shapes"]] == [False, False]
    assert main(args + ["eval.held_out_decides=true"]) == 1
    assert "INCORRECT on held-out shapes" in capsys.readouterr().out


@pytest.mark.gpu
def test_on_a_gpu_each_side_has_a_peak_memory_and_the_checks_beyond_run(tmp_path):
    from cudaforge.tasks import find_task, selection

    gpu = Evaluator({"device": "cuda", "timing_trials": 20, "build_cache_dir": str(tmp_path / "build")})
    relu = find_task(selection("tiny"), "level1/1_ReLU")
    result = gpu.evaluate(relu, (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text())
    assert result.status is EvalStatus.CORRECT, result.report()
    memory = result.memory
    out_bytes = 256 * 1024 * 4
    assert memory["candidate_bytes"] >= out_bytes and memory["reference_bytes"] >= out_bytes
    assert 0.2 < memory["ratio"] < 5, memory
    assert result.checks["fp64"]["available"] and result.checks["fp64"]["ratio"] < 32
    assert set(result.checks["hidden"]["kept"]) == set(HIDDEN_DISTRIBUTIONS)
    wrong = gpu.evaluate(task(RELU_RAND), COPY_KERNEL)
    assert wrong.status is EvalStatus.INCORRECT and wrong.diff.variant == "hidden:negated", wrong.report()


def test_the_precision_statistic_leaves_out_exact_zeros_and_a_held_out_precision_flag_fails_the_shape():
    from cudaforge.eval.held_out import shapes_pass
    from cudaforge.eval.hidden import relative_error

    wide = torch.cat([torch.zeros(1000, dtype=torch.float64), torch.linspace(0.1, 1, 1000, dtype=torch.float64)])
    rounded = wide.float().half().float()  # a ReLU's output in fp16: half its elements exactly zero
    assert relative_error(rounded, wide) > 1e-5  # the zeros no longer make the median error 0
    row = {"shape": "odd", "status": "correct", "correct": True}
    assert shapes_pass({"shapes": [row]}) is True
    assert shapes_pass({"shapes": [{**row, "flags": ["precision_fp64"]}]}) is False
    assert shapes_pass({"shapes": [{**row, "status": "skipped"}]}) is None


def test_an_fp64_reference_too_large_for_its_budget_is_not_made_and_the_verdict_stands(evaluator):
    small = Evaluator({**evaluator.cfg.to_dict(), "fp64_max_gb": 1e-6})  # about 1 KB: the 16 x 256 inputs need more
    result = small.evaluate(task(GELU_LOOSE), HALF_KERNEL)
    assert result.status is EvalStatus.CORRECT, result.report()
    assert result.checks["fp64"]["available"] is False and "eval.fp64_max_gb" in result.checks["fp64"]["note"]
    assert not any(f["guard"] == "precision_fp64" for f in result.guard_findings)
    assert len(result.checks["hidden"]["kept"]) == 5  # judged by finiteness alone
