"""Starting the candidate's sandboxed worker as early as possible (stdlib only: no torch yet).

The verifier's child runs ``start_worker`` before it imports its entry (``CUDAFORGE_CHILD_EARLY``, set by the
evaluator), so the worker's start-up (its own Python and torch imports, inside its sandbox) overlaps the
verifier's; the verifier then takes it with ``take``. A standby verifier starts its worker in ``prepare``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cudaforge import languages
from cudaforge.eval.settings import EvalConfig
from cudaforge.eval.worker.remote import CandidateProcess
from cudaforge.proc.isolation import note_scratch
from cudaforge.proc.sandbox import SandboxMode

_STARTED: dict[str, CandidateProcess] = {}


def new_worker(device: str, cfg: EvalConfig, logs: str) -> CandidateProcess:
    """A sandboxed worker for one evaluation with the eval settings ``cfg`` on ``device`` (``cuda`` or ``cpu``)."""
    budget = cfg.compile_timeout_s + cfg.correctness_timeout_s + cfg.timing_timeout_s
    process = CandidateProcess(
        device=device,
        mode=SandboxMode(cfg.sandbox),
        logs_dir=logs,
        env=languages.interpreted_env() if device == "cpu" else None,
        cpu_seconds=int(budget * 4) + 60,
        namespaces=bool(cfg.sandbox_namespaces),
        allow_weak=bool(cfg.allow_weak_sandbox),
        memory_bytes=int(float(cfg.sandbox_memory_gb) * (1 << 30)),
        scratch_bytes=int(float(cfg.sandbox_scratch_gb) * (1 << 30)),
        scratch_files=int(cfg.sandbox_scratch_files),
    )
    note_scratch(process.scratch, logs)  # ``logs`` is the child's working directory: removed with it, if we are killed
    return process


def start_worker(workdir: str) -> None:
    """Start the worker of the payload in ``workdir`` (the verifier's child, before it imports torch)."""
    payload = json.loads((Path(workdir) / "payload.json").read_text())
    _STARTED["process"] = new_worker(payload["device"], EvalConfig.from_dict(payload["eval"]), os.getcwd())


def take() -> CandidateProcess | None:
    """The worker ``start_worker`` started in this process, if any (once)."""
    return _STARTED.pop("process", None)
