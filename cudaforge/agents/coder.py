"""The Coder agent: writes, repairs and speeds up ``ModelNew`` sources.

Stateless: a ``Coder`` holds only its model and settings; each call renders a fresh prompt
from the templates and returns a ``CoderResult``. An unusable reply gets one follow-up
(``max_follow_ups``), then becomes a recorded failure; errors of the model client propagate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cudaforge.agents.conversation import ChatModel, converse
from cudaforge.agents.parsing import extract_code
from cudaforge.agents.prompts import (
    MAX_REPORT_CHARS,
    coder_follow_up_context,
    example_name,
    first_attempt_context,
    optimize_context,
    repair_context,
)
from cudaforge.agents.records import Backend, CoderMode, CoderResult, Feedback
from cudaforge.agents.templates import PromptLibrary, chat
from cudaforge.types import EvalResult, Task

AUTO_EXAMPLE = "auto"
"""``Coder.example`` value that picks the bundled example of the backend's language (``KernelLanguage.example``)."""


def _parse_code(text: str) -> tuple[str | None, str]:
    found = extract_code(text)
    return (found.code, "") if found.ok else (None, found.reason)


@dataclass(frozen=True)
class Coder:
    """The Coder: one method per mode, each one stateless step."""

    llm: ChatModel
    """The model (``cudaforge.llm.LLMClient`` or anything with ``complete(messages, **meta)``)."""
    prompts: PromptLibrary = field(default_factory=PromptLibrary)
    """The templates."""
    backend: Backend = Backend.cuda
    """Which kernel technology the prompts ask for."""
    example: str | None = AUTO_EXAMPLE
    """The one-shot example of the first attempt: ``auto`` (by backend), a name under
    ``agents/examples/``, a folder path, or None for zero-shot."""
    max_follow_ups: int = 1
    """Follow-up prompts after an unusable reply before the step fails."""
    max_report_chars: int = MAX_REPORT_CHARS
    """Cap on the evaluator's report quoted in a repair prompt."""
    skills: tuple[str, ...] = ()
    """Skill documents' texts (``cudaforge skill distill``), shown in first-attempt and optimize prompts."""

    def __post_init__(self) -> None:
        if self.max_follow_ups < 0:
            raise ValueError(f"max_follow_ups must be >= 0, not {self.max_follow_ups}")
        object.__setattr__(self, "backend", Backend(self.backend))
        object.__setattr__(self, "skills", tuple(self.skills))
        supported = self.prompts.template_set.backends
        if self.backend not in supported:
            raise ValueError(
                f"template set {self.prompts.template_set.name!r} asks for {' or '.join(b.value for b in supported)} "
                f"kernels, not {self.backend.value} (set strategy.backend accordingly)"
            )

    def example_context(self) -> dict[str, str] | None:
        """The one-shot example the first attempt shows, or None."""
        if self.example is None:
            return None
        name = example_name(self.backend) if self.example == AUTO_EXAMPLE else self.example
        return self.prompts.example(name)

    def first_attempt(self, task: Task, *, gpu: Mapping[str, Any] | None = None, **meta: Any) -> CoderResult:
        """Write a first ``ModelNew`` for ``task``; ``gpu`` is the target's spec sheet; ``meta`` goes to the call."""
        context = first_attempt_context(
            task, example=self.example_context(), gpu=gpu, backend=self.backend, skills=self.skills
        )
        return self.run(CoderMode.first_attempt, context, **meta)

    def repair(
        self, task: Task, kernel: str, result: EvalResult, *, feedback: Feedback | None = None, **meta: Any
    ) -> CoderResult:
        """Fix ``kernel``, which failed as ``result`` says, following the Judge's ``feedback`` (None: no Judge)."""
        context = repair_context(
            task, kernel, result, feedback=feedback, backend=self.backend, max_chars=self.max_report_chars
        )
        return self.run(CoderMode.repair, context, **meta)

    def optimize(
        self,
        task: Task,
        kernel: str,
        *,
        result: EvalResult | None = None,
        feedback: Feedback | None = None,
        gpu: Mapping[str, Any] | None = None,
        **meta: Any,
    ) -> CoderResult:
        """Speed up the correct ``kernel`` (timed in ``result``) following the Judge's ``feedback`` (None: no Judge)."""
        context = optimize_context(
            task, kernel, result=result, feedback=feedback, gpu=gpu, backend=self.backend, skills=self.skills
        )
        return self.run(CoderMode.optimize, context, **meta)

    def run(self, mode: CoderMode, context: Mapping[str, Any], **meta: Any) -> CoderResult:
        """One step in ``mode`` with a ready context (the templates ``coder/system`` and ``coder/<mode>``)."""
        mode = CoderMode(mode)
        messages = chat(self.prompts, "coder", mode.value, context)

        def follow_up(reason: str) -> str:
            return self.prompts.render("coder/follow_up", **coder_follow_up_context(reason, backend=self.backend))

        source, conversation = converse(
            self.llm,
            messages,
            _parse_code,
            follow_up,
            max_follow_ups=self.max_follow_ups,
            meta={"mode": mode.value, **meta},
        )
        failure = "" if source is not None else conversation.parse_errors[-1]
        return CoderResult(mode=mode, ok=source is not None, source=source, failure=failure, conversation=conversation)
