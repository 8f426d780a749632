"""Integrity guards: verdicts that survive an adversary (docs/guards.md, "Integrity guards").

* :mod:`~cudaforge.eval.guards.policy`: the guards, their config policies, findings (no torch);
* :mod:`~cudaforge.eval.guards.source`: static guards on the candidate's AST (no torch), one module per part:
  ``vocab`` and ``strict_vocab`` (the names each guard knows), ``names`` (names as the guards read them) and
  ``module`` (the candidate's module, its names resolved), ``imports``, ``checks`` (structure and side effects),
  ``dynamic`` (``dynamic_code``), ``strict``, ``strict_values`` and ``strict_calls`` (``torch_ops=strict``);
* :mod:`~cudaforge.eval.guards.runtime`: guards inside the worker (torch): poisoned free memory,
  input checksums, output types, precision, sensitivity, timed-output checks, host/event time,
  speed of light, the profiler's share of library kernels;
* :mod:`~cudaforge.eval.guards.corpus`: the hack corpus under ``benchmarks/hacks/`` (no torch).
"""

from cudaforge.eval.guards.policy import GUARDS, REJECT, REPORT, Guard, Policies, finding, rejection_message, rejections
from cudaforge.eval.guards.source import static_findings

__all__ = [
    "GUARDS",
    "REJECT",
    "REPORT",
    "Guard",
    "Policies",
    "finding",
    "rejection_message",
    "rejections",
    "static_findings",
]
