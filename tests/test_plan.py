"""``cudaforge plan``: a campaign's expected dollars, calls and hours, and afterwards the same measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402
from conftest import o3_config as o3  # noqa: E402

from cudaforge.config import CudaforgeConfig  # noqa: E402
from cudaforge.graph.strategies import get_strategy  # noqa: E402
from cudaforge.run import plan as planning  # noqa: E402


def test_calls_follow_the_strategy():
    assert planning.calls_per_task(get_strategy("cudaforge"), 10) == {"coder": 10, "judge": 9}
    assert planning.calls_per_task(get_strategy("one_shot"), 1) == {"coder": 1, "judge": 0}
    assert planning.calls_per_task(get_strategy("self_refine"), 10) == {"coder": 10, "judge": 0}
    plan = planning.make_plan(o3(name="one_shot"), 4, planning.default_figures(o3().plan, "cpu"), 1)
    assert plan["rounds"] == 1 and plan["calls"] == {"coder": 4, "judge": 0}


def test_the_defaults_reproduce_the_papers_cost_and_minutes_per_kernel():
    cfg = o3()  # the paper: o3 as both agents, 10 rounds: $0.30 and 26.5 minutes a kernel (Table 3, overall)
    plan = planning.make_plan(cfg, 25, planning.default_figures(cfg.plan, "NVIDIA H200"), 1)
    assert plan["calls"] == {"coder": 250, "judge": 225}
    assert plan["dollars"] / 25 == pytest.approx(0.30, rel=0.05)
    assert plan["minutes_per_kernel"] == pytest.approx(26.5, rel=0.05)
    assert plan["task_hours"] == pytest.approx(25 * plan["minutes_per_kernel"] / 60)
    assert "stored benchmark for NVIDIA H200" in plan["sources"]["round_seconds"]
    assert plan["wall_hours"] == pytest.approx(plan["task_hours"])  # one task at a time on one node


def test_wall_clock_is_bound_by_tasks_at_a_time_or_by_the_gpus():
    cfg = o3()
    cfg.concurrency, cfg.plan.nodes = 8, 2
    figures = planning.default_figures(cfg.plan, "NVIDIA H200")
    lanes = planning.make_plan(cfg, 160, figures, 8)
    assert lanes["wall_hours"] == pytest.approx(lanes["task_hours"] / 16)  # 8 tasks on each of 2 nodes
    figures.gpu_seconds = figures.round_seconds = 600.0  # rounds that hold a GPU for ten minutes
    gpu_bound = planning.make_plan(cfg, 160, figures, 1)
    assert gpu_bound["wall_hours"] == pytest.approx(160 * 10 * 600 / 2 / 3600)  # 1 GPU a node: the GPUs bound it


def test_unknown_round_time_and_unpriced_models_are_said_not_guessed():
    cfg = o3()
    cfg.judge.model = "hosted_vllm/some/unpriced-model"
    plan = planning.make_plan(cfg, 3, planning.default_figures(cfg.plan, "Some Future GPU"), 1)
    assert plan["task_hours"] is None and plan["wall_hours"] is None and plan["minutes_per_kernel"] is None
    assert plan["dollars"] is None and plan["unpriced"] == ["judge"] and plan["dollars_by_role"]["coder"] > 0
    text = planning.explain(plan) + planning.table(plan)
    assert "no stored benchmark for Some Future GPU" in text and "no price for the judge model" in text
    assert "| dollars | unpriced |" in text and "| wall clock | unknown |" in text
    cfg.plan.round_seconds = 30.0
    assert planning.make_plan(cfg, 3, planning.default_figures(cfg.plan, "Some Future GPU"), 1)["task_hours"]


def test_demo_models_take_no_llm_time_and_cost_nothing():
    cfg = CudaforgeConfig()  # the offline demo on both agents
    plan = planning.make_plan(cfg, 3, planning.default_figures(cfg.plan, "cpu"), 1)
    assert plan["dollars"] == 0.0 and plan["figures"]["llm_seconds"] == {"coder": 0.0, "judge": 0.0}
    assert plan["minutes_per_kernel"] == pytest.approx(10 * 1.2 / 60)


@pytest.mark.slow
def test_a_run_writes_its_plan_and_plan_run_dir_sets_it_beside_what_it_took(tmp_path):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "WANDB_MODE": "disabled"}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "cudaforge.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=600,
        )

    run_dir = tmp_path / "run"
    out = cli(
        "run",
        "strategy.max_rounds=2",
        "tracker=disabled",
        "profile.enabled=false",
        "eval.held_out_shapes=false",  # checked after the loop, outside the rounds the plan counts and times
        f"hydra.run.dir={run_dir}",
    )
    assert out.returncode == 0, out.stderr[-2000:]
    saved = json.loads((run_dir / planning.PLAN_FILE).read_text())
    assert saved["tasks"] == 3 and saved["calls"] == {"coder": 6, "judge": 3}
    shown = cli("plan", str(run_dir))
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "| Coder calls | 6 | 6 |" in shown.stdout and "| Judge calls | 3 | 3 |" in shown.stdout
    assert "| dollars | $0.00 | $0.00 |" in shown.stdout
    pilot = cli(
        "plan",
        "suite=main",
        "coder=claude_sonnet_4",
        "judge=claude_sonnet_4",
        f"plan.from_run={run_dir}",
        f"output={tmp_path / 'plan.json'}",
    )
    assert pilot.returncode == 0, pilot.stderr[-2000:]
    plan = json.loads((tmp_path / "plan.json").read_text())
    measured = planning.measured_figures(run_dir)
    assert (
        plan["figures"]["input_tokens"] == pytest.approx(measured.input_tokens) and measured.input_tokens["coder"] > 0
    )
    assert plan["sources"]["round_seconds"] == f"measured in {run_dir}" and plan["calls"]["coder"] == 300
    assert cli("plan", str(tmp_path / "nowhere")).returncode == 2


def test_a_run_config_written_before_the_guards_were_nested_still_plans(tmp_path):
    """A run's ``.hydra/config.yaml`` from before the guard policies moved under ``eval.guards`` (``guard_<guard>``
    keys, as every run wrote them) still reads as a config: the policies land under their guards."""
    import yaml
    from omegaconf import OmegaConf

    from cudaforge.cli.plan import _run_config
    from cudaforge.config import CudaforgeConfig

    saved = OmegaConf.to_container(OmegaConf.structured(CudaforgeConfig), enum_to_str=True)
    guards = saved["eval"].pop("guards")
    saved["eval"].update({f"guard_{name}": policy for name, policy in guards.items()})
    saved["eval"]["guard_hidden_work"] = "report"
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text(yaml.safe_dump(saved))
    config = _run_config(tmp_path)
    assert config.eval.guards.hidden_work.value == "report" and config.eval.guards.io.value == "reject"
