"""Your own model behind an OpenAI-compatible server, and outages of the provider: against a stand-in server
(``tests/standins/llm_server.py``) reached over real HTTP by the real litellm client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from standins.llm_server import StandInServer
from test_config import compose_with

OWN = ["coder=openai_compatible", "judge=openai_compatible"]


def own_config(url: str, name: str, *more: str):
    return OmegaConf.to_object(compose_with([*OWN, f"coder.api_base={url}", f"coder.model={name}", *more]))


def test_one_command_spells_the_model_for_litellm_and_the_judge_follows_the_coder():
    cfg = own_config(
        "http://127.0.0.1:9/v1",
        "Qwen/Qwen2.5-Coder-32B",
        "coder.input_cost_per_token=1e-7",
        "coder.output_cost_per_token=2e-7",
    )
    assert cfg.coder.model == cfg.judge.model == "hosted_vllm/Qwen/Qwen2.5-Coder-32B"
    assert cfg.judge.api_base == "http://127.0.0.1:9/v1"
    assert (cfg.judge.input_cost_per_token, cfg.judge.output_cost_per_token) == (1e-7, 2e-7)
    again = own_config("http://h/v1", "hosted_vllm/m")  # already spelled: not prefixed twice
    assert again.coder.model == "hosted_vllm/m"


def test_the_model_and_server_are_required():
    from cudaforge.cli.checks import check_values

    problems = check_values(compose_with(OWN))
    assert any(p.startswith("coder.model: not set; coder=openai_compatible needs coder.model=NAME") for p in problems)
    assert any(p.startswith("coder.api_base: not set") for p in problems)
    assert any(p.startswith("judge.model: not set; judge=openai_compatible needs coder.model=") for p in problems)
    assert check_values(compose_with([*OWN, "coder.model=m", "coder.api_base=http://h/v1"])) == []


def test_preflight_asks_the_server_which_models_it_serves_and_demands_no_key(monkeypatch):
    from cudaforge.run.preflight import check_config

    for key in ("OPENAI_API_KEY", "HOSTED_VLLM_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    with StandInServer("my-coder") as server:
        assert check_config(own_config(server.url, "my-coder"), ["tiny/level1/1_ReLU"]) == []
        assert ("/v1/models", "200") in server.requests
        problems = check_config(own_config(server.url, "not-served"), ["tiny/level1/1_ReLU"])
        assert [p.check for p in problems] == ["served"]
        assert "does not serve 'not-served'" in problems[0].message and "my-coder" in problems[0].message
        # the natural mistake: a bare served name with a server address but no provider
        bare = OmegaConf.to_object(
            compose_with(
                [
                    "coder=local_vllm",
                    "judge=local_vllm",
                    f"coder.api_base={server.url}",
                    f"judge.api_base={server.url}",
                    "coder.model=my-coder",
                    "judge.model=my-coder",
                ]
            )
        )
        problems = check_config(bare, ["tiny/level1/1_ReLU"])
        assert [p.check for p in problems] == ["provider"]
        assert "coder=openai_compatible coder.model=my-coder" in problems[0].fix
    with StandInServer("my-coder", api_key="sekrit") as server:
        problems = check_config(own_config(server.url, "my-coder"), ["tiny/level1/1_ReLU"])
        assert [p.check for p in problems] == ["api_key"] and "HOSTED_VLLM_API_KEY" in problems[0].fix
        monkeypatch.setenv("HOSTED_VLLM_API_KEY", "sekrit")
        assert check_config(own_config(server.url, "my-coder"), ["tiny/level1/1_ReLU"]) == []


def test_custom_prices_bound_the_cost_once_the_window_is_known():
    from cudaforge.run.preflight import estimate_cost

    priced = ["coder.input_cost_per_token=1e-6", "coder.output_cost_per_token=2e-6", "strategy.max_dollars=1"]
    line = estimate_cost(own_config("http://h/v1", "m", *priced), 10).line()
    assert "set input_cost_per_token" not in line and "coder.max_input_tokens" in line and "max_dollars=1" in line
    sized = own_config("http://h/v1", "m", *priced, "coder.max_input_tokens=32768", "coder.max_tokens=8192")
    estimate = estimate_cost(sized, 10)
    one_call = 32768 * 1e-6 + 8192 * 2e-6
    assert estimate.max_usd is not None and estimate.per_task_usd <= 1 + 2 * 2 * one_call + 1e-9


def _cli(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "HOSTED_VLLM_API_KEY")}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", WANDB_MODE="disabled")
    return subprocess.run(
        [sys.executable, "-m", "cudaforge.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _run_args(server: StandInServer, run_dir: Path, *more: str) -> list[str]:
    return [
        "run",
        *OWN,
        f"coder.api_base={server.url}",
        f"coder.model={server.name}",
        "strategy.max_rounds=2",
        "tracker=disabled",
        "coder.max_retries=2",
        "coder.retry_base_delay_s=0.01",
        "judge.max_retries=2",
        "judge.retry_base_delay_s=0.01",
        "profile=off",
        "eval.device=cpu",  # a CPU run on purpose: without it pre-flight refuses a model run on a machine without a GPU
        "eval.held_out_shapes=false",  # after the loop, no model call: an outage does not reach them
        f"hydra.run.dir={run_dir}",
        *more,
    ]


@pytest.mark.slow
def test_an_outage_is_no_failed_kernel_and_the_resume_finishes_the_task(tmp_path):
    """The provider fails one task's calls (dropped connections, 429, 500, through every retry): that task stops
    unfinished, the others finish; the report leaves it out of every metric and says so; the same command, once the
    server answers, finishes it from its checkpoint and the run exits 0."""
    run_dir = tmp_path / "run"
    with StandInServer("standin-coder") as server:
        server.down_tasks = {"2_Softmax"}
        first = _cli(_run_args(server, run_dir), tmp_path)
        assert first.returncode == 1, first.stderr[-3000:]
        assert {"drop", "429", "500"} <= {outcome for _, outcome in server.requests}
        assert "2_Softmax: not run (llm_unavailable)" in first.stderr
        results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
        assert sorted(r["task_id"] for r in results) == ["tiny/level1/1_ReLU", "tiny/level1/3_MatmulBiasReLU"]
        report = _cli(["report", str(run_dir), "report.plots=false", "report.compare=[]"], tmp_path)
        assert report.returncode == 0, report.stderr[-2000:]
        text = (run_dir / "report" / "report.md").read_text()
        assert "1 task(s) not run (1 provider unreachable)" in text and "tiny/level1/2_Softmax" in text
        assert "| 2 | 1 |" in text  # two tasks scored, one not run

        server.down_tasks = set()
        second = _cli(_run_args(server, run_dir), tmp_path)
        assert second.returncode == 0, second.stderr[-3000:]
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["task_id"] for r in results) == [
        "tiny/level1/1_ReLU",
        "tiny/level1/2_Softmax",
        "tiny/level1/3_MatmulBiasReLU",
    ]
    assert all(r["correct"] for r in results) and not any("llm_error" in r["stop_reason"] for r in results)
    assert "resuming" in second.stderr and "2 tasks of 3 finished earlier, 1 task to run" in second.stderr
    assert not (run_dir / ".run.lock").exists() and not (run_dir / "interrupted").exists()  # nothing left behind
    report = _cli(["report", str(run_dir), "report.plots=false", "report.compare=[]"], tmp_path)
    assert "not run (" not in (run_dir / "report" / "report.md").read_text()


@pytest.mark.slow
def test_the_breaker_stops_a_run_whose_provider_stays_down(tmp_path):
    run_dir = tmp_path / "run"
    with StandInServer("standin-coder") as server:
        server.mode = "down"
        out = _cli(
            _run_args(
                server,
                run_dir,
                "campaign.outage_trip_after=1",
                "campaign.outage_pause_s=0.2",
                "campaign.outage_max_pauses=1",
            ),
            tmp_path,
        )
    assert out.returncode == 1, out.stderr[-3000:]
    assert (
        "the provider failed 1 task in a row" in out.stderr and "run stopped: the model's provider failed" in out.stderr
    )
    assert not (run_dir / "results.jsonl").exists() or not (run_dir / "results.jsonl").read_text().strip()
    rows = [json.loads(line) for line in (run_dir / "not_run.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in rows] == ["tiny/level1/1_ReLU", "tiny/level1/2_Softmax"]  # one, then one probe
    assert {r["reason"] for r in rows} == {"llm_unavailable"}


def test_the_breaker_pauses_then_probes_then_gives_up():
    from cudaforge.run.outage import OutageBreaker, ProviderDown

    said, slept = [], []
    breaker = OutageBreaker(
        trip_after=2, pause_s=5, max_pauses=1, say=said.append, sleep=lambda s: slept.append(s) or False
    )
    breaker.before_task()
    breaker.failed("connection refused")
    breaker.before_task()  # one failure: no pause yet
    assert slept == []
    breaker.failed("connection refused")
    assert "failed 2 tasks in a row" in said[-1]
    breaker.open_until -= 10  # the pause has passed
    breaker.before_task()  # the probe goes
    breaker.failed("500")  # the probe failed: a second pause, over max_pauses
    with pytest.raises(ProviderDown, match="through 1 pause"):
        breaker.before_task()
    breaker.finished()  # a finished task closes it
    breaker.before_task()
    assert breaker.in_a_row == 0 and breaker.pauses == 0
