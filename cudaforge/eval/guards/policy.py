"""The guards, their policies, and the findings they leave in an ``EvalResult``.

A finding is a plain dict ``{guard, verdict, evidence}``: ``verdict`` is ``reject`` (the candidate
fails: status ``rejected``, or ``incorrect`` when an output was wrong) or ``report`` (it goes on,
the finding is kept for the Judge). ``evidence`` is one or two sentences the Judge can pass to the
Coder as they stand: what was seen, where, and what to do instead.

Each guard reads its policy from the eval config, under its own name (``eval.guards.<guard>``,
``cudaforge.eval.settings.GuardPolicies``); ``guards_enforce=False`` turns every rejection into a report. No torch
here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cudaforge.eval.settings import EvalConfig

REJECT = "reject"
REPORT = "report"


@dataclass(frozen=True)
class Guard:
    """One integrity guard."""

    name: str
    """The name findings carry (``guard``)."""
    field: str | None
    """Where its policy is: the name under ``eval.guards`` (``GuardPolicies``), or ``torch_ops``; None: it only
    explains a wrong output (always rejects)."""
    where: str
    """``static`` (AST, before anything runs), ``runtime`` (CPU and GPU) or ``gpu`` (needs a GPU)."""
    what: str
    """What it catches, for docs and tables."""
    strict_rejects: bool = False
    """Under ``torch_ops=strict`` it rejects whatever its field says (``guards_enforce=false`` still makes it a
    report): strict promises that forward runs no PyTorch compute, a promise the static guards keep only for code
    they can see."""


GUARDS: dict[str, Guard] = {
    g.name: g
    for g in [
        Guard(
            "reference",
            "reference",
            "static",
            "ModelNew = Model; ModelNew inheriting from, wrapping or copying the reference",
        ),
        Guard(
            "no_custom_kernel",
            "no_custom_kernel",
            "static",
            "no kernel of its own defined or launched (static); none ran (GPU profiler)",
        ),
        Guard(
            "fallback",
            "fallback",
            "static",
            "try/except that falls back to PyTorch or swallows a kernel's failure",
        ),
        Guard("empty_body", "empty_body", "static", "forward is only pass, ... or a docstring"),
        Guard(
            "torch_compute",
            "torch_ops",
            "static",
            "PyTorch compute ops in forward (static; under strict an allow-list: "
            "kernels, layout ops and plain Python only); library kernels' share of GPU time (GPU)",
        ),
        Guard("concurrency", "concurrency", "static", "threads, processes, new CUDA streams or graphs"),
        Guard(
            "monkey_patch",
            "monkey_patch",
            "static",
            "assignments to torch, time, builtins ...; torch's global flags",
        ),
        Guard("io", "io", "static", "reading files, environment variables or the network"),
        Guard(
            "introspection",
            "introspection",
            "static",
            "gc, inspect, frames, sys.modules reads, ctypes, dynamic getattr on modules",
        ),
        Guard(
            "dynamic_code",
            "introspection",
            "static",
            "exec/eval, hidden imports, modules written and loaded, "
            "pickles, torch.fx and TorchScript from strings, interpreter internals, lookups by computed names: code the "
            "guards cannot see",
            strict_rejects=True,
        ),
        Guard("input_mutation", "input_mutation", "runtime", "inputs changed by the candidate's call"),
        Guard(
            "output_type",
            "output_type",
            "runtime",
            "outputs that are not plain dense tensors on the device (lazy subclasses)",
        ),
        Guard(
            "output_sensitivity",
            "output_sensitivity",
            "runtime",
            "an output that never changes while the reference's does",
        ),
        Guard("precision", "precision", "runtime", "fp32 outputs with fp16/bf16-sized errors (silent downgrade)"),
        Guard(
            "precision_fp64",
            "precision_fp64",
            "runtime",
            "an output whose error against an fp64 evaluation of the reference is many times the fp32 reference's own",
        ),
        Guard(
            "parameters_not_varied",
            "parameters_not_varied",
            "runtime",
            "ModelNew has no tensor to receive the reference's varied constants: both ran with their initial values",
        ),
        Guard(
            "uninitialised_memory",
            None,
            "runtime",
            "outputs holding the poison written into free memory before the call",
        ),
        Guard("result_caching", None, "runtime", "an output equal to an earlier call's, on new inputs"),
        Guard(
            "shape_specialisation", None, "runtime", "correct on the default shape, wrong on a declared variant's shape"
        ),
        Guard("timed_output", None, "runtime", "a wrong output produced during the timed calls"),
        Guard(
            "untimed_work",
            "untimed_work",
            "gpu",
            "a timed call's device work outside its timed region (other "
            "streams, before the start event, after the end event) or kernels between calls (CUPTI record)",
        ),
        Guard(
            "hidden_work",
            "hidden_work",
            "gpu",
            "host time far beyond CUDA-event time (work on other streams or threads)",
        ),
        Guard("speed_of_light", "speed_of_light", "gpu", "faster than the task's roofline floor on this GPU"),
        Guard(
            "timing_crosscheck",
            "timing_crosscheck",
            "gpu",
            "reported time far below the verifier's own clock over a batch of calls",
        ),
        Guard(
            "reference_slowdown",
            "reference_slowdown",
            "gpu",
            "the reference slower beside the candidate than alone",
        ),
    ]
}
"""Every guard, by name."""


def finding(guard: str, verdict: str, evidence: str) -> dict[str, str]:
    """A finding as it is stored in ``EvalResult.guard_findings``."""
    if guard not in GUARDS:
        raise ValueError(f"unknown guard {guard!r}")
    return {"guard": guard, "verdict": verdict, "evidence": evidence.strip()}


class Policies:
    """The guard policies of one evaluation, read from its eval config (``EvalConfig``'s defaults where absent)."""

    def __init__(self, cfg: EvalConfig | dict[str, Any] | None = None) -> None:
        """``cfg``: the evaluation's ``EvalConfig``, or some of its fields as a dict (read as ``EvalConfig.from_dict``
        reads them: the defaults fill the rest, a config of before the nesting (``guard_<name>``) included, and a bad
        value is a ``ValueError`` naming it)."""
        settings = cfg if isinstance(cfg, EvalConfig) else EvalConfig.from_dict(cfg or {})
        self.cfg = settings.to_dict()

    def _get(self, key: str) -> Any:
        return self.cfg[key]

    @property
    def enforce(self) -> bool:
        """False when every rejection is to be reported only."""
        return bool(self._get("guards_enforce"))

    @property
    def strict(self) -> bool:
        """``torch_ops=strict``."""
        torch_ops: object = self._get("torch_ops")
        return torch_ops == "strict"

    def threshold(self, key: str) -> float:
        """A numeric guard setting (``hidden_work_ms``, ``speed_of_light_margin``, ``library_share_max``)."""
        return float(self._get(key))

    def verdict(self, guard: str) -> str:
        """``reject`` or ``report`` for a guard that fired."""
        field = GUARDS[guard].field
        if field is None:
            policy = REJECT
        elif field == "torch_ops":
            policy = REJECT if self.strict else REPORT
        else:
            policy = str(self.cfg["guards"][field])
            if GUARDS[guard].strict_rejects and self.strict:
                policy = REJECT
        return policy if self.enforce else REPORT

    def found(self, guard: str, evidence: str, *, verdict: str | None = None) -> dict[str, str]:
        """A finding of ``guard`` with the verdict its policy gives (or ``verdict``, e.g. an always-report note)."""
        if verdict is None:
            verdict = self.verdict(guard)
        elif verdict == REJECT and not self.enforce:
            verdict = REPORT
        return finding(guard, verdict, evidence)


def rejections(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings whose verdict is ``reject``."""
    return [f for f in findings if f.get("verdict") == REJECT]


def rejection_message(findings: list[dict[str, Any]]) -> str:
    """The ``EvalResult.message`` for rejected findings: the first in full, the others after it."""
    rejected = rejections(findings)
    if not rejected:
        return ""
    first, rest = rejected[0], rejected[1:]
    lines = [f"rejected by the {first['guard']} guard: {first['evidence']}"]
    lines += [f"also {f['guard']}: {f['evidence']}" for f in rest]
    return "\n".join(lines)


def share_findings(share: dict[str, Any], policies: Policies) -> list[dict[str, str]]:
    """Findings from the profiler's split of the candidate's GPU time (``guards.runtime.kernel_share``):
    ``no_custom_kernel`` when none of its kernels is its own, ``torch_compute`` for a library share of 5% or
    more (a rejection above ``library_share_max`` under ``torch_ops=strict``, a report otherwise)."""
    p = policies
    names = ", ".join(name for name, _ in share["library"][:3])
    if share["own_ms"] == 0 and share["library_ms"] > 0:
        return [
            p.found(
                "no_custom_kernel",
                f"none of the GPU kernels ModelNew.forward ran is one it "
                f"defines; all {share['library_ms']:.4f} ms were library kernels ({names}).",
            )
        ]
    if share["library_share"] >= 0.05:
        text = (
            f"{share['library_share']:.0%} of ModelNew's GPU time ({share['library_ms']:.4f} of "
            f"{share['library_ms'] + share['own_ms']:.4f} ms) is in library kernels: {names}"
        )
        if p.strict and share["library_share"] > p.threshold("library_share_max"):
            return [
                p.found(
                    "torch_compute",
                    f"{text}; eval.torch_ops=strict allows at most "
                    f"{p.threshold('library_share_max'):.0%}: write those parts as kernels.",
                )
            ]
        return [p.found("torch_compute", text + ".", verdict="report")]
    return []
