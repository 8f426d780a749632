"""Prompts: the Jinja2 templates of the top-level ``agents/`` folder and the contexts they are rendered with.

A template is named by its path under the folder without ``.j2`` (``coder/repair``). A config
can swap any template for another file, or for another template of the folder, through
``PromptLibrary(templates={"coder/repair": "path/or/name"})``. Rendering is strict: a variable
the context lacks is an error that names the template and the line.

A template set (``TEMPLATE_SETS``) is a whole alternative set of prompts under the same names:
``default`` is the folder itself, ``cudaforge_paper`` the subfolder ``cudaforge_paper/`` (what the
CudaForge paper's agents are shown, in our words). ``PromptLibrary(template_set=...)`` reads a set's
folder first and the default folder for what the set does not hold (examples, follow-ups it keeps).

The context builders below are pure functions from records (``Task``, ``EvalResult``,
``Feedback``) and plain mappings (a GPU spec sheet, a metrics table) to the plain dicts and
strings the templates read; each template documents its context in its opening comment.
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

from cudaforge import languages
from cudaforge.agents.records import (
    ANY_BACKEND,
    CORRECTION_KEYS,
    OPTIMIZATION_KEYS,
    PAPER_OPTIMIZATION_KEYS,
    Backend,
    Feedback,
    JudgeMode,
)
from cudaforge.hardware.specs import ARCHITECTURES
from cudaforge.paths import PROJECT_ROOT, RESOURCES
from cudaforge.types import EvalResult, EvalStatus, Task

DEFAULT_ROOT = RESOURCES / "agents"
"""The bundled templates, role cards and examples."""
SUFFIX = ".j2"
"""File suffix of a template."""
MAX_REPORT_CHARS = 8000
"""Default cap on the evaluator's report quoted in a prompt (the middle is cut)."""
ERROR_LOG_LINES = 150
"""Lines of a failure's text that ``error_log`` keeps: the last 150, as the CudaForge paper's code does."""
ERROR_LOG_MAX_CHARS = 32000
"""A cap on those lines (head and tail kept) against a few giant lines; 150 lines of a compiler log are far shorter."""

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


# --------------------------------------------------------------------------- values to text


def format_value(value: Any) -> str:
    """A value as prompt text: numbers compact (``%g``), lists joined, dicts as JSON."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, default=str)
    return str(value).strip()


MAX_PROMPT_KERNEL_CHARS = 100_000
"""The most of a candidate's source a prompt carries (about 25,000 tokens): a longer one is cut in the middle with a
note, so a Coder cannot push the next prompt past the model's window (or a provider's patience) with a padded
kernel. KernelBench kernels, CUDA inlined, are well under it."""


def prompt_kernel(kernel: str) -> str:
    """A candidate's source as a prompt shows it: stripped, and cut to ``MAX_PROMPT_KERNEL_CHARS`` with a note."""
    return clip(kernel.strip(), MAX_PROMPT_KERNEL_CHARS)


def clip(text: str, max_chars: int) -> str:
    """The text, or its head and tail around a note of how much was cut."""
    if len(text) <= max_chars:
        return text
    half = max_chars // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


# --------------------------------------------------------------------------- record contexts

HEADLINES: dict[EvalStatus, str] = {
    EvalStatus.CORRECT: "passed every correctness check",
    EvalStatus.INCORRECT: "produced wrong outputs",
    EvalStatus.COMPILE_ERROR: "did not compile",
    EvalStatus.RUNTIME_ERROR: "raised an error at run time",
    EvalStatus.TIMEOUT: "timed out",
    EvalStatus.CRASHED: "crashed the evaluation process",
    EvalStatus.INVALID: "was rejected before it ran",
    EvalStatus.COMPILED: "compiled, but could not be run (no GPU)",
    EvalStatus.REJECTED: "was rejected by an integrity guard",
    EvalStatus.UNSUPPORTED: "could not be built on this machine (its toolchain lacks a header)",
}
"""Each evaluation status as the end of the sentence "Your kernel ...\"."""


def task_context(task: Task) -> dict[str, Any]:
    """``task``: id, name, level, source."""
    return {"id": task.id, "name": task.name, "level": task.level, "source": task.source.strip()}


def finding_lines(result: EvalResult) -> list[str]:
    """The integrity findings that did not pass, one line each."""
    lines = []
    for finding in result.guard_findings:
        verdict = str(finding.get("verdict", "")).strip()
        if verdict.lower() in ("pass", "passed", "ok", "clean"):
            continue
        lines.append(f"{finding.get('guard', 'guard')} ({verdict or 'flagged'}): {finding.get('evidence', '')}".strip())
    return lines


def error_context(result: EvalResult, *, max_chars: int = MAX_REPORT_CHARS) -> dict[str, Any]:
    """``error``: status, headline, summary (the evaluator's report, clipped), findings."""
    summary = result.message.strip() or result.report()
    extras = []
    if result.status is EvalStatus.COMPILE_ERROR:
        extras.append(result.compile_log_trimmed.strip())
    if result.status is EvalStatus.INCORRECT and result.diff is not None:
        extras.append(result.diff.summary())
    for extra in extras:
        if extra and extra not in summary:
            summary += "\n\n" + extra
    return {
        "status": result.status.value,
        "headline": HEADLINES.get(result.status, result.status.value),
        "summary": clip(summary, max_chars),
        "findings": finding_lines(result),
    }


_INVOKED_WITH = "Invoked with:"
"""Where pybind's argument errors start printing whole tensors; the CudaForge paper's code cuts the text there."""


def not_close_line(diff: Any) -> str:
    """Wrong outputs in the words of the CudaForge authors' harness (``utils/compile_and_run.py``): the last line of
    the traceback their runner catches, ``ValueError: Outputs are not close (atol=0.001, rtol=0.001).
    max_abs_err=1.234e-01, mean_abs_err=5.678e-03`` (the tolerances as Python prints a float)."""
    mean = diff.mean_abs_error if diff.mean_abs_error is not None else float("nan")
    return (
        f"ValueError: Outputs are not close (atol={float(diff.atol)}, rtol={float(diff.rtol)}). "
        f"max_abs_err={float(diff.max_abs_error):.3e}, mean_abs_err={float(mean):.3e}"
    )


def error_log(
    result: EvalResult, *, max_lines: int = ERROR_LOG_LINES, max_chars: int = ERROR_LOG_MAX_CHARS, findings: bool = True
) -> str:
    """``error_log``: a failure as the CudaForge paper's agents read it, the tail of one error text.

    In the form of the CudaForge authors' harness (issue 54): a compile error is the evaluator's message and the
    compiler's whole output; a runtime error the message with the candidate's traceback; wrong outputs their
    harness's ``ValueError: Outputs are not close (atol=..., rtol=...). max_abs_err=..., mean_abs_err=...``
    (``not_close_line``; the frames of their runner above it are theirs alone), after the shapes and dtypes when
    they differ and the input distribution when it is not the task's own, then the integrity findings (``findings``;
    the authors' harness has none, so their builders get the log without them: ``error_log_authors``). Anything after
    pybind's "Invoked with:" is cut, then the last ``max_lines`` lines are kept.
    """
    diff = result.diff
    if result.status is EvalStatus.INCORRECT and diff is not None:
        lines = [] if diff.variant == "default" else [f"on the {diff.variant} inputs"]
        if diff.expected_shape != diff.actual_shape or diff.expected_dtype != diff.actual_dtype:
            lines.append(
                f"expected shape {diff.expected_shape} {diff.expected_dtype}, "
                f"got {diff.actual_shape} {diff.actual_dtype}"
            )
        if diff.max_abs_error is not None:
            lines.append(not_close_line(diff))
        text = "\n".join([line for line in lines if line.strip()] + (finding_lines(result) if findings else []))
    else:
        text = result.message.strip() or result.report()
        if result.status is EvalStatus.COMPILE_ERROR:  # the compiler's whole output, as their harness keeps it
            log = (result.compile_log or result.compile_log_trimmed).strip()
            if log and log not in text:
                text += "\n" + log
    text = text.split(_INVOKED_WITH, 1)[0].rstrip()
    return clip("\n".join(text.split("\n")[-max_lines:]), max_chars)


def timing_context(result: EvalResult | None) -> dict[str, Any]:
    """``timing``: measured, reference_ms, candidate_ms, speedup, speedup_ci, baseline, note."""
    if result is not None and result.speedup and result.reference_timing and result.candidate_timing:
        s = result.speedup
        return {
            "measured": True,
            "reference_ms": f"{result.reference_timing.median:.4g}",
            "candidate_ms": f"{result.candidate_timing.median:.4g}",
            "speedup": f"{s.median:.3g}",
            "speedup_ci": f"[{s.ci_low:.3g}, {s.ci_high:.3g}]",
            "baseline": s.baseline,
            "note": "",
        }
    note = "no evaluation result" if result is None else result.timing_unavailable_reason or "no timing was recorded"
    return dict.fromkeys(("reference_ms", "candidate_ms", "speedup", "speedup_ci", "baseline"), "") | {
        "measured": False,
        "note": note,
    }


def feedback_context(feedback: Feedback | None) -> dict[str, str] | None:
    """``feedback`` / ``suggestion``: the Judge's fields as text, or None."""
    if feedback is None:
        return None
    return {str(key): format_value(value) for key, value in feedback.fields.items()}


def _with_size(value: int) -> str:
    """A byte count with its size in KiB, MiB or GiB."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale:
            return f"{value} ({value / scale:.3g} {unit})"
    return str(value)


def gpu_context(spec: Mapping[str, Any] | None, prefix: str = "") -> dict[str, str]:
    """``gpu``: a spec sheet's entries as text; nested mappings (``peaks``) flattened to dotted
    labels, ``*_bytes`` counts shown with their size, None and empty values dropped."""
    sheet: dict[str, str] = {}
    for key, value in (spec or {}).items():
        label = f"{prefix}{key}"
        if isinstance(value, Mapping):
            sheet.update(gpu_context(value, prefix=f"{label}."))
        elif isinstance(value, int) and not isinstance(value, bool) and label.endswith("_bytes"):
            sheet[label] = _with_size(value)
        elif value is not None and format_value(value):
            sheet[label] = format_value(value)
    return sheet


CARD_LEAVES_OUT = frozenset(
    {"uuid", "driver_version", "notes", "warnings", "peaks.table_key", "peaks.label", "peaks.source"}
)
"""Spec-sheet entries that say which device or table it is, not what it can do: not on a ``gpu_card``."""


def gpu_card_context(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """``gpu_card``: name, architecture (the sheet's, else its compute capability's; "" when unknown)
    and details (the other entries as ``gpu_context`` writes them, ``CARD_LEAVES_OUT`` left out)."""
    details = {key: value for key, value in gpu_context(spec).items() if key not in CARD_LEAVES_OUT}
    name = details.pop("name", "")
    architecture = details.pop("architecture", "") or ARCHITECTURES.get(details.get("compute_capability", ""), "")
    return {"name": name, "architecture": architecture, "details": details}


_TABLE_PREFIX = re.compile(r"^\[[^\]]*\] ")
"""The ``[kernel#id] `` or ``[total] `` before a metric's name in ``ProfileResult.judge_metrics``."""


def select_metrics(metrics: Mapping[str, Any] | None, names: Sequence[str] = ()) -> dict[str, Any]:
    """The entries of a Judge's metric table (``ProfileResult.judge_metrics``) whose metric is one of
    ``names``, per kernel (``[kernel#id] name``) and totals (``[total] name``) included; launch shapes,
    library kernels, rule messages and the roofline are left out. Every entry when ``names`` is empty."""
    if not names:
        return dict(metrics or {})
    wanted = set(names)
    return {key: value for key, value in (metrics or {}).items() if _TABLE_PREFIX.sub("", str(key)) in wanted}


def _as_printed(value: Any) -> Any:
    """A metric value as the authors' ``metrics_to_prompt`` prints it: a whole number as an integer (pandas reads
    an integer column of ncu's CSV as integers: ``3449``, not ``3449.0``), any other float rounded to 3 decimals.
    (Where another launch of the same metric has a fraction, pandas makes the whole column float and prints
    ``3449.0``; the last launch alone cannot tell.)"""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return round(value, 3)
    return value


def kernel_metrics_context(
    kernels: Sequence[Mapping[str, Any]] | None, names: Sequence[str] = ()
) -> dict[str, dict[str, Any]]:
    """``kernel_metrics``: the candidate's own kernels' ncu metrics keyed by kernel name (as ncu reports
    it), as the CudaForge paper's Judge reads them: one entry per name, with the values of its last
    launch (whole numbers as integers, other floats rounded to 3 decimals, n/a as null, no units); only ``names``, in their order, when
    given. ``kernels`` are ``KernelProfile`` dicts; {} when none has ncu metrics."""
    table: dict[str, dict[str, Any]] = {}
    for kernel in kernels or ():
        recorded = kernel.get("metrics") or {}
        if not kernel.get("own", True) or not recorded:
            continue
        order = [n for n in names if n in recorded] if names else list(recorded)
        values = {}
        for metric in order:
            value = recorded[metric]
            value = value.get("value") if isinstance(value, Mapping) else value
            values[metric] = _as_printed(value)
        table[str(kernel.get("name") or kernel.get("base_name") or f"kernel#{kernel.get('id')}")] = values
    return table


def metrics_context(metrics: Mapping[str, Any] | None) -> dict[str, str]:
    """``metrics``: name -> "value unit" (a value: number, string, ``(value, unit)`` or ``{"value", "unit"}``)."""
    table = {}
    for name, value in (metrics or {}).items():
        if isinstance(value, Mapping) and "value" in value:
            text = f"{format_value(value['value'])} {value.get('unit') or ''}"
        elif isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[1], str):
            text = f"{format_value(value[0])} {value[1]}"
        else:
            text = format_value(value)
        table[str(name)] = text.strip()
    return table


# --------------------------------------------------------------------------- mode contexts


def backend_context(backend: Backend) -> dict[str, str]:
    """What the Coder templates say about the kernel language, from the registry (``cudaforge.languages``):
    ``backend`` (its name), ``kernel_kind`` (in prose), ``kernel_rule`` (the output-format rule on writing and
    launching the kernels) and ``kernel_follow_up`` (what a follow-up asks the kernels to be)."""
    value = Backend(backend).value
    if value == ANY_BACKEND:
        choices = languages.choice_languages()
        return {
            "backend": value,
            "kernel_kind": " or ".join(lang.title for lang in choices),
            "kernel_rule": "Write the kernels in " + ", or in ".join(lang.prompt_choice for lang in choices) + ".",
            "kernel_follow_up": "",
        }
    language = languages.get(value)
    return {
        "backend": value,
        "kernel_kind": language.title,
        "kernel_rule": language.prompt_rule,
        "kernel_follow_up": language.follow_up,
    }


def example_name(backend: Backend) -> str:
    """The bundled worked example for ``backend`` (``any``: the first choice's, CUDA's)."""
    value = Backend(backend).value
    language = languages.choice_languages()[0] if value == ANY_BACKEND else languages.get(value)
    return language.example


def first_attempt_context(
    task: Task,
    *,
    example: Mapping[str, str] | None,
    gpu: Mapping[str, Any] | None,
    backend: Backend,
    skills: Sequence[str] = (),
) -> dict[str, Any]:
    """The context of ``coder/first_attempt`` (``skills``: skill documents' texts)."""
    return {
        "task": task_context(task),
        "example": dict(example) if example else None,
        "gpu": gpu_context(gpu),
        **backend_context(backend),
        "skills": [s.strip() for s in skills if s.strip()],
    }


def repair_context(
    task: Task,
    kernel: str,
    result: EvalResult,
    *,
    feedback: Feedback | None,
    backend: Backend,
    max_chars: int = MAX_REPORT_CHARS,
) -> dict[str, Any]:
    """The context of ``coder/repair``."""
    return {
        "task": task_context(task),
        "kernel": prompt_kernel(kernel),
        "error": error_context(result, max_chars=max_chars),
        "error_log": error_log(result),
        "error_log_authors": error_log(result, findings=False),
        "feedback": feedback_context(feedback),
        "feedback_raw": dict(feedback.raw) if feedback is not None and feedback.raw else None,
        **backend_context(backend),
    }


def optimize_context(
    task: Task,
    kernel: str,
    *,
    result: EvalResult | None,
    feedback: Feedback | None,
    gpu: Mapping[str, Any] | None,
    backend: Backend,
    skills: Sequence[str] = (),
) -> dict[str, Any]:
    """The context of ``coder/optimize`` (``skills``: skill documents' texts)."""
    return {
        "task": task_context(task),
        "kernel": prompt_kernel(kernel),
        "suggestion": feedback_context(feedback),
        "suggestion_raw": dict(feedback.raw) if feedback is not None and feedback.raw else None,
        "timing": timing_context(result),
        "gpu": gpu_context(gpu),
        "gpu_card": gpu_card_context(gpu),
        **backend_context(backend),
        "skills": [s.strip() for s in skills if s.strip()],
    }


def correction_context(
    task: Task,
    kernel: str,
    result: EvalResult,
    *,
    gpu: Mapping[str, Any] | None,
    max_chars: int = MAX_REPORT_CHARS,
) -> dict[str, Any]:
    """The context of ``judge/correction`` (and ``judge/system``)."""
    return {
        "mode": JudgeMode.correction.value,
        "task": task_context(task),
        "kernel": prompt_kernel(kernel),
        "error": error_context(result, max_chars=max_chars),
        "error_log": error_log(result),
        "error_log_authors": error_log(result, findings=False),
        "gpu": gpu_context(gpu),
    }


def optimization_context(
    task: Task,
    kernel: str,
    result: EvalResult | None,
    *,
    gpu: Mapping[str, Any] | None,
    metrics: Mapping[str, Any] | None,
    metric_set: str = "",
    kernels: Sequence[Mapping[str, Any]] | None = None,
    only_metrics: Sequence[str] = (),
) -> dict[str, Any]:
    """The context of ``judge/optimization`` (and ``judge/system``): ``metrics`` is the profile's flat
    table, ``kernels`` its ``KernelProfile`` dicts; ``only_metrics`` keeps those metrics alone in both."""
    table = metrics_context(select_metrics(metrics, only_metrics))
    return {
        "mode": JudgeMode.optimization.value,
        "task": task_context(task),
        "kernel": prompt_kernel(kernel),
        "timing": timing_context(result),
        "gpu": gpu_context(gpu),
        "gpu_card": gpu_card_context(gpu),
        "metrics": table,
        "kernel_metrics": kernel_metrics_context(kernels, only_metrics),
        "metric_set": metric_set or ("metrics" if table else "no profile was collected"),
        "language_notes": _language_notes(kernel),
    }


def _language_notes(kernel: str) -> str:
    """The kernel language's notes for the Judge (``KernelLanguage.judge_notes``; empty for CUDA and Triton)."""
    name = languages.detect(kernel)
    return "" if name == languages.NO_KERNEL else languages.get(name).judge_notes


def coder_follow_up_context(reason: str, *, backend: Backend) -> dict[str, Any]:
    """The context of ``coder/follow_up``."""
    return {"reason": reason, **backend_context(backend)}


def judge_follow_up_context(reason: str, *, mode: JudgeMode, required_keys: Sequence[str]) -> dict[str, Any]:
    """The context of ``judge/follow_up``."""
    return {"reason": reason, "mode": JudgeMode(mode).value, "required_keys": list(required_keys)}


def chat(library: PromptLibrary, role: str, mode: str, context: Mapping[str, Any]) -> Messages:
    """``[system, user]``: ``<role>/system`` and ``<role>/<mode>``, both rendered with ``context``."""
    return [
        {"role": "system", "content": library.render(f"{role}/system", **context)},
        {"role": "user", "content": library.render(f"{role}/{mode}", **context)},
    ]
