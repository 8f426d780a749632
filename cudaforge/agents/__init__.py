"""The agents: a Coder that writes ``ModelNew`` sources and a Judge that advises it.

Prompts are Jinja2 templates in the top-level ``agents/`` folder (``PromptLibrary``); replies
are parsed robustly (``extract_code``, ``extract_json``); each agent step is stateless and
returns a record (``CoderResult``, ``JudgeResult``) that holds the messages sent, the replies,
and either the result or the reason there is none. See agents/README.md.
"""

from cudaforge.agents.coder import Coder
from cudaforge.agents.conversation import ChatModel, Reply, converse
from cudaforge.agents.judge import Judge
from cudaforge.agents.parsing import CodeExtraction, JsonExtraction, extract_code, extract_json, repair_json
from cudaforge.agents.records import (
    CORRECTION_KEYS,
    OPTIMIZATION_KEYS,
    PAPER_OPTIMIZATION_KEYS,
    Backend,
    CoderMode,
    CoderResult,
    Conversation,
    Feedback,
    JudgeMode,
    JudgeResult,
)
from cudaforge.agents.templates import TEMPLATE_SETS, PromptLibrary, PromptTemplateError, TemplateSet, get_template_set

__all__ = [
    "Backend",
    "CORRECTION_KEYS",
    "ChatModel",
    "CodeExtraction",
    "Coder",
    "CoderMode",
    "CoderResult",
    "Conversation",
    "Feedback",
    "JsonExtraction",
    "Judge",
    "JudgeMode",
    "JudgeResult",
    "OPTIMIZATION_KEYS",
    "PAPER_OPTIMIZATION_KEYS",
    "PromptLibrary",
    "PromptTemplateError",
    "Reply",
    "TEMPLATE_SETS",
    "TemplateSet",
    "converse",
    "extract_code",
    "extract_json",
    "get_template_set",
    "repair_json",
]
