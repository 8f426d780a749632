"""The LLM layer: ledger, retries, errors, pricing, record/replay cache, scripted models.

Everything runs on the ``scripted`` litellm provider: no network, no keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
import pytest  # noqa: E402

from cudaforge.config import LLMConfig  # noqa: E402
from cudaforge.llm import (  # noqa: E402
    RATE_LIMIT,
    SERVER_ERROR,
    TIMEOUT,
    Backoff,
    CacheMode,
    ContextWindowError,
    EmptyReply,
    Ledger,
    LedgerRow,
    LLMAuthError,
    LLMClient,
    LLMRequestError,
    LLMUnavailable,
    ReplayMiss,
    ResponseCache,
    Usage,
    cost_for,
    install_script,
    load_script,
    remove_script,
    request_key,
)
from cudaforge.llm.ledger import format_cost, sum_rows  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
FAST = Backoff(base_s=0.001, max_s=0.005)


@pytest.fixture
def script_name():
    """A fresh script name, uninstalled after the test."""
    name = f"t{uuid.uuid4().hex[:8]}"
    yield name
    remove_script(name)


def client(name: str, *, role: str = "coder", cache=None, ledger=None, **config) -> LLMClient:
    """A client on ``scripted/<name>`` with near-zero backoff."""
    return LLMClient(LLMConfig(model=f"scripted/{name}", **config), role=role, cache=cache, ledger=ledger, backoff=FAST)


def ask(text: str) -> list[dict]:
    """A two-message prompt."""
    return [{"role": "system", "content": "You write CUDA kernels."}, {"role": "user", "content": text}]


# --------------------------------------------------------------------------- ledger


def test_ledger_rows_totals_and_file(tmp_path):
    path = tmp_path / "run" / "llm_calls.jsonl"
    with Ledger(path) as ledger:
        ledger.record(LedgerRow("coder", "openai/o3", 100, 50, 20, None, 0.01, True, 2.0, meta={"task_id": "a"}))
        ledger.record(LedgerRow("judge", "hosted_vllm/x", 10, 5, None, None, None, False, 1.0, meta={"task_id": "a"}))
        ledger.record(LedgerRow("coder", "openai/o3", 100, 50, None, None, 0.01, True, 0.1, cache_hit=True))
    totals = ledger.totals()
    assert (totals.calls, totals.prompt_tokens, totals.completion_tokens, totals.reasoning_tokens) == (3, 210, 105, 20)
    assert totals.cost_usd == pytest.approx(0.02) and totals.spent_usd == pytest.approx(0.01)
    assert totals.unpriced_calls == 1 and totals.cache_hits == 1 and totals.latency_s == pytest.approx(3.1)
    assert "| $0.0200 + 1 unpriced call | 3.1 s of LLM time" in totals.summary()  # the priced sum, and what it lacks
    judge = ledger.totals(role="judge")
    assert judge.cost_usd is None and judge.summary().endswith("| unpriced | 1.0 s of LLM time")  # never $0
    assert ledger.totals(task_id="a").calls == 2

    lines = path.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[1])["cost_usd"] is None
    with path.open("a") as f:
        f.write('{"role": "coder", "mod')  # a crash mid-write
    resumed = Ledger(path)
    assert [r.role for r in resumed.rows] == ["coder", "judge", "coder"]
    resumed.close()


def test_costs_read_unpriced_never_zero_and_the_demo_is_free(script_name):
    assert format_cost(None, 3) == "unpriced"
    assert format_cost(0.12, 3) == "$0.1200 + 3 unpriced calls" and format_cost(0.12, 1) == "$0.1200 + 1 unpriced call"
    assert format_cost(0.0) == "$0.0000"
    mixed = sum_rows(
        [
            LedgerRow("coder", "openai/o3", 10, 5, cost_usd=0.12, priced=True, latency_s=2.0),
            LedgerRow("judge", "hosted_vllm/x", 10, 5, cost_usd=None, priced=False, latency_s=1.0),
        ]
    )
    assert mixed.cost_usd == pytest.approx(0.12) and mixed.unpriced_calls == 1
    assert "| $0.1200 + 1 unpriced call | 3.0 s of LLM time" in mixed.summary()
    # the demo calls no provider: its configs price it at $0 by design, and the line says why it is $0
    import yaml

    for role in ("coder", "judge"):
        demo = yaml.safe_load((REPO / "cudaforge" / "resources" / "configs" / role / "demo.yaml").read_text())
        assert demo["model"] == "scripted/demo"
        assert (demo["input_cost_per_token"], demo["output_cost_per_token"]) == (0.0, 0.0)
    install_script(script_name, ["a b"])
    llm = client(script_name, input_cost_per_token=0.0, output_cost_per_token=0.0)
    assert llm.complete(ask("x")).row.priced and llm.ledger.totals().cost_usd == 0.0
    assert "| $0.0000 (scripted: no provider called) |" in llm.ledger.totals().summary()


# --------------------------------------------------------------------------- calls, retries, errors


def test_scripted_reply_goes_through_litellm(script_name):
    script = install_script(script_name, ["one two three", {"text": "four five", "reasoning_tokens": 5}])
    llm = client(script_name)
    reply = llm.complete(ask("write a relu kernel"), task_id="t1", round=0)
    assert reply.text == "one two three" and reply.finish_reason == "stop"
    assert reply.usage == Usage(prompt_tokens=8, completion_tokens=3)
    assert reply.cache_hit is False and reply.row.attempts == 1 and reply.row.meta == {"task_id": "t1", "round": 0}
    assert reply.row.role == "coder" and reply.row.model == f"scripted/{script_name}" and not reply.row.error
    assert script.calls[0][1]["content"] == "write a relu kernel"

    second = llm.complete(ask("again"))
    assert (second.row.reasoning_tokens, second.row.completion_tokens) == (5, 7)
    assert len(llm.ledger.rows) == 2 and script.remaining == 0


def test_parameters_are_passed_only_when_set(script_name, monkeypatch):
    install_script(script_name, ["a", "b"])
    seen = []
    original = litellm.completion
    monkeypatch.setattr(litellm, "completion", lambda **kw: seen.append(kw) or original(**kw))
    client(script_name).complete(ask("x"))
    client(script_name, temperature=0.2, max_tokens=64, api_base="http://localhost:8000/v1").complete(ask("x"))
    assert not {"temperature", "reasoning_effort", "max_tokens", "api_base"} & seen[0].keys()
    assert (seen[1]["temperature"], seen[1]["max_tokens"], seen[1]["api_base"]) == (0.2, 64, "http://localhost:8000/v1")
    assert seen[0]["timeout"] == 600.0 and seen[0]["num_retries"] == 0


def test_retries_rate_limit_timeout_and_500_then_succeeds(script_name):
    script = install_script(script_name, [RATE_LIMIT, TIMEOUT, SERVER_ERROR, {"error": "connection"}, "done"])
    reply = client(script_name, max_retries=4).complete(ask("x"))
    assert reply.text == "done" and reply.row.attempts == 5 and len(script.calls) == 5


def test_retries_exhausted_is_unavailable(script_name):
    script = install_script(script_name, [RATE_LIMIT] * 5)
    llm = client(script_name, max_retries=2)
    with pytest.raises(LLMUnavailable, match=f"scripted/{script_name} \\(coder\\): still failing after 3 attempts"):
        llm.complete(ask("x"))
    assert len(script.calls) == 3
    [row] = llm.ledger.rows
    assert row.attempts == 3 and row.error.startswith("LLMUnavailable") and row.cost_usd == 0.0


@pytest.mark.parametrize(
    "kind, error",
    [("auth", LLMAuthError), ("bad_request", LLMRequestError), ("context_window", ContextWindowError)],
)
def test_non_retryable_errors_are_not_retried(script_name, kind, error):
    script = install_script(script_name, [{"error": kind, "message": "nope"}, "unused"])
    with pytest.raises(error, match=f"scripted/{script_name}.*nope") as info:
        client(script_name).complete(ask("x"))
    assert len(script.calls) == 1 and info.value.row.attempts == 1 and info.value.model == f"scripted/{script_name}"


def test_used_up_or_missing_script_is_a_clear_request_error(script_name):
    install_script(script_name, ["only"])
    llm = client(script_name)
    llm.complete(ask("x"))
    with pytest.raises(LLMRequestError, match="used up"):
        llm.complete(ask("y"))
    with pytest.raises(LLMRequestError, match="no script named 'never_installed'"):
        client("never_installed").complete(ask("x"))


def test_empty_reply_is_an_error_with_a_row(script_name):
    install_script(script_name, ["  \n"])
    llm = client(script_name, role="judge")
    with pytest.raises(EmptyReply) as info:
        llm.complete(ask("x"))
    assert info.value.row.error.startswith("EmptyReply") and info.value.row.prompt_tokens == 5
    assert llm.ledger.rows == [info.value.row]


# --------------------------------------------------------------------------- pricing


def test_unpriced_model_is_none_not_zero(script_name):
    install_script(script_name, ["a b"])
    llm = client(script_name)
    reply = llm.complete(ask("x"))
    assert reply.cost_usd is None and reply.row.priced is False and reply.row.price_source == "none"
    assert llm.ledger.totals().cost_usd is None and llm.ledger.totals().unpriced_calls == 1


def test_cost_from_litellm_price_map():
    usage = Usage(prompt_tokens=1000, completion_tokens=100)
    entry = litellm.model_cost["gpt-4o"]
    expected = 1000 * entry["input_cost_per_token"] + 100 * entry["output_cost_per_token"]
    assert cost_for("openai/gpt-4o", usage) == (pytest.approx(expected), True)
    assert cost_for("gpt-4o", usage) == (pytest.approx(expected), True)
    cached, _ = cost_for("openai/gpt-4o", Usage(1000, 100, cached_prompt_tokens=500))
    assert cached < expected
    # litellm's own cost_per_token answers $0 for some unlisted names (this one, in 1.110): not us
    unlisted = ["hosted_vllm/my-model", "openai/mystery", "anthropic/claude-3-unreleased-20990101"]
    for model in unlisted:
        if model not in litellm.model_cost and model.split("/")[1] not in litellm.model_cost:
            assert cost_for(model, usage) == (None, False), model


def test_priced_model_end_to_end(monkeypatch):
    """A real provider model, answered offline by litellm's ``mock_response``."""
    original = litellm.completion
    monkeypatch.setattr(litellm, "completion", lambda **kw: original(mock_response="__global__ void k();", **kw))
    reply = LLMClient(LLMConfig(model="openai/gpt-4o"), role="coder").complete(ask("x"))
    expected, priced = cost_for("openai/gpt-4o", reply.usage)
    assert priced and reply.row.priced and reply.cost_usd == pytest.approx(expected) and expected > 0


def test_custom_prices_win(script_name):
    install_script(script_name, ["a b c"])
    reply = client(script_name, input_cost_per_token=1e-6, output_cost_per_token=2e-6).complete(ask("x"))
    assert reply.row.priced and reply.cost_usd == pytest.approx(5 * 1e-6 + 3 * 2e-6)
    assert cost_for("openai/gpt-4o", Usage(10, 10), input_cost_per_token=1.0) == (10.0, True)


# Shipped configs whose model is deliberately not priced by litellm's map or the override file: a config added
# without a price fails test_every_shipped_config_has_a_price until it is priced or listed here with a reason.
DELIBERATELY_UNPRICED = {
    "demo.yaml": "scripted/demo answers from a transcript in-process: no provider, no price list",
    "simulator.yaml": "the simulator answers from a kernel pool in-process; its words are priced at o3's rates by config",
    "local_vllm.yaml": "a local vLLM server: no price list (set input_cost_per_token / output_cost_per_token)",
    "local_qwq_32b.yaml": "a local vLLM server: no price list (set input_cost_per_token / output_cost_per_token)",
    "openai_compatible.yaml": "the user's own server, model named on the command line: priced by the user",
}


def _shipped_configs() -> list[tuple[str, Path, dict]]:
    import yaml

    from cudaforge.paths import CONFIG_DIR

    return [
        (f"{group}/{path.name}", path, yaml.safe_load(path.read_text()))
        for group in ("coder", "judge")
        for path in sorted((CONFIG_DIR / group).glob("*.yaml"))
        if path.name != "schema.yaml"
    ]


def test_every_shipped_config_has_a_price():
    from cudaforge.llm.pricing import PriceSource, price_source

    configs = _shipped_configs()
    assert {name.split("/")[1] for name, _, _ in configs} >= {"openai_o3.yaml", "claude_sonnet_4.yaml"}
    for name, path, data in configs:
        model = data["model"]
        source = price_source(model)  # the tables only: a price in a shipped config would have no source or date
        if path.name in DELIBERATELY_UNPRICED:
            assert source is PriceSource.none, f"{name}: {model} is priced ({source.value}): take it off the list"
            assert model.startswith("scripted/") or data.get("api_base") or data.get("openai_compatible"), (
                f"{name}: not local, not scripted"
            )
        else:
            assert source in (PriceSource.litellm, PriceSource.override), (
                f"{name}: no price for {model} in litellm's map or cudaforge/resources/prices/overrides.yaml"
            )
            assert data.get("input_cost_per_token") is None and data.get("output_cost_per_token") is None, (
                f"{name}: put its price in overrides.yaml, with its source and date"
            )


def test_shipped_prices_of_the_papers_models():
    """o3 and GPT-5 from litellm's map, Claude Sonnet 4 (not in litellm 1.110 under its Anthropic id) from the
    override file; per 1M tokens: in, out, cached in."""
    from cudaforge.llm.pricing import PriceSource, price_source

    tenth = 100_000  # a tenth of 1M tokens: under the 200K long-context tier
    for model, (inp, out, cached) in {
        "openai/o3": (2.0, 8.0, 0.5),
        "openai/gpt-5": (1.25, 10.0, 0.125),
        "anthropic/claude-sonnet-4-20250514": (3.0, 15.0, 0.3),
    }.items():
        assert 10 * cost_for(model, Usage(tenth, 0))[0] == pytest.approx(inp), model
        assert 10 * cost_for(model, Usage(0, tenth))[0] == pytest.approx(out), model
        assert 10 * cost_for(model, Usage(tenth, 0, cached_prompt_tokens=tenth))[0] == pytest.approx(cached), model
    assert price_source("openai/o3") is PriceSource.litellm
    sonnet = "anthropic/claude-sonnet-4-20250514"
    if price_source(sonnet) is PriceSource.override:  # a newer litellm map that lists it again wins
        assert cost_for(sonnet, Usage(300_000, 1_000_000))[0] == pytest.approx(0.3 * 6.0 + 22.5)  # long-context tier
        assert cost_for(sonnet, Usage(1000, 10, cached_prompt_tokens=400))[0] == pytest.approx(
            600 * 3e-6 + 400 * 3e-7 + 10 * 1.5e-5
        )
    assert 10 * cost_for("claude-sonnet-4-20250514", Usage(tenth, 0))[0] == pytest.approx(3.0)  # the bare id too


def test_price_sources_in_order(monkeypatch):
    from cudaforge.llm import pricing

    assert pricing.price_source("openai/o3", input_cost_per_token=0.0) is pricing.PriceSource.config
    assert pricing.price_source("hosted_vllm/my-model") is pricing.PriceSource.none
    assert not pricing.is_priced("hosted_vllm/my-model") and pricing.is_priced("anthropic/claude-sonnet-4-20250514")
    # litellm's own map wins over the override file when both list a model
    monkeypatch.setitem(
        litellm.model_cost,
        "claude-sonnet-4-20250514",
        {
            "litellm_provider": "anthropic",
            "input_cost_per_token": 1e-6,
            "output_cost_per_token": 1e-6,
            "max_input_tokens": 1000,
            "max_output_tokens": 10,
        },
    )
    assert pricing.price_source("anthropic/claude-sonnet-4-20250514") is pricing.PriceSource.litellm
    assert pricing.cost_for("anthropic/claude-sonnet-4-20250514", Usage(10, 10)) == (pytest.approx(2e-5), True)


def test_override_prices_bound_the_preflight():
    from cudaforge.llm.pricing import max_call_cost

    # a full 200K-token window and a 16K reply (the shipped config's max_tokens) at $3 / $15 per 1M tokens
    assert max_call_cost("anthropic/claude-sonnet-4-20250514", max_tokens=16000) == pytest.approx(0.6 + 0.24)
    assert max_call_cost("hosted_vllm/my-model") is None


def test_override_file_entries_are_sourced_and_dated(tmp_path):
    from cudaforge.llm.pricing import OVERRIDES_FILE, load_overrides

    shipped = load_overrides()
    assert shipped and OVERRIDES_FILE.is_file()
    for name, entry in shipped.items():
        assert entry["source"] and entry["as_of"], name
    bad = tmp_path / "prices.yaml"
    bad.write_text(
        "models:\n  some-model:\n    input_cost_per_token: 1.0e-6\n    output_cost_per_token: 2.0e-6\n"
        "    source: https://example.org/prices\n"
    )
    with pytest.raises(ValueError, match="some-model.*as_of"):
        load_overrides(bad)
    bad.write_text(
        "models:\n  some-model:\n    input_cost_per_token: cheap\n    output_cost_per_token: 2.0e-6\n"
        "    source: x\n    as_of: 2026-01-01\n"
    )
    with pytest.raises(ValueError, match="input_cost_per_token"):
        load_overrides(bad)


# --------------------------------------------------------------------------- cache


def test_request_key_covers_every_parameter(script_name):
    base = client(script_name).request(ask("x"))
    assert request_key(base) == request_key(client(script_name).request(ask("x")))
    variants = [
        client(script_name, temperature=0.5).request(ask("x")),
        client(script_name, reasoning_effort="high").request(ask("x")),
        client(script_name, max_tokens=10).request(ask("x")),
        client(script_name, api_base="http://h:1").request(ask("x")),
        client("other").request(ask("x")),
        client(script_name).request(ask("y")),
        client(script_name).request(ask("x"), sample=1),
    ]
    assert len({request_key(v) for v in variants} | {request_key(base)}) == len(variants) + 1


def test_read_write_serves_a_repeat_from_the_cache(script_name, tmp_path):
    script = install_script(script_name, ["first", "second"])
    with ResponseCache(tmp_path / "c.sqlite", "read_write") as cache:
        llm = client(script_name, cache=cache)
        a, b = llm.complete(ask("x")), llm.complete(ask("x"))
        assert a.text == b.text == "first" and not a.cache_hit and b.cache_hit
        assert b.row.attempts == 0 and b.row.completion_tokens == a.row.completion_tokens
        assert len(script.calls) == 1 and len(cache) == 1 and cache.request(a.row.request_key)["messages"] == ask("x")
        assert llm.ledger.totals().cache_hits == 1


def test_off_mode_always_calls(script_name, tmp_path):
    script = install_script(script_name, ["first", "second"])
    cache = ResponseCache(tmp_path / "c.sqlite", CacheMode.off)
    llm = client(script_name, cache=cache)
    assert [llm.complete(ask("x")).text for _ in range(2)] == ["first", "second"]
    assert len(script.calls) == 2 and not (tmp_path / "c.sqlite").exists()


def test_replay_only_hit_never_calls_litellm(script_name, tmp_path, monkeypatch):
    install_script(script_name, ["recorded"])
    path = tmp_path / "c.sqlite"
    with ResponseCache(path, "read_write") as cache:
        client(script_name, cache=cache).complete(ask("x"))

    def offline(**kwargs):
        raise AssertionError("replay_only reached litellm.completion")

    monkeypatch.setattr(litellm, "completion", offline)
    with ResponseCache(path, "replay_only") as cache:
        reply = client(script_name, cache=cache).complete(ask("x"))
    assert reply.text == "recorded" and reply.cache_hit


def test_replay_only_miss_names_the_request(script_name, tmp_path):
    install_script(script_name, ["recorded"])
    path = tmp_path / "c.sqlite"
    with ResponseCache(path, "read_write") as cache:
        client(script_name, cache=cache).complete(ask("x"))
    with ResponseCache(path, "replay_only") as cache:
        llm = client(script_name, role="judge", cache=cache)
        with pytest.raises(ReplayMiss) as info:
            llm.complete(ask("a prompt that was never recorded " + "z" * 300))
    message = str(info.value)
    assert info.value.request_key in message and f"scripted/{script_name}" in message and "judge" in message
    assert "a prompt that was never recorded" in message and "z" * 300 not in message
    assert llm.ledger.rows[0].error.startswith("ReplayMiss")
    with pytest.raises(FileNotFoundError):
        ResponseCache(tmp_path / "missing.sqlite", "replay_only")


TRICKY = [
    "plain",
    "unicode: é ∑ 🚀\n",
    "trailing spaces   \n\n",
    "crlf\r\nline\ttab",
    "```cuda\n__global__ void k(){}\n```",
]


def test_recorded_run_replays_byte_for_byte(script_name, tmp_path):
    install_script(script_name, TRICKY)
    install_script(script_name + "j", [t.upper() + " verdict" for t in TRICKY])
    path, record_ledger = tmp_path / "c.sqlite", Ledger(tmp_path / "record.jsonl")

    def run(cache: ResponseCache, ledger: Ledger) -> list[str]:
        coder = client(script_name, cache=cache, ledger=ledger, temperature=0.7)
        judge = client(script_name + "j", role="judge", cache=cache, ledger=ledger)
        texts, feedback = [], "start"
        for round_ in range(len(TRICKY)):
            kernel = coder.complete(ask(feedback), round=round_).text
            feedback = judge.complete(ask(kernel), round=round_).text
            texts += [kernel, feedback]
        return texts

    with ResponseCache(path, "read_write") as cache:
        recorded = run(cache, record_ledger)
    remove_script(script_name)  # replay must not need the scripts
    remove_script(script_name + "j")
    replay_ledger = Ledger(tmp_path / "replay.jsonl")
    with ResponseCache(path, "replay_only") as cache:
        replayed = run(cache, replay_ledger)
    assert recorded == replayed and recorded[0::2] == TRICKY
    assert [t.encode() for t in recorded] == [t.encode() for t in replayed]

    def tokens(rows: list[LedgerRow]) -> list[tuple]:
        return [(r.role, r.request_key, r.prompt_tokens, r.completion_tokens, r.cost_usd) for r in rows]

    assert tokens(Ledger.read(tmp_path / "record.jsonl")) == tokens(Ledger.read(tmp_path / "replay.jsonl"))
    assert all(r.cache_hit for r in replay_ledger.rows) and not any(r.cache_hit for r in record_ledger.rows)


def test_replay_runs_without_litellm(script_name, tmp_path):
    install_script(script_name, ["recorded ✓\n"])
    path = tmp_path / "c.sqlite"
    with ResponseCache(path, "read_write") as cache:
        client(script_name, cache=cache).complete(ask("x"))
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["litellm"] = None  # any import of litellm now fails
        from cudaforge.config import LLMConfig
        from cudaforge.llm import LLMClient, ResponseCache
        cache = ResponseCache({str(path)!r}, "replay_only")
        messages = [{{"role": "system", "content": "You write CUDA kernels."}}, {{"role": "user", "content": "x"}}]
        reply = LLMClient(LLMConfig(model="scripted/{script_name}"), role="coder", cache=cache).complete(messages)
        sys.stdout.buffer.write(reply.text.encode())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == "recorded ✓\n".encode()


def test_empty_reply_is_recorded_and_replayed(script_name, tmp_path):
    install_script(script_name, [""])
    path = tmp_path / "c.sqlite"
    for mode in ("read_write", "replay_only"):
        with ResponseCache(path, mode) as cache, pytest.raises(EmptyReply):
            client(script_name, cache=cache).complete(ask("x"))


# --------------------------------------------------------------------------- scripts, backoff, threads


def test_load_script_from_yaml_and_json(tmp_path, script_name):
    yaml_text = "replies:\n  - hello\n  - {error: rate_limit}\n  - {text: hi, reasoning_tokens: 2}\n"
    (tmp_path / "s.yaml").write_text(yaml_text)
    (tmp_path / "s.json").write_text(json.dumps(["a", {"error": "timeout"}]))
    assert load_script(tmp_path / "s.yaml") == ["hello", RATE_LIMIT, {"text": "hi", "reasoning_tokens": 2}]
    assert load_script(tmp_path / "s.json") == ["a", TIMEOUT]
    install_script(script_name, load_script(tmp_path / "s.yaml"))
    assert client(script_name).complete(ask("x")).text == "hello"
    with pytest.raises(ValueError, match="not one of"):
        install_script(script_name, [{"error": "meteor"}])


def test_backoff_grows_with_jitter_and_caps():
    backoff = Backoff(base_s=1.0, max_s=5.0)
    assert 0.5 <= backoff.delay(1) <= 1.0 and 2.0 <= backoff.delay(3) <= 4.0 and backoff.delay(10) <= 5.0
    assert backoff.delay(1, retry_after=3.0) == 3.0 and backoff.delay(1, retry_after=99.0) == 5.0


def test_threads_share_cache_and_ledger(script_name, tmp_path):
    install_script(script_name, lambda messages: "echo " + messages[-1]["content"])
    ledger = Ledger(tmp_path / "calls.jsonl")
    errors = []
    with ResponseCache(tmp_path / "c.sqlite", "read_write") as cache:
        llm = client(script_name, cache=cache, ledger=ledger)

        def work(t: int) -> None:
            try:
                for i in range(10):
                    assert llm.complete(ask(f"{t}-{i}")).text == f"echo {t}-{i}"
            except Exception as err:  # noqa: BLE001
                errors.append(err)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors and len(cache) == 40
    assert len(ledger.rows) == 40 and len((tmp_path / "calls.jsonl").read_text().splitlines()) == 40
    assert ledger.totals().completion_tokens == 80


def test_a_reply_with_a_lone_surrogate_is_stored_and_its_json_advice_hashes(script_name, tmp_path):
    """The red team: a lone surrogate (a "\\ud800" escape in a reply's JSON, or in the reply a provider decoded)
    reached the next prompt's cache key and stopped the run with UnicodeEncodeError. The reply text and every
    string decoded from its JSON are plain UTF-8."""
    from cudaforge.agents.parsing import extract_json

    install_script(script_name, ['{"advice": "use \\ud800 tiles"} and a stray \ud800'])
    with ResponseCache(tmp_path / "c.sqlite", "read_write") as cache:
        reply = client(script_name, cache=cache).complete(ask("judge this"))
    reply.text.encode("utf-8")  # stored in the cache and the run directory as it is
    parsed = extract_json(reply.text, ["advice"])
    assert parsed.ok and parsed.data["advice"] == "use \ufffd\ufffd\ufffd tiles"
    request_key({"messages": ask(parsed.data["advice"])})


def test_where_the_system_role_is_decided_and_a_model_config_overrides_litellms_map():
    """Issue 54: litellm's map does not mark o3 as taking system messages, so both messages went out as ``user``
    while our records said ``system``; the CudaForge authors' client sends ``system``."""
    import litellm

    from cudaforge.llm.client import system_messages_as_sent

    messages = [{"role": "system", "content": "you write kernels"}, {"role": "user", "content": "relu"}]
    before = litellm.supports_system_messages("o3", None)
    try:
        sent, role = system_messages_as_sent(litellm, "openai/o3", messages, None)
        assert role == ("system" if before else "user") and sent == messages  # litellm's map decides, said as such
        sent, role = system_messages_as_sent(litellm, "openai/o3", messages, False)
        assert role == "user" and [m["role"] for m in sent] == ["user", "user"]
        sent, role = system_messages_as_sent(litellm, "openai/o3", messages, True)
        assert role == "system" and sent == messages and litellm.supports_system_messages("o3", None)
        assert system_messages_as_sent(litellm, "openai/o3", messages[1:], True) == (messages[1:], None)
    finally:
        litellm.register_model({"o3": {"supports_system_messages": before}})


def test_the_o3_configs_send_the_system_role():
    import yaml

    from cudaforge.paths import CONFIG_DIR

    for role in ("coder", "judge"):
        assert yaml.safe_load((CONFIG_DIR / role / "openai_o3.yaml").read_text())["system_messages"] is True
