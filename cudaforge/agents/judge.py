"""The Judge agent: reads a failed kernel's report, or a correct kernel's metrics, and advises the Coder.

Stateless: a ``Judge`` holds only its model and settings; each call renders a fresh prompt
and returns a ``JudgeResult`` whose ``Feedback`` holds the JSON fields of the mode. An
unusable reply gets one follow-up (``max_follow_ups``), then becomes a recorded failure;
errors of the model client propagate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from cudaforge.agents.conversation import ChatModel, converse
from cudaforge.agents.parsing import extract_json
from cudaforge.agents.prompts import MAX_REPORT_CHARS, correction_context, judge_follow_up_context, optimization_context
from cudaforge.agents.records import Feedback, JudgeMode, JudgeResult
from cudaforge.agents.templates import PromptLibrary, chat
from cudaforge.profile.metrics import ALWAYS_COLLECTED, CUDAFORGE24, NCU_SECTION_SETS, MetricSetName, metric_list
from cudaforge.types import EvalResult, Task

JUDGE_METRICS: dict[str, tuple[str, ...]] = {"all": (), "cudaforge24": CUDAFORGE24}
"""``agents.judge_metrics`` -> the metrics the Judge's optimisation prompt keeps (empty: every one the profile has)."""


def judge_metric_names(choice: str, metric_set: str = "", extra: Sequence[str] = ()) -> tuple[str, ...]:
    """The metric names for ``agents.judge_metrics``: ``all`` gives none (no filter), ``cudaforge24`` the paper's 24,
    ``profile_set`` what the profile's ``metric_set`` names (with ``extra``, ``profile.metrics``) without the kernel
    duration that every set also collects: the 24 alone under ``cudaforge24``, as the CudaForge authors' Judge reads
    them; no filter under ncu's own section sets (``full``), which hold the duration themselves."""
    choice = str(getattr(choice, "value", choice))
    if choice == "profile_set":
        if MetricSetName(metric_set) in NCU_SECTION_SETS:
            return ()
        return tuple(m for m in metric_list(metric_set, list(extra)) if m not in ALWAYS_COLLECTED)
    try:
        return JUDGE_METRICS[choice]
    except KeyError:
        raise ValueError(f"unknown judge_metrics {choice!r}; known: {', '.join(JUDGE_METRICS)}, profile_set") from None


@dataclass(frozen=True)
class Judge:
    """The Judge: one method per mode, each one stateless step."""

    llm: ChatModel
    """The model (``cudaforge.llm.LLMClient`` or anything with ``complete(messages, **meta)``)."""
    prompts: PromptLibrary = field(default_factory=PromptLibrary)
    """The templates."""
    correction_keys: Sequence[str] | None = None
    """Keys the correction JSON must have (None: those of the prompts' template set; change with the template)."""
    optimization_keys: Sequence[str] | None = None
    """Keys the optimisation JSON must have (None: those of the prompts' template set; change with the template)."""
    max_follow_ups: int = 1
    """Follow-up prompts after an unusable reply before the step fails."""
    max_report_chars: int = MAX_REPORT_CHARS
    """Cap on the evaluator's report quoted in a correction prompt."""
    metric_names: Sequence[str] = ()
    """Only these metrics in the optimisation prompt (``agents.judge_metrics``; empty: every metric the profile has)."""

    def __post_init__(self) -> None:
        if self.max_follow_ups < 0:
            raise ValueError(f"max_follow_ups must be >= 0, not {self.max_follow_ups}")
        templates = self.prompts.template_set
        correction = templates.correction_keys if self.correction_keys is None else self.correction_keys
        optimization = templates.optimization_keys if self.optimization_keys is None else self.optimization_keys
        object.__setattr__(self, "correction_keys", tuple(correction))
        object.__setattr__(self, "optimization_keys", tuple(optimization))
        object.__setattr__(self, "metric_names", tuple(self.metric_names))

    def required_keys(self, mode: JudgeMode) -> tuple[str, ...]:
        """The keys the JSON of ``mode`` must have."""
        keys = self.correction_keys if JudgeMode(mode) is JudgeMode.correction else self.optimization_keys
        return cast("tuple[str, ...]", keys)  # __post_init__ made both tuples

    def correction(
        self, task: Task, kernel: str, result: EvalResult, *, gpu: Mapping[str, Any] | None = None, **meta: Any
    ) -> JudgeResult:
        """Name the one critical issue of ``kernel``, which failed as ``result`` says; ``meta`` goes to the call."""
        context = correction_context(task, kernel, result, gpu=gpu, max_chars=self.max_report_chars)
        return self.run(JudgeMode.correction, context, **meta)

    def optimization(
        self,
        task: Task,
        kernel: str,
        result: EvalResult | None,
        *,
        gpu: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        metric_set: str = "",
        kernels: Sequence[Mapping[str, Any]] | None = None,
        **meta: Any,
    ) -> JudgeResult:
        """Find the bottleneck of the correct ``kernel`` from the GPU's spec sheet, its ``metrics``
        (name -> value with unit; empty: reason from timings), the profile's ``kernels``
        (``KernelProfile`` dicts, for metrics per kernel) and the timing in ``result``; only
        ``metric_names`` are shown when that is set."""
        context = optimization_context(
            task,
            kernel,
            result,
            gpu=gpu,
            metrics=metrics,
            metric_set=metric_set,
            kernels=kernels,
            only_metrics=self.metric_names,
        )
        return self.run(JudgeMode.optimization, context, **meta)

    def run(self, mode: JudgeMode, context: Mapping[str, Any], **meta: Any) -> JudgeResult:
        """One step in ``mode`` with a ready context (the templates ``judge/system`` and ``judge/<mode>``)."""
        mode = JudgeMode(mode)
        keys = self.required_keys(mode)
        messages = chat(self.prompts, "judge", mode.value, {"mode": mode.value, **context})

        partial: list[dict[str, Any]] = []  # the last reply's object when it lacked some required keys

        def parse(text: str) -> tuple[Feedback | None, str]:
            found = extract_json(text, keys)
            if not found.ok or found.data is None:
                has = {k: found.data.get(k) for k in keys} if found.data else {}
                partial[:] = [has, found.raw or {}] if any(v not in (None, "", [], {}) for v in has.values()) else []
                return None, found.reason
            fields = {k: found.data[k] for k in keys} if keys else dict(found.data)
            return Feedback(mode=mode, fields=fields, raw=found.raw or {}), ""

        def follow_up(reason: str) -> str:
            context = judge_follow_up_context(reason, mode=mode, required_keys=keys)
            return self.prompts.render("judge/follow_up", **context)

        feedback, conversation = converse(
            self.llm,
            messages,
            parse,
            follow_up,
            max_follow_ups=self.max_follow_ups,
            meta={"mode": mode.value, **meta},
        )
        failure = "" if feedback is not None else conversation.parse_errors[-1]
        missing: list[str] = []
        if feedback is None and partial:  # what the prompt allows: the advice it has, the rest left empty
            missing = [k for k, v in partial[0].items() if v in (None, "", [], {})]
            fields = {k: "" if v is None else v for k, v in partial[0].items()}
            feedback = Feedback(mode=mode, fields=fields, raw=partial[1])
        return JudgeResult(
            mode=mode,
            ok=feedback is not None,
            feedback=feedback,
            failure=failure,
            conversation=conversation,
            missing=missing,
        )
