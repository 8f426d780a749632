"""Teaching data from run directories: exports (SFT, trajectories, preferences), skills, the skill experiment.

Run directories are written by hand with the store API (GPU-like: timed, with guard findings) and, once,
by the real loop on the CPU with the demo transcript (untimed). Models are scripted.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

import json  # noqa: E402
import math  # noqa: E402
from dataclasses import replace  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from cudaforge.agents import Coder, PromptLibrary  # noqa: E402
from cudaforge.agents.records import Feedback, JudgeMode  # noqa: E402
from cudaforge.agents.skills import strip_front_matter  # noqa: E402
from cudaforge.cli.hydra_args import group_keys, positional_runs  # noqa: E402
from cudaforge.config import (  # noqa: E402
    CudaforgeConfig,
    ExportConfig,
    LLMConfig,
    RewardConfig,
)
from cudaforge.llm import Ledger, LLMClient, ResponseCache, install_script  # noqa: E402
from cudaforge.teach import (  # noqa: E402
    SCHEMAS,
    SchemaError,
    build_rows,
    conform,
    distill,
    export_dataset,
    load_tasks,
    read_skills,
    skill_effect,
)
from cudaforge.teach.skills import cap_words, categorize  # noqa: E402
from cudaforge.track.store import RunStore  # noqa: E402
from cudaforge.types import (  # noqa: E402
    EvalResult,
    EvalStatus,
    RoundRecord,
    SpeedupStats,
    Task,
    TaskResult,
    TimingStats,
    source_hash,
)

# --------------------------------------------------------------------------- hand-written run directories


def kernel(body: str, comment: str = "") -> str:
    """A small ModelNew source; ``comment`` changes the text but not the normalised source."""
    return (
        f"import torch\n{comment}\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return {body}\n"
    )


S1, S2, S3, S4 = kernel("x + 1"), kernel("x + 1.0"), kernel("x * 2"), kernel("x * 2.0")
S1_COMMENTED = kernel("x + 1", comment="# the same kernel, commented")
HACK_FINDING, HACK_STATUS, WRONG = kernel("x.add(1)"), kernel("x.add_(1)"), kernel("x - 1")

MEMORY_ADVICE = {
    "bottleneck": "memory bandwidth: scalar uncoalesced loads",
    "optimisation_method": "float4 loads",
    "modification_plan": "vectorise the loads and stores",
    "expected_effect": "2x",
}
OCCUPANCY_ADVICE = {
    "bottleneck": "low occupancy: 128 registers per thread",
    "optimisation_method": "launch bounds",
    "modification_plan": "cap registers at 64",
    "expected_effect": "1.5x",
}
CORRECTION = {"critical_issue": "sign error", "why_it_matters": "wrong values", "minimal_fix_hint": "add, not subtract"}


def result(task_id: str, source: str, status: str, speedup: float | None = None, findings=(), gpu: str = "NVIDIA H200"):
    """An EvalResult as a GPU run writes it (untimed when ``speedup`` is None)."""
    timed = speedup is not None
    return EvalResult(
        task_id=task_id,
        candidate_hash=source_hash(source),
        status=EvalStatus(status),
        message=f"{status} (test)",
        reference_timing=TimingStats(100, 1.0, 1.0, 0.9, 1.1, 0.01, 0.99, 1.01) if timed else None,
        candidate_timing=TimingStats(100, 1 / speedup, 1 / speedup, 0.1, 2, 0.01, 0.9 / speedup, 1.1 / speedup)
        if timed
        else None,
        speedup=SpeedupStats(speedup, speedup * 0.95, speedup * 1.05) if timed else None,
        guard_findings=list(findings),
        trials_passed=5,
        trials_total=5,
        device="cuda:0" if timed else "cpu",
        fingerprint={
            "torch": "2.11.0",
            "torch_cuda": "13.0",
            "triton": "3.4.0",
            "nvcc": "13.0.88",
            "python": "3.11.7",
            "driver_version": "580.1",
            "gpu": {"name": gpu if timed else None},
        },
    )


def write_run(
    path: Path, model: str, strategy: str, tasks: list[tuple[Task, list[dict]]], held_out: dict | None = None
) -> Path:
    """A run directory: config, and per task the rounds ``{mode, source, eval, judge}`` through the store; each
    task's best verified kernel (the fastest) passed its held-out shapes unless ``held_out`` gives its record."""
    held_out = held_out or {}
    cfg = CudaforgeConfig()
    cfg.coder.model, cfg.judge.model, cfg.strategy.name = model, "scripted/judge", strategy
    (path / ".hydra").mkdir(parents=True)
    (path / ".hydra" / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    store = RunStore(path)
    for task, rounds in tasks:
        ts = store.task(task.id)
        ts.write_json(None, "task.json", task.to_dict())
        history = []
        for n, spec in enumerate(rounds, start=1):
            source, ev = spec.get("source"), spec.get("eval")
            prompt = [
                {"role": "system", "content": f"You write kernels ({model})."},
                {"role": "user", "content": f"{spec['mode']} prompt for {task.id} round {n}"},
            ]
            reply = f"```python\n{source}```" if source else "I cannot."
            ts.write_json(
                n,
                "coder.json",
                {
                    "mode": spec["mode"],
                    "ok": source is not None,
                    "source": source,
                    "failure": "" if source else "no code",
                    "conversation": {"messages": prompt, "replies": [reply], "parse_errors": [""]},
                },
            )
            if source:
                ts.save_candidate(source_hash(source), source)
                ts.write_text(n, "candidate.py", source)
            if ev is not None:
                ts.write_json(None, f"eval_{ev.candidate_hash}.json", ev.to_dict())
                ts.write_json(n, "eval.json", ev.to_dict())
            if spec.get("judge"):
                mode, fields = spec["judge"]
                ts.write_json(
                    n,
                    "judge.json",
                    {
                        "mode": mode,
                        "ok": True,
                        "failure": "",
                        "feedback": {"mode": mode, "fields": fields},
                        "conversation": {
                            "messages": [{"role": "user", "content": "judge?"}],
                            "replies": [json.dumps(fields)],
                            "parse_errors": [""],
                        },
                    },
                )
            history.append(
                RoundRecord(
                    round=n,
                    coder_mode=spec["mode"],
                    candidate_hash=ev.candidate_hash if ev else None,
                    status=ev.status.value if ev else "no_code",
                )
            )
        best = max(
            (s["eval"] for s in rounds if s.get("eval") is not None and verified_result(s["eval"])),
            key=lambda ev: ev.speedup.median if ev.speedup else 0.0,
            default=None,
        )
        store.append_result(
            TaskResult(
                task_id=task.id,
                correct=any(h.status == "correct" for h in history),
                rounds=len(rounds),
                history=history,
                best_candidate_hash=best.candidate_hash if best else None,
                held_out=held_out.get(task.id, PASSED) if best else {},
            )
        )
    return path


PASSED = {"shapes": [{"shape": "odd", "status": "correct", "correct": True}], "note": ""}
"""The held-out record of a best kernel that passed its one held-out shape."""


def verified_result(ev: EvalResult) -> bool:
    return ev.status is EvalStatus.CORRECT and not any(f.get("verdict") == "reject" for f in ev.guard_findings)


L1 = Task(id="s/level1/1_Add", suite="s", level=1, problem_id=1, name="Add", source="class Model: add\n")
L2 = Task(id="s/level2/1_Scale", suite="s", level=2, problem_id=1, name="Scale", source="class Model: scale\n")


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    """Run A (GPU, model_a, cudaforge) and run B (model_b, self_refine: a duplicate and an untimed kernel)."""
    a = write_run(
        tmp_path / "run_a",
        "scripted/model_a",
        "cudaforge",
        [
            (
                L1,
                [
                    {
                        "mode": "first_attempt",
                        "source": S1,
                        "eval": result(L1.id, S1, "correct", 1.2),
                        "judge": ("optimization", MEMORY_ADVICE),
                    },
                    {
                        "mode": "optimize",
                        "source": S2,
                        "eval": result(L1.id, S2, "correct", 2.0),
                        "judge": ("optimization", OCCUPANCY_ADVICE),
                    },
                    {
                        "mode": "optimize",
                        "source": HACK_FINDING,
                        "eval": result(
                            L1.id,
                            HACK_FINDING,
                            "correct",
                            50.0,
                            [{"guard": "hidden_work", "verdict": "reject", "evidence": "host time 10x event time"}],
                        ),
                    },
                    {
                        "mode": "optimize",
                        "source": HACK_STATUS,
                        "eval": result(
                            L1.id,
                            HACK_STATUS,
                            "rejected",
                            None,
                            [{"guard": "input_mutation", "verdict": "reject", "evidence": "input 0 changed"}],
                        ),
                    },
                    {
                        "mode": "optimize",
                        "source": S1_COMMENTED,
                        "eval": result(
                            L1.id,
                            S1_COMMENTED,
                            "correct",
                            1.21,
                            [{"guard": "precision", "verdict": "report", "evidence": "fp16-sized errors"}],
                        ),
                    },
                ],
            ),
            (
                L2,
                [
                    {
                        "mode": "first_attempt",
                        "source": WRONG,
                        "eval": result(L2.id, WRONG, "incorrect"),
                        "judge": ("correction", CORRECTION),
                    },
                    {"mode": "repair", "source": S3, "eval": result(L2.id, S3, "correct", 0.8)},
                    {"mode": "optimize"},  # no code
                ],
            ),
        ],
    )
    b = write_run(
        tmp_path / "run_b",
        "other/model_b",
        "self_refine",
        [
            (
                L1,
                [
                    {"mode": "first_attempt", "source": S2, "eval": result(L1.id, S2, "correct", 1.9)},
                    {"mode": "optimize", "source": S4, "eval": result(L1.id, S4, "correct", None)},
                ],
            ),
        ],
    )
    return [a, b]


def export(runs, fmt, **kw):
    return build_rows(ExportConfig(runs=[str(r) for r in runs], format=fmt, **kw))


HACKS = {HACK_FINDING, HACK_STATUS}

# --------------------------------------------------------------------------- SFT


def test_sft_best_verified_kernel_per_task_with_provenance(runs):
    rows = export(runs, "sft")
    for row in rows:
        conform(row, SCHEMAS["sft"])
    by_task = {r["task_id"]: r for r in rows}
    assert set(by_task) == {L1.id, L2.id}
    best = by_task[L1.id]  # the hack timed at 50x is not a positive: S2 at 2.0x is the best
    assert best["source"] == S2 and best["speedup"] == 2.0 and best["speedup_ci_low"] == pytest.approx(1.9)
    assert best["gpu"] == "NVIDIA H200" and best["versions"]["torch"] == "2.11.0" and best["timed"]
    assert best["messages"][-1] == {"role": "assistant", "content": f"```python\n{S2.rstrip()}\n```"}
    assert best["prompt"][1]["content"] == f"first_attempt prompt for {L1.id} round 1"  # the task's first prompt
    p = best["provenance"]
    assert (p["run"], p["round"], p["coder_model"], p["strategy"]) == ("run_a", 2, "scripted/model_a", "cudaforge")
    assert p["candidate_hash"] == source_hash(S2) and len(p["config_hash"]) == 16 and p["config_hash"] != "unknown"
    round_prompt = export(runs, "sft", sft_prompt="round")
    assert {r["task_id"]: r for r in round_prompt}[L1.id]["prompt"][1]["content"].endswith("round 2")


def test_sft_filters_and_dedup(runs):
    every = export(runs, "sft", best_only=False)  # each run's best kernel of each task: the ones checked on held-out
    sources = [r["source"] for r in every]
    assert sorted(sources) == sorted([S2, S3])  # S2 is run_a's best and run_b's: one row
    assert not HACKS & set(sources) and WRONG not in sources
    assert len(export(runs, "sft", best_only=False, dedup=False)) == 3
    assert [r["source"] for r in export(runs, "sft", best_only=False, min_speedup=1.0)] == [S2]
    assert [r["task_id"] for r in export(runs, "sft", levels=[2])] == [L2.id]
    assert {r["provenance"]["coder_model"] for r in export(runs, "sft", best_only=False, models=["other/*"])} == {
        "other/model_b"
    }
    assert {r["provenance"]["strategy"] for r in export(runs, "sft", strategies=["self_refine"])} == {"self_refine"}
    assert [r["task_id"] for r in export(runs, "sft", tasks=["*Scale"])] == [L2.id]


def test_a_positive_passed_every_check_and_the_rest_say_why_not_in_turns(runs, tmp_path):
    """Issue 53: a verified kernel that failed a held-out shape, that carries a hollow finding, or that a looser
    protocol judged is not an SFT positive; its turn says why."""
    turns = export(runs, "turns")
    coder = {(r["provenance"]["run"], r["round"]): r for r in turns if r["role"] == "coder" and r["task_id"] == L1.id}
    assert coder[("run_a", 2)]["positive"] and coder[("run_a", 2)]["not_positive"] == []
    assert coder[("run_a", 5)]["verified"] and not coder[("run_a", 5)]["positive"]  # precision finding, not best
    assert "finding: precision" in coder[("run_a", 5)]["not_positive"]
    assert "held-out shapes: not passed (or not checked)" in coder[("run_a", 1)]["not_positive"]

    failed = {"shapes": [{"shape": "odd", "status": "incorrect", "correct": False}]}
    spec = [{"mode": "first_attempt", "source": S1, "eval": result(L1.id, S1, "correct", 1.2)}]
    wrong_shape = write_run(tmp_path / "held", "scripted/m", "cudaforge", [(L1, spec)], held_out={L1.id: failed})
    assert export([wrong_shape], "sft") == []
    hollow = [
        {
            "mode": "first_attempt",
            "source": S1,
            "eval": result(
                L1.id, S1, "correct", 1.2, [{"guard": "torch_compute", "verdict": "report", "evidence": "F.relu"}]
            ),
        }
    ]
    assert export([write_run(tmp_path / "hollow", "scripted/m", "cudaforge", [(L1, hollow)])], "sft") == []
    authors = write_run(tmp_path / "authors", "scripted/m", "cudaforge", [(L1, spec)])
    config = authors / ".hydra" / "config.yaml"
    config.write_text(config.read_text().replace("guards_enforce: true", "guards_enforce: false"))
    assert export([authors], "sft") == []
    (turn,) = [r for r in export([authors], "turns") if r["role"] == "coder"]
    assert turn["not_positive"] == ["protocol: guards_enforce=False"]


def test_a_deep_expression_does_not_stop_an_export(tmp_path):
    deep = kernel(" + ".join(["x"] * 3000))
    spec = [{"mode": "first_attempt", "source": deep, "eval": result(L1.id, deep, "correct", 1.5)}]
    run = write_run(tmp_path / "deep", "scripted/m", "cudaforge", [(L1, spec)])
    for fmt in ("sft", "turns", "preferences"):
        export([run], fmt)  # no RecursionError
    assert [r["source"] for r in export([run], "sft")] == [deep]


# --------------------------------------------------------------------------- trajectories


def test_trajectories_every_round_with_rewards(runs):
    rows = export(runs, "trajectories")
    for row in rows:
        conform(row, SCHEMAS["trajectories"])
    a1 = next(r for r in rows if r["task_id"] == L1.id and r["provenance"]["run"] == "run_a")
    assert [x["eval"]["status"] for x in a1["rounds"]] == ["correct", "correct", "correct", "rejected", "correct"]
    assert a1["rewards"] == pytest.approx([1.2, 2.0, -1.0, -1.0, 1.21])  # correct x speedup; hacks -1
    assert [x["eval"]["hacked"] for x in a1["rounds"]] == [False, False, True, True, False]
    assert a1["rounds"][2]["eval"]["speedup"] is None  # a hacked kernel's speedup is not reported as one
    assert a1["best_speedup"] == 2.0 and a1["solved"] and a1["provenance"]["round"] is None
    assert (
        "vectorise the loads" in a1["rounds"][0]["judge_feedback"] and a1["rounds"][0]["judge_mode"] == "optimization"
    )
    assert "hidden_work (reject)" in a1["rounds"][2]["eval_summary"]
    roles = [m["role"] for m in a1["messages"]]
    assert roles[0] == "system" and roles.count("system") == 1 and roles[1:] == ["user", "assistant"] * 5
    a2 = next(r for r in rows if r["task_id"] == L2.id)
    assert a2["rewards"] == pytest.approx([0.0, 0.8, 0.0]) and a2["rounds"][2]["eval"]["status"] == "no_code"
    assert "sign error" in a2["rounds"][0]["judge_feedback"]


def test_turns_label_every_coder_and_judge_turn_negatives_and_hacks_included(runs):
    a = runs[0]
    # the metrics the Judge read in round 1 of L1, profiled on that round's kernel
    store = RunStore(a)
    store.task(L1.id).write_json(
        1,
        "profile.json",
        {
            "candidate_hash": source_hash(S1),
            "status": "ok",
            "judge_metrics": {
                "dram__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 71.5, "unit": "%"},
                "launch": "grid 64 block 256",
            },
        },
    )
    # the best kernel of L2 failed a held-out shape
    store.append_result(
        TaskResult(
            task_id=L2.id,
            correct=True,
            best_candidate_hash=source_hash(S3),
            rounds=3,
            held_out={"shapes": [{"shape": "odd", "status": "incorrect", "correct": False}]},
        )
    )
    rows = [r for r in export(runs, "turns") if r["provenance"]["run"] == "run_a"]
    coder = {(r["task_id"], r["round"]): r for r in rows if r["role"] == "coder"}
    judge = {(r["task_id"], r["round"]): r for r in rows if r["role"] == "judge"}
    assert [coder[L1.id, n]["label"] for n in range(1, 6)] == ["verified", "verified", "hacked", "hacked", "verified"]
    assert [coder[L2.id, n]["label"] for n in range(1, 4)] == ["incorrect", "verified", "no_code"]
    assert sorted(judge) == [(L1.id, 1), (L1.id, 2), (L2.id, 1)]
    hack = coder[L1.id, 3]
    assert hack["hacked"] and not hack["verified"] and hack["reward"] == -1.0 and hack["eval"]["speedup"] is None
    assert hack["guard_findings"] == [
        {"guard": "hidden_work", "verdict": "reject", "evidence": "host time 10x event time"}
    ]
    assert coder[L1.id, 5]["guard_findings"][0]["verdict"] == "report" and coder[L1.id, 5]["verified"]
    first = coder[L1.id, 1]
    assert (
        first["messages"][-1]["content"].startswith("first_attempt prompt")
        and first["completion"][0]["role"] == "assistant"
    )
    assert first["profile_metrics"][0] == {
        "name": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "value": 71.5,
        "unit": "%",
        "text": None,
    }
    assert first["profile_metrics"][1]["text"] == "grid 64 block 256" and coder[L1.id, 2]["profile_metrics"] == []
    assert judge[L1.id, 1]["profile_metrics"] == first["profile_metrics"] and judge[L1.id, 1]["reward"] is None
    assert "bottleneck: memory bandwidth" in judge[L1.id, 1]["feedback"] and judge[L1.id, 1]["mode"] == "optimization"
    assert judge[L2.id, 1]["label"] == "incorrect" and judge[L2.id, 1]["completion"][0]["role"] == "assistant"
    assert coder[L2.id, 2]["held_out_correct"] is False and coder[L1.id, 1]["held_out_correct"] is None
    assert coder[L2.id, 3]["completion"] == [{"role": "assistant", "content": "I cannot."}]


def test_turns_say_how_a_speedup_was_measured():
    from cudaforge.teach.export import precision_info

    timed = result(L1.id, S1, "correct", 1.5)
    timed.speedup.precision = "strict_fp32"
    timed.precision = {
        "speedups": {
            "over_strict_fp32": 1.5,
            "best_allowed": "tf32",
            "over_best_allowed": 0.9,
            "probe_reproduces_win": True,
        }
    }
    assert precision_info(timed) == {
        "reference": "strict_fp32",
        "over_strict_fp32": 1.5,
        "best_allowed": "tf32",
        "over_best_allowed": 0.9,
        "probe_reproduces_win": True,
        "launch_inclusive": None,
        "timing_clean": None,
    }
    assert set(precision_info(result(L1.id, S1, "correct"))) == set(SCHEMAS["turns"]["precision"])
    assert all(v is None for v in precision_info(None).values())


def test_reward_is_configurable(runs):
    def rewards(**kw):
        rows = export(runs, "trajectories", reward=RewardConfig(**kw))
        return {(r["provenance"]["run"], r["task_id"]): r["rewards"] for r in rows}

    binary = rewards(kind="binary", hacked=-5.0, failed=-0.5, no_code=-1.0)
    assert binary[("run_a", L1.id)] == [1.0, 1.0, -5.0, -5.0, 1.0]
    assert binary[("run_a", L2.id)] == [-0.5, 1.0, -1.0]
    logs = rewards(kind="log_speedup", max_speedup=1.5)
    assert logs[("run_a", L1.id)][:2] == pytest.approx([math.log(1.2), math.log(1.5)])
    untimed = rewards(kind="speedup", untimed_speedup=0.5)
    assert untimed[("run_b", L1.id)] == [1.9, 0.5]
    assert len(export(runs, "trajectories", min_speedup=1.95)) == 1  # only run A's L1 reached 1.95x


# --------------------------------------------------------------------------- preferences


def test_preferences_chosen_is_always_verified(runs):
    rows = export(runs, "preferences")
    for row in rows:
        conform(row, SCHEMAS["preferences"])
        chosen = row["chosen_info"]
        assert chosen["eval"]["verified"] and not chosen["eval"]["hacked"] and chosen["eval"]["status"] == "correct"
        assert chosen["source"] not in HACKS | {WRONG}
        assert row["chosen"][0]["content"] != row["rejected"][0]["content"]
    reasons = {(r["task_id"], r["reason"]) for r in rows}
    assert {(L1.id, "verified_over_hacked"), (L1.id, "faster"), (L2.id, "verified_over_incorrect")} <= reasons
    hacked = [r for r in rows if r["reason"] == "verified_over_hacked"]
    assert {r["rejected_info"]["source"] for r in hacked} == HACKS and all(
        r["rejected_info"]["reward"] == -1 for r in hacked
    )
    faster = [r for r in rows if r["reason"] == "faster"]
    assert all(r["chosen_info"]["eval"]["speedup"] >= 1.05 * r["rejected_info"]["eval"]["speedup"] for r in faster)
    # run A and run B saw different prompts (other models): never paired across them
    assert all(r["chosen_info"]["provenance"]["run"] == r["rejected_info"]["provenance"]["run"] for r in rows)
    assert not [r for r in export(runs, "preferences", min_margin=10.0) if r["reason"] == "faster"]
    assert len([r for r in export(runs, "preferences", max_pairs_per_task=1) if r["task_id"] == L1.id]) == 1
    keys = [
        (r["chosen_info"]["provenance"]["normalized_hash"], r["rejected_info"]["provenance"]["normalized_hash"])
        for r in rows
    ]
    assert len(keys) == len(set(keys))


# --------------------------------------------------------------------------- files


def test_written_datasets_are_loadable(runs, tmp_path):
    for fmt in SCHEMAS:
        out = tmp_path / "export" / fmt
        written = export_dataset(ExportConfig(runs=[str(r) for r in runs], format=fmt, out_dir=str(out)))
        lines = (out / "train.jsonl").read_text().splitlines()
        assert written.rows == len(lines) > 0
        rows = [json.loads(line) for line in lines]
        assert all(list(row) == list(SCHEMAS[fmt]) for row in rows)  # same columns, same order, every row
        info = json.loads((out / "dataset_info.json").read_text())
        assert (
            info["num_rows"] == len(rows) and info["schema"] == SCHEMAS[fmt] and info["runs"] == [str(r) for r in runs]
        )
        card = (out / "README.md").read_text()
        assert card.startswith("---\ndataset_info:\n  features:") and "- name: provenance" in card
        try:
            import datasets
        except ImportError:
            datasets = None
        if datasets is not None:
            ds = datasets.load_dataset("json", data_files=str(out / "train.jsonl"), split="train")
            assert len(ds) == len(rows) and set(ds.column_names) == set(SCHEMAS[fmt])
            assert len(datasets.load_dataset(str(out), split="train")) == len(rows)
        else:  # datasets reads JSON Lines with pyarrow; check that it reads one table
            pyarrow_json = pytest.importorskip("pyarrow.json")
            table = pyarrow_json.read_json(out / "train.jsonl")
            assert table.num_rows == len(rows) and table.column_names == list(SCHEMAS[fmt])


def test_schema_check_names_the_mismatch():
    with pytest.raises(SchemaError, match="missing"):
        conform({"id": "x"}, SCHEMAS["sft"])
    with pytest.raises(SchemaError, match=r"row\.level: expected int64"):
        conform({"level": "one"}, {"level": "int64"})
    assert conform({"a": 2, "b": float("nan")}, {"a": "float64", "b": "float64"}) == {"a": 2.0, "b": None}


def test_run_directories_come_as_positional_arguments(tmp_path):
    given = [str(tmp_path), "format=trajectories", "reward.kind=binary", "levels=[1]", "--cfg", "job", "suite=tiny"]
    args = positional_runs(group_keys("export", ExportConfig, given), "export.runs")
    assert args[0] == f"export.runs=['{tmp_path.resolve()}']"
    assert args[1:] == [
        "export.format=trajectories",
        "export.reward.kind=binary",
        "export.levels=[1]",
        "--cfg",
        "job",
        "suite=tiny",
    ]


def test_export_cli(runs, tmp_path, capsys):
    from cudaforge.cli import main

    out = tmp_path / "cli_sft"
    assert main(["export", str(runs[0]), str(runs[1]), "format=sft", f"out_dir={out}", "min_speedup=1.5"]) == 0
    assert "1 sft rows from 2 run(s)" in capsys.readouterr().out
    assert json.loads((out / "train.jsonl").read_text())["source"] == S2


# --------------------------------------------------------------------------- skills

LONG_SKILL = "\n".join(
    [
        "## memory-bound",
        *[f"- vectorise loads and stores with float4 to cut memory transactions, tip {i}" for i in range(40)],
        "## Evidence",
        "- made up by the model",
    ]
)


def distiller(tmp_path: Path, name: str, replies, mode: str = "read_write"):
    install_script(name, replies)
    cache = ResponseCache(tmp_path / f"{name}.sqlite", mode)
    ledger = Ledger(tmp_path / f"{name}.jsonl")
    return LLMClient(LLMConfig(model=f"scripted/{name}"), role="distiller", cache=cache, ledger=ledger), ledger


def test_distill_groups_advice_that_led_to_verified_speedups(runs, tmp_path):
    tasks = load_tasks([str(r) for r in runs])
    client, ledger = distiller(tmp_path, "t_distill", [LONG_SKILL])
    result = distill(tasks, client, max_words=60, max_evidence=2)
    doc = result.document
    # only round 1's advice qualifies: round 2's was followed by a hacked kernel, the correction by a repair
    assert [(e.task_id, e.round, e.category) for e in result.evidence] == [(L1.id, 1, "memory-bound")]
    assert result.evidence[0].gain == pytest.approx(2.0 / 1.2)
    assert len(doc.guidance.split()) <= 60 and doc.meta["truncated"] and doc.meta["guidance_words"] <= 60
    assert "made up by the model" not in doc.body()
    body = doc.body()
    assert body.startswith("# Skill:") and "## Evidence" in body
    assert f"- memory-bound: {L1.id} (1.20x -> 2.00x, 1.67x gain; rounds 1->2; run run_a)" in body
    prompt = client.cache.request(ledger.rows[0].request_key)["messages"][0]["content"]
    assert "### memory-bound" in prompt and "vectorise the loads and stores" in prompt and "At most 60 words" in prompt
    assert ledger.rows[0].role == "distiller" and ledger.rows[0].meta["purpose"] == "skill_distill"
    text = doc.markdown()
    assert text.startswith("---\n") and "distilled_by: scripted/t_distill" in text
    assert strip_front_matter(text) == body.strip()
    client.cache.close()
    replay, _ = distiller(tmp_path, "t_distill", [], mode="replay_only")  # recorded: replayed without the model
    assert distill(tasks, replay, max_words=60, max_evidence=2).document.markdown() == text


def test_distill_untimed_runs_need_allow_untimed(runs, tmp_path):
    untimed = [
        replace(t, rounds=[replace(r, eval=replace(r.eval, speedup=None)) if r.eval else r for r in t.rounds])
        for t in load_tasks([str(runs[0])])
    ]
    client, _ = distiller(tmp_path, "t_untimed", ["## memory-bound\n- vectorise"] * 2)
    with pytest.raises(ValueError) as info:
        distill(untimed, client)
    message = str(info.value)
    assert (
        "\n" not in message
        and "add allow_untimed=true" in message
        and "no kernel in the 1 run(s), 2 task(s) was timed (a run without a GPU measures no speedup)" in message
        and "1 piece(s) of Judge advice" in message
    )
    result = distill(untimed, client, allow_untimed=True)
    body = result.document.body()
    assert "verified, untimed" in body and result.document.meta["evidence"]["timed"] == 0
    # said under the title, not passed off as speedups
    assert body.startswith(
        "# Skill: optimisation advice followed by verified, untimed kernels (memory-bound)\n\n"
        "> Untimed evidence: 1 of 1 piece(s) of advice were followed by a new verified-correct "
        "kernel whose speed was not measured (no GPU), not by a measured speedup.\n"
    )
    timed = distill(load_tasks([str(runs[0])]), client).document.body()
    assert "Untimed evidence" not in timed and "paid off" in timed


def test_categories_and_word_cap():
    assert categorize(MEMORY_ADVICE) == "memory-bound" and categorize(OCCUPANCY_ADVICE) == "occupancy"
    assert categorize({"bottleneck": "warp stalls on long scoreboard"}) == "stalls and latency"
    assert (
        categorize({"bottleneck": "?", "optimisation_method": "fuse the two kernels"}) == "launch overhead and fusion"
    )
    assert categorize({"bottleneck": "mystery"}) == "other"
    assert categorize({"bottleneck": "mystery"}, {"custom": ["myst"]}) == "custom"
    text, cut = cap_words("## a\n- one two three\n## b\n- four five six", 6)
    assert cut and text == "## a\n- one two three"


def test_coder_prompt_renders_a_skill(tmp_path, monkeypatch):
    skill = tmp_path / "skill.md"
    skill.write_text("---\nskill: x\n---\n\n# Skill: memory\n\n## memory-bound\n- use float4 loads\n")
    monkeypatch.chdir(tmp_path)
    texts = read_skills(["skill.md"])
    assert texts == ("# Skill: memory\n\n## memory-bound\n- use float4 loads",)
    with pytest.raises(FileNotFoundError, match="skill distill"):
        read_skills(["missing.md"])

    class Echo:
        def __init__(self):
            self.prompts = []

        def complete(self, messages, **meta):
            self.prompts.append(messages[-1]["content"])
            return type("R", (), {"text": "```python\nclass ModelNew: pass\n```", "finish_reason": "stop"})()

    llm = Echo()
    coder = Coder(llm, PromptLibrary(), skills=texts)
    coder.first_attempt(L1)
    coder.optimize(L1, S1, feedback=Feedback(JudgeMode.optimization, MEMORY_ADVICE))
    coder.repair(L1, WRONG, result(L1.id, WRONG, "incorrect"))
    first, optimize, repair = llm.prompts
    for prompt in (first, optimize):
        assert "Skills distilled from earlier verified runs" in prompt and "- use float4 loads" in prompt
        assert "skill: x" not in prompt
    assert "float4" not in repair
    plain = Echo()
    Coder(plain, PromptLibrary()).first_attempt(L1)
    assert "Skills distilled" not in plain.prompts[0]


def test_skill_experiment_overlays_compose():
    from hydra import compose, initialize_config_dir

    from cudaforge.config import register_configs
    from cudaforge.paths import CONFIG_DIR

    register_configs()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        with_skill = compose(config_name="cudaforge", overrides=["experiment=skill_with", "skill.out=/s/k.md"])
        without = compose(config_name="cudaforge", overrides=["experiment=skill_without", "skill.out=/s/k.md"])
    assert OmegaConf.to_object(with_skill).coder.skills == ["/s/k.md"]
    assert OmegaConf.to_object(without).coder.skills == []
    assert with_skill.coder.model == without.coder.model and with_skill.suite == without.suite


def test_skill_effect_is_paired_with_intervals(tmp_path):
    def arm(name, speedups):
        store = RunStore(tmp_path / name)
        for i, s in enumerate(speedups):
            store.append_result(TaskResult(task_id=f"s/level1/{i}_T", correct=s is not None, best_speedup=s))
        return store.root

    with_run = arm("with", [2.0, 1.5, 3.0, None, 1.2, 2.4])
    without_run = arm("without", [1.0, 1.5, 2.0, None, 0.6, 1.2])
    effects, notes = skill_effect(with_run, without_run, bootstrap=200)
    by = {e.metric: e for e in effects}
    assert by["correct_pct"].difference == 0 and by["perf"].difference == pytest.approx((10.1 - 6.3) / 6)
    ratio = by["geomean_ratio"]
    assert ratio.n == 5 and ratio.difference > 1 and ratio.low <= ratio.difference <= ratio.high
    assert by["perf"].low <= by["perf"].difference <= by["perf"].high
    assert "6 shared task(s)" in notes[0]


# --------------------------------------------------------------------------- the real loop (CPU, demo transcript)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """Two rounds of the real loop on tiny ReLU: the demo transcript's Triton kernels, evaluated on the CPU."""
    from cudaforge.run.demo import install_demo
    from cudaforge.run.runner import make_context, run_one
    from cudaforge.tasks import find_task, selection

    tmp = tmp_path_factory.mktemp("demo")
    install_demo()
    cfg = CudaforgeConfig()
    cfg.coder.model = cfg.judge.model = "scripted/demo"
    cfg.strategy.max_rounds = 2
    cfg.eval.device, cfg.eval.correctness_trials, cfg.eval.check_variants = "cpu", 1, False
    cfg.eval.build_cache_dir = str(tmp / "build")
    cfg.profile.enabled = False
    ctx = make_context(cfg, tmp / "run")
    run_one(ctx, find_task(selection("tiny"), "level1/1_ReLU"))
    return tmp / "run"


@pytest.mark.slow
def test_demo_and_replayed_runs_say_so_at_the_top_of_the_card(demo_run, runs, tmp_path):
    out = tmp_path / "demo_sft"
    written = export_dataset(ExportConfig(runs=[str(demo_run)], format="sft", out_dir=str(out)))
    card = (out / "README.md").read_text()
    title, first = card.split("# cudaforge sft export\n\n")[1].split("\n")[:2], card.index("# cudaforge sft export")
    assert (
        title[0].startswith(
            "> **Demo data, not model output.** These kernels come from a hand-written demo "
            "transcript (model `scripted/demo`"
        )
        and "do not use them as training data" in title[0]
    )
    assert card.index("Demo data") < card.index("Positives are verified") and first < card.index("Demo data")
    assert written.notices == json.loads((out / "dataset_info.json").read_text())["notices"] == [title[0][2:]]
    mixed = export_dataset(ExportConfig(runs=[str(demo_run), str(runs[1])], format="sft", out_dir=str(tmp_path / "m")))
    assert [n[:80] for n in mixed.notices] == [
        "**Demo data, not model output.** The kernels of run(s) `run` come from a hand-wr"
    ]
    # a run whose every call was a cache hit (or that ran with llm_cache.mode=replay_only) was replayed
    (runs[0] / "ledger.jsonl").write_text(
        json.dumps({"role": "coder", "model": "scripted/model_a", "cache_hit": True}) + "\n"
    )
    both = export_dataset(ExportConfig(runs=[str(r) for r in runs], format="sft", out_dir=str(tmp_path / "both")))
    assert len(both.notices) == 1 and both.notices[0].startswith(
        "**Replayed from cache.** The LLM replies of run(s) `run_a` were served from a response cache"
    )
    assert "> **Replayed from cache.**" in (tmp_path / "both" / "README.md").read_text()
    (runs[0] / "ledger.jsonl").unlink()
    plain = export_dataset(ExportConfig(runs=[str(r) for r in runs], format="sft", out_dir=str(tmp_path / "plain")))
    assert plain.notices == [] and "\n> " not in (tmp_path / "plain" / "README.md").read_text()


@pytest.mark.slow
def test_an_untimed_run_is_distilled_from_untimed_evidence_unless_told_not_to(demo_run, tmp_path, capsys):
    """allow_untimed=null (the default): a run where nothing was timed (no GPU) is distilled from advice followed by
    new verified kernels, and the skill says its evidence is untimed; allow_untimed=false refuses in one line."""
    from cudaforge.cli import main

    assert main(["skill", "distill", str(demo_run), f"out={tmp_path / 'skill.md'}"]) == 0
    skill = (tmp_path / "skill.md").read_text()
    assert "untimed" in skill.split("\n\n", 2)[0] + skill.split("\n\n", 2)[1]
    capsys.readouterr()
    assert main(["skill", "distill", str(demo_run), f"out={tmp_path / 'no.md'}", "allow_untimed=false"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cudaforge skill distill: error: nothing to distil: no kernel in the")
    assert "add allow_untimed=true" in err[0] and not (tmp_path / "no.md").exists()


@pytest.mark.slow
def test_exports_and_distillation_of_a_real_cpu_run(demo_run, tmp_path):
    rounds = load_tasks([str(demo_run)])[0].rounds
    for fmt in SCHEMAS:
        rows = export([demo_run], fmt)
        for row in rows:
            conform(row, SCHEMAS[fmt])
        if fmt == "sft":
            # the fixture's run has no .hydra config and checks one trial without variants: looser than the
            # default protocol, so none of its verified kernels is a positive (docs/teaching.md)
            assert rows == []
        if fmt == "turns":
            verified_hashes = {
                r.candidate_hash
                for r in rounds
                if r.eval
                and r.eval.status is EvalStatus.CORRECT
                and not any(f.get("verdict") == "reject" for f in r.eval.guard_findings)
            }
            labelled = [t for t in rows if t["provenance"]["candidate_hash"] in verified_hashes]
            assert labelled and all(t["eval"]["speedup"] is None and t["eval"]["device"] == "cpu" for t in labelled)
            assert all(t["provenance"]["coder_model"] == "scripted/demo" for t in labelled)
            assert all(not t["positive"] and "protocol: no config" in t["not_positive"] for t in labelled)
        if fmt == "trajectories":
            assert [x["round"] for x in rows[0]["rounds"]] == [r.round for r in rounds]
            assert rows[0]["rounds"][0]["coder_messages"][0]["role"] == "system"
    client, _ = distiller(tmp_path, "t_demo_distill", ["## memory-bound\n- stream more data per program"])
    result = distill(load_tasks([str(demo_run)]), client, allow_untimed=True)
    assert "tiny/level1/1_ReLU (verified, untimed; rounds 1->2" in result.document.body()
