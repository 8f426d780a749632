"""Pre-flight: what would make a run fail on every task, found before the first task starts.

No model is called; nothing leaves the machine except a TCP connect to a configured server and, for an
OpenAI-compatible one, a ``GET /models``. The checks (each problem is one ``Problem``):

- ``litellm``: litellm is not installed, and a model is to be called (not replayed);
- ``api_key``: litellm's ``validate_environment`` says the model needs a variable that is not set;
- ``provider``: litellm cannot tell which provider serves the model name (a bare served name);
- ``server``: a model with an ``api_base`` whose host:port does not accept a connection in time;
- ``served``: an OpenAI-compatible server's ``GET /models`` does not list the model (a refused key: ``api_key``);
- ``demo_coverage``: the demo model (``scripted/demo``) has no transcript for some selected tasks
  (the transcript covers the ``tiny`` suite only);
- ``replay_cache`` / ``replay_coverage``: ``llm_cache.mode=replay_only`` with no cache file, or a
  cache that recorded no prompt for some selected tasks;
- ``simulator_pool`` (``cudaforge.search.simulator.pool_problems``, asked beside these by ``cudaforge run`` and
  ``cudaforge doctor``): the search simulator's pool (``coder.pool``) is missing or malformed, or has no kernels for
  some selected tasks (docs/simulator.md).

In ``replay_only`` mode only the replay checks run (nothing reaches a provider). Other
``scripted/<name>`` models are installed in-process by tests and are not checked. litellm
is imported only for a model that needs the key check.

How to call (``config``: a ``CudaforgeConfig`` in object form, ``tasks`` the selected suite)::

    from cudaforge.run.preflight import check_config, estimate_cost

    problems = check_config(config, [t.id for t in tasks], run_dir=run_dir)
    for problem in problems:
        print(f"cudaforge run: {problem.line()}", file=sys.stderr)
    if problems:
        return 2
    print(estimate_cost(config, len(tasks)).line())

A ``doctor`` command can check any list of models with ``check_models``::

    check_models([{"role": "coder", "model": "openai/o3"},
                  {"role": "judge", "model": "hosted_vllm/Qwen/QwQ-32B", "api_base": "http://localhost:8000/v1"}])
"""

from __future__ import annotations

import importlib.util
import socket
import sqlite3
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cudaforge.llm.cache import CacheMode, recorded_tasks
from cudaforge.llm.ledger import SCRIPTED_PREFIX  # models answered in-process: no key, no server, no cost
from cudaforge.llm.settings import OPENAI_COMPATIBLE_PREFIX
from cudaforge.track.store import LEDGER_FILE, LLM_CACHE_FILE

CONNECT_TIMEOUT_S = 0.5
"""How long a local server gets to accept a TCP connection."""
MODELS_TIMEOUT_S = 5.0
"""How long an OpenAI-compatible server gets to list its models."""


@dataclass(frozen=True)
class Problem:
    """One reason the run would fail, with the fix."""

    check: str
    """``litellm``, ``api_key``, ``server``, ``demo_coverage``, ``replay_cache``, ``replay_coverage`` or
    ``simulator_pool``."""
    role: str
    """Who uses the model: ``coder``, ``judge`` or ``coder and judge``."""
    model: str
    """The litellm model name."""
    message: str
    """One line: what is wrong (``coder model openai/o3 needs OPENAI_API_KEY (not set)``)."""
    fix: str
    """One line: how to fix it."""
    tasks: tuple[str, ...] = ()
    """The selected task ids concerned (coverage checks; empty otherwise)."""

    def line(self) -> str:
        """``message: fix``, one line for the CLI."""
        return f"{self.message}: {self.fix}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (for a ``doctor --json``)."""
        return {**asdict(self), "tasks": list(self.tasks)}


def check_models(
    models: Sequence[Mapping[str, Any]],
    task_ids: Sequence[str] = (),
    *,
    cache_mode: CacheMode | str = CacheMode.read_write,
    cache_path: str | Path | None = None,
    timeout_s: float = CONNECT_TIMEOUT_S,
) -> list[Problem]:
    """The problems of the configured models for a run over ``task_ids`` ([] when all is well).

    ``models``: one mapping per role, ``{"role": "coder", "model": "openai/o3", "api_base": None}``
    (``api_base`` optional). Two roles on the same model and server are checked once and
    reported as ``coder and judge``. ``cache_mode`` / ``cache_path``: the run's response cache
    (the path is needed only for ``replay_only``; None skips the replay checks). Coverage
    checks need ``task_ids``. Takes at most about ``timeout_s`` per server checked.
    """
    problems: list[Problem] = []
    replay = CacheMode(getattr(cache_mode, "value", cache_mode)) is CacheMode.replay_only
    for (model, api_base), roles in _group(models).items():
        who = f"{roles} model {model}"
        if replay:
            problems += _check_replay(who, roles, model, task_ids, cache_path)
        elif importlib.util.find_spec("litellm") is None:  # every call but a replayed one goes through litellm
            why = f"{who} is called through litellm, which is not installed in this Python ({sys.executable})"
            fix = "pip install litellm (cudaforge's install brings it), or replay a recorded run: llm_cache.mode=replay_only"
            problems.append(Problem("litellm", roles, model, why, fix))
        elif model == _demo_model():
            problems += _check_demo(who, roles, model, task_ids)
        elif not model.startswith(SCRIPTED_PREFIX):
            provider = _check_provider(who, roles, model, api_base)
            if provider:
                problems += provider
                continue
            problems += _check_keys(who, roles, model, api_base)
            if api_base:
                server = _check_server(who, roles, model, api_base, timeout_s)
                problems += server or _check_served(who, roles, model, api_base)
    return problems


def check_config(config: Any, task_ids: Sequence[str], *, run_dir: str | Path | None = None) -> list[Problem]:
    """``check_models`` on a run's config (``CudaforgeConfig``, object form): its coder, judge and cache.

    ``run_dir``: where the run writes, for the default cache path (``<run_dir>/llm_cache.sqlite``).
    """
    models = [
        {"role": role, "model": llm.model, "api_base": llm.api_base}
        for role, llm in (("coder", config.coder), ("judge", config.judge))
    ]
    cache = config.llm_cache
    cache_path = cache.path or (Path(run_dir) / LLM_CACHE_FILE if run_dir is not None else None)
    return check_models(models, task_ids, cache_mode=cache.mode, cache_path=cache_path)


def check_fit(
    config: Any, n_tasks: int, *, gpu_found: bool | None = None, ncu_found: bool | None = None
) -> list[Problem]:
    """What this machine cannot give a run that pays for its models (``fit``), the verdict ``cudaforge run``
    refuses on and ``cudaforge doctor`` prints: without a GPU no kernel is timed (correctness-only verdicts, no
    speedup), and on a GPU without Nsight Compute the Judge gets no hardware metrics. A run that costs nothing (the
    offline demo, a replay) is never refused; ``eval.device=cpu`` says a CPU run is meant, and
    ``profile.enabled=false`` that the metrics are not wanted. ``gpu_found``/``ncu_found``: found here when None."""
    from cudaforge.graph.strategies import Strategy

    estimate = estimate_cost(config, n_tasks)
    if estimate.max_usd is not None and estimate.max_usd <= 0:
        return []
    if gpu_found is None:
        from cudaforge.eval import visible_gpus

        gpu_found = bool(visible_gpus(list(config.eval.devices or [])))
    device = str(getattr(config.eval.device, "value", config.eval.device))
    models = f"{config.coder.model} / {config.judge.model}"
    if not gpu_found:
        if device == "cpu":
            return []
        return [
            Problem(
                "fit",
                "coder and judge",
                models,
                "no GPU here: this run would spend its model calls on correctness-only verdicts, with no timing and "
                "no speedup for any kernel",
                "run it on a machine with a GPU, pick a free model to try the loop on the CPU, or set eval.device=cpu "
                "to run it correctness-only on purpose",
            )
        ]
    if not (config.profile.enabled and Strategy.from_config(config.strategy).profile):
        return []
    if ncu_found is None:
        from cudaforge.profile.ncu import resolve_ncu

        ncu_found = bool(resolve_ncu(config.profile.ncu_path))
    if ncu_found:
        return []
    return [
        Problem(
            "fit",
            "judge",
            models,
            "no Nsight Compute: the Judge would optimise without the hardware metrics this strategy gives it",
            "install ncu or set profile.ncu_path (or profile.enabled=false to run without them)",
        )
    ]


SANDBOX_PROBE_TIMEOUT_S = 90.0
"""How long the probe of the sandbox may take (its start and an ``import torch`` inside it)."""


def check_sandbox(eval_cfg: Any, probe: str = "torch") -> list[Problem]:
    """Whether the evaluator's sandbox can be built here, for this interpreter and its packages, as the run's
    evaluations will ask for it (``eval.sandbox``, ``eval.allow_weak_sandbox``, ``eval.sandbox_namespaces``): a
    sandbox started with an ``import <probe>`` inside (torch: what every worker imports first). [] when it can (or ``eval.sandbox=off``); else one problem
    that says what is missing and what to change. ``cudaforge run`` refuses on it before any model call, and
    ``cudaforge doctor`` prints the same line."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    from cudaforge.proc.sandbox import Sandbox, SandboxMode

    mode = SandboxMode(getattr(eval_cfg.sandbox, "value", eval_cfg.sandbox))
    if mode is SandboxMode.off:
        return []
    allow_weak = bool(eval_cfg.allow_weak_sandbox) and mode is SandboxMode.auto
    scratch = tempfile.mkdtemp(prefix="cudaforge-preflight-")
    fix = "fix what it names, or set eval.allow_weak_sandbox=true to evaluate with a weaker wall (docs/evaluation.md)"
    try:
        sandbox = Sandbox(
            mode=mode, scratch=scratch, namespaces=bool(eval_cfg.sandbox_namespaces), allow_weak=allow_weak
        )
        proc = sandbox.start([sys.executable, "-c", f"import {probe}"], env=dict(os.environ), stderr=subprocess.PIPE)
        status = proc.status(timeout_s=SANDBOX_PROBE_TIMEOUT_S)
        if not status.get("ok"):
            proc.kill()
            missing = "; ".join(dict.fromkeys(str(m) for m in status.get("missing") or ["it did not start"]))
            return [Problem("sandbox", "evaluator", "-", f"the sandbox cannot be built here ({missing})", fix)]
        try:
            code = proc.proc.wait(timeout=SANDBOX_PROBE_TIMEOUT_S)
            err = (proc.proc.stderr.read() if proc.proc.stderr else b"").decode(errors="replace").strip()
        except subprocess.TimeoutExpired:
            code, err = None, f"no answer within {SANDBOX_PROBE_TIMEOUT_S:.0f} s"
        finally:
            proc.kill()
            proc.cleanup()
    except Exception as exc:  # noqa: BLE001 - the probe itself could not run: the run could not either
        return [Problem("sandbox", "evaluator", "-", f"the sandbox could not start: {type(exc).__name__}: {exc}", fix)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if code != 0:
        last = (err.splitlines() or ["no output"])[-1][:200]
        where = ", which the sandbox does not bind" if os.environ.get("PYTHONPATH") else ""
        return [
            Problem(
                "sandbox",
                "evaluator",
                "-",
                f"this Python cannot import {probe} inside the sandbox ({last})",
                f"install {probe} into this interpreter's own environment (a venv) rather than through PYTHONPATH{where}",
            )
        ]
    return []


def _demo_model() -> str:
    from cudaforge.llm.scripted import DEMO_MODEL

    return DEMO_MODEL


def _group(models: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str | None], str]:
    """(model, api_base) -> ``coder and judge``, in first-seen order."""
    roles: dict[tuple[str, str | None], list[str]] = {}
    for entry in models:
        roles.setdefault((str(entry["model"]), entry.get("api_base") or None), []).append(str(entry["role"]))
    return {key: " and ".join(names) for key, names in roles.items()}


def _setting(roles: str, name: str) -> str:
    """The override(s) that set ``name`` for these roles: ``coder.api_base=...``."""
    return " and ".join(f"{role}.{name}=..." for role in roles.split(" and "))


def _few(task_ids: Sequence[str], shown: int = 3) -> str:
    """``a, b, c and 27 more``."""
    head = ", ".join(task_ids[:shown])
    return head if len(task_ids) <= shown else f"{head} and {len(task_ids) - shown} more"


def _check_keys(who: str, roles: str, model: str, api_base: str | None) -> list[Problem]:
    from cudaforge.llm.credentials import missing_keys

    missing = missing_keys(model, api_base)
    if not missing:
        return []
    names = ", ".join(missing)
    return [
        Problem(
            "api_key",
            roles,
            model,
            f"{who} needs {names} (not set)",
            f"export {names} before the run, or pick another model ({_setting(roles, 'model')})",
        )
    ]


def _check_provider(who: str, roles: str, model: str, api_base: str | None) -> list[Problem]:
    """A model name litellm cannot route (a bare served name such as ``my-model``): every call would fail with
    "LLM Provider NOT provided"."""
    from cudaforge.llm.provider import litellm_module

    litellm = litellm_module()
    try:
        litellm.get_llm_provider(model=model, api_base=api_base)
        return []
    except Exception:  # noqa: BLE001 - litellm raises its BadRequestError, or a ValueError in older versions
        pass
    roles_list = roles.split(" and ")
    if api_base:
        fix = (
            "for a model your own OpenAI-compatible server (vLLM, SGLang, Ollama, a lab endpoint) serves, use "
            + " ".join(f"{r}=openai_compatible {r}.model={model}" for r in roles_list)
            + f" (or spell it {OPENAI_COMPATIBLE_PREFIX}{model}); docs/own-model.md"
        )
    else:
        fix = "name it as litellm does, <provider>/<model> (openai/o3, anthropic/claude-sonnet-4-20250514, ...)"
    return [Problem("provider", roles, model, f"{who}: litellm cannot tell which provider serves {model!r}", fix)]


def _check_served(who: str, roles: str, model: str, api_base: str) -> list[Problem]:
    """For an OpenAI-compatible server: its ``GET /models`` lists the model's name (nothing is said when the server
    has no such route or does not answer it in time)."""
    import json
    import os
    import urllib.error
    import urllib.request

    if not model.startswith((OPENAI_COMPATIBLE_PREFIX, "openai/")):
        return []
    name = model.split("/", 1)[1]
    key = (
        os.environ.get("HOSTED_VLLM_API_KEY")
        if model.startswith(OPENAI_COMPATIBLE_PREFIX)
        else os.environ.get("OPENAI_API_KEY")
    )
    request = urllib.request.Request(
        api_base.rstrip("/") + "/models", headers={"Authorization": f"Bearer {key}"} if key else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=MODELS_TIMEOUT_S) as answer:
            served = [str(m.get("id")) for m in json.loads(answer.read(1 << 20)).get("data", [])]
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            variable = "HOSTED_VLLM_API_KEY" if model.startswith(OPENAI_COMPATIBLE_PREFIX) else "OPENAI_API_KEY"
            return [
                Problem(
                    "api_key",
                    roles,
                    model,
                    f"{who}: the server {api_base} refused its key ({exc.code})",
                    f"export {variable} with the key the server expects",
                )
            ]
        return []
    except (OSError, ValueError, AttributeError):
        return []
    if name in served:
        return []
    return [
        Problem(
            "served",
            roles,
            model,
            f"{who}: the server {api_base} does not serve {name!r} (it serves {', '.join(served[:5]) or 'nothing'})",
            f"set {_setting(roles, 'model')} to one of those",
        )
    ]


def _check_server(who: str, roles: str, model: str, api_base: str, timeout_s: float) -> list[Problem]:
    failure = connect_failure(api_base, timeout_s)
    if failure is None:
        return []
    return [
        Problem(
            "server",
            roles,
            model,
            f"{who}: server {api_base} not answering ({failure})",
            f"start the server, or point {_setting(roles, 'api_base')} at one that runs",
        )
    ]


def connect_failure(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why a TCP connection to the URL's host:port fails within ``timeout_s`` (None: it connects).

    Name resolution counts against the timeout too (it runs in a thread that is abandoned
    when slow), so a hostname that does not resolve cannot stall the check.
    """
    parts = urlsplit(url if "://" in url else f"http://{url}")
    try:
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # a port that is not a number
        return f"bad address: {exc}"
    if not host:
        return "no host in the address"
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"{host}:{port}: {exc.strerror or exc}")

    worker = threading.Thread(target=connect, name="preflight-connect", daemon=True)
    worker.start()
    worker.join(timeout_s + 0.05)
    return outcome[0] if outcome else f"{host}:{port}: no answer within {timeout_s:g} s"


def _check_demo(who: str, roles: str, model: str, task_ids: Sequence[str]) -> list[Problem]:
    from cudaforge.run.demo import uncovered_tasks

    missing = uncovered_tasks(task_ids)
    if not missing:
        return []
    return [
        Problem(
            "demo_coverage",
            roles,
            model,
            f"{who} is the offline demo: its transcript covers the `tiny` suite only, not {len(missing)} of "
            f"the {len(task_ids)} selected tasks ({_few(missing)})",
            f"use suite=tiny with the demo, or real models ({_setting(roles, 'model')})",
            tuple(missing),
        )
    ]


def _check_replay(
    who: str, roles: str, model: str, task_ids: Sequence[str], cache_path: str | Path | None
) -> list[Problem]:
    if cache_path is None:
        return []
    fix = "point llm_cache.path at a recorded run's llm_cache.sqlite"
    if not Path(cache_path).is_file():
        return [Problem("replay_cache", roles, model, f"{who}: replay_only, but no cache at {cache_path}", fix)]
    try:
        recorded = recorded_tasks(cache_path, model, ledger=Path(cache_path).with_name(LEDGER_FILE))
    except (sqlite3.Error, ValueError) as exc:
        return [Problem("replay_cache", roles, model, f"{who}: cache {cache_path} unreadable ({exc})", fix)]
    missing = [t for t in task_ids if t not in recorded]
    if not missing:
        return []
    return [
        Problem(
            "replay_coverage",
            roles,
            model,
            f"{who}: the response cache {cache_path} recorded no prompt for {len(missing)} of the "
            f"{len(task_ids)} selected tasks ({_few(missing)})",
            "select only recorded tasks, or record them with llm_cache.mode=read_write",
            tuple(missing),
        )
    ]


# --------------------------------------------------------------------------- cost


@dataclass(frozen=True)
class CostEstimate:
    """The most a run can spend under its budgets."""

    max_usd: float | None
    """Upper bound for the whole run in dollars (None: unbounded, nothing caps it)."""
    per_task_usd: float | None
    """Upper bound per task (None: unbounded)."""
    tasks: int
    """Tasks counted."""
    basis: str
    """One line: what bounds it, or why nothing does."""

    def line(self) -> str:
        """``at most $12.00 for 30 tasks ($0.40 a task: ...)`` or ``cost unbounded: ...``."""
        if self.max_usd is None:
            return f"cost unbounded: {self.basis}"
        return f"at most ${self.max_usd:,.2f} for {self.tasks} task{'' if self.tasks == 1 else 's'} (${self.per_task_usd:,.2f} a task: {self.basis})"


def estimate_cost(config: Any, n_tasks: int) -> CostEstimate:
    """The most ``n_tasks`` tasks of a run (``CudaforgeConfig``, object form) can cost.

    Per task: ``strategy.max_dollars`` plus the one Coder and one Judge step that may run
    past it (the budget is checked after each Coder and evaluation step), or rounds x calls
    a round x a per-call bound (a full input window plus a full reply at list price,
    ``pricing.max_call_cost``), whichever is lower. Calls a round: (1 + max_follow_ups) for
    the Coder, and as many for the Judge when the strategy consults it. Scripted (demo)
    models and ``replay_only`` runs cost $0. Unbounded (``max_usd`` None) when a model that
    is called has no price and no custom price: neither its calls nor ``max_dollars`` (which
    counts priced calls only) bound what it costs.
    """
    from cudaforge.graph.strategies import Strategy
    from cudaforge.llm.pricing import max_call_cost

    s = config.strategy
    if CacheMode(getattr(config.llm_cache.mode, "value", config.llm_cache.mode)) is CacheMode.replay_only:
        return CostEstimate(0.0, 0.0, n_tasks, "replay_only: no call reaches a provider")
    strategy = Strategy.from_config(s)
    rounds = strategy.round_cap(s.max_rounds) * strategy.nodes_per_round()  # a search's round is several Coder steps
    unit = "round" if strategy.nodes_per_round() == 1 else "node"
    step_calls = 1 + s.max_follow_ups
    roles = [("coder", config.coder)]
    if strategy.judge_corrects or strategy.judge_optimizes:
        roles.append(("judge", config.judge))
    bounds: list[tuple[str, float]] = []  # (role, the most one call of it costs)
    unpriced: list[str] = []
    unsized: list[str] = []  # priced (custom prices), but no token limits known for it
    for role, llm in roles:
        bound = (
            0.0
            if llm.model.startswith(SCRIPTED_PREFIX)
            else max_call_cost(
                llm.model,
                max_tokens=llm.max_tokens,
                input_cost_per_token=llm.input_cost_per_token,
                output_cost_per_token=llm.output_cost_per_token,
                max_input_tokens=getattr(llm, "max_input_tokens", None),
            )
        )
        if bound is not None:
            bounds.append((role, bound))
        elif llm.input_cost_per_token is not None or llm.output_cost_per_token is not None:
            unsized.append(role)
        else:
            unpriced.append(f"{role} model {llm.model}")
    if unpriced:
        return CostEstimate(
            None,
            None,
            n_tasks,
            f"no price in litellm's map for {' or '.join(unpriced)} (set its "
            "input_cost_per_token and output_cost_per_token to bound it)",
        )
    if unsized:
        sets = " and ".join(f"{role}.max_input_tokens (its context window) and {role}.max_tokens" for role in unsized)
        stop = (
            f"; strategy.max_dollars={s.max_dollars:g} stops each task at its first step past it"
            if s.max_dollars is not None
            else ""
        )
        return CostEstimate(
            None,
            None,
            n_tasks,
            f"the {' and '.join(unsized)} model is priced, but litellm knows no "
            f"token limits for it to bound one call: set {sets}{stop}",
        )
    round_usd = step_calls * sum(bound for _, bound in bounds)  # one step of each role
    if round_usd == 0:
        return CostEstimate(0.0, 0.0, n_tasks, "its models cost nothing (scripted, or priced at $0)")
    per_task = rounds * round_usd
    calls = " + ".join(f"{step_calls} {role} calls at most ${bound:,.2f} each" for role, bound in bounds)
    basis = f"{rounds} {unit}{'s' if rounds != 1 else ''} x ({calls})"
    if s.max_dollars is not None and s.max_dollars + round_usd < per_task:
        per_task = s.max_dollars + round_usd
        steps = " and ".join(f"one {role} step" for role, _ in bounds)
        basis = f"strategy.max_dollars={s.max_dollars:g} plus {steps} past it (${round_usd:,.2f})"
    return CostEstimate(per_task * n_tasks, per_task, n_tasks, basis)
