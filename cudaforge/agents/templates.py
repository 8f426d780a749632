"""Prompt templates: the Jinja2 templates of the top-level ``agents/`` folder, and the library that renders them.

A template is named by its path under the folder without ``.j2`` (``coder/repair``). A config
can swap any template for another file, or for another template of the folder, through
``PromptLibrary(templates={"coder/repair": "path/or/name"})``. Rendering is strict: a variable
the context lacks is an error that names the template and the line.

A template set (``TEMPLATE_SETS``) is a whole alternative set of prompts under the same names:
``default`` is the folder itself, ``cudaforge_paper`` the subfolder ``cudaforge_paper/`` (what the
CudaForge paper's agents are shown, in our words). ``PromptLibrary(template_set=...)`` reads a set's
folder first and the default folder for what the set does not hold (examples, follow-ups it keeps).

The contexts the templates are rendered with are built in ``cudaforge/agents/prompts.py``.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta

from cudaforge.agents.records import CORRECTION_KEYS, OPTIMIZATION_KEYS, PAPER_OPTIMIZATION_KEYS, Backend
from cudaforge.paths import PROJECT_ROOT, RESOURCES

DEFAULT_ROOT = RESOURCES / "agents"
"""The bundled templates, role cards and examples."""
SUFFIX = ".j2"
"""File suffix of a template."""


Messages = list[dict[str, str]]
"""A chat: ``[{"role": "system" | "user" | "assistant", "content": str}, ...]``."""


class PromptTemplateError(ValueError):
    """A template is missing, does not parse, or uses a variable its context lacks."""


@dataclass(frozen=True)
class TemplateSet:
    """A named set of Coder and Judge templates, and what goes with it."""

    name: str
    """The set's name (``agents.template_set``)."""
    folder: str | None
    """Its folder under the templates root (None: the root itself); names it lacks come from the root."""
    correction_keys: tuple[str, ...]
    """The keys its ``judge/correction`` template asks for."""
    optimization_keys: tuple[str, ...]
    """The keys its ``judge/optimization`` template asks for."""
    backends: tuple[Backend, ...]
    """The kernel backends its Coder templates can ask for."""


TEMPLATE_SETS: dict[str, TemplateSet] = {
    # Our own prompts: the default.
    "default": TemplateSet("default", None, CORRECTION_KEYS, OPTIMIZATION_KEYS, tuple(Backend)),
    # What the CudaForge paper's agents are shown, per agent and mode (cudaforge_paper/*/*.j2 say what each
    # mirrors); CUDA only, as the paper's prompts (``any`` gets CUDA).
    "cudaforge_paper": TemplateSet(
        "cudaforge_paper", "cudaforge_paper", CORRECTION_KEYS, PAPER_OPTIMIZATION_KEYS, (Backend.cuda, Backend.any)
    ),
}
"""The template sets, by name."""


def get_template_set(name: str | TemplateSet) -> TemplateSet:
    """The template set called ``name``; an unknown name is an error listing the known ones."""
    if isinstance(name, TemplateSet):
        return name
    try:
        return TEMPLATE_SETS[str(getattr(name, "value", name))]
    except KeyError:
        raise PromptTemplateError(f"unknown template set {name!r}; known: {', '.join(TEMPLATE_SETS)}") from None


def to_json(value: Any, indent: int | None = None) -> str:
    """The ``json`` filter of the templates: a value as JSON text, non-ASCII kept, nothing HTML-escaped
    (Jinja's own ``tojson`` writes ``<`` as ``\\u003c``, which a kernel's text should not get)."""
    return json.dumps(value, indent=indent, ensure_ascii=False, default=str)


def template_name(name: str) -> str:
    """The canonical name of a template: forward slashes, no ``.j2`` suffix."""
    name = name.replace("\\", "/").strip("/")
    return name[: -len(SUFFIX)] if name.endswith(SUFFIX) else name


class _Loader(jinja2.BaseLoader):
    """Loads ``<folder>/<name>.j2`` from the first folder that has it, or the file a config put in
    its place (includes too)."""

    def __init__(self, folders: Sequence[Path], overrides: Mapping[str, Path]) -> None:
        self.folders = list(folders)
        self.overrides = dict(overrides)

    def path(self, name: str) -> Path:
        name = template_name(name)
        if name in self.overrides:
            return self.overrides[name]
        paths = [folder / f"{name}{SUFFIX}" for folder in self.folders]
        return next((p for p in paths if p.is_file()), paths[0])

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        path = self.path(template)
        if not path.is_file():
            raise jinja2.TemplateNotFound(template)
        mtime = path.stat().st_mtime
        return path.read_text(encoding="utf-8"), str(path), lambda: path.is_file() and path.stat().st_mtime == mtime


class PromptLibrary:
    """The templates of one run: the ``agents/`` folder (or ``root``) with a config's overrides.

    ``template_set`` picks a set of templates (``TEMPLATE_SETS``): its folder is read first, the
    root for names it does not hold. ``templates`` maps a template name to its replacement: a file
    path (absolute, or relative to ``base_dir``, by default the project root, else to the working
    directory the run started in) or the name of another template of the set or the folder. Unknown names and missing
    files fail here, not mid-run.
    """

    def __init__(
        self,
        root: str | Path | None = None,
        templates: Mapping[str, str] | None = None,
        *,
        base_dir: str | Path | None = None,
        template_set: str | TemplateSet = "default",
    ) -> None:
        self.root = Path(root).expanduser().resolve() if root is not None else DEFAULT_ROOT
        """The folder holding ``coder/``, ``judge/`` and ``examples/``."""
        if not self.root.is_dir():
            raise PromptTemplateError(f"the templates folder {self.root} does not exist")
        self.template_set = get_template_set(template_set)
        """The set of templates in use."""
        self.set_root = self.root / self.template_set.folder if self.template_set.folder else self.root
        """The set's folder (the root for ``default``)."""
        if not self.set_root.is_dir():
            raise PromptTemplateError(f"template set {self.template_set.name!r}: no folder {self.set_root}")
        self.base_dir = Path(base_dir).expanduser().resolve() if base_dir is not None else PROJECT_ROOT
        """Where relative override paths are resolved."""
        bundled = self._bundled_names()
        self.overrides: dict[str, Path] = {}
        """Template name -> the file used instead of ``<root>/<name>.j2``."""
        for key, value in (templates or {}).items():
            name = template_name(str(key))
            if name not in bundled:
                raise PromptTemplateError(
                    f"templates[{key!r}]: no template of that name under {self.root} (known: {', '.join(bundled)})"
                )
            self.overrides[name] = self._resolve(name, str(value))
        self._loader = _Loader(self._folders(), self.overrides)
        self.env = jinja2.Environment(
            loader=self._loader,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=False,
            autoescape=False,
        )
        """The Jinja2 environment (strict undefined, block tags leave no blank lines, a ``json`` filter)."""
        self.env.filters["json"] = to_json

    def _folders(self) -> list[Path]:
        """Where templates are looked up, in order: the set's folder, then the root."""
        return [self.set_root] if self.set_root == self.root else [self.set_root, self.root]

    def _bundled_names(self) -> list[str]:
        """The set's names and the root's, the other sets' folders left out of the root's."""
        sets = {self.root / t.folder for t in TEMPLATE_SETS.values() if t.folder}
        names: set[str] = set()
        for folder in self._folders():
            for path in folder.rglob(f"*{SUFFIX}"):
                if folder == self.root and any(path.is_relative_to(d) for d in sets):
                    continue
                names.add(template_name(path.relative_to(folder).as_posix()))
        return sorted(names)

    def _resolve(self, name: str, value: str) -> Path:
        """The file an override names: a path, else another template of the set or the folder."""
        path = Path(value).expanduser()
        if not path.is_absolute():
            here = Path.cwd() / path  # where the user typed the command (Hydra does not change it)
            path = self.base_dir / path
            if not path.is_file() and here.is_file():
                path = here
        if path.is_file():
            return path.resolve()
        for folder in self._folders():
            alias = folder / f"{template_name(value)}{SUFFIX}"
            if alias.is_file():
                return alias
        raise PromptTemplateError(
            f"templates[{name!r}] = {value!r}: no such file ({path}) and no template {value!r} under {self.root}"
        )

    def names(self) -> list[str]:
        """Every template name, partials (``_name``) included."""
        return self._bundled_names()

    def path(self, name: str) -> Path:
        """The file that ``render(name)`` reads."""
        return self._loader.path(name)

    def render(self, name: str, /, **context: Any) -> str:
        """Render a template with ``context``; ``PromptTemplateError`` names the template and the line on failure."""
        name = template_name(name)
        try:
            return self.env.get_template(name).render(**context).strip()
        except jinja2.TemplateNotFound as exc:
            raise PromptTemplateError(
                f"template {name!r}: {exc.name!r} not found under {self.root} (known: {', '.join(self.names())})"
            ) from None
        except jinja2.TemplateSyntaxError as exc:
            raise PromptTemplateError(
                f"template {name!r}: syntax error in {exc.filename} line {exc.lineno}: {exc.message}"
            ) from None
        except jinja2.TemplateError as exc:
            raise PromptTemplateError(
                f"template {name!r}{_where(exc)}: {exc.message}; "
                f"the context holds: {', '.join(sorted(context)) or 'nothing'}"
            ) from None

    def variables(self, name: str) -> set[str]:
        """The variables a template reads from its context, those of the partials it includes too."""
        source, _, _ = self._loader.get_source(self.env, template_name(name))
        tree = self.env.parse(source)
        found = set(meta.find_undeclared_variables(tree))
        for included in meta.find_referenced_templates(tree):
            if included:
                found |= self.variables(included)
        return found

    def documented_variables(self, name: str) -> set[str]:
        """The variables listed under ``Context:`` in a template's opening comment."""
        source, _, _ = self._loader.get_source(self.env, template_name(name))
        head = re.match(r"\s*\{#(.*?)#\}", source, re.S)
        if not head or "Context:" not in head.group(1):
            return set()
        section = head.group(1).split("Context:", 1)[1]
        return set(re.findall(r"^  ([A-Za-z_]\w*)\s{2,}\S", section, re.M))

    def example(self, name: str) -> dict[str, str]:
        """A one-shot example: ``examples/<name>/`` of the set or the root (or a folder path) with
        ``reference.py`` and ``solution.py``."""
        folder = Path(name).expanduser()
        if not folder.is_absolute():
            found = [f / "examples" / name for f in self._folders()]
            folder = next((f for f in found if f.is_dir()), found[-1])
        files = {"reference": folder / "reference.py", "solution": folder / "solution.py"}
        missing = [str(p) for p in files.values() if not p.is_file()]
        if missing:
            raise PromptTemplateError(f"example {name!r}: missing {', '.join(missing)}")
        return {"name": folder.name, **{k: p.read_text(encoding="utf-8").strip() for k, p in files.items()}}


def _where(exc: BaseException) -> str:
    """`` (file line N)`` of the innermost template frame of an error's traceback."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith(SUFFIX)]
    if not frames:
        return ""
    path = Path(frames[-1].filename)
    base = next((b for b in (RESOURCES, PROJECT_ROOT) if path.is_relative_to(b)), None)
    shown = path.relative_to(base) if base else path
    return f" ({shown} line {frames[-1].lineno})"


def chat(library: PromptLibrary, role: str, mode: str, context: Mapping[str, Any]) -> Messages:
    """``[system, user]``: ``<role>/system`` and ``<role>/<mode>``, both rendered with ``context``."""
    return [
        {"role": "system", "content": library.render(f"{role}/system", **context)},
        {"role": "user", "content": library.render(f"{role}/{mode}", **context)},
    ]
