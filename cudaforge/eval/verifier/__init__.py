"""The trusted side of an evaluation: inputs, the reference, the comparison, the clock and the verdict.

Runs in a child of the evaluator (``cudaforge.proc.isolation``, entry ``cudaforge.eval.verifier:evaluate``),
pinned to one GPU or to none. It never imports the candidate. The candidate runs in a sandboxed worker
(``cudaforge.eval.worker.remote.CandidateProcess``) that receives inputs through a shared arena and hands
back outputs; this process draws the inputs, runs the reference, copies the candidate's outputs out of
the arena and compares them, keeps the timings' cross-check, and writes the result. Patching torch,
timers or the comparison in the candidate's process changes nothing here.

Order of work (docs/evaluation.md states it as the protocol):
0. static guards on the candidate's text (also run in the parent).
1. start: the sandboxed worker (or the standby's, started ahead) says hello; the channel's round
   trip is measured before any candidate code exists; on a GPU the reference is timed alone.
2. compile: the worker imports the candidate; its ``load_inline`` calls are built here (the compiler
   in a sandbox of its own; the cache written only here) and handed over.
3. correctness: reference and ModelNew built with the same seed (``eval.weights=seed``, KernelBench's
   way) or with the reference's matching weights copied (``copy_matching``); per trial fresh seeded
   inputs, the candidate's call, its inputs checked bit for bit after, its outputs' structure and
   types, then the values against the reference; then the declared variants, the precision and
   sensitivity guards.
4. timing (GPU only): under the GPU's lock, interleaved reference/candidate calls with fresh inputs
   from a secret seed and the L2 flushed (persisting lines reset first); the sandbox frozen while the
   reference is timed; every candidate output checked; then the cross-check (a batch of calls timed
   by this process's clock), the reference-slowdown, host/event, speed-of-light and share guards.

One module per phase: ``entry`` (``evaluate``: the payload to the result, phase by phase), ``start`` (a standby's
``prepare``, what is measured before the candidate, JIT kernels compiled ahead), ``candidate`` (the worker's
model seen through the arena), ``correctness`` (the trials and the sensitivity guard), ``timing`` (the timed calls),
with the timed phase's parts beside it: ``trace`` (``untimed_work``), ``crosscheck``, ``probes`` (launch-inclusive,
precision, the profiler's share) and ``verdict`` (the speedup and the guards on the times); ``common`` holds what
they share (the limits, ``Failure``, the guards' findings, the comparison).
"""

from cudaforge.eval.extensions.loading import CANDIDATE_MODULE_PREFIX
from cudaforge.eval.verifier.candidate import Candidate
from cudaforge.eval.verifier.common import (
    PROFILE_DIR_ENV,
    compare_outputs,
    facts_problem,
    output_budget,
    structure_problem,
)
from cudaforge.eval.verifier.correctness import CPU_INPUT_BYTES, Trials, cpu_scaled
from cudaforge.eval.verifier.crosscheck import crosscheck_calls
from cudaforge.eval.verifier.entry import evaluate
from cudaforge.eval.verifier.start import jit_ahead, prepare
from cudaforge.eval.verifier.timing import Timing

__all__ = [
    "CANDIDATE_MODULE_PREFIX",
    "CPU_INPUT_BYTES",
    "PROFILE_DIR_ENV",
    "Candidate",
    "Timing",
    "Trials",
    "compare_outputs",
    "cpu_scaled",
    "crosscheck_calls",
    "evaluate",
    "facts_problem",
    "jit_ahead",
    "output_budget",
    "prepare",
    "structure_problem",
]
