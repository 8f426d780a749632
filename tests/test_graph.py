"""The Coder/Judge loop with scripted models and the real CPU evaluator.

Every candidate here really runs (in the evaluator's isolated worker, on the CPU): the
scripted models only stand in for the LLMs. Candidates are small torch sources for the
`tiny` ReLU task, so each distinct one costs one worker start.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from cudaforge.config import CudaforgeConfig
from cudaforge.llm.errors import LLMAuthError
from cudaforge.llm.scripted import RATE_LIMIT, SERVER_ERROR, TIMEOUT, install_script, remove_script
from cudaforge.run.runner import RunAborted, make_context, run_one, run_suite
from cudaforge.tasks import find_task, load_suite, selection

GOOD = "```python\nimport torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n```"
GOOD2 = GOOD.replace("torch.relu(x)", "x.clamp_min(0.0)")
BAD = GOOD.replace("torch.relu(x)", "x * 1.0")
CORRECTION = '{"critical_issue": "negative values are not zeroed", "why_it_matters": "ReLU clamps at 0", "minimal_fix_hint": "use max(x, 0)"}'
OPTIMIZATION = '{"bottleneck": "memory", "optimisation_method": "fuse", "modification_plan": "use clamp_min", "expected_effect": "same"}'


@dataclass
class StandInProfile:
    """A CPU stand-in for the profiler's result (routing only: no kernel is claimed to have run)."""

    status: str = "unavailable"
    message: str = "no GPU on this machine"
    calls: list = field(default_factory=list)

    def to_dict(self):
        return {"status": self.status, "message": self.message}

    def judge_metrics(self):
        return {}


class StandInProfiler:
    """Counts profile requests; returns an 'unavailable' result, as the real one does without a GPU."""

    def __init__(self):
        self.calls = 0

    def profile(self, task, source, measured_ms=None):
        self.calls += 1
        return StandInProfile()


def config(tmp_path: Path, strategy: str = "cudaforge", rounds: int = 3, **strategy_kw) -> CudaforgeConfig:
    cfg = CudaforgeConfig()
    cfg.coder.model, cfg.judge.model = "scripted/t_coder", "scripted/t_judge"
    for llm in (cfg.coder, cfg.judge):
        llm.retry_base_delay_s, llm.retry_max_delay_s = 0.001, 0.002
    cfg.strategy.name = strategy
    cfg.strategy.max_rounds = rounds
    for key, value in strategy_kw.items():
        setattr(cfg.strategy, key, value)
    cfg.eval.device = "cpu"
    cfg.eval.guards_enforce = False  # the candidates here are pure-PyTorch stand-ins for kernels
    cfg.eval.correctness_trials = 1
    cfg.eval.check_variants = False
    # the loop's routing is under test here; the checks beyond the scored inputs have their own tests
    # (tests/test_beyond.py, tests/test_held_out.py)
    cfg.eval.hidden_inputs, cfg.eval.held_out_shapes = [], False
    cfg.eval.build_cache_dir = str(tmp_path / "build")
    return cfg


@pytest.fixture
def relu():
    suite = selection("tiny")
    return find_task(suite, "level1/1_ReLU")


def scripts(coder, judge=()):
    return install_script("t_coder", list(coder)), install_script("t_judge", list(judge))


def run(tmp_path, task, cfg, profiler=None, run_dir="run", on_event=None):
    ctx = make_context(cfg, tmp_path / run_dir, profiler=profiler)
    return ctx, run_one(ctx, task, on_event=on_event)


def coder_prompt(ctx, task, round_):
    data = ctx.store.task(task.id).read_json(round_, "coder.json")
    return data["conversation"]["messages"][-1]["content"]


@pytest.mark.slow
def test_full_loop_routes_through_judge_and_profiler(tmp_path, relu):
    coder, judge = scripts([BAD, GOOD, GOOD], [CORRECTION, OPTIMIZATION])
    profiler = StandInProfiler()
    ctx, result = run(tmp_path, relu, config(tmp_path), profiler)
    h = result.history
    assert [r.coder_mode for r in h] == ["first_attempt", "repair", "optimize"]
    assert [r.status for r in h] == ["incorrect", "correct", "correct"]
    assert [r.judge_mode for r in h[:2]] == ["correction", "optimization"]
    assert h[2].reused_evaluation and h[1].profile_status == "unavailable" and profiler.calls == 1
    assert "negative values are not zeroed" in coder_prompt(ctx, relu, 2)
    assert "use clamp_min" in coder_prompt(ctx, relu, 3)
    assert result.correct and result.best_round == 2 and result.stop_reason == "max_rounds"
    assert coder.remaining == 0 and judge.remaining == 0
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert rows[0]["task_id"] == relu.id and rows[0]["correct"] is True


@pytest.mark.slow
def test_an_unchanged_candidate_is_not_profiled_again(tmp_path, relu):
    """The same source in a later round reuses its evaluation and its stored profile (marked cached);
    the profiler is asked once, and told about the task when it starts (to prepare the task's cost)."""
    scripts([GOOD, GOOD, GOOD], [OPTIMIZATION, OPTIMIZATION])
    prefetched = []

    class Prefetching(StandInProfiler):
        def prefetch(self, task):
            prefetched.append(task.id)

    profiler = Prefetching()
    ctx, result = run(tmp_path, relu, config(tmp_path), profiler)
    h = result.history
    assert [r.status for r in h] == ["correct"] * 3 and h[1].reused_evaluation
    assert [r.profile_status for r in h] == ["unavailable", "unavailable", None]
    assert profiler.calls == 1 and prefetched == [relu.id]
    store = ctx.store.task(relu.id)
    first, again = store.read_json(1, "profile.json"), store.read_json(2, "profile.json")
    assert "cached" not in first and again == {**first, "cached": True}


@pytest.mark.parametrize(
    "strategy, judge_calls, profiled",
    [
        ("one_shot", 0, 0),
        ("self_refine", 0, 1),
        ("correction_only", 1, 0),
        ("optimization_only", 1, 1),
        ("full_metrics", 2, 1),
    ],
)
@pytest.mark.slow
def test_strategies_route_as_documented(tmp_path, relu, strategy, judge_calls, profiled):
    judge_replies = {
        "correction_only": [CORRECTION],
        "optimization_only": [OPTIMIZATION],
        "full_metrics": [CORRECTION, OPTIMIZATION],
    }.get(strategy, [])
    coder, judge = scripts([BAD, GOOD, GOOD2], judge_replies)
    profiler = StandInProfiler()
    ctx, result = run(tmp_path, relu, config(tmp_path, strategy), profiler)
    assert len(judge_replies) - judge.remaining == judge_calls
    assert profiler.calls == profiled
    if strategy == "one_shot":
        assert result.rounds == 1 and [r.status for r in result.history] == ["incorrect"]
        return
    assert [r.status for r in result.history] == ["incorrect", "correct", "correct"]
    if strategy in ("self_refine", "optimization_only"):
        assert "x * 1.0" in coder_prompt(ctx, relu, 2) and "critical_issue" not in coder_prompt(ctx, relu, 2)
    if strategy == "self_refine":
        assert "no GPU on this machine" in coder_prompt(ctx, relu, 3)


@pytest.mark.slow
def test_unparseable_replies_fail_the_round_not_the_run(tmp_path, relu):
    scripts(["I would write a kernel here.", "Still no code, sorry.", GOOD], [OPTIMIZATION])
    events: list[dict] = []
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=2), on_event=events.append)
    first, second = result.history
    dropped = [e for e in events if e["event"] == "dropped"]  # issue 53: said, not dropped silently
    assert [(e["role"], e["round"]) for e in dropped] == [("coder", 1)] and "ModelNew" in dropped[0]["why"]
    done = [e for e in events if e["event"] == "round_done"]  # each round as it ends, for W&B
    assert [(e["round"], e["status"]) for e in done] == [(1, "no_code"), (2, "correct")]
    assert done[1]["judge"] in ("advice", None) and done[1]["tokens_in"] >= done[0]["tokens_in"] > 0
    assert first.status == "no_code" and "ModelNew" in first.message and first.candidate_hash is None
    assert second.status == "correct" and second.coder_mode == "first_attempt"
    assert json.loads(Path(ctx.store.task(relu.id).root / "round_01" / "coder.json").read_text())["conversation"][
        "parse_errors"
    ][0]


@pytest.mark.slow
def test_transient_llm_errors_are_retried_and_counted(tmp_path, relu):
    scripts([RATE_LIMIT, TIMEOUT, SERVER_ERROR, GOOD], [])
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=1))
    assert result.history[0].status == "correct"
    row = ctx.ledger.rows[0]
    assert row.attempts == 4 and row.error in ("", None)


@pytest.mark.slow
def test_empty_reply_fails_the_round_and_a_hard_error_stops_the_task(tmp_path, relu):
    scripts(["", GOOD, {"error": "bad_request"}], [OPTIMIZATION])
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=5))
    assert [r.status for r in result.history] == ["no_code", "correct", "llm_error"]
    assert result.stop_reason.startswith("llm_error") and result.rounds == 3 and result.correct


def test_missing_credentials_stop_the_run_not_each_task(tmp_path, relu):
    no_key = {"error": "server_error", "message": "Missing credentials. Please set the `OPENAI_API_KEY` variable."}
    coder, _ = scripts([no_key, no_key, no_key])
    cfg = config(tmp_path, rounds=1)
    ctx = make_context(cfg, tmp_path / "run")
    tasks = load_suite(selection("tiny"))
    with pytest.raises(
        RunAborted,
        match=r"run stopped: scripted/t_coder \(coder\): no API key.*OPENAI_API_KEY.*"
        r"0/3 tasks finished; resume",
    ) as info:
        run_suite(ctx, tasks)
    for worker in threading.enumerate():  # let the run's worker finish whatever it had picked up
        if worker.name.startswith("ThreadPoolExecutor"):
            worker.join(timeout=30)
    assert isinstance(info.value.cause, LLMAuthError) and "\n" not in str(info.value)
    assert len(coder.calls) == 1 and ctx.ledger.rows[0].attempts == 1  # not retried, no other task started
    assert ctx.store.results() == []  # nothing recorded as failed: the resume runs the task
    # the same run directory with a key: the task resumes from its checkpoint (no code, so no evaluation)
    coder, _ = scripts(["no code today", "still none"])
    results = run_suite(make_context(cfg, tmp_path / "run"), tasks[:1])
    assert [r.status for r in results[0].history] == ["no_code"] and coder.remaining == 0


@pytest.mark.slow
def test_round_budget(tmp_path, relu):
    scripts([BAD, BAD], [CORRECTION])
    _, result = run(tmp_path, relu, config(tmp_path, rounds=2))
    assert result.rounds == 2 and result.stop_reason == "max_rounds" and not result.correct


@pytest.mark.slow
def test_dollar_budget_and_cost_accounting(tmp_path, relu):
    scripts([BAD, GOOD], [CORRECTION])
    cfg = config(tmp_path, rounds=5, max_dollars=0.01)
    for llm in (cfg.coder, cfg.judge):
        llm.input_cost_per_token, llm.output_cost_per_token = 1e-5, 2e-5
    ctx, result = run(tmp_path, relu, cfg)
    assert result.stop_reason == "max_dollars" and result.rounds < 5
    expected = sum(r.prompt_tokens * 1e-5 + r.completion_tokens * 2e-5 for r in ctx.ledger.rows)
    assert result.cost_usd == pytest.approx(expected) and result.cost_usd >= 0.01
    assert result.tokens_in == sum(r.prompt_tokens for r in ctx.ledger.rows)
    assert result.unpriced_calls == 0


@pytest.mark.slow
def test_unpriced_models_are_not_zero_dollars(tmp_path, relu):
    scripts([GOOD], [])
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=1))
    assert result.unpriced_calls == 1 and result.cost_usd is None  # unknown, never $0
    assert json.loads(ctx.store.results_path.read_text().splitlines()[-1])["cost_usd"] is None


@pytest.mark.slow
def test_minute_budget(tmp_path, relu):
    scripts([BAD, BAD], [CORRECTION])
    _, result = run(tmp_path, relu, config(tmp_path, rounds=5, max_minutes=1e-6))
    assert result.stop_reason == "max_minutes" and result.rounds == 1


class WaitsForTheGpu:
    """A stand-in evaluator that spends ``wait_s`` as if queued for a GPU's lock and records it as the verifier does."""

    def __init__(self, wait_s):
        self.wait_s = wait_s

    def evaluate(self, task, source):
        import time

        from cudaforge.types import EvalResult, EvalStatus

        time.sleep(self.wait_s)
        return EvalResult(task.id, "x", EvalStatus.CORRECT, fingerprint={"gpu_lock_wait_s": self.wait_s})


class WaitingProfiler(StandInProfiler):
    """A stand-in profiler whose result records a wait for the GPU's lock."""

    def profile(self, task, source, measured_ms=None):
        import time

        self.calls += 1
        time.sleep(0.03)
        result = StandInProfile()
        result.to_dict = lambda: {"status": "unavailable", "phase_seconds": {"gpu_lock_wait": 0.03}}
        return result


def test_wall_and_active_minutes_count_gpu_lock_waits_once(tmp_path, relu):
    """Wall minutes include the waits for a GPU's lock (evaluation and profiling); active minutes leave them out.
    A reused evaluation and a cached profile waited in their first round only."""
    scripts([GOOD, GOOD, GOOD], [OPTIMIZATION, OPTIMIZATION])
    cfg = config(tmp_path, rounds=3)
    ctx = make_context(cfg, tmp_path / "run", evaluator=WaitsForTheGpu(0.05), profiler=WaitingProfiler())
    result = run_one(ctx, relu)
    assert [r.reused_evaluation for r in result.history] == [False, True, True]
    assert result.time_split["gpu_lock_wait"] == pytest.approx(0.08)
    assert (result.wall_minutes - result.active_minutes) * 60 == pytest.approx(0.08)
    assert result.wall_minutes >= result.minutes > 0.08 / 60  # the steps, and the bookkeeping between them
    row = json.loads(ctx.store.results_path.read_text().splitlines()[-1])
    assert row["wall_minutes"] == pytest.approx(result.wall_minutes) and row["active_minutes"] is not None


class Killed(BaseException):
    """Stands in for the process being killed in the middle of a step."""


class DiesOnSecondEvaluation:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def evaluate(self, task, source):
        self.calls += 1
        if self.calls == 2:
            raise Killed()
        return self.inner.evaluate(task, source)


@pytest.mark.slow
def test_resume_after_a_kill_mid_round_repeats_no_finished_step(tmp_path, relu):
    from cudaforge.eval.evaluator import Evaluator

    cfg = config(tmp_path, rounds=3)
    coder, judge = scripts([BAD, GOOD, GOOD2], [CORRECTION, OPTIMIZATION])
    dying = DiesOnSecondEvaluation(Evaluator(cfg.eval))
    ctx = make_context(cfg, tmp_path / "run", evaluator=dying)
    with pytest.raises(Killed):
        run_one(ctx, relu)
    assert coder.remaining == 1 and judge.remaining == 1  # round 2's Coder step finished before the kill
    paid_before = len(ctx.ledger.rows)
    # A fresh process: new scripts (what is left of the conversation), new services, same run directory.
    coder, judge = scripts([GOOD2], [OPTIMIZATION])
    ctx2 = make_context(cfg, tmp_path / "run")
    result = run_one(ctx2, relu)
    assert [r.status for r in result.history] == ["incorrect", "correct", "correct"]
    assert coder.remaining == 0 and judge.remaining == 0
    new_rows = ctx2.ledger.rows[paid_before:]
    assert len(new_rows) == 2 and not any(r.cache_hit for r in new_rows)  # round 2's judge, round 3's coder
    assert result.wall_minutes >= result.minutes  # the steps before the kill count, the downtime does not


@pytest.mark.slow
def test_replay_reproduces_transcript_and_results_offline(tmp_path, relu, monkeypatch):
    cfg = config(tmp_path, rounds=3)
    scripts([BAD, GOOD, GOOD2], [CORRECTION, OPTIMIZATION])
    ctx, recorded = run(tmp_path, relu, cfg)
    remove_script("t_coder")
    remove_script("t_judge")
    import litellm

    monkeypatch.setattr(litellm, "completion", lambda *a, **k: pytest.fail("replay reached litellm"))
    cfg.llm_cache.path = str(tmp_path / "run" / "llm_cache.sqlite")
    cfg.llm_cache.mode = type(cfg.llm_cache.mode)("replay_only")
    ctx2, replayed = run(tmp_path, relu, cfg, run_dir="replay")
    assert [r.to_dict() | {"seconds": 0} for r in replayed.history] == [
        r.to_dict() | {"seconds": 0} for r in recorded.history
    ]
    for round_ in (1, 2, 3):
        a = ctx.store.task(relu.id).read_json(round_, "coder.json")["conversation"]
        b = ctx2.store.task(relu.id).read_json(round_, "coder.json")["conversation"]
        assert a == b
    assert all(r.cache_hit for r in ctx2.ledger.rows)


def test_the_graph_picture_in_the_docs_is_current():
    from cudaforge.graph.diagram import DOC, block

    assert block() in DOC.read_text(), "run: python -m cudaforge.graph.diagram"


@pytest.mark.slow
def test_memory_policy_shows_the_last_rounds(tmp_path, relu):
    replies, seen = [BAD, GOOD, GOOD2], []

    def coder(messages):
        seen.append(messages)
        return replies[len(seen) - 1]

    install_script("t_coder", coder)
    install_script("t_judge", [CORRECTION, OPTIMIZATION])
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=3, memory_rounds=1))
    assert len(seen) == 3 and seen[0][1]["role"] == "user" and not seen[0][1]["content"].startswith("For context")
    memory = seen[2][1]["content"]
    assert memory.startswith("For context, the last 1 earlier round") and "round 2 (repair): correct" in memory
    assert "round 1" not in memory and "use clamp_min" in memory
    assert ctx.store.task(relu.id).read_json(3, "coder.json")["memory"] == memory


def test_a_stuck_task_gets_a_new_sample_every_round_and_replay_returns_them_in_order(tmp_path, relu, monkeypatch):
    """Issue 35, item 4: the same request in another round is a new call to the model (the round is in the cache key),
    not the cached reply replayed; a replay returns the recorded replies round by round."""
    calls = []

    def stuck(messages):
        calls.append(messages)
        return f"I cannot write this one (attempt {len(calls)})."

    install_script("t_coder", stuck)
    install_script("t_judge", [])
    cfg = config(tmp_path, rounds=3)
    ctx, recorded = run(tmp_path, relu, cfg)
    assert [r.status for r in recorded.history] == ["no_code"] * 3
    first = [json.dumps(m) for m in calls if not any(x["role"] == "assistant" for x in m)]  # not the follow-ups
    assert len(first) == 3 and len(set(first)) == 1  # three identical requests ...
    assert not any(r.cache_hit for r in ctx.ledger.rows) and len(ctx.ledger.rows) == len(calls)  # ... three calls
    replies = [ctx.store.task(relu.id).read_json(n, "coder.json")["conversation"]["replies"] for n in (1, 2, 3)]
    assert len({tuple(r) for r in replies}) == 3  # a new sample each round
    remove_script("t_coder")
    import litellm

    monkeypatch.setattr(litellm, "completion", lambda *a, **k: pytest.fail("replay reached litellm"))
    cfg.llm_cache.path = str(tmp_path / "run" / "llm_cache.sqlite")
    cfg.llm_cache.mode = type(cfg.llm_cache.mode)("replay_only")
    ctx2, _ = run(tmp_path, relu, cfg, run_dir="replay")
    assert [
        ctx2.store.task(relu.id).read_json(n, "coder.json")["conversation"]["replies"] for n in (1, 2, 3)
    ] == replies


@pytest.mark.slow
@pytest.mark.parametrize("profiled, expected", [("latest", ["relu", "clamp_min"]), ("best", ["relu"])])
def test_the_judge_reads_the_latest_kernels_metrics_or_the_best_ones(tmp_path, relu, profiled, expected):
    """strategy.profiled_kernel=best profiles the fastest correct kernel so far, as the authors' main.py does (the
    paper overlays set it); the default profiles the kernel the Judge is shown. (On a CPU no speedup is timed, so the
    first correct kernel stays the best.)"""
    from cudaforge.config import ProfiledKernel

    scripts([GOOD, GOOD2, GOOD2], [OPTIMIZATION, OPTIMIZATION])
    sources = []

    class Recording(StandInProfiler):
        def profile(self, task, source, measured_ms=None):
            sources.append("relu" if "torch.relu" in source else "clamp_min")
            return super().profile(task, source, measured_ms)

    cfg = config(tmp_path, rounds=3)
    cfg.strategy.profiled_kernel = ProfiledKernel(profiled)
    ctx, _ = run(tmp_path, relu, cfg, Recording())
    assert sources[:2] == expected  # best: round 2 reads round 1's stored profile, the best kernel's, again
    assert bool(ctx.store.task(relu.id).read_json(2, "profile.json").get("cached")) is (profiled == "best")


@pytest.mark.slow
def test_a_padded_kernel_is_cut_in_the_next_prompt_and_an_outage_on_it_fails_the_task(tmp_path, relu):
    """Issue 53: a Coder padded a wrong kernel to about 900 KB; the provider timed out on the next prompt, which held
    all of it, and the task left every statistic as not run."""
    padding = "\n".join(f"# {'pad ' * 30}{i}" for i in range(1000))  # about 125 KB of comments
    padded = BAD.replace("class ModelNew", padding + "\nclass ModelNew")
    seen: list[str] = []

    def judge(messages):
        seen.append(messages[-1]["content"])
        return TIMEOUT  # every attempt: the provider's outage, as the client sees it

    install_script("t_coder", [padded])
    install_script("t_judge", judge)
    ctx, result = run(tmp_path, relu, config(tmp_path, rounds=3))
    assert seen and "characters cut]" in seen[0] and len(seen[0]) < 120_000  # the prompt carried a cut kernel
    assert not result.correct and result.stop_reason.startswith("llm_error: the model call failed")
    assert "a failure of the task, not an outage" in result.stop_reason
    assert not (tmp_path / "run" / "not_run.jsonl").exists()  # in the denominator: a failed task


SHAPES = Path(__file__).parent / "fixtures" / "loop_shapes"


def test_a_strategy_names_its_loop_shape_and_a_bad_name_says_what_is_wrong(monkeypatch):
    """``strategy.graph`` (``module:function``) wires the graph: every packaged strategy but the searches is the
    CudaForge loop (``cudaforge.graph.loop:alternating``); a strategy of another shape is one module, here
    tests/fixtures/loop_shapes/no_judge_loop.py, whose graph has no Judge or profiler node."""
    from types import SimpleNamespace

    from cudaforge.graph.loop import build_graph, loop_shape
    from cudaforge.graph.strategies import DEFAULT_GRAPH, Strategy, get_strategy, strategy_names

    searches = {"best_of_n", "beam", "tree"}  # registered loop shapes (tests/test_search.py)
    assert {get_strategy(name).graph for name in strategy_names()} == {DEFAULT_GRAPH, *searches}
    assert loop_shape("tree") is loop_shape("cudaforge.search.tree:shape")
    monkeypatch.syspath_prepend(str(SHAPES))
    node = {"name": "cudaforge", "judge_corrects": True, "judge_optimizes": True, "profile": True}
    own = Strategy.from_config({**node, "graph": "no_judge_loop:shape"})
    assert own.graph == "no_judge_loop:shape" and Strategy.from_config(node).graph == DEFAULT_GRAPH
    drawn = {
        strategy.graph: set(build_graph(SimpleNamespace(strategy=strategy)).get_graph().nodes)  # type: ignore[arg-type]
        for strategy in (own, Strategy.from_config(node))
    }
    assert drawn["no_judge_loop:shape"] == {"__start__", "__end__", "coder", "evaluate"}
    assert drawn[DEFAULT_GRAPH] == {"__start__", "__end__", "coder", "evaluate", "profile", "judge"}
    assert loop_shape("alternating") is loop_shape("cudaforge.graph.loop:alternating")  # its name, or its function
    for spec, said in [
        (
            "no_judge_loop",
            "no loop shape is registered by that name \\(known: alternating, best_of_n, beam, tree\\); or name a function as",
        ),
        (":shape", "name a function as module:function"),
        ("no_such_module_here:shape", "cannot import no_such_module_here"),
        ("no_judge_loop:missing", "no_judge_loop has no function missing"),
    ]:
        with pytest.raises(ValueError, match=said):
            loop_shape(spec)


@pytest.mark.slow
def test_a_loop_of_another_shape_runs_a_task_without_the_judge(tmp_path, relu, monkeypatch):
    """The worked example end to end: the strategy's flags ask for the Judge's corrections and the profiler, but its
    loop has neither; a wrong first kernel goes straight back to the Coder, which repairs it."""
    monkeypatch.syspath_prepend(str(SHAPES))
    coder, judge = scripts([BAD, GOOD])
    profiler = StandInProfiler()
    cfg = config(tmp_path, "cudaforge", rounds=2, graph="no_judge_loop:shape")
    ctx, result = run(tmp_path, relu, cfg, profiler)
    assert [r.status for r in result.history] == ["incorrect", "correct"]
    assert [r.judge_mode for r in result.history] == [None, None] and profiler.calls == 0
    assert coder.remaining == 0 and result.correct and result.stop_reason == "max_rounds"
