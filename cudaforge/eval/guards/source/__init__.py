"""Static guards: what a candidate's source says about how it computes, read from its AST.

Nothing here runs the candidate or imports torch; the parent and the worker both call
:func:`static_findings`. Code under ``if __name__ == "__main__":`` never runs in an evaluation and
is ignored. Names are resolved through the candidate's imports (``import torch.nn.functional as
F``, ``from torch import relu``, ``S = torch.cuda.Stream``), so aliases do not hide a call.

What "the code ModelNew runs" means here: ``ModelNew.forward`` and everything it refers to,
transitively: its class's (and candidate-defined bases') methods called through ``self``, the
module's functions and classes it names (an ``autograd.Function``'s methods included), and what
``__init__`` stored on ``self``. ``__init__`` itself is not compute: weights may be made there with
torch.

Attribute names given as literal strings are read as attributes before anything else looks at the AST:
``getattr(x, "relu")`` is ``x.relu``, ``operator.attrgetter("relu")(F)`` and ``F.__dict__["relu"]`` are
``F.relu``, ``operator.methodcaller("relu")(x)`` is ``x.relu()``, and ``setattr(self, "act", F.relu)`` binds
``self.act``.
What the guards cannot read (code made from strings, modules loaded from files, pickles, imports of anything
but the packages the evaluator provides, names computed at run time) is the ``dynamic_code`` guard's: the
candidate is one closed unit, and only what it says in its own text can be judged.
"""

from __future__ import annotations

from cudaforge.eval.guards.catalog import STATIC, Seen
from cudaforge.eval.guards.policy import GUARDS, Policies
from cudaforge.eval.guards.source.candidate import StaticCandidate

__all__ = ["StaticCandidate", "static_findings"]


def static_findings(
    source: str, policies: Policies | None = None, reference_source: str | None = None
) -> list[dict[str, str]]:
    """Every static guard's findings for a candidate that parses and defines ``ModelNew``: each guard's check
    (:mod:`cudaforge.eval.guards.catalog`, a package's guards included) in the catalog's order, what it saw a
    finding under the guard's policy.

    ``reference_source`` (the task's source) lets the ``reference`` guard see a copied forward.
    """
    p = policies or Policies()
    candidate = StaticCandidate(source, p, reference_source)
    found = []
    for guard in GUARDS.values():
        if guard.where != STATIC:
            continue
        for seen in guard.check_function()(candidate):
            evidence, verdict = (seen.evidence, seen.verdict) if isinstance(seen, Seen) else (str(seen), None)
            found.append(p.found(guard.name, evidence, verdict=verdict))
    return found
