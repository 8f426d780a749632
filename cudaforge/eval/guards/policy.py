"""The guards, their policies, and the findings they leave in an ``EvalResult``.

A finding is a plain dict ``{guard, verdict, evidence}``: ``verdict`` is ``reject`` (the candidate
fails: status ``rejected``, or ``incorrect`` when an output was wrong) or ``report`` (it goes on,
the finding is kept for the Judge). ``evidence`` is one or two sentences the Judge can pass to the
Coder as they stand: what was seen, where, and what to do instead.

Each guard (:mod:`~cudaforge.eval.guards.catalog`) reads its policy from the eval config, under its own name
(``eval.guards.<guard>``, ``cudaforge.eval.settings.GuardPolicies``); ``guards_enforce=False`` turns every
rejection into a report. No torch here.
"""

from __future__ import annotations

from typing import Any

from cudaforge.eval.guards.catalog import REJECT, REPORT, Guard, guards_by_name
from cudaforge.eval.settings import EvalConfig

GUARDS: dict[str, Guard] = guards_by_name()
"""Every guard, by name, in the order of :mod:`~cudaforge.eval.guards.catalog` (a package's guards after
cudaforge's own)."""


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


__all__ = [
    "GUARDS",
    "REJECT",
    "REPORT",
    "Guard",
    "Policies",
    "finding",
    "rejection_message",
    "rejections",
    "share_findings",
]
