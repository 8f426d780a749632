"""What the timed phase's parts read of ``Timing`` (``TimingState``), declared for the type checker alone; a module of
its own so that its type-only imports of the candidate and the trials close no loop with ``common``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from cudaforge.eval.settings import EvalConfig
    from cudaforge.eval.timing import Stopwatch
    from cudaforge.eval.verifier.candidate import Candidate
    from cudaforge.eval.verifier.common import Guards
    from cudaforge.eval.verifier.correctness import Trials
    from cudaforge.types import CorrectnessDiff, EvalResult


class TimingState:
    """What the timed phase's parts (``trace``, ``crosscheck``, ``probes``, ``verdict``) read of ``Timing``, which
    sets it all: declared for the type checker only (at run time the class is empty)."""

    if TYPE_CHECKING:
        ref_module: Any
        ref_model: Any
        cand: Candidate
        device: torch.device
        cfg: EvalConfig
        result: EvalResult
        guard: Guards
        trials: Trials
        source: str
        stopwatch: Stopwatch
        reference_fn: Callable[..., Any]
        probe: tuple[str, dict[str, float], dict[str, bool]] | None
        known_probe: dict[str, Any] | None
        traced: list[int] | None
        trace_note: str

        def fresh_inputs(self, trial: int) -> list[Any]: ...

        def check(self, expected: Any, actual: Any, trial: int) -> CorrectnessDiff | None: ...

        def reported_wrong(self, evidence: str, diff: str) -> None: ...

        def _series(self, trials: Any, calls: Any, times: dict[str, list[float]]) -> None: ...
