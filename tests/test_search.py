"""Search strategies (best-of-N, beam) on the offline simulator, with the real CPU evaluator.

The simulated Coder answers through litellm (``scripted/simulator``), and its kernels are evaluated for real, once a
session: ``pool_verdicts`` evaluates a four-kernel ReLU pool (two honest Triton kernels, a wrong one, a hack the
guards reject) side by side into a session folder, which every search here reuses (docs/simulator.md).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import json
from collections import Counter

import pytest

from cudaforge.config import CudaforgeConfig
from cudaforge.run.runner import make_context, run_one
from cudaforge.search.pool import DECLARED, PoolVerdicts, load_pool
from cudaforge.search.simulator import Odds, SimulatedCoder, install_simulator
from cudaforge.tasks import find_task, selection

KEPT = ("relu_b1024", "relu_b4096", "relu_wrong_floor", "relu_torch")
"""The ReLU pool's kernels these tests use (the packaged pool's others would cost an evaluation each)."""


@pytest.fixture(scope="session")
def relu():
    return find_task(selection("tiny"), "level1/1_ReLU")


@pytest.fixture(scope="session")
def pool():
    return {"1_ReLU": [k for k in load_pool()["1_ReLU"] if k.name in KEPT]}


def config(strategy: str, rounds: int = 2, **search) -> CudaforgeConfig:
    from cudaforge.graph.strategies import get_strategy

    cfg = CudaforgeConfig()
    cfg.coder.model, cfg.judge.model = "scripted/simulator", "scripted/simulator_judge"
    for llm in (cfg.coder, cfg.judge):
        llm.input_cost_per_token, llm.output_cost_per_token = 2e-6, 8e-6
    packaged = get_strategy(strategy)
    cfg.strategy.name, cfg.strategy.max_rounds = strategy, rounds
    cfg.strategy.search = {**packaged.search, **search}
    cfg.eval.device = "cpu"
    cfg.eval.correctness_trials, cfg.eval.check_variants = 1, False
    cfg.eval.hidden_inputs, cfg.eval.held_out_shapes = [], False
    cfg.profile.enabled = False
    return cfg


@pytest.fixture(scope="session")
def verdicts(tmp_path_factory, relu, pool):
    """The pool's verdicts from the real evaluator, evaluated once for the session (side by side)."""
    from cudaforge.eval.evaluator import Evaluator

    cfg = config("best_of_n")
    cfg.eval.build_cache_dir = str(tmp_path_factory.mktemp("build"))
    folder = tmp_path_factory.mktemp("verdicts")
    primed = PoolVerdicts(Evaluator(cfg.eval), folder, pool)
    results = primed.prime(relu)
    return folder, {k.name: r for k, r in zip(pool["1_ReLU"], results, strict=True)}, primed.evaluated


def search(tmp_path, relu, pool, verdicts, cfg, seed=0, wrap=lambda evaluator: evaluator, odds=None):
    """One task under ``cfg`` on the simulator; the evaluator answers from the session's verdicts (``wrap``: what
    the loop sees of it)."""
    from cudaforge.eval.evaluator import Evaluator

    coder = install_simulator(pool, seed=seed, odds=odds or Odds())
    ctx = make_context(cfg, tmp_path / "run")
    ctx.evaluator = wrap(PoolVerdicts(Evaluator(cfg.eval), verdicts[0], pool))
    return ctx, coder, run_one(ctx, relu)


def tree(ctx, relu):
    return [json.loads(line) for line in ctx.store.task(relu.id).read_text(None, "tree.jsonl").splitlines()]


def test_the_pools_verdicts_are_the_evaluators_and_a_cpu_run_says_its_speedups_are_declared(verdicts):
    _, found, evaluated = verdicts
    assert evaluated == len(KEPT)
    assert {name: r.status.value for name, r in found.items()} == {
        "relu_b1024": "correct",
        "relu_b4096": "correct",
        "relu_wrong_floor": "incorrect",
        "relu_torch": "rejected",
    }
    assert "no_custom_kernel" in found["relu_torch"].message
    fast = found["relu_b4096"]  # the CPU times nothing: the pool's figure, labelled as such
    assert fast.speedup is not None and fast.speedup.median == 1.08 and fast.speedup.baseline == DECLARED


def test_the_simulated_coder_is_seeded_and_listens_to_the_prompt(pool):
    task, shown = "tiny/level1/1_ReLU", next(k for k in pool["1_ReLU"] if k.name == "relu_b1024")
    draws = [SimulatedCoder(pool, seed=7).choose(task, "first_attempt", "p") for _ in range(2)]
    assert draws[0] == draws[1]  # same seed, same prompt, same repeat: the same kernel
    repeats = SimulatedCoder(pool, seed=7)
    assert len({repeats.choose(task, "first_attempt", "p") for _ in range(30)}) > 2  # repeats are new samples

    def share(mode, prompt, kinds):
        coder = SimulatedCoder(pool, seed=1, odds=Odds(no_code=0.0))
        picks = [coder.choose(task, mode, prompt) for _ in range(400)]
        return sum(1 for k in picks if k is not None and k.name in kinds) / len(picks)

    plain, advised = shown.source, shown.source + "\nA performance reviewer's analysis:\n- Bottleneck: memory"
    faster = share("optimize", plain, {"relu_b4096"}), share("optimize", advised, {"relu_b4096"})
    assert 0.2 < faster[0] < 0.4 and faster[1] > faster[0] + 0.15
    broken = "x = 1\nA reviewer's diagnosis:\n- Critical issue: wrong"
    honest = {"relu_b1024", "relu_b4096"}
    assert share("repair", broken, honest) > share("repair", "x = 1", honest) + 0.15


def test_best_of_n_writes_n_samples_a_round_and_expands_the_best(tmp_path, relu, pool, verdicts):
    ctx, coder, result = search(tmp_path, relu, pool, verdicts, config("best_of_n", rounds=3, samples=3), seed=3)
    nodes = tree(ctx, relu)
    assert [n["id"] for n in nodes] == list(range(1, 10)) and result.rounds == 9
    assert result.stop_reason == "max_rounds"
    for generation in (2, 3):
        before = [n for n in nodes if n["generation"] == generation - 1 and n["hash"]]
        best = max(before, key=lambda n: (n["status"] == "correct", n["speedup"] or 0, -n["id"]))
        assert {n["parent"] for n in nodes if n["generation"] == generation} == {best["id"]}
    assert all(n["cost_usd"] > 0 and n["prompt"].endswith("/coder.json") for n in nodes)
    assert coder.seen.total() >= 9  # one call a node, and a follow-up after a reply without code
    rows = ctx.ledger.rows
    assert sum(r.role == "judge" for r in rows) == 2  # judge_role=chosen: once per round after the first
    assert result.cost_usd == pytest.approx(sum(r.cost_usd or 0 for r in rows)) and result.tokens_in > 0
    best_node = max((n for n in nodes if n["status"] == "correct"), key=lambda n: n["speedup"], default=None)
    assert (result.best_speedup, result.correct) == ((best_node or {}).get("speedup"), best_node is not None)


def test_beam_keeps_the_k_best_of_a_round_and_revises_each(tmp_path, relu, pool, verdicts):
    cfg = config("beam", rounds=2, samples=2, beam_width=2, judge_role="every")
    ctx, _, result = search(tmp_path, relu, pool, verdicts, cfg, seed=5)
    nodes = tree(ctx, relu)
    first = [n for n in nodes if n["generation"] == 1]
    assert len(first) == 4 and all(n["parent"] is None for n in first)
    expected = sorted(
        (n for n in first if n["hash"]), key=lambda n: (n["status"] == "correct", n["speedup"] or 0, -n["id"])
    )[-2:]
    children = Counter(n["parent"] for n in nodes if n["generation"] == 2)
    assert children == Counter({n["id"]: 2 for n in expected})
    judged = sum(r.role == "judge" for r in ctx.ledger.rows)
    assert judged == sum(1 for n in nodes if n["hash"]) and all(n["judged"] for n in nodes if n["hash"])


def test_without_the_judge_no_judge_is_called(tmp_path, relu, pool, verdicts):
    ctx, _, result = search(tmp_path, relu, pool, verdicts, config("best_of_n", rounds=2, samples=2, judge_role="none"))
    assert result.rounds == 4 and not any(r.role == "judge" for r in ctx.ledger.rows)


def test_the_flags_keep_the_judge_to_the_verdicts_they_name(tmp_path, relu, pool, verdicts):
    """judge_role=every with judge_optimizes off: the Judge corrects failed nodes only (correction_only's ablation)."""
    cfg = config("beam", rounds=2, judge_role="every")
    cfg.strategy.judge_optimizes = False
    ctx, _, _ = search(tmp_path, relu, pool, verdicts, cfg, seed=5)
    nodes = tree(ctx, relu)
    failed = [n for n in nodes if n["hash"] and n["status"] != "correct"]
    assert failed and any(n["status"] == "correct" for n in nodes)
    assert sum(r.role == "judge" for r in ctx.ledger.rows) == len(failed)
    assert all(n["judged"] == (n in failed) for n in nodes)


@pytest.mark.parametrize(
    ("budget", "value", "why"),
    [
        ("max_evaluations", 2, "max_evaluations"),
        ("max_dollars", 0.004, "max_dollars"),
        ("max_minutes", 1e-6, "max_minutes"),
    ],
)
def test_budgets_bind_whichever_comes_first(tmp_path, relu, pool, verdicts, budget, value, why):
    cfg = config("best_of_n", rounds=10, samples=4)
    setattr(cfg.strategy, budget, value)
    ctx, _, result = search(tmp_path, relu, pool, verdicts, cfg, seed=2)
    assert result.stop_reason == why and result.rounds < 40
    if budget == "max_evaluations":
        assert len({n["hash"] for n in tree(ctx, relu) if n["hash"]}) == 2
    if budget == "max_dollars":
        before_last = result.cost_usd - tree(ctx, relu)[-1]["cost_usd"]
        assert before_last < value <= result.cost_usd  # it stopped at the first step past the budget


class Killed(BaseException):
    """Stands in for the process being killed in the middle of a step."""


class DiesOnEvaluation:
    """The evaluator of a process killed during its ``n``-th evaluation."""

    def __init__(self, inner, n):
        self.inner, self.n, self.calls = inner, n, 0

    def evaluate(self, task, source):
        self.calls += 1
        if self.calls == self.n:
            raise Killed()
        return self.inner.evaluate(task, source)


def test_a_killed_search_resumes_without_redoing_a_finished_node(tmp_path, relu, pool, verdicts):
    cfg, sure = config("best_of_n", rounds=2, samples=3), Odds(no_code=0.0)  # every reply has code: one call a node
    with pytest.raises(Killed):
        search(tmp_path, relu, pool, verdicts, cfg, seed=4, wrap=lambda e: DiesOnEvaluation(e, 3), odds=sure)
    killed_at = len(json.loads(f"[{','.join(tree_lines(tmp_path, relu))}]")) + 1  # the node in its evaluation
    counted: list[DiesOnEvaluation] = []
    counting = lambda e: counted.append(DiesOnEvaluation(e, 0)) or counted[0]  # noqa: E731
    ctx, coder, result = search(tmp_path, relu, pool, verdicts, cfg, seed=4, wrap=counting, odds=sure)
    nodes = tree(ctx, relu)
    assert [n["id"] for n in nodes] == list(range(1, 7)) and result.rounds == 6
    # two evaluations finished before the kill; the one it stopped and those of new sources are made, no other
    assert counted[0].calls == len({n["hash"] for n in nodes}) - 2
    assert coder.seen.total() == 6 - killed_at  # the Coder is asked only for the nodes after the killed one


def tree_lines(tmp_path, relu):
    """The tree's lines as the killed run left them (none before its first node was finished)."""
    found = list((tmp_path / "run").rglob("tree.jsonl"))
    return found[0].read_text().splitlines() if found else []


def node(id_, parent, status, speedup=None, hash_="h"):
    return {"id": id_, "parent": parent, "status": status, "speedup": speedup, "hash": f"{hash_}{id_}", "generation": 1}


def test_tree_search_widens_progressively_prunes_dead_ends_and_follows_the_upper_bound():
    from cudaforge.search.engine import SearchOptions
    from cudaforge.search.tree import parents

    options = SearchOptions(samples=1, exploration=0.5, widening=0.5)
    assert parents([], options, 1) == [None]
    one = [node(1, None, "correct", 1.2)]
    assert parents(one, options, 2) == [None]  # 2 visits at the root: room for a second first attempt
    two = [*one, node(2, None, "incorrect")]
    assert parents(two, options, 3) == [1]  # the root is full (3 visits: 2 children); the correct one is expanded
    # node 2's two repairs failed: it is dead, and the walk goes to the only live subtree
    failing = [
        node(1, None, "incorrect"),
        node(2, 1, "incorrect"),
        node(3, 1, "incorrect"),
        node(4, None, "correct", 0.9),
    ]
    assert parents(failing, SearchOptions(samples=1, widening=0.3), 5) == [4]
    # a reply without code is never expanded
    assert parents([node(1, None, "no_code", hash_=""), node(2, None, "incorrect")], options, 3) == [2]
    with pytest.raises(ValueError, match="unknown option.*samplez"):
        SearchOptions.from_strategy({"samplez": 2})


def test_tree_search_runs_a_task(tmp_path, relu, pool, verdicts):
    ctx, _, result = search(tmp_path, relu, pool, verdicts, config("tree", rounds=6), seed=6)
    nodes = tree(ctx, relu)
    assert len(nodes) == 6 == result.rounds and result.stop_reason == "max_rounds"
    known = set()
    for n in nodes:  # every parent existed, and had code, before its child was written
        assert n["parent"] is None or (n["parent"] in known and nodes[n["parent"] - 1]["hash"])
        known.add(n["id"])


def test_the_cost_estimate_counts_every_node_of_a_round():
    from cudaforge.run.preflight import estimate_cost

    bounds = {}
    for name in ("cudaforge", "best_of_n"):
        cfg = config(name, rounds=5)
        cfg.coder.model = cfg.judge.model = "openai/o3"
        cfg.coder.input_cost_per_token = cfg.judge.input_cost_per_token = None
        cfg.coder.output_cost_per_token = cfg.judge.output_cost_per_token = None
        bounds[name] = estimate_cost(cfg, 1)
    assert bounds["best_of_n"].max_usd == pytest.approx(4 * bounds["cudaforge"].max_usd)  # samples: 4
    assert "20 nodes" in bounds["best_of_n"].line()


def test_the_report_draws_a_real_search_and_its_trajectories_follow_the_tree(tmp_path, relu, pool, verdicts):
    from cudaforge.config import ExportConfig
    from cudaforge.report import build_report
    from cudaforge.teach import build_rows
    from cudaforge.track.tree import leaf_paths

    cfg = config("beam", rounds=2, samples=2, beam_width=2)
    ctx, _, _ = search(tmp_path, relu, pool, verdicts, cfg, seed=5)
    nodes = tree(ctx, relu)
    lines = build_report([tmp_path / "run"], bootstrap=0).sections["search"]
    drawn = lines[lines.index("```text") + 1 : -1]
    assert sorted(int(line.split("#", 1)[1].split()[0]) for line in drawn) == [n["id"] for n in nodes]
    assert next(line for line in lines if line.startswith(f"{len(nodes)} nodes, depth 2, "))
    rows = build_rows(ExportConfig(runs=[str(tmp_path / "run")], format="trajectories", dedup=False))  # every path
    paths = [[n["id"] for n in path] for path in leaf_paths(nodes)]
    assert [[x["round"] for x in row["rounds"]] for row in rows] == paths and len(paths) > 1
    parent = {n["id"]: n["parent"] for n in nodes}
    assert all(parent[b] == a for path in paths for a, b in zip(path, path[1:]))


class Overlaps:
    """An evaluator that holds each evaluation a moment and counts how many were in flight at once."""

    def __init__(self, inner, hold_s=0.3):
        import threading

        self.inner, self.hold_s, self.lock = inner, hold_s, threading.Lock()
        self.now = self.most = self.calls = 0

    def evaluate(self, task, source):
        import time

        with self.lock:
            self.now, self.calls = self.now + 1, self.calls + 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(self.hold_s)
            return self.inner.evaluate(task, source)
        finally:
            with self.lock:
                self.now -= 1


@pytest.mark.slow  # a search run end to end: the fast step keeps under its 4 minutes
def test_side_by_side_children_are_evaluated_at_once_and_recorded_as_one_at_a_time(tmp_path, relu, pool, verdicts):
    cfg, sure = config("best_of_n", rounds=2, samples=3, parallel=3), Odds(no_code=0.0)
    seen: list[Overlaps] = []
    ctx, coder, result = search(
        tmp_path, relu, pool, verdicts, cfg, seed=3, odds=sure, wrap=lambda e: seen.append(Overlaps(e)) or seen[0]
    )
    nodes = tree(ctx, relu)
    assert [n["id"] for n in nodes] == list(range(1, 7)) and result.rounds == 6 and result.stop_reason == "max_rounds"
    assert seen[0].most >= 2  # a round's evaluations ran side by side
    first = [n for n in nodes if n["generation"] == 1]
    best = max(first, key=lambda n: (n["status"] == "correct", n["speedup"] or 0, -n["id"]))
    assert {n["parent"] for n in nodes if n["generation"] == 2} == {best["id"]}
    coder_rows = [r for r in ctx.ledger.rows if r.role == "coder"]
    assert sorted(r.meta["round"] for r in coder_rows) == list(range(1, 7)) and coder.seen.total() == 6
    assert sum(r.role == "judge" for r in ctx.ledger.rows) == 1  # judge_role=chosen: round 2's parent, once
    for n in nodes:  # each child its own round folder and ledger rows, its cost its own round's
        assert (tmp_path / "run").glob(f"**/round_{n['id']:02d}/coder.json")
        assert n["cost_usd"] == pytest.approx(sum(r.cost_usd or 0 for r in coder_rows if r.meta["round"] == n["id"]))
    history = [h.round for h in result.history]
    assert history == list(range(1, 7)) and [h.status for h in result.history] == [n["status"] for n in nodes]
    correct = [n for n in nodes if n["status"] == "correct"]
    assert result.best_speedup == max((n["speedup"] for n in correct), default=None)


@pytest.mark.slow  # a search run end to end: the fast step keeps under its 4 minutes
def test_a_search_killed_in_a_batch_asks_no_model_twice_and_evaluates_no_kernel_twice(tmp_path, relu, pool, verdicts):
    cfg, sure = config("best_of_n", rounds=2, samples=3, parallel=3), Odds(no_code=0.0)
    with pytest.raises(Killed):  # round 1's batch: its second evaluation kills the process, the others finish
        search(tmp_path, relu, pool, verdicts, cfg, seed=4, wrap=lambda e: DiesOnEvaluation(e, 2), odds=sure)
    assert tree_lines(tmp_path, relu) == []  # the batch is one step: nothing of it was checkpointed
    finished = {p.stem.removeprefix("eval_") for p in (tmp_path / "run").rglob("eval_*.json")}
    assert finished  # the batch's other evaluations finished, the killed one did not
    counted: list[DiesOnEvaluation] = []
    counting = lambda e: counted.append(DiesOnEvaluation(e, 0)) or counted[0]  # noqa: E731
    ctx, coder, result = search(tmp_path, relu, pool, verdicts, cfg, seed=4, wrap=counting, odds=sure)
    nodes = tree(ctx, relu)
    assert [n["id"] for n in nodes] == list(range(1, 7)) and result.rounds == 6
    # the evaluations that finished before the kill were read back; the others were made, each once
    assert finished <= {n["hash"] for n in nodes if n["generation"] == 1}
    assert counted[0].calls == len({n["hash"] for n in nodes} - finished)
    coder_rows = [r for r in ctx.ledger.rows if r.role == "coder"]
    assert sum(not r.cache_hit for r in coder_rows) == 6  # each child's call reached the model once
    assert sum(r.cache_hit for r in coder_rows) == 3  # round 1's three, answered from the cache on resume
    assert coder.seen.total() == 3  # the resumed process asked the model for round 2's children only


@pytest.mark.slow  # a search run end to end: the fast step keeps under its 4 minutes
def test_a_search_profiles_the_nodes_the_judge_advises_on(tmp_path, relu, pool, verdicts):
    """strategy.profile=true: the real profiler (on this machine it finds no GPU and says so) runs on every correct
    node before the Judge's advice, once per kernel, its record in the node's folder."""
    cfg = config("beam", rounds=2, samples=2, beam_width=1, judge_role="every", parallel=2)
    cfg.strategy.profile, cfg.profile.enabled = True, True
    ctx, _, result = search(tmp_path, relu, pool, verdicts, cfg, seed=5, odds=Odds(no_code=0.0))
    nodes = tree(ctx, relu)
    correct = [n for n in nodes if n["status"] == "correct"]
    assert correct and all(n["judged"] for n in nodes)
    by_round = {h.round: h for h in result.history}
    assert all(by_round[n["id"]].profile_status for n in correct)
    assert not any(by_round[n["id"]].profile_status for n in nodes if n["status"] != "correct")
    folders = {p.parent.name for p in (tmp_path / "run").rglob("round_*/profile.json")}
    assert folders == {f"round_{n['id']:02d}" for n in correct}


def test_one_models_calls_in_flight_are_capped_over_the_process():
    """``max_concurrent``: six threads calling one scripted model through litellm, at most two at once."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from cudaforge.llm.client import LLMClient
    from cudaforge.llm.scripted import install_script
    from cudaforge.llm.settings import LLMConfig

    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def answer(messages):
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return "ok"

    install_script("capped_model", answer)
    client = LLMClient(LLMConfig(model="scripted/capped_model", max_concurrent=2), role="coder")
    with ThreadPoolExecutor(6) as threads:
        list(threads.map(lambda i: client.complete([{"role": "user", "content": f"q{i}"}]), range(6)))
    assert state["most"] == 2
    from cudaforge.cli.checks import check_values
    from cudaforge.llm.errors import LLMRequestError

    with pytest.raises(LLMRequestError, match="at least 1"):
        LLMClient(LLMConfig(model="scripted/other", max_concurrent=0), role="coder").complete(
            [{"role": "user", "content": "q"}]
        )
    from test_config import compose_with

    refused = check_values(compose_with(["coder.max_concurrent=0", "judge.calls_per_minute=0"]))
    assert "coder.max_concurrent=0: must be at least 1" in refused
    assert "judge.calls_per_minute=0: must be at least 1" in refused


def test_calls_a_minute_are_paced_over_a_sliding_window():
    """``calls_per_minute``: the fourth call in a window of three waits until the first call's minute is over."""
    from cudaforge.llm.pace import Pace

    now, slept = [0.0], []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    pace = Pace(3, window_s=60.0, clock=lambda: now[0], sleep=sleep)
    for at in (0.0, 10.0, 20.0):
        now[0] = at
        assert pace.wait() == 0.0
    now[0] = 30.0
    assert pace.wait() == pytest.approx(30.0) and now[0] == pytest.approx(60.0)  # the call of t=0 left the window
    now[0] = 75.0
    assert pace.wait() == 0.0  # t=10 left too: three in [15, 75]
    with pytest.raises(ValueError, match="at least 1"):
        Pace(0)
