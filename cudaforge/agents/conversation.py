"""One agent step as a short conversation: ask, parse, and on an unusable reply ask once more.

The model is any object with ``complete(messages, **meta) -> reply`` whose reply has
``.text`` (``cudaforge.llm.LLMClient`` is the real one). Errors the model raises (transport,
empty reply, replay miss) propagate; a reply that cannot be parsed never does: it is
recorded, answered with a follow-up prompt, and after ``max_follow_ups`` becomes a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from cudaforge.agents.records import Conversation

T = TypeVar("T")


class Reply(Protocol):
    """What a model call returns (``cudaforge.llm.LLMReply`` is one)."""

    text: str


class ChatModel(Protocol):
    """What the agents call (``cudaforge.llm.LLMClient`` is one)."""

    def complete(self, messages: list[dict[str, Any]], **meta: Any) -> Reply:
        """Answer a chat."""
        ...


def converse(
    llm: ChatModel,
    messages: list[dict[str, str]],
    parse: Callable[[str], tuple[T | None, str]],
    follow_up: Callable[[str], str],
    *,
    max_follow_ups: int = 1,
    meta: dict[str, Any] | None = None,
) -> tuple[T | None, Conversation]:
    """Ask ``llm``; ``parse(text)`` gives (value, "") for a usable reply, (None, reason) otherwise.

    While the reply does not parse and follow-ups remain, append it and
    ``follow_up(reason)`` to the chat and ask again. Returns the parsed value (None if every
    reply failed) and the conversation. ``meta`` goes to every call, with ``follow_up`` = 0, 1, ...
    """
    sent = [dict(m) for m in messages]
    replies: list[str] = []
    reasons: list[str] = []
    for attempt in range(max_follow_ups + 1):
        if attempt:
            sent = [
                *sent,
                {"role": "assistant", "content": replies[-1] if replies[-1].strip() else "(empty reply)"},
                {"role": "user", "content": follow_up(reasons[-1])},
            ]
        reply = llm.complete([dict(m) for m in sent], **{**(meta or {}), "follow_up": attempt})
        text = getattr(reply, "text", None) or ""
        value, reason = parse(text)
        if reason and getattr(reply, "finish_reason", None) == "length":
            reason += " (the reply hit the output token limit and was cut off: answer more briefly)"
        replies.append(text)
        reasons.append(reason)
        if not reason:
            return value, Conversation(messages=sent, replies=replies, parse_errors=reasons)
    return None, Conversation(messages=sent, replies=replies, parse_errors=reasons)
