"""What the static guards' checks are given: one candidate's module, read once, and what several guards share of it.

A check (:data:`cudaforge.eval.guards.catalog.StaticCheck`) takes a :class:`StaticCandidate` and returns what it saw;
:func:`cudaforge.eval.guards.source.static_findings` turns each into a finding under the check's guard and policy.
What two guards read alike (the structure of ``ModelNew``, the one walk over the tree that the side-effect guards
share) is worked out once, the first time a check asks for it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from cudaforge.eval.guards.source.effects import SideEffects, side_effect_hits
from cudaforge.eval.guards.source.module import CandidateModule
from cudaforge.eval.guards.source.strict import strict_compute

if TYPE_CHECKING:
    from cudaforge.eval.guards.policy import Policies


@dataclass
class Structure:
    """What ``ModelNew`` is and what its forward reaches (the structure guards' shared reading)."""

    cls: ast.ClassDef | None
    """The ``ModelNew`` class of the text (None: made some other way)."""
    assigned: ast.AST | None
    """What ``ModelNew = ...`` assigns, when it is assigned."""
    reach: list[ast.FunctionDef] = field(default_factory=list)
    """Every function ``forward`` reaches, ``__init__`` included."""
    compute: list[str] = field(default_factory=list)
    """The PyTorch compute forward runs (under ``torch_ops=strict``: what the allow-list refuses)."""
    uses: list[str] = field(default_factory=list)
    """The kernels forward launches."""
    defined: list[str] = field(default_factory=list)
    """The kernels the candidate defines."""


class StaticCandidate:
    """One candidate as the static checks read it."""

    def __init__(self, source: str, policies: Policies, reference_source: str | None = None) -> None:
        """``source`` must parse (``SyntaxError`` otherwise); ``reference_source`` (the task's) lets the ``reference``
        guard see a copied forward."""
        self.source = source
        self.policies = policies
        self.reference_source = reference_source
        self.module = CandidateModule.parse(source)

    @property
    def tree(self) -> ast.Module:
        """The candidate's AST (code under ``if __name__ == "__main__":`` left out)."""
        return self.module.tree

    @property
    def strict(self) -> bool:
        """``torch_ops=strict``."""
        return self.policies.strict

    @cached_property
    def structure(self) -> Structure:
        """``ModelNew``, what its forward reaches, runs and launches, and the kernels the candidate defines."""
        m, strict = self.module, self.policies.strict
        cls, assigned = m.model_new()
        found = Structure(cls, assigned)
        if cls is not None:
            found.reach = m.reachable(cls)
            runs = [fn for fn in found.reach if fn.name != "__init__"]
            launches: list[str] = []
            if strict:  # an allow-list over everything forward reaches
                found.compute = strict_compute(m, cls, launches)
            else:  # a report of the PyTorch compute the guards name
                found.compute = m.torch_compute(runs) + m.torch_compute(m.kept_values(runs), calls=False)
            found.uses = m.uses_kernel(found.reach)
            if not found.uses and m.defines_kernels():  # reached another way (a lambda or partial kept on self ...)
                if not strict:
                    strict_compute(m, cls, launches)
                found.uses = launches
        elif strict:  # ModelNew is made some other way: only what the whole module defines can be judged
            found.compute = strict_compute(m, None)
        found.defined = m.defines_kernels()
        return found

    @cached_property
    def side_effects(self) -> SideEffects:
        """The one walk the side-effect guards (``concurrency``, ``monkey_patch``, ``io``, ``introspection``) share:
        a node one of them judged is not judged again by another."""
        return side_effect_hits(self.module)


__all__ = ["StaticCandidate", "Structure"]
