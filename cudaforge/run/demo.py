"""The offline demo model: a hand-written transcript played through the real LLM client.

``coder=demo judge=demo`` (model ``scripted/demo``) answers from
``benchmarks/demo/tiny_transcript.yaml``. The replies were written by the developers; they
are not a model's output, and the run says so. The reply is chosen from the prompt alone
(which task, which role and mode, which kernel is shown), so a resumed or replayed run gets
the same reply for the same prompt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from cudaforge.llm.cache import TASK_IN_PROMPT
from cudaforge.llm.scripted import install_script

TRANSCRIPT = Path(__file__).resolve().parents[1] / "resources" / "demo" / "tiny_transcript.yaml"
BANNER = (
    "DEMO: agent replies come from a hand-written example transcript (cudaforge/resources/demo/), not from a model."
)


class DemoTranscriptError(LookupError):
    """The demo transcript has no reply for this prompt (the demo covers the `tiny` suite)."""


def role_and_mode(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """Which agent a prompt of the default templates is for, and in which mode (``coder``: ``first_attempt``,
    ``repair``, ``optimize``; ``judge``: ``correction``, ``optimization``)."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    if "You are the Judge" in system:
        return "judge", "correction" if "critical_issue" in user else "optimization"
    if "Fix it." in user:
        return "coder", "repair"
    if "is correct. Make it faster" in user:
        return "coder", "optimize"
    return "coder", "first_attempt"


def kernel_shown(user: str, names: list[str], kernels: dict[str, str]) -> str | None:
    """The longest of the named kernels whose source appears in the prompt ``user`` (None: none does)."""
    shown = [n for n in names if kernels[n].strip() in user]
    return max(shown, key=lambda n: len(kernels[n]), default=None)


def _transcript_name(task_id: str) -> str:
    """The transcript's name for a task: the last part of its id (``tiny/level1/1_ReLU`` -> ``1_ReLU``)."""
    return task_id.rsplit("/", 1)[-1]


def uncovered_tasks(task_ids: Iterable[str], path: Path = TRANSCRIPT) -> list[str]:
    """The task ids, in order, that the demo transcript has no replies for (it covers the ``tiny`` suite).

    Reads only the transcript file; the demo model would fail each of these tasks on its first call.
    """
    covered = yaml.safe_load(path.read_text())["tasks"]
    return [t for t in task_ids if _transcript_name(t) not in covered]


def demo_reply(messages: list[dict[str, Any]], transcript: dict[str, Any]) -> str:
    """The transcript's reply to one prompt."""
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    found = TASK_IN_PROMPT.search(user)
    if not found:
        raise DemoTranscriptError("the prompt names no task")
    task = _transcript_name(found.group(1))
    script = transcript["tasks"].get(task)
    if script is None:
        raise DemoTranscriptError(f"the demo transcript covers {sorted(transcript['tasks'])}, not {task!r}")
    role, mode = role_and_mode(messages)
    kernels = transcript["kernels"]
    entry = script[role].get(mode)
    if entry is None:
        raise DemoTranscriptError(f"no {role} {mode} reply for {task}")
    if isinstance(entry, dict):
        shown = kernel_shown(user, list(entry), kernels)
        if shown is None:
            raise DemoTranscriptError(f"no {role} {mode} reply for the kernel shown ({task})")
        entry = entry[shown]
    if role == "judge":
        return "Here is my analysis.\n```json\n" + json.dumps(entry, indent=2) + "\n```"
    return f"Here is the kernel.\n```python\n{kernels[entry]}```"


def install_demo(path: Path = TRANSCRIPT) -> None:
    """Install the ``demo`` script (model ``scripted/demo``) from the transcript file."""
    transcript = yaml.safe_load(path.read_text())
    install_script("demo", lambda messages: demo_reply(messages, transcript))
