"""Records of the agents layer: modes, the Judge's feedback, and what one agent call produced.

Plain dataclasses of JSON values (``Record`` gives ``to_dict`` / ``from_dict``), so the graph
can keep them in its state and write them to the run directory. ``Feedback`` and ``JudgeMode``
live with the other shared records in ``cudaforge/types.py`` and are re-exported here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cudaforge import languages
from cudaforge.types import Feedback as Feedback
from cudaforge.types import JudgeMode as JudgeMode
from cudaforge.types import Record


class CoderMode(str, enum.Enum):
    """What the Coder is asked to do; each mode has a template ``coder/<value>``."""

    first_attempt = "first_attempt"
    repair = "repair"
    optimize = "optimize"


ANY_BACKEND = "any"
"""The ``Backend`` that lets the Coder choose among ``languages.choice_languages()``."""

if TYPE_CHECKING:  # what mypy reads: the built-in members (an installed package's language adds one at run time)

    class Backend(str, enum.Enum):
        cuda = "cuda"
        cute_dsl = "cute_dsl"
        tilelang = "tilelang"
        triton = "triton"
        any = "any"

else:
    Backend = enum.Enum(
        "Backend",
        [(lang.name, lang.name) for lang in languages.coder_languages()] + [(ANY_BACKEND, ANY_BACKEND)],
        type=str,
        module=__name__,
        qualname="Backend",
    )
Backend.__doc__ = """Which kernel language the Coder is told to use: one member per language of the registry
(``cudaforge.languages``) that has a prompt rule (``cuda``, ``triton``, ``cute_dsl``, ``tilelang``), and ``any``
(the Coder's choice among CUDA and Triton)."""


CORRECTION_KEYS: tuple[str, ...] = ("critical_issue", "why_it_matters", "minimal_fix_hint")
"""The keys of the Judge's JSON in correction mode (the CudaForge paper's, in both template sets)."""
OPTIMIZATION_KEYS: tuple[str, ...] = ("bottleneck", "optimisation_method", "modification_plan", "expected_effect")
"""The keys of the Judge's JSON in optimization mode in our default templates: the paper's three, ``expected_effect``."""
PAPER_OPTIMIZATION_KEYS: tuple[str, ...] = ("bottleneck", "optimisation_method", "modification_plan")
"""The CudaForge paper's optimisation keys (template set ``cudaforge_paper``). Its prompts spell the last two
``"optimisation method"`` and ``"modification plan"``; keys are matched loosely (spaces, hyphens, case and
-ise/-ize ignored), so a reply in either spelling fills ``Feedback.fields`` under these names."""


@dataclass
class Conversation(Record):
    """The model calls of one agent step: the first call and any follow-ups."""

    messages: list[dict[str, str]] = field(default_factory=list)
    """The messages of the last call (system, user, then each unusable reply and its follow-up)."""
    replies: list[str] = field(default_factory=list)
    """Every reply text, in order: the first, then one per follow-up."""
    parse_errors: list[str] = field(default_factory=list)
    """Per reply: why it could not be used, or ``""`` for the reply that was used."""

    @property
    def reply(self) -> str:
        """The last reply text (empty when no call was made)."""
        return self.replies[-1] if self.replies else ""

    @property
    def follow_ups(self) -> int:
        """How many follow-up calls were made."""
        return max(0, len(self.replies) - 1)

    def transcript(self) -> list[dict[str, str]]:
        """The whole conversation: the last call's messages, then its reply."""
        if not self.replies:
            return list(self.messages)
        return [*self.messages, {"role": "assistant", "content": self.reply}]


@dataclass(kw_only=True)
class AgentStep(Record):
    """What one agent step produced, whichever the agent: whether a reply was usable, why not, the conversation.
    ``CoderResult`` and ``JudgeResult`` add what each one's usable reply holds."""

    ok: bool
    """True when a reply was usable (the Coder's: a source defining ``ModelNew``; the Judge's: a JSON object with
    every required key)."""
    failure: str = ""
    """Why no reply was usable (the last reply's parse failure); empty when ``ok``."""
    conversation: Conversation = field(default_factory=Conversation)
    """The messages sent and the replies received."""

    @property
    def messages(self) -> list[dict[str, str]]:
        """The messages of the last model call."""
        return self.conversation.messages

    @property
    def reply(self) -> str:
        """The last reply text."""
        return self.conversation.reply


@dataclass(kw_only=True)
class CoderResult(AgentStep):
    """What one Coder step produced: a candidate source, or the reason there is none."""

    mode: CoderMode
    """The mode the Coder ran in."""
    source: str | None = None
    """The extracted ``ModelNew`` source (None when ``ok`` is False)."""


@dataclass(kw_only=True)
class JudgeResult(AgentStep):
    """What one Judge step produced: feedback, or the reason there is none."""

    mode: JudgeMode
    """The mode the Judge ran in."""
    feedback: Feedback | None = None
    """The parsed advice (None when ``ok`` is False)."""
    missing: list[str] = field(default_factory=list)
    """Required keys the feedback lacks: a reply that still lacked some after the follow-ups is passed on with what
    it has (the missing ones empty), and these name what it left out. Empty for complete feedback."""
