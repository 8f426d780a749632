"""Every integrity guard, each defined once (docs/guards.md, "Integrity guards").

A :class:`Guard` says its name (what its findings carry and its policy's key, ``eval.guards.<name>``), where it
runs (``static``: the candidate's AST, before anything runs; ``runtime``: in the verifier, on a CPU or a GPU;
``gpu``: needs a GPU), what it catches, its default policy, its check and what its corpus entry shows. From this
table come the evaluation config's :class:`~cudaforge.eval.settings.GuardPolicies` (one field per guard with a
policy of its own, its default the guard's), the order the static checks run in, and what the tests hold the docs
table and the hack corpus (``benchmarks/hacks/``) to. Adding a guard is one :class:`Guard` here (or in an installed
package, through the entry-point group ``cudaforge.guards``) plus its corpus entry.

No torch and nothing of the evaluation's settings here: the settings read this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from cudaforge import plugins
from cudaforge.registry import Registry

REJECT = "reject"
REPORT = "report"
STATIC, RUNTIME, GPU = "static", "runtime", "gpu"
WHERE = (STATIC, RUNTIME, GPU)
"""Where a guard runs, in the order an evaluation reaches them."""
CORPUS_VERDICTS = ("rejected", "incorrect", "reported", "unshown")
"""What a guard's corpus entry shows: ``EXPECTED: rejected by <guard>``, ``incorrect by <guard>``, or a verdict
followed by ``, reported by <guard>`` (docs/guards.md, "Adding a guard"; benchmarks/hacks/README.md); ``unshown``:
no entry has been seen to fire it, its ``corpus_note`` says what was tried and why."""


@dataclass(frozen=True)
class Seen:
    """What a static check saw, when it is more than its evidence: a finding that is only ever a report."""

    evidence: str
    verdict: str | None = None
    """``report`` for a note that never rejects (an environment variable written); None: the guard's policy."""


StaticCheck = Callable[[Any], Sequence["str | Seen"]]
"""A static guard's check: from the candidate (:class:`cudaforge.eval.guards.source.StaticCandidate`) to what it
saw, one finding each (evidence the Judge can pass on as it stands: what, where, what to do instead)."""


@dataclass(frozen=True)
class Guard:
    """One integrity guard, the whole of its definition."""

    name: str
    """The name findings carry (``guard``) and, for a guard with a policy of its own, the key ``eval.guards.<name>``."""
    where: str
    """``static``, ``runtime`` or ``gpu`` (:data:`WHERE`)."""
    what: str
    """What it catches, in a line (the docs table says it at length)."""
    default: str | None
    """Its policy unless the config says otherwise: ``reject`` or ``report``; None for a guard that only explains a
    wrong output (the candidate is ``incorrect`` whatever the policies say)."""
    check: str | StaticCheck
    """Its check: for a static guard the function (or its ``module:function``) :func:`static_findings
    <cudaforge.eval.guards.source.static_findings>` calls in this table's order; for a runtime or GPU guard the
    ``module:function`` of the verifier that runs it in its phase."""
    corpus: str
    """What its entry in the hack corpus shows (:data:`CORPUS_VERDICTS`); the tests hold the corpus to it."""
    field: str | None = ""
    """Where its policy is read: ``""`` (the default) its own ``eval.guards.<name>``; another guard's name to share
    that one's (``dynamic_code`` follows ``introspection``); ``torch_ops`` for ``torch_compute``; None for a guard
    without a policy (``default`` None)."""
    strict_rejects: bool = False
    """Under ``torch_ops=strict`` it rejects whatever its policy says (``guards_enforce=false`` still makes it a
    report): strict promises that forward runs no PyTorch compute, a promise the static guards keep only for code
    they can see."""
    corpus_note: str = ""
    """For ``corpus="unshown"``: what was tried, where and when, and why no entry fires the guard."""

    def __post_init__(self) -> None:
        """The definition checked as it is made (a package's guard included): a bad one is a ``ValueError`` naming
        what is wrong."""
        if not self.name.isidentifier() or self.name != self.name.lower():
            raise ValueError(f"guard name {self.name!r}: expected a lower-case Python identifier")
        if self.where not in WHERE:
            raise ValueError(f"guard {self.name}: where={self.where!r}, expected one of {', '.join(WHERE)}")
        if self.default not in (REJECT, REPORT, None):
            raise ValueError(f"guard {self.name}: default={self.default!r}, expected reject, report or None")
        if self.corpus not in CORPUS_VERDICTS:
            raise ValueError(f"guard {self.name}: corpus={self.corpus!r}, expected one of {', '.join(CORPUS_VERDICTS)}")
        if (self.corpus == "unshown") != bool(self.corpus_note):
            raise ValueError(f"guard {self.name}: a corpus_note goes with corpus='unshown', and only with it")
        if self.where == STATIC and self.default is None:
            raise ValueError(f"guard {self.name}: a static guard needs a default policy")
        if self.default is None:
            object.__setattr__(self, "field", None)
        elif self.field == "":
            object.__setattr__(self, "field", self.name)

    @property
    def own_policy(self) -> bool:
        """True when ``eval.guards.<name>`` is this guard's (not shared, not ``torch_ops``, not absent)."""
        return self.field == self.name

    def check_function(self) -> Callable[..., Any]:
        """Its check, imported when it is given as ``module:function`` (``ValueError`` when it cannot be)."""
        if callable(self.check):
            return self.check
        module, _, name = self.check.partition(":")
        try:
            target: Any = importlib.import_module(module)
            for part in name.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"guard {self.name}: its check {self.check!r} cannot be loaded: {exc}") from exc
        if not callable(target):
            raise ValueError(f"guard {self.name}: its check {self.check!r} is not a function")
        function: Callable[..., Any] = target
        return function


_S = "cudaforge.eval.guards.source.checks"
_C = "cudaforge.eval.verifier.correctness"

BUILT_IN: tuple[Guard, ...] = (
    # static, in the order they run (the first rejection's evidence opens the result's message)
    Guard("concurrency", STATIC, "threads, processes, new CUDA streams or graphs", REJECT, f"{_S}:concurrency",
          "rejected"),
    Guard("monkey_patch", STATIC, "assignments to torch, time, builtins ...; torch's global flags", REJECT,
          f"{_S}:monkey_patch", "rejected"),
    Guard("io", STATIC, "reading files, environment variables or the network", REJECT, f"{_S}:io", "rejected"),
    Guard("introspection", STATIC, "gc, inspect, frames, sys.modules reads, ctypes, dynamic getattr on modules",
          REJECT, f"{_S}:introspection", "rejected"),
    Guard("dynamic_code", STATIC, "exec/eval, hidden imports, modules written and loaded, pickles, torch.fx and "
          "TorchScript from strings, interpreter internals, lookups by computed names: code the guards cannot see",
          REJECT, f"{_S}:dynamic_code", "rejected", field="introspection", strict_rejects=True),
    Guard("reference", STATIC, "ModelNew = Model; ModelNew inheriting from, wrapping or copying the reference",
          REJECT, f"{_S}:reference", "rejected"),
    Guard("empty_body", STATIC, "forward is only pass, ... or a docstring", REJECT, f"{_S}:empty_body", "rejected"),
    Guard("no_custom_kernel", STATIC, "no kernel of its own defined or launched (static); none ran (GPU profiler)",
          REJECT, f"{_S}:no_custom_kernel", "rejected"),
    Guard("torch_compute", STATIC, "PyTorch compute ops in forward (static; under strict an allow-list: kernels, "
          "layout ops and plain Python only); library kernels' share of GPU time (GPU)", REPORT,
          f"{_S}:torch_compute", "rejected", field="torch_ops"),
    Guard("fallback", STATIC, "try/except that falls back to PyTorch or swallows a kernel's failure", REJECT,
          f"{_S}:fallback", "rejected"),
    # runtime, on a CPU or a GPU
    Guard("input_mutation", RUNTIME, "inputs changed by the candidate's call", REJECT, f"{_C}:check_output",
          "rejected"),
    Guard("output_type", RUNTIME, "outputs that are not plain dense tensors on the device (lazy subclasses)", REJECT,
          f"{_C}:check_output", "rejected"),
    Guard("output_sensitivity", RUNTIME, "an output that never changes while the reference's does", REJECT,
          f"{_C}:sensitivity", "rejected"),
    Guard("precision", RUNTIME, "fp32 outputs with fp16/bf16-sized errors (silent downgrade)", REPORT,
          f"{_C}:precision_checks", "reported"),
    Guard("precision_fp64", RUNTIME, "an output whose error against an fp64 evaluation of the reference is many "
          "times the fp32 reference's own", REPORT, f"{_C}:precision_checks", "reported"),
    Guard("parameters_not_varied", RUNTIME, "ModelNew has no tensor to receive the reference's varied constants: "
          "both ran with their initial values", REPORT, "cudaforge.eval.verifier.models:candidate_model",
          "reported"),
    Guard("uninitialised_memory", RUNTIME, "outputs holding the poison written into free memory before the call",
          None, "cudaforge.eval.guards.runtime:explain_mismatch", "incorrect"),
    Guard("result_caching", RUNTIME, "an output equal to an earlier call's, on new inputs", None,
          "cudaforge.eval.guards.runtime:explain_mismatch", "incorrect"),
    Guard("shape_specialisation", RUNTIME, "correct on the default shape, wrong on a declared variant's shape", None,
          f"{_C}:explain", "incorrect"),
    Guard("timed_output", RUNTIME, "a wrong output produced during the timed calls", None,
          "cudaforge.eval.verifier.timing:Timing.reported_wrong", "incorrect"),
    # GPU
    Guard("untimed_work", GPU, "a timed call's device work outside its timed region (other streams, before the "
          "start event, after the end event) or kernels between calls (CUPTI record)", REJECT,
          "cudaforge.eval.verifier.trace:Trace.stop_trace", "rejected"),
    Guard("hidden_work", GPU, "host time far beyond CUDA-event time (work on other streams or threads)", REJECT,
          "cudaforge.eval.verifier.verdict:Verdict.finish", "rejected"),
    Guard("speed_of_light", GPU, "faster than the task's roofline floor on this GPU", REJECT,
          "cudaforge.eval.verifier.verdict:Verdict.finish", "rejected"),
    Guard("timing_crosscheck", GPU, "reported time far below the verifier's own clock over a batch of calls",
          REJECT, "cudaforge.eval.verifier.verdict:Verdict.finish", "rejected"),
    Guard("reference_slowdown", GPU, "the reference slower beside the candidate than alone", REJECT,
          "cudaforge.eval.verifier.verdict:Verdict.finish", "unshown", corpus_note=(
              "on an H100 (2026-12-07, benchmarks/results/2026-12-07_h100d) a candidate whose own thread kept "
              "spinning kernels on the GPU while it was called (hack_background_gpu_work) left the reference's "
              "event-timed calls as fast as alone: the candidate runs in a process of its own and the GPU "
              "time-slices between processes, so another process's kernels delay when the reference starts, not "
              "its timed region (untimed_work rejects that entry). The guard stays for a GPU whose processes run "
              "kernels at once (MPS)")),
)  # fmt: skip
"""cudaforge's own guards."""

GROUP = plugins.GUARDS
"""The entry-point group through which an installed package adds guards (``tests/fixtures/out_of_tree_guard/``)."""


def _package_rule(name: str, guard: Guard) -> str | None:
    """What keeps a loaded entry out of the guards: another name than its entry's, or a package's guard that is not
    static (the verifier's phases are cudaforge's own)."""
    if guard.name != name:
        return f"not a Guard called {name!r}"
    if guard.where != STATIC and name not in {g.name for g in BUILT_IN}:
        return f"a guard that runs at {guard.where}: only static guards can be added by a package"
    return None


REGISTRY: Registry[Guard] = Registry(
    "guard", GROUP, Guard, built_in=lambda: {g.name: g for g in BUILT_IN}, check=_package_rule
)
"""The guards, cudaforge's own and those installed packages add (:class:`cudaforge.registry.Registry`'s rules: a
package's guard that fails to load, is not a :class:`Guard` of its entry point's name, takes a built-in name or is not
static is left out with a warning)."""


@cache
def all_guards() -> tuple[Guard, ...]:
    """Every guard: cudaforge's own in their order, then those installed packages add, in name order."""
    return tuple(REGISTRY.loaded())


def guards_by_name() -> dict[str, Guard]:
    """:func:`all_guards` by name, in their order."""
    return {g.name: g for g in all_guards()}


__all__ = [
    "BUILT_IN",
    "CORPUS_VERDICTS",
    "GPU",
    "GROUP",
    "REGISTRY",
    "REJECT",
    "REPORT",
    "RUNTIME",
    "STATIC",
    "WHERE",
    "Guard",
    "Seen",
    "StaticCheck",
    "all_guards",
    "guards_by_name",
]
