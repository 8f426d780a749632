"""Skill documents for the Coder (``coder.skills``): found and read here, by the agents that use them, so a run needs
nothing of ``cudaforge/teach/`` (which distils them: ``cudaforge skill distill``)."""

from __future__ import annotations

import re
from pathlib import Path

from cudaforge.paths import PROJECT_ROOT


def strip_front_matter(text: str) -> str:
    """A Markdown text without its leading ``---`` YAML block."""
    match = re.match(r"\A---\s*\n.*?\n---\s*\n", text, re.S)
    return text[match.end() :].strip() if match else text.strip()


def skill_path(path: str | Path) -> Path:
    """A skill file: absolute, or relative to the working directory, else to the project root."""
    given = Path(path).expanduser()
    candidates = [given] if given.is_absolute() else [Path.cwd() / given, PROJECT_ROOT / given]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(
        f"coder.skills: no skill file {path} (looked in {', '.join(map(str, candidates))}); "
        "write one with `cudaforge skill distill RUN_DIR skill.out=PATH`"
    )


def read_skills(paths: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The texts of skill files for the Coder (front matter stripped)."""
    return tuple(strip_front_matter(skill_path(p).read_text(encoding="utf-8")) for p in paths)
