"""The Coder/Judge loop on one task, as a LangGraph state machine.

    coder ──> evaluate ──correct──> profile ──> judge(optimization) ──> coder (optimize)
      ^           └──failed──────────────────> judge(correction)  ──> coder (repair)
      └── no usable code: the Coder again (the round counts)

Strategies switch the Judge and the profiler off per route (``strategies.py``). Budgets
(rounds, dollars, minutes) are checked after every Coder and evaluation step. The state
holds only small, serialisable records; sources, results, prompts and replies live in the
run directory through the ``store`` the runner passes in. With a checkpointer, a killed
task resumes from the last finished step, and the LLM cache answers any call it repeats.

An outage is not a round: a model call that still fails for the transport, a rate limit, a server error or a timeout
after its retries (``LLMUnavailable``) leaves the node unfinished and propagates, so the checkpoint stays at the last
finished step and a resume asks again. A refused request (``LLMRequestError``) ends the task as ``llm_error``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from cudaforge.agents.coder import Coder
from cudaforge.agents.judge import Judge
from cudaforge.agents.prompts import MAX_PROMPT_KERNEL_CHARS
from cudaforge.eval import cap_strings, cap_text
from cudaforge.graph.strategies import Strategy, graph_builder
from cudaforge.llm.errors import EmptyReply, LLMAuthError, LLMError, LLMUnavailable
from cudaforge.track.store import CANDIDATE_FILE, CODER_FILE, EVAL_FILE, JUDGE_FILE, PROFILE_FILE
from cudaforge.types import EvalResult, EvalStatus, Feedback, JudgeMode, RoundRecord, Task, TaskResult, source_hash

STORED_TEXT_LIMIT = 1 << 20
"""Characters of any one text (a reply, a prompt, a log, a message) a round's files keep: above any reply the agents
can use (``cudaforge.agents.parsing`` refuses longer ones), so a run read back or repaired finds those whole, while a
refused 50 MB reply costs a round 1 MB. (A source is never cut: the Coder's reply limit bounds it.)"""
STATE_TEXT_LIMIT = 16 << 10
"""Characters of any one text the graph's state keeps (the Judge's fields, a round's message): the state is written
to the checkpoints at every step, and the Coder reads the feedback in its next prompt."""


class LoopState(TypedDict, total=False):
    """The graph's state: small records only (big artifacts are paths in the run directory)."""

    round: int
    """Rounds started (a round is one Coder step and what it leads to)."""
    mode: str
    """The Coder's next mode: ``first_attempt``, ``repair`` or ``optimize``."""
    pending: str | None
    """Hash of the candidate written this round and not evaluated yet."""
    kernel: str | None
    """Hash of the latest evaluated candidate (the kernel the agents work on)."""
    evaluated: dict[str, str]
    """Candidate hash -> evaluation status, for every candidate evaluated so far."""
    feedback: dict[str, Any] | None
    """The latest feedback for the Coder (the Judge's fields), or None."""
    history: list[dict[str, Any]]
    """One ``RoundRecord`` dict per round."""
    best: dict[str, Any] | None
    """The best correct candidate so far: ``{round, hash, speedup, speedup_ci}``."""
    seconds: dict[str, float]
    """Time split: llm, compile, correctness, timing, profiling, gpu_lock_wait (part of the evaluation's and the
    profiler's time: waiting for a GPU's lock that another task held)."""
    active_s: float
    """Seconds spent in steps (a resumed task does not count its downtime)."""
    stop_reason: str | None
    """Why the loop ended."""
    search: dict[str, Any]
    """A search strategy's own record (``cudaforge.search``: its tree, its frontier); absent in the CudaForge loop."""


class Evaluates(Protocol):
    """The evaluator seam (``cudaforge.eval.evaluator.Evaluator``)."""

    def evaluate(self, task: Task, source: str) -> EvalResult: ...


class Profiles(Protocol):
    """The profiler seam: a result with ``status``, ``to_dict()``, ``judge_metrics()``, ``seconds``."""

    def profile(self, task: Task, source: str, *, measured_ms: float | None = None) -> Any: ...


class Stores(Protocol):
    """Where a task's artifacts go (``cudaforge.track.store.TaskStore``)."""

    def write_text(self, round: int | None, name: str, text: str) -> str: ...
    def write_json(self, round: int | None, name: str, data: Any) -> str: ...
    def read_text(self, round: int | None, name: str) -> str: ...
    def read_json(self, round: int | None, name: str) -> Any: ...
    def candidate(self, digest: str) -> str: ...
    def save_candidate(self, digest: str, source: str) -> str: ...


class Spends(Protocol):
    """The ledger seam: dollars and tokens spent so far on a task."""

    def task_totals(self, task_id: str) -> dict[str, float]: ...
    def round_cost(self, task_id: str, round: int) -> float: ...


@dataclass
class Budgets:
    """When the loop on one task stops."""

    max_rounds: int = 10
    max_dollars: float | None = None
    max_minutes: float | None = None
    max_evaluations: int | None = None
    """Distinct candidates evaluated (``strategy.max_evaluations``)."""
    nodes_per_round: int = 1
    """Coder steps a round can hold (a search strategy's samples): the graph's recursion limit scales with it."""


class WithHistory:
    """An LLM seam that shows the agent a summary of earlier rounds (``strategy.memory_rounds``).

    The summary goes in as a user message right after the system message; the agents stay
    stateless and their templates unchanged.
    """

    def __init__(self, llm: Any, summary: str):
        self.llm, self.summary = llm, summary

    def complete(self, messages: list[dict[str, Any]], **meta: Any) -> Any:
        """Insert the summary, then ask the wrapped model."""
        cut = 1 if messages and messages[0]["role"] == "system" else 0
        note = {"role": "user", "content": self.summary}
        return self.llm.complete([*messages[:cut], note, *messages[cut:]], **meta)


def history_summary(history: list[dict[str, Any]], k: int) -> str:
    """The last ``k`` finished rounds, one paragraph each, for an agent's memory."""
    lines = [f"For context, the last {min(k, len(history))} earlier round(s) of this task:"]
    for h in history[-k:]:
        speed = f", speedup {h['speedup']:.3f}x" if h.get("speedup") else ""
        lines.append(f"- round {h['round']} ({h['coder_mode']}): {h.get('status') or 'not evaluated'}{speed}.")
        if h.get("feedback"):
            lines.append("  feedback: " + "; ".join(f"{key}: {value}" for key, value in h["feedback"].items()))
    return "\n".join(lines)


@dataclass
class LoopServices:
    """Everything the nodes use; passed in, never global."""

    task: Task
    coder: Coder
    judge: Judge
    evaluator: Evaluates
    store: Stores
    ledger: Spends
    strategy: Strategy
    budgets: Budgets = field(default_factory=Budgets)
    profiler: Profiles | None = None
    metric_set: str = "cudaforge24"
    gpu_spec: dict[str, Any] | None = None
    memory_rounds: int = 0
    """Earlier rounds each agent sees a summary of (0: only the latest kernel and feedback, as in CudaForge)."""
    profile_best: bool = False
    """Profile the fastest correct kernel so far instead of the latest (``strategy.profiled_kernel=best``)."""
    on_event: Callable[[dict[str, Any]], None] = lambda event: None


def initial_state() -> LoopState:
    """The state a task starts from."""
    return LoopState(
        round=0,
        mode="first_attempt",
        pending=None,
        kernel=None,
        evaluated={},
        feedback=None,
        history=[],
        best=None,
        seconds={},
        active_s=0.0,
        stop_reason=None,
    )


def _add(seconds: dict[str, float], **parts: float) -> dict[str, float]:
    out = dict(seconds)
    for key, value in parts.items():
        out[key] = out.get(key, 0.0) + value
    return out


class LoopNodes:
    """The node functions (``coder``, ``evaluate``, ``profile``, ``judge``), each returning a partial state update, and
    the CudaForge loop's routers (``after_*``); a loop shape (``build_graph``) wires them."""

    def __init__(self, s: LoopServices):
        self.s = s

    # -------------------------------------------------------------- helpers

    def _budget_stop(self, state: LoopState) -> str | None:
        b, strategy = self.s.budgets, self.s.strategy
        max_rounds = strategy.round_cap(b.max_rounds)
        if state["round"] >= max_rounds:
            return "max_rounds"
        return self.spent_stop(state)

    def spent_stop(self, state: LoopState) -> str | None:
        """The budget other than rounds that this state has used up (``max_dollars``, ``max_minutes``,
        ``max_evaluations``), or None: a search strategy counts its rounds itself."""
        b = self.s.budgets
        if b.max_dollars is not None and self.s.ledger.task_totals(self.s.task.id)["cost_usd"] >= b.max_dollars:
            return "max_dollars"
        if b.max_minutes is not None and state["active_s"] / 60 >= b.max_minutes:
            return "max_minutes"
        if b.max_evaluations is not None and len(state["evaluated"]) >= b.max_evaluations:
            return "max_evaluations"
        return None

    def _latest_result(self, state: LoopState) -> EvalResult | None:
        if not state.get("kernel"):
            return None
        return EvalResult.from_dict(self.s.store.read_json(None, f"eval_{state['kernel']}.json"))

    def _record(self, state: LoopState, **changes: Any) -> list[dict[str, Any]]:
        history = [dict(h) for h in state["history"]]
        history[-1].update(changes)
        return history

    def _stopped(self, state: LoopState, record: RoundRecord, started: float) -> LoopState:
        """The task stops on this round's ``llm_error`` (its record the last of its history)."""
        elapsed = time.monotonic() - started
        return {
            "round": record.round,
            "pending": None,
            "history": [*state["history"], record.to_dict()],
            "stop_reason": f"llm_error: {record.message}",
            "active_s": state["active_s"] + elapsed,
            "seconds": _add(state["seconds"], llm=elapsed),
        }

    def _agents(self, history: list[dict[str, Any]]) -> tuple[Coder, Judge, str]:
        """The Coder and Judge with the memory policy applied, and the summary they are shown ("" for none)."""
        s = self.s
        if s.memory_rounds <= 0 or not history:
            return s.coder, s.judge, ""
        summary = history_summary(history, s.memory_rounds)
        return (
            replace(s.coder, llm=WithHistory(s.coder.llm, summary)),
            replace(s.judge, llm=WithHistory(s.judge.llm, summary)),
            summary,
        )

    # -------------------------------------------------------------- nodes

    def coder(self, state: LoopState) -> LoopState:
        """Say the round before is over (its record is whole), then the Coder's step (``write``)."""
        if state["history"]:
            round_done(self.s, state["history"][-1])
        return self.write(state)

    def write(self, state: LoopState) -> LoopState:
        """The Coder writes round ``state["round"] + 1``'s candidate (a search's side-by-side children call this
        directly, several at once: it touches only its own round's files)."""
        started = time.monotonic()
        s, number = self.s, state["round"] + 1
        mode = state["mode"]
        # ``sample``: a round's request gets its own cache key, so a prompt repeated in a later
        # round asks the model again instead of replaying the earlier reply (resume still hits).
        meta = {"task_id": s.task.id, "round": number, "sample": number}
        s.on_event({"event": "coder", "task_id": s.task.id, "round": number, "mode": mode})
        latest, advice = state.get("kernel"), state.get("feedback")
        kernel = s.store.candidate(latest) if latest else None
        feedback = Feedback.from_dict(advice) if advice else None
        record = RoundRecord(round=number, coder_mode=mode)
        coder, _, memory = self._agents(state["history"])
        try:
            if mode == "first_attempt" or kernel is None:
                result = coder.first_attempt(s.task, gpu=s.gpu_spec, **meta)
            elif mode == "repair":
                evaluated = cast(EvalResult, self._latest_result(state))  # a kernel: its evaluation is stored
                result = coder.repair(s.task, kernel, evaluated, feedback=feedback, **meta)
            else:
                result = coder.optimize(
                    s.task, kernel, result=self._latest_result(state), feedback=feedback, gpu=s.gpu_spec, **meta
                )
        except EmptyReply as exc:
            record.status, record.message = "no_code", f"the model returned an empty reply ({exc})"
            result = None
        except LLMAuthError:
            raise  # no usable credentials: every task would fail the same way, so the run stops (runner.py)
        except LLMUnavailable as exc:
            if not oversized(kernel):
                raise  # the provider, not the kernel: the task stops unfinished at its last checkpoint (runner.py)
            record.status, record.message = "llm_error", cap_text(oversized_failure(exc), STATE_TEXT_LIMIT)
            return self._stopped(state, record, started)
        except LLMError as exc:
            record.status, record.message = "llm_error", cap_text(str(exc), STATE_TEXT_LIMIT)
            elapsed = time.monotonic() - started
            return {
                "round": number,
                "pending": None,
                "history": [*state["history"], record.to_dict()],
                "stop_reason": f"llm_error: {record.message}",
                "active_s": state["active_s"] + elapsed,
                "seconds": _add(state["seconds"], llm=elapsed),
            }
        update: LoopState = {"round": number, "pending": None}
        if result is not None:
            stored = cap_strings({**result.to_dict(), "memory": memory}, STORED_TEXT_LIMIT)
            s.store.write_json(number, CODER_FILE, stored)
            if result.ok and result.source:
                digest = source_hash(result.source)
                s.store.save_candidate(digest, result.source)
                s.store.write_text(number, CANDIDATE_FILE, result.source)
                record.candidate_hash, update["pending"] = digest, digest
            else:
                record.status, record.message = "no_code", cap_text(result.failure, STATE_TEXT_LIMIT)
        if record.status == "no_code":  # said as it happens, and counted by the run's summary and the report
            s.on_event(
                {"event": "dropped", "task_id": s.task.id, "round": number, "role": "coder", "why": record.message}
            )
        elapsed = time.monotonic() - started
        update.update(
            {
                "history": [*state["history"], record.to_dict()],
                "active_s": state["active_s"] + elapsed,
                "seconds": _add(state["seconds"], llm=elapsed),
            }
        )
        return update

    def evaluate(self, state: LoopState) -> LoopState:
        started = time.monotonic()
        # after_coder routes here only with a candidate written this round
        s, digest, number = self.s, cast(str, state["pending"]), state["round"]
        reused = digest in state["evaluated"]
        if reused:
            result = EvalResult.from_dict(s.store.read_json(None, f"eval_{digest}.json"))
        else:
            s.on_event({"event": "evaluate", "task_id": s.task.id, "round": number})
            result = s.evaluator.evaluate(s.task, s.store.candidate(digest))
            s.store.write_json(None, f"eval_{digest}.json", cap_strings(result.to_dict(), STORED_TEXT_LIMIT))
        s.store.write_json(number, EVAL_FILE, cap_strings(result.to_dict(), STORED_TEXT_LIMIT))
        phases = {p.phase.value: p.seconds for p in result.phases} if not reused else {}
        lock_wait = 0.0 if reused else float(result.fingerprint.get("gpu_lock_wait_s") or 0.0)
        speedup = result.speedup.median if result.speedup else None
        ci = [result.speedup.ci_low, result.speedup.ci_high] if result.speedup else None
        best = state.get("best")
        if result.correct and (best is None or (speedup or 0) > (best.get("speedup") or 0)):
            best = {
                "round": number,
                "hash": digest,
                "speedup": speedup,
                "speedup_ci": ci,
                "candidate_ms": result.candidate_timing.median if result.candidate_timing else None,
                "reference_ms": result.reference_timing.median if result.reference_timing else None,
                "measurement": result.measurement(),
                "checks": result.checks_summary(),
            }
        ok = result.status in (EvalStatus.CORRECT, EvalStatus.COMPILED)
        s.on_event(
            {
                "event": "evaluated",
                "task_id": s.task.id,
                "round": number,
                "status": result.status.value,
                "speedup": speedup,
                "best": best,
            }
        )
        elapsed = time.monotonic() - started
        return {
            "kernel": digest,
            "pending": None,
            "evaluated": {**state["evaluated"], digest: result.status.value},
            "mode": "optimize" if ok else "repair",
            "feedback": None,
            "best": best,
            "history": self._record(
                state,
                status=result.status.value,
                speedup=speedup,
                speedup_ci=ci,
                message=result.message[:2000],
                reused_evaluation=reused,
            ),
            "active_s": state["active_s"] + elapsed,
            "seconds": _add(
                state["seconds"],
                compile=phases.get("compile", 0.0),
                correctness=phases.get("correctness", 0.0),
                timing=phases.get("timing", 0.0),
                gpu_lock_wait=lock_wait,
            ),
        }

    def profile(self, state: LoopState) -> LoopState:
        started = time.monotonic()
        s, digest = self.s, cast(str, state["kernel"])  # after an evaluation: the kernel it evaluated
        best = state.get("best") or {}
        if s.profile_best and best.get("hash"):  # the authors' main.py profiles the best kernel so far
            digest = best["hash"]
        s.on_event({"event": "profile", "task_id": s.task.id, "round": state["round"]})
        stored = self._stored_profile(digest)
        if stored is not None and stored.get("status") != "timeout":
            # profiled in an earlier round (same source, same task, same evaluation): not profiled again
            record = {**stored, "cached": True}
        else:
            timed = self._latest_result(state)
            measured = timed.candidate_timing.median if timed and timed.candidate_timing else None
            if digest != state["kernel"]:
                measured = best.get("candidate_ms")
            profiler = cast(Profiles, s.profiler)  # after_evaluate routes here only with a profiler
            result = profiler.profile(s.task, s.store.candidate(digest), measured_ms=measured)
            record = cap_strings({**result.to_dict(), "judge_metrics": result.judge_metrics()}, STORED_TEXT_LIMIT)
            s.store.write_json(None, f"profile_{digest}.json", record)
        s.store.write_json(state["round"], PROFILE_FILE, record)
        elapsed = time.monotonic() - started
        # the profiler's wait for the GPU's lock, where it records one (a cached profile waited in another round)
        waits = {} if record.get("cached") else record.get("phase_seconds") or {}
        lock_wait = float(waits.get("gpu_lock_wait", 0.0))
        update: LoopState = {
            "history": self._record(state, profile_status=str(record.get("status"))),
            "active_s": state["active_s"] + elapsed,
            "seconds": _add(state["seconds"], profiling=elapsed, gpu_lock_wait=lock_wait),
        }
        if not s.strategy.judge_optimizes:  # self-refine: the Coder reads the metrics itself
            update["feedback"] = Feedback(JudgeMode.optimization, {"profiler_metrics": _metrics_text(record)}).to_dict()
        return update

    def judge(self, state: LoopState) -> LoopState:
        started = time.monotonic()
        s, digest = self.s, cast(str, state["kernel"])  # after an evaluation: the kernel it evaluated
        result = cast(EvalResult, self._latest_result(state))  # the kernel's evaluation is stored
        kernel = s.store.candidate(digest)
        meta = {"task_id": s.task.id, "round": state["round"], "sample": state["round"]}
        s.on_event({"event": "judge", "task_id": s.task.id, "round": state["round"]})
        _, judge, memory = self._agents(state["history"][:-1])  # the round being judged is shown in full
        try:
            if result.correct or result.status is EvalStatus.COMPILED:
                profile = s.store.read_json(None, f"profile_{digest}.json") if self._profiled(digest) else None
                metrics = (profile or {}).get("judge_metrics") or {}
                verdict = judge.optimization(
                    s.task,
                    kernel,
                    result,
                    gpu=s.gpu_spec,
                    metrics=metrics,
                    metric_set=s.metric_set,
                    kernels=(profile or {}).get("kernels"),
                    **meta,
                )
            else:
                verdict = judge.correction(s.task, kernel, result, gpu=s.gpu_spec, **meta)
        except EmptyReply as exc:
            verdict, failure = None, f"the Judge returned an empty reply ({exc})"
        except LLMUnavailable as exc:
            if not oversized(kernel):
                raise  # an outage that leaves the task unfinished, as in the Coder's step
            elapsed = time.monotonic() - started
            return {
                "stop_reason": cap_text(f"llm_error: {oversized_failure(exc)}", STATE_TEXT_LIMIT),
                "active_s": state["active_s"] + elapsed,
                "seconds": _add(state["seconds"], llm=elapsed),
            }
        except LLMAuthError:
            raise  # fatal for the run
        except LLMError as exc:
            elapsed = time.monotonic() - started
            return {
                "stop_reason": cap_text(f"llm_error: {exc}", STATE_TEXT_LIMIT),
                "active_s": state["active_s"] + elapsed,
                "seconds": _add(state["seconds"], llm=elapsed),
            }
        feedback = None
        if verdict is not None:
            s.store.write_json(
                state["round"], JUDGE_FILE, cap_strings({**verdict.to_dict(), "memory": memory}, STORED_TEXT_LIMIT)
            )
            advice = cast(Feedback, verdict.feedback)  # ok: the reply parsed into feedback
            feedback = cap_strings(advice.to_dict(), STATE_TEXT_LIMIT) if verdict.ok else None
            failure = cap_text(verdict.failure, STATE_TEXT_LIMIT)
        if verdict is None or not verdict.ok or verdict.missing:
            why = f"lacked {', '.join(verdict.missing)}: passed on without" if verdict and verdict.ok else failure
            event = {"event": "dropped", "task_id": s.task.id, "round": state["round"], "role": "judge", "why": why}
            s.on_event({**event, "partial": bool(verdict and verdict.ok)})
        elapsed = time.monotonic() - started
        return {
            "feedback": feedback,
            "history": self._record(
                state,
                judge_mode=verdict.mode.value if verdict else None,
                feedback=(feedback or {}).get("fields") if feedback else {"failure": failure},
            ),
            "active_s": state["active_s"] + elapsed,
            "seconds": _add(state["seconds"], llm=elapsed),
        }

    def _profiled(self, digest: str) -> bool:
        return self._stored_profile(digest) is not None

    def _stored_profile(self, digest: str) -> dict[str, Any] | None:
        """The profile record of candidate ``digest`` from an earlier round of this task, or None."""
        try:
            profile: dict[str, Any] = self.s.store.read_json(None, f"profile_{digest}.json")
            return profile
        except FileNotFoundError:
            return None

    # -------------------------------------------------------------- routing

    def after_coder(self, state: LoopState) -> str:
        if state.get("stop_reason"):
            return END
        if state.get("pending"):
            return "evaluate"
        stop = self._budget_stop(state)
        return END if stop else "coder"

    def after_evaluate(self, state: LoopState) -> str:
        if self._budget_stop(state):
            return END
        if state["mode"] == "optimize":
            if self.s.strategy.profile and self.s.profiler is not None:
                return "profile"
            return "judge" if self.s.strategy.judge_optimizes else "coder"
        return "judge" if self.s.strategy.judge_corrects else "coder"

    def after_profile(self, state: LoopState) -> str:
        return "judge" if self.s.strategy.judge_optimizes else "coder"

    def after_judge(self, state: LoopState) -> str:
        return END if state.get("stop_reason") else "coder"


def _metrics_text(record: dict[str, Any]) -> str:
    """The Judge's metric table of a profile record as one line (for a self-refining Coder)."""
    metrics = record.get("judge_metrics")
    if not metrics:
        return f"no hardware metrics ({record.get('message') or 'profiling unavailable'})"
    return "; ".join(f"{k} = {v}" for k, v in metrics.items())


def alternating(graph: StateGraph[LoopState], nodes: LoopNodes) -> None:
    """The CudaForge loop: the Coder, the evaluation, then the profiler and the Judge as the strategy's flags say,
    back to the Coder until a budget or a stop ends the task."""
    graph.add_node("coder", nodes.coder)
    graph.add_node("evaluate", nodes.evaluate)
    graph.add_node("profile", nodes.profile)
    graph.add_node("judge", nodes.judge)
    graph.add_edge(START, "coder")
    graph.add_conditional_edges("coder", nodes.after_coder, ["evaluate", "coder", END])
    graph.add_conditional_edges("evaluate", nodes.after_evaluate, ["profile", "judge", "coder", END])
    graph.add_conditional_edges("profile", nodes.after_profile, ["judge", "coder"])
    graph.add_conditional_edges("judge", nodes.after_judge, ["coder", END])


LoopShape = Callable[["StateGraph[LoopState]", "LoopNodes"], None]
"""A loop's shape: wires ``LoopNodes`` (and any node of its own) into the graph it is given, from ``START``."""


def loop_shape(spec: str) -> LoopShape:
    """The function ``spec`` names (``strategy.graph``: a registered loop shape's name, or ``module:function``); an
    error says what is wrong with it."""
    return cast(LoopShape, graph_builder(spec))


def build_graph(services: LoopServices, checkpointer: Any = None) -> CompiledStateGraph[LoopState, Any, Any, Any]:
    """The compiled LangGraph for one task, wired by the strategy's loop shape (``strategy.graph``)."""
    nodes = LoopNodes(services)
    graph = StateGraph(LoopState)
    loop_shape(services.strategy.graph)(graph, nodes)
    return graph.compile(checkpointer=checkpointer)


def oversized(kernel: str | None) -> bool:
    """Whether the task's own candidate was too long for a prompt (cut to ``MAX_PROMPT_KERNEL_CHARS``)."""
    return kernel is not None and len(kernel.strip()) > MAX_PROMPT_KERNEL_CHARS


def oversized_failure(exc: Exception) -> str:
    """Why a model call on a prompt built from an oversized candidate fails its task (issue 53): a Coder that pads
    its kernel must not take its own failure out of the statistics through an outage of its making."""
    return (
        f"the model call failed ({exc}) on a prompt built from this task's own candidate of more than "
        f"{MAX_PROMPT_KERNEL_CHARS:,} characters (cut in the prompt): a failure of the task, not an outage"
    )


def round_done(s: LoopServices, record: dict[str, Any]) -> None:
    """Say a round is over (``round_done``: its verdict, speedup and the Judge's outcome, with the task's dollars and
    tokens so far), for trackers that log each round as it ends."""
    feedback = record.get("feedback") or {}
    judge = None if not record.get("judge_mode") else ("dropped" if "failure" in feedback else "advice")
    totals = s.ledger.task_totals(s.task.id)
    s.on_event(
        {
            "event": "round_done",
            "task_id": s.task.id,
            "round": record.get("round"),
            "status": record.get("status"),
            "speedup": record.get("speedup"),
            "judge": judge,
            "cost_usd": totals.get("cost_usd"),
            "tokens_in": totals.get("tokens_in"),
            "tokens_out": totals.get("tokens_out"),
        }
    )


def recursion_limit(budgets: Budgets) -> int:
    """An explicit recursion limit: four steps a Coder step (five in a search: its own planning step), each round's
    Coder steps, plus slack for follow-ups."""
    return (4 if budgets.nodes_per_round == 1 else 5) * budgets.max_rounds * budgets.nodes_per_round + 10


def run_task(services: LoopServices, checkpointer: Any = None, thread_id: str | None = None) -> TaskResult:
    """Run (or resume, with the same checkpointer and thread) the loop on one task."""
    profiler = services.profiler
    if services.strategy.profile and profiler is not None and hasattr(profiler, "prefetch"):
        profiler.prefetch(services.task)  # the task's cost, computed while the first rounds run
    graph = build_graph(services, checkpointer)
    config: RunnableConfig = {
        "configurable": {"thread_id": thread_id or services.task.id},
        "recursion_limit": recursion_limit(services.budgets),
    }
    start: LoopState | None = initial_state()
    earlier_s = 0.0  # steps run before a resume: the run's downtime in between is not the task's time
    if checkpointer is not None:
        snapshot = graph.get_state(config)
        if snapshot.values:
            start = None  # resume from the checkpoint (a finished task just returns its state)
            earlier_s = float(snapshot.values.get("active_s") or 0.0)
    started = time.monotonic()
    final = cast(LoopState, graph.invoke(start, config))  # the graph's output is its state
    if final.get("history"):
        round_done(services, final["history"][-1])
    return task_result(services, final, wall_s=earlier_s + time.monotonic() - started)


def task_result(services: LoopServices, state: LoopState, wall_s: float | None = None) -> TaskResult:
    """The TaskResult of a finished (or stopped) loop state.

    ``wall_s``: the task's wall-clock seconds (``run_task`` measures them); None takes its steps' summed time.
    ``active_minutes`` is that less the GPU-lock waits the steps recorded (``seconds["gpu_lock_wait"]``).
    """
    wall_s = state["active_s"] if wall_s is None else wall_s
    lock_wait_s = state["seconds"].get("gpu_lock_wait", 0.0)
    totals = services.ledger.task_totals(services.task.id)
    best = state.get("best") or {}
    stop = state.get("stop_reason") or LoopNodes(services)._budget_stop(state) or "max_rounds"
    return TaskResult(
        task_id=services.task.id,
        correct=bool(best),
        best_round=best.get("round"),
        best_speedup=best.get("speedup"),
        best_speedup_ci=best.get("speedup_ci"),
        best_candidate_hash=best.get("hash"),
        best_candidate_ms=best.get("candidate_ms"),
        best_reference_ms=best.get("reference_ms"),
        best_measurement=best.get("measurement") or {},
        best_checks=best.get("checks") or {},
        rounds=state["round"],
        stop_reason=stop,
        cost_usd=totals["cost_usd"],
        unpriced_calls=int(totals["unpriced_calls"]),
        tokens_in=int(totals["tokens_in"]),
        tokens_out=int(totals["tokens_out"]),
        minutes=state["active_s"] / 60,
        wall_minutes=wall_s / 60,
        active_minutes=max(0.0, wall_s - lock_wait_s) / 60,
        time_split=dict(state["seconds"]),
        history=[RoundRecord.from_dict(h) for h in state["history"]],
    )
