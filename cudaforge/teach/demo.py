"""The offline demo's distiller: an extractive stand-in for a model, for ``cudaforge skill distill`` on a demo run.

The demo's model ``scripted/demo`` answers only the Coder's and the Judge's prompts of the ``tiny`` suite
(``cudaforge/run/demo.py``). For a distillation prompt, ``install_demo_distiller`` installs under the same name
a deterministic function that copies the Judge's advice out of the prompt, one bullet per piece of advice
and bottleneck, and says it is a demo. It goes through the real ``LLMClient`` (ledger, cache, replay).
"""

from __future__ import annotations

import re
from typing import Any

from cudaforge.llm.scripted import install_script

BANNER = "DEMO: the skill is an extractive summary of the evidence (cudaforge/teach/demo.py), not a model's output."


def demo_distillation(messages: list[dict[str, Any]]) -> str:
    """The demo's reply to a ``skills/distill`` prompt: the advice, grouped as the prompt groups it."""
    prompt = next((m["content"] for m in messages if m["role"] == "user"), "")
    lines = ["_DEMO: extracted from the evidence, not written by a model._"]
    seen: set[str] = set()
    for block in re.split(r"(?m)^### ", prompt)[1:]:
        name, _, body = block.partition("\n")
        lines += ["", f"## {name.strip()}"]
        fields = dict(re.findall(r"(?m)^\s+(bottleneck|method|plan): (.*)$", body))
        for bottleneck, method, plan in re.findall(r"(?m)^\s+bottleneck: (.*)\n\s+method: (.*)\n\s+plan: (.*)$", body):
            bullet = f"- When {bottleneck.strip()}: {method.strip()} ({plan.strip()})."
            if bullet not in seen:
                seen.add(bullet)
                lines.append(bullet)
        if not fields:
            lines.append("- (no advice in this group)")
    return "\n".join(lines)


def install_demo_distiller() -> None:
    """Install the demo distiller as model ``scripted/demo`` (in a process that runs no Coder/Judge loop)."""
    install_script("demo", demo_distillation)
