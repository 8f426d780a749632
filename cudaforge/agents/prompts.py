"""Prompt contexts: what the Coder's and the Judge's templates (``cudaforge/agents/templates.py``) are rendered with.

The context builders are pure functions from records (``Task``, ``EvalResult``, ``Feedback``) and plain mappings
(a GPU spec sheet, a metrics table) to the plain dicts and strings the templates read; each template documents its
context in its opening comment.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from cudaforge import languages
from cudaforge.agents.records import (
    ANY_BACKEND,
    Backend,
    Feedback,
    JudgeMode,
)
from cudaforge.hardware.specs import ARCHITECTURES
from cudaforge.types import EvalResult, EvalStatus, Task

MAX_REPORT_CHARS = 8000
"""Default cap on the evaluator's report quoted in a prompt (the middle is cut)."""
ERROR_LOG_LINES = 150
"""Lines of a failure's text that ``error_log`` keeps: the last 150, as the CudaForge paper's code does."""
ERROR_LOG_MAX_CHARS = 32000
"""A cap on those lines (head and tail kept) against a few giant lines; 150 lines of a compiler log are far shorter."""

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
