"""Speedups that name their precision (cudaforge.eval.precision), the probe's flag, the GPU telemetry around timed
batches (cudaforge.eval.telemetry), and the report's precision column."""

from __future__ import annotations

import json
import os

import pytest
import torch

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from cudaforge.eval import precision, telemetry  # noqa: E402
from cudaforge.types import EvalResult, EvalStatus, SpeedupStats, TaskResult, TimingStats  # noqa: E402


def test_the_policy_record_names_every_flag_that_changes_fp32_math():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    with precision.numerics("tf32"):
        record = precision.policy_record("off", ["float32"])
        assert record["matmul_tf32"] and record["cudnn_tf32"]
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before  # restored
    with precision.numerics("strict_fp32"):
        record = precision.policy_record("off", ["float32", "float32"])
    assert record["policy"] == "strict_fp32" and not record["matmul_tf32"] and not record["cudnn_tf32"]
    assert record["output_dtypes"] == ["float32"] and "bf16_reduced_precision_reduction" in record
    assert precision.policy_name("torch_default") == "torch_default"


def test_the_probe_flags_a_win_that_tf32_alone_reproduces():
    # the candidate is 3x over strict fp32; the reference in TF32 is 4x faster and within the task's tolerance
    out = precision.speedups(3.0, "strict_fp32", {"strict_fp32": 1.0, "tf32": 0.25}, {"tf32": True})
    assert out["over_strict_fp32"] == 3.0 and out["best_allowed"] == "tf32"
    assert out["over_best_allowed"] == pytest.approx(0.75) and out["probe_reproduces_win"] is True


def test_a_precision_outside_the_tolerance_is_not_the_best_allowed():
    out = precision.speedups(
        3.0, "strict_fp32", {"strict_fp32": 1.0, "tf32": 0.25, "bf16": 0.2}, {"tf32": False, "bf16": False}
    )
    assert out["best_allowed"] == "strict_fp32" and out["over_best_allowed"] == 3.0
    assert out["probe_reproduces_win"] is False


def test_speedups_measured_under_torch_default_are_rebased_to_strict_fp32():
    # main policy torch_default (cuDNN TF32): 1.2x over it; strict fp32 is twice as slow, so 2.4x over strict
    out = precision.speedups(1.2, "torch_default", {"torch_default": 0.5, "strict_fp32": 1.0}, {})
    assert out["over_strict_fp32"] == pytest.approx(2.4) and out["best_allowed"] == "torch_default"
    assert out["probe_reproduces_win"] is False
    with pytest.raises(ValueError, match="main policy"):
        precision.speedups(1.0, "strict_fp32", {"tf32": 1.0}, {})


def test_a_tie_goes_to_the_policy_measured():
    out = precision.speedups(1.0, "strict_fp32", {"strict_fp32": 0.5, "tf32": 0.5}, {"tf32": True})
    assert out["best_allowed"] == "strict_fp32"


def test_bf16_call_casts_inputs_and_outputs_back():
    model = torch.nn.Linear(4, 3)
    half = precision.bf16_model(model)
    assert next(model.parameters()).dtype == torch.float32  # the reference itself is untouched
    x = torch.randn(2, 4)
    out = precision.bf16_call(half, [x], model(x))
    assert out.dtype == torch.float32 and torch.allclose(out, model(x), atol=5e-2, rtol=5e-2)


def test_telemetry_calls_a_throttled_or_slow_batch_unclean():
    assert telemetry.unclean({"clock_event_reasons": ["hw_thermal_slowdown"], "sm_clock_mhz": 1980}, 1980)
    assert telemetry.unclean({"clock_event_reasons": [], "sm_clock_mhz": 900}, 1980).startswith("SM clock 900")
    assert telemetry.unclean({"clock_event_reasons": ["sw_power_cap"], "sm_clock_mhz": 1200}, 1980) == ""
    assert telemetry.unclean({"clock_event_reasons": ["gpu_idle"], "sm_clock_mhz": 345}, 1980) == ""
    assert telemetry.unclean({"clock_event_reasons": None, "sm_clock_mhz": None}, None) == ""
    clean = telemetry.batch_record(25, {"clock_event_reasons": []}, {"clock_event_reasons": []}, 1980, True)
    hot = telemetry.batch_record(25, {"clock_event_reasons": ["sw_thermal_slowdown"]}, {}, 1980, True)
    last = telemetry.batch_record(25, {"clock_event_reasons": ["sw_thermal_slowdown"]}, {}, 1980, False)
    assert not clean["unclean"] and hot["remeasured"] and not last["remeasured"]
    assert telemetry.summary([clean])["never_clean"] is False
    summary = telemetry.summary([hot, last])
    assert summary == {**summary, "clean_batches": 0, "kept_batches": 1, "remeasured": 1, "never_clean": True}


def _result(speedup: float, probe: dict | None, clean: bool = True) -> EvalResult:
    timing = TimingStats(n=3, median=1.0, mean=1.0, min=1.0, max=1.0, std=0.0, ci_low=1.0, ci_high=1.0)
    result = EvalResult(
        task_id="t",
        candidate_hash="h",
        status=EvalStatus.CORRECT,
        reference_timing=timing,
        candidate_timing=timing,
        speedup=SpeedupStats(speedup, speedup, speedup, precision="strict_fp32"),
    )
    if probe is not None:
        result.precision = {"policy": "strict_fp32", "speedups": probe}
    result.launch_inclusive = {"speedup": speedup / 2}
    result.telemetry = {"never_clean": not clean}
    return result


def test_every_result_names_its_precision_and_survives_a_round_trip():
    probe = precision.speedups(3.0, "strict_fp32", {"strict_fp32": 1.0, "tf32": 0.25}, {"tf32": True})
    result = EvalResult.from_dict(json.loads(json.dumps(_result(3.0, probe, clean=False).to_dict())))
    assert result.speedup.precision == "strict_fp32"
    measured = result.measurement()
    assert measured["precision"] == "strict_fp32" and measured["probe_reproduces_win"] is True
    assert measured["launch_inclusive"] == 1.5 and measured["timing_clean"] is False
    old = EvalResult.from_dict(
        {
            "task_id": "t",
            "candidate_hash": "h",
            "status": "correct",
            "speedup": {"median": 1.0, "ci_low": 1.0, "ci_high": 1.0},
        }
    )  # an older record
    assert old.measurement() == {"precision": None}


def test_the_report_has_a_precision_column_and_names_the_probes_wins(tmp_path):
    from cudaforge.report import make_report
    from cudaforge.report.tables import markdown

    probe = precision.speedups(3.0, "strict_fp32", {"strict_fp32": 1.0, "tf32": 0.25}, {"tf32": True})
    flagged = TaskResult(
        task_id="main/level1/6_MatmulSquare",
        correct=True,
        best_speedup=3.0,
        best_measurement=_result(3.0, probe, clean=False).measurement(),
    )
    plain = TaskResult(
        task_id="main/level1/1_GELU", correct=True, best_speedup=1.1, best_measurement=_result(1.1, None).measurement()
    )
    old = TaskResult(task_id="main/level1/3_Softmax", correct=True, best_speedup=1.3)
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in (flagged, plain, old)))
    report, _ = make_report(runs=[str(run)], out_dir=str(tmp_path / "report"), plots=False, bootstrap=0)
    text = markdown(report)
    header = next(line for line in text.splitlines() if line.startswith("| run |"))
    assert "precision" in header and "probe reproduces" in header
    row = next(line for line in text.splitlines() if "`" in line)  # the run's row names its directory
    assert "strict_fp32 (2)" in row and "unrecorded (1)" in row and row.rstrip().endswith("| 1 |")
    assert "main/level1/6_MatmulSquare" in text.split("## Notes")[1]
    assert "timed without one clean batch" in text and "launch-inclusive speedup" in text


def test_a_measured_probe_is_kept_and_reused_only_under_the_same_policy_and_well_formed():
    record = {
        "policy": "strict_fp32",
        "matmul_tf32": False,
        "reference_solo_ms": {"strict_fp32": 2.0, "bf16": 0.5},
        "within_tolerance": {"tf32": True, "bf16": True},
        "same_bits_as_main": ["tf32"],
        "mismatch": {},
    }
    kept = precision.kept_probe(record)
    assert kept is not None and "matmul_tf32" not in kept  # only what the probe measured
    reused = precision.reusable_probe(json.loads(json.dumps(kept)), "strict_fp32")
    assert reused == {k: record[k] for k in precision.PROBE_KEYS}
    main, solo, allowed = precision.probe_tuple("strict_fp32", reused)
    assert solo == {"strict_fp32": 2.0, "bf16": 0.5, "tf32": 2.0} and allowed["strict_fp32"] is True
    assert precision.speedups(1.5, main, solo, allowed)["best_allowed"] == "bf16"
    assert precision.reusable_probe(kept, "torch_default") is None  # measured under another policy
    for bad in (
        {**kept, "reference_solo_ms": {"strict_fp32": float("nan")}},
        {**kept, "reference_solo_ms": {"fp8": 1.0}},
        {**kept, "within_tolerance": {"tf32": "yes"}},
        {**kept, "same_bits_as_main": "tf32"},
        {**kept, "reference_solo_ms": {"strict_fp32": True}},
        None,
        "probe",
    ):
        assert precision.reusable_probe(bad, "strict_fp32") is None
    assert precision.kept_probe({"policy": "strict_fp32", "probe": "off"}) is None  # nothing measured


def test_the_evaluator_hands_a_correct_candidates_probe_to_the_tasks_next_candidates(monkeypatch):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.paths import PROJECT_ROOT
    from cudaforge.proc.isolation import IsolatedOutcome
    from cudaforge.tasks.loader import load_problem_file

    task = load_problem_file(
        PROJECT_ROOT / "benchmarks" / "suites" / "tiny" / "level1" / "1_ReLU.py", suite="tiny", level=1
    )
    payloads, statuses = [], iter(["incorrect", "correct", "correct", "correct"])
    probe = {
        "policy": "strict_fp32",
        "reference_solo_ms": {"strict_fp32": 1.0},
        "within_tolerance": {},
        "same_bits_as_main": ["tf32"],
        "mismatch": {},
    }

    def worker(self, payload, gpu, env):
        payloads.append(payload)
        result = EvalResult(
            task_id=task.id, candidate_hash="h", status=EvalStatus(next(statuses)), precision=dict(probe)
        )
        return IsolatedOutcome(status="ok", result=result.to_dict())

    monkeypatch.setattr(Evaluator, "_worker", worker)
    evaluator = Evaluator({"device": "cpu"})
    source = (PROJECT_ROOT / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    for _ in range(3):
        evaluator._evaluate(task, source, "0", 0.0)
    evaluator._evaluate(task, source, "1", 0.0)  # another GPU measures its own
    known = [p.get("known_probe") for p in payloads]
    assert known[0] is None and known[1] is None  # the incorrect candidate's probe is not kept
    assert known[2] == {**probe, "probe_from": "h"} and known[3] is None  # names the evaluation that measured it
