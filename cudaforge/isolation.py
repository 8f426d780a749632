"""Run untrusted code in a child process that cannot take the parent down.

``run_isolated`` starts ``python -m cudaforge._child ENTRY WORKDIR`` in a new session
(process group), pinned to one GPU through ``CUDA_VISIBLE_DEVICES`` (or none), with an
environment scrubbed of secrets and a fresh temporary working directory. The child reports
the phase it is in through ``progress.jsonl``; each phase has its own wall-clock deadline,
and on a deadline the whole process group is killed. A hang, a segfault, an abort or an
out-of-memory kill becomes an ``IsolatedOutcome`` with a clear status; nothing raises in
the parent and the parent never imports the child's code.

This module imports nothing heavy (no torch): the parent may be a CPU-only orchestrator.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_SECRET_RE = re.compile(
    r"(API_?KEY|_TOKEN$|^TOKEN$|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|SESSION_KEY|PRIVATE_KEY|_KEY$|^AWS_|^AZURE_|"
    r"^GOOGLE_|^WANDB_|^GH_|^GITHUB_|^SSH_AUTH_SOCK$|^NETRC$|^HF_TOKEN|^HUGGING_FACE_HUB_TOKEN|^OPENAI_|"
    r"^ANTHROPIC_|^GEMINI_|^MISTRAL_|^GROQ_|^TOGETHER_|^DEEPSEEK_|^OPENROUTER_|^LITELLM_)",
    re.IGNORECASE,
)


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: this process's environment) without anything that looks like a
    credential (API keys, tokens, passwords, cloud, W&B, GitHub and provider settings), plus ``extra``.
    Every process that runs candidate or task code gets its environment from here."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not _SECRET_RE.search(k)}
    env.update(extra or {})
    return env


@dataclass
class IsolatedOutcome:
    """What became of one isolated run."""

    status: str
    """``ok`` (the entry returned), ``error`` (it raised), ``timeout`` or ``crashed``."""
    result: dict[str, Any] | None = None
    """The entry's return value (``ok``)."""
    error: str = ""
    """The traceback (``error``) or what killed it (``timeout``, ``crashed``)."""
    phase: str = ""
    """The last phase the child reported."""
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Wall-clock seconds of each phase the child entered."""
    returncode: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    seconds: float = 0.0


def _tail(path: Path, limit: int = 4000) -> str:
    if not path.exists():
        return ""
    data = path.read_bytes()
    return data[-limit:].decode(errors="replace")


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = {
            "SIGSEGV": "segmentation fault",
            "SIGKILL": "killed (often the out-of-memory killer)",
            "SIGABRT": "aborted",
            "SIGBUS": "bus error",
            "SIGFPE": "floating-point exception",
        }.get(name, "")
        return f"the process died of {name}" + (f" ({hint})" if hint else "")
    return f"the process exited with code {code} before reporting a result"


def _read_progress(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    if not path.exists():
        return [], offset
    with path.open("rb") as f:
        f.seek(offset)
        chunk = f.read()
    complete = chunk[: chunk.rfind(b"\n") + 1]
    events = [json.loads(line) for line in complete.decode().splitlines() if line.strip()]
    return events, offset + len(complete)


def run_isolated(
    entry: str,
    payload: dict[str, Any],
    *,
    timeouts: dict[str, float],
    default_timeout: float = 300.0,
    gpu: str | int | None = None,
    env: dict[str, str] | None = None,
    keep_workdir: bool = False,
    poll_interval: float = 0.02,
    wrapper: list[str] | None = None,
) -> IsolatedOutcome:
    """Run ``entry`` (``package.module:function``) on ``payload`` in an isolated child process.

    ``timeouts`` maps phase names to seconds; a phase not named gets ``default_timeout``.
    The child starts in phase ``start``. ``gpu`` is the physical device (index or UUID, as
    ``CUDA_VISIBLE_DEVICES`` takes it) the child may see; None hides every GPU. ``env`` adds variables to the scrubbed environment.
    ``wrapper`` prefixes the child's command line (e.g. ``["ncu", "--profile-from-start", "off", ...]``):
    the wrapper runs in the child's process group, gets the same environment, and is killed with it.
    """
    workdir = Path(tempfile.mkdtemp(prefix="cudaforge-"))
    (workdir / "payload.json").write_text(json.dumps(payload))
    child_env = scrubbed_env(env)
    child_env["CUDA_VISIBLE_DEVICES"] = "" if gpu is None else str(gpu)
    child_env["PYTHONUNBUFFERED"] = "1"
    package_root = str(Path(__file__).resolve().parent.parent)
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (package_root, child_env.get("PYTHONPATH", "")) if p
    )
    started = time.monotonic()
    with (workdir / "stdout.log").open("wb") as out, (workdir / "stderr.log").open("wb") as err:
        proc = subprocess.Popen(
            [*(wrapper or []), sys.executable, "-m", "cudaforge._child", entry, str(workdir)],
            cwd=workdir,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        phase, phase_start, offset = "start", started, 0
        phase_seconds: dict[str, float] = {}
        killed_for = ""
        while True:
            code = proc.poll()
            events, offset = _read_progress(workdir / "progress.jsonl", offset)
            now = time.monotonic()
            for event in events:
                phase_seconds[phase] = phase_seconds.get(phase, 0.0) + now - phase_start
                phase, phase_start = event["phase"], now
            if code is not None:
                break
            limit = timeouts.get(phase, default_timeout)
            if now - phase_start > limit:
                killed_for = f"phase {phase!r} ran past its {limit:g} s timeout; the process group was killed"
                _kill_group(proc)
                break
            time.sleep(poll_interval)
        phase_seconds[phase] = phase_seconds.get(phase, 0.0) + time.monotonic() - phase_start
    outcome = IsolatedOutcome(
        status="ok",
        phase=phase,
        phase_seconds=phase_seconds,
        returncode=proc.returncode,
        stdout_tail=_tail(workdir / "stdout.log"),
        stderr_tail=_tail(workdir / "stderr.log"),
        seconds=time.monotonic() - started,
    )
    result_path = workdir / "result.json"
    if killed_for:
        outcome.status, outcome.error = "timeout", killed_for
    elif result_path.exists():
        result = json.loads(result_path.read_text())
        if "__error__" in result:
            outcome.status, outcome.error = "error", result["__error__"]
        else:
            outcome.result = result
    else:
        outcome.status, outcome.error = "crashed", _describe_exit(proc.returncode)
    if not keep_workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
