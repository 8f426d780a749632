"""Run untrusted code in a child process that cannot take the parent down.

``run_isolated`` starts ``python -m cudaforge.proc.child ENTRY WORKDIR`` in a new session
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
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.paths import PROJECT_ROOT
from cudaforge.proc.files import write_atomic
from cudaforge.proc.sandbox.environment import SECRET_NAMES
from cudaforge.proc.text import loads_plain, plain_text
from cudaforge.vendors import pin_env


def scrubbed_env(extra: dict[str, str] | None = None, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: this process's environment) without anything that looks like a
    credential (API keys, tokens, passwords, cloud, W&B, GitHub and provider settings), plus ``extra``.
    Every process that runs candidate or task code gets its environment from here."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not SECRET_NAMES.search(k)}
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
    sandbox: dict[str, Any] | None = None
    """What the sandbox applied (``run_isolated(sandbox=...)`` only; ``cudaforge.proc.sandbox.describe`` words it)."""


def _open_plain(path: Path):
    """``path`` opened for reading, never through a link (a sandboxed child's working directory is its own: a link
    there to a secret must not be read by this process). OSError when it is a link or cannot be opened."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")


def tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` bytes of a file, read without reading the rest and never through a link ("" when it
    cannot be read): the one reader of a child's logs, here and for the evaluation's worker (``eval/worker/remote.py``)."""
    try:
        with _open_plain(path) as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            return f.read(limit).decode(errors="replace")
    except OSError:
        return ""


PROGRESS_READ_CAP = 1 << 16
"""Bytes of ``progress.jsonl`` read per poll: a child that writes more only delays its own phases."""
RESULT_CAP = 256 << 20
"""The largest ``result.json`` the parent reads; a bigger one is a crash."""
SANDBOXED_RESULT_CAP = 16 << 20
"""The largest ``result.json`` read from a sandboxed child's scratch (``run_isolated(sandbox=...)``: the profiler's
child, where the candidate runs and can write that file itself). Parsing JSON builds about 25 times its bytes in
objects, so this bounds what a forged file costs the trusted side (~400 MB) well below ``RESULT_CAP``."""


RESULT_DELIVERED = "result.delivered"
"""An empty file ``cudaforge.proc.child`` makes in its working directory once ``result.json`` is whole and in place."""


def _plain_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


SANDBOX_REFUSED = 97
"""The exit status of a sandbox that refused to start its program (``cudaforge.proc.sandbox``: a protection missing)."""
SIGNAL_HINTS = {
    signal.SIGKILL: "killed: often the out-of-memory killer",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGABRT: "aborted",
    signal.SIGBUS: "bus error",
    signal.SIGFPE: "floating-point exception",
    signal.SIGXFSZ: "it wrote past its file-size limit",
    signal.SIGXCPU: "it used up its CPU-time limit",
}


def describe_exit(code: int | None, *, who: str = "the process", sandboxed: bool = False, gone: str = "") -> str:
    """What an exit status means, in words, for every child of ours: a negative status is the signal that ended
    it; through a sandbox's init (``sandboxed``) a status above 128 is one too, and ``SANDBOX_REFUSED`` says the
    sandbox would not start it. ``gone``: what None (no status) means for this caller."""
    if code is None:
        return gone or f"{who} left no exit status"
    if sandboxed and code == SANDBOX_REFUSED:
        return f"the sandbox refused to start {who} (eval.sandbox=required and a protection is missing)"
    sig = -code if code < 0 else (code - 128 if sandboxed and code > 128 else 0)
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        hint = SIGNAL_HINTS.get(sig, "")  # type: ignore[call-overload]
        return f"{who} died of {name}" + (f" ({hint})" if hint else "")
    return f"{who} exited with code {code}"


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "the process was killed by the evaluator after it marked a result delivered, and left no result"
    return describe_exit(code) + ("" if code < 0 else " before reporting a result")


MAX_PHASES = 32
OTHER_PHASE = "other"
"""At most this many phases are kept by name; any later new name counts as ``OTHER_PHASE`` (the default timeout,
and the run's total, bound it as before). Without the cap, a candidate writing progress lines of
fresh names grew the parent's record by a key each, without bound."""


def _read_progress(path: Path, offset: int) -> tuple[list[str], int]:
    """Phases announced since ``offset`` (at most ``PROGRESS_READ_CAP`` bytes read); lines that are not
    ``{"phase": name}`` are skipped. Never raises."""
    try:
        with _open_plain(path) as f:
            f.seek(offset)
            chunk = f.read(PROGRESS_READ_CAP)
    except OSError:
        return [], offset
    end = chunk.rfind(b"\n") + 1
    if end == 0 and len(chunk) >= PROGRESS_READ_CAP:
        return [], offset + len(chunk)  # a line longer than the cap: skipped
    phases = []
    for line in chunk[:end].splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        phase = event.get("phase") if isinstance(event, dict) else None
        if isinstance(phase, str) and 0 < len(phase) <= 64:
            phases.append(plain_text(phase))
    return phases, offset + end


def _read_result(path: Path, cap: int = RESULT_CAP) -> tuple[dict[str, Any] | None, str]:
    """The child's result (at most ``cap`` bytes), or (None, why it cannot be read). Never raises."""
    try:
        with _open_plain(path) as f:
            data = f.read(cap + 1)
        if len(data) > cap:
            return None, f"the result file exceeds {cap >> 20} MB"
        result = loads_plain(data)
    except (OSError, ValueError, UnicodeDecodeError, RecursionError, MemoryError) as exc:
        return None, f"the result file is malformed ({type(exc).__name__})"
    if not isinstance(result, dict):
        return None, "the result file is not a JSON object"
    return result, ""


def _child_env(gpu: str | int | None, env: dict[str, str] | None) -> dict[str, str]:
    child_env = scrubbed_env(env)
    child_env["CUDAFORGE_PARENT_PID"] = str(os.getpid())  # the child ends itself when this process is gone
    child_env.update(pin_env(gpu))
    child_env["PYTHONUNBUFFERED"] = "1"
    package_root = str(PROJECT_ROOT)
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, child_env.get("PYTHONPATH", "")) if p)
    return child_env


def _launch(
    entry: str, workdir: Path, child_env: dict[str, str], wrapper: list[str] | None = None, prepare: str | None = None
) -> subprocess.Popen:
    """Start the child in its own session; a standby (``prepare``) gets a pipe on stdin for its go-ahead."""
    with (workdir / "stdout.log").open("wb") as out, (workdir / "stderr.log").open("wb") as err:
        return subprocess.Popen(
            [
                *(wrapper or []),
                sys.executable,
                "-P",  # its working folder is never where imports are found
                "-m",
                "cudaforge.proc.child",
                entry,
                str(workdir),
                *([prepare] if prepare else []),
            ],
            cwd=workdir,
            env=child_env,
            stdin=subprocess.PIPE if prepare else subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )


class _Watch:
    """The parent's view of one child: its current phase, the seconds of each phase, the progress read so far."""

    def __init__(
        self,
        proc: subprocess.Popen,
        workdir: Path,
        started: float,
        logs: Path | None = None,
        result_cap: int = RESULT_CAP,
    ) -> None:
        self.result_cap = result_cap
        self.proc, self.workdir, self.started = proc, workdir, started
        self.logs = logs or workdir
        """Where ``stdout.log`` and ``stderr.log`` are (a sandboxed child's are outside its reach)."""
        self.phase, self.phase_start, self.offset = "start", started, 0
        self.phase_seconds: dict[str, float] = {}
        self.on_phase: Callable[[str], None] | None = None
        """Called in the parent with each phase the child enters (while supervised)."""

    def read(self) -> float:
        phases, self.offset = _read_progress(self.workdir / "progress.jsonl", self.offset)
        now = time.monotonic()
        for phase in phases:
            if phase not in self.phase_seconds and len(self.phase_seconds) >= MAX_PHASES:
                phase = OTHER_PHASE  # a sandboxed child's progress file is its own: its names are not ours to keep
            self.phase_seconds[self.phase] = self.phase_seconds.get(self.phase, 0.0) + now - self.phase_start
            self.phase, self.phase_start = phase, now
            if self.on_phase is not None:
                try:
                    self.on_phase(self.phase)
                except Exception:  # noqa: BLE001 - the parent's own callback must not end supervision
                    pass
        return now

    def supervise(
        self,
        timeouts: dict[str, float],
        default_timeout: float,
        poll_interval: float,
        keep_workdir: bool,
        on_phase: Callable[[str], None] | None = None,
        trusted: bool = False,
    ) -> IsolatedOutcome:
        """Wait for the child, killing its process group when a phase runs past its timeout.

        Deadlines are the parent's: a phase's timeout bounds the *total* time spent in that phase, however
        often the child announces it, and the whole run is bounded by the sum of all the timeouts, so no
        sequence of announcements can extend either. Nothing the child writes makes this raise.

        ``trusted``: the child is our own code, outside any sandbox (a verifier). ``cudaforge.proc.child`` puts its
        ``result.json`` in place, whole, and then marks it delivered (``RESULT_DELIVERED``) as its last acts before
        ``os._exit``; once that mark is there, the result is taken at once: the process group is killed and reaped in
        the background instead of waited for (a process that held a CUDA context takes a while to be torn down).
        Never for a sandboxed child, whose files are its own."""
        self.on_phase = on_phase
        killed_for = ""
        total = sum(timeouts.values()) + default_timeout
        delivered, result_path = self.workdir / RESULT_DELIVERED, self.workdir / "result.json"
        while True:
            code = self.proc.poll()
            now = self.read()
            if code is not None:
                break
            if trusted and _plain_file(delivered) and _plain_file(result_path):
                _kill_group(self.proc, reap_in_background=True)
                break
            limit = timeouts.get(self.phase, default_timeout)
            spent = self.phase_seconds.get(self.phase, 0.0) + now - self.phase_start
            if spent > limit:
                killed_for = f"phase {self.phase!r} ran past its {limit:g} s timeout; the process group was killed"
            elif now - self.started > total:
                killed_for = f"the run as a whole ran past {total:g} s; the process group was killed"
            if killed_for:
                _kill_group(self.proc)
                break
            time.sleep(poll_interval)
        self.phase_seconds[self.phase] = self.phase_seconds.get(self.phase, 0.0) + time.monotonic() - self.phase_start
        workdir = self.workdir
        outcome = IsolatedOutcome(
            status="ok",
            phase=self.phase,
            phase_seconds=self.phase_seconds,
            returncode=self.proc.returncode,
            stdout_tail=tail(self.logs / "stdout.log"),
            stderr_tail=tail(self.logs / "stderr.log"),
            seconds=time.monotonic() - self.started,
        )
        if killed_for:
            outcome.status, outcome.error = "timeout", killed_for
        elif result_path.exists() or result_path.is_symlink():
            result, why = _read_result(result_path, self.result_cap)
            if result is None:
                outcome.status, outcome.error = "crashed", why
            elif "__error__" in result:
                outcome.status, outcome.error = "error", str(result["__error__"])[:20000]
            else:
                outcome.result = result
        else:
            outcome.status, outcome.error = "crashed", _describe_exit(self.proc.returncode)
        if not keep_workdir:
            remove_workdir(workdir)
        return outcome


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
    on_phase: Callable[[str], None] | None = None,
    sandbox: Any = None,
    collect: Callable[[Path], None] | None = None,
    trusted: bool = False,
) -> IsolatedOutcome:
    """Run ``entry`` (``package.module:function``) on ``payload`` in an isolated child process.

    ``timeouts`` maps phase names to seconds; a phase not named gets ``default_timeout``.
    The child starts in phase ``start``. ``gpu`` is the physical device (index or UUID, as
    ``CUDA_VISIBLE_DEVICES`` takes it) the child may see; None hides every GPU. ``env`` adds variables to the scrubbed environment.
    ``wrapper`` prefixes the child's command line (e.g. ``["ncu", "--profile-from-start", "off", ...]``):
    the wrapper runs in the child's process group, gets the same environment, and is killed with it.
    ``on_phase(phase)`` is called in this process with each phase the child enters.
    ``trusted``: the child runs our code alone (no candidate code in its process, nor anything that can write its
    working folder: the evaluator's verifier), so its result is taken as soon as it marks it delivered; ignored
    with a ``wrapper`` or a ``sandbox``.
    ``sandbox`` (a ``cudaforge.proc.sandbox.Sandbox``) runs the child, its wrapper included, in that sandbox: its working
    directory is the sandbox's scratch directory (its only writable place; its caches and temporary files go there
    too), its logs stay outside it, and once every process of the sandbox is dead ``collect(scratch)`` may read what
    it left (never through a link) before the scratch is removed. A sandbox that refuses to start
    (``mode=required``) is an ``error`` outcome naming what is missing.
    """
    if sandbox is not None:
        return _run_sandboxed(
            entry,
            payload,
            sandbox,
            timeouts=timeouts,
            default_timeout=default_timeout,
            gpu=gpu,
            env=env,
            poll_interval=poll_interval,
            wrapper=wrapper,
            on_phase=on_phase,
            collect=collect,
        )
    workdir = Path(tempfile.mkdtemp(prefix="cudaforge-"))
    (workdir / "payload.json").write_text(json.dumps(payload))
    started = time.monotonic()
    proc = _launch(entry, workdir, _child_env(gpu, env), wrapper)
    return _Watch(proc, workdir, started).supervise(
        timeouts, default_timeout, poll_interval, keep_workdir, on_phase, trusted=trusted and wrapper is None
    )


def _run_sandboxed(
    entry: str,
    payload: dict[str, Any],
    sandbox: Any,
    *,
    timeouts: dict[str, float],
    default_timeout: float,
    gpu: str | int | None,
    env: dict[str, str] | None,
    poll_interval: float,
    wrapper: list[str] | None,
    on_phase: Callable[[str], None] | None,
    collect: Callable[[Path], None] | None,
) -> IsolatedOutcome:
    """``run_isolated`` with the child (and its wrapper) inside ``sandbox``."""
    from cudaforge.languages import jit_cache_env
    from cudaforge.proc.sandbox.launch import REFUSED_EXIT
    from cudaforge.proc.sandbox.scratch import new_scratch, release_scratch

    logs = Path(tempfile.mkdtemp(prefix="cudaforge-"))
    if not sandbox.scratch:
        sandbox.scratch = new_scratch("sbx", sandbox.scratch_bytes, sandbox.scratch_files)
    scratch = Path(sandbox.scratch)
    (scratch / "payload.json").write_text(json.dumps(payload))
    child_env = _child_env(gpu, env)
    child_env.pop("CUDAFORGE_PARENT_PID", None)  # the sandbox's init ends everything in it when this process is gone
    s = str(scratch)
    child_env.update(
        {
            "HOME": s,
            "TMPDIR": s,
            "XDG_CACHE_HOME": f"{s}/.cache",
            **jit_cache_env(s),
            "TORCH_EXTENSIONS_DIR": f"{s}/torch_extensions",
            "CUDA_CACHE_PATH": f"{s}/.nv",
            "TORCHINDUCTOR_CACHE_DIR": f"{s}/torchinductor",
            "USER": "cudaforge",
            "LOGNAME": "cudaforge",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    argv = [*(wrapper or []), sys.executable, "-P", "-m", "cudaforge.proc.child", entry, s]
    started = time.monotonic()
    with (logs / "stdout.log").open("wb") as out, (logs / "stderr.log").open("wb") as err:
        process = sandbox.start(argv, env=child_env, stdout=out, stderr=err)
    try:
        status: dict[str, Any] = process.status() if process.control is not None else {"ok": True}
        outcome = _Watch(process.proc, scratch, started, logs, SANDBOXED_RESULT_CAP).supervise(
            timeouts, default_timeout, poll_interval, keep_workdir=True, on_phase=on_phase
        )
        dead = process.kill()  # every process of the sandbox dead before its files are read
        cannot_run = [m for m in status.get("missing", []) if "cannot run" in m]
        if cannot_run:
            outcome.status, outcome.result = "crashed", None
            outcome.error = (
                f"the sandbox could not run {argv[0]}: it is missing, or outside what the sandbox may read "
                f"and execute ({cannot_run[0]})"
            )
        elif not status.get("ok", False):
            outcome.status, outcome.result = "error", None
            outcome.error = (
                "the sandbox refused to start (its wall is missing here; eval.allow_weak_sandbox): "
                + "; ".join(status.get("missing", []))
            )
        elif outcome.status == "crashed" and outcome.returncode == REFUSED_EXIT:
            outcome.error = (
                f"the sandbox could not run {argv[0]} (it exited with {REFUSED_EXIT} before "
                "running it: the program is missing, or outside what the sandbox may read and execute)"
            )
        outcome.sandbox = status
        if collect is not None and not dead:  # a process that outlived the kill could still be writing them
            status.setdefault("notes", []).append("a process outlived the kill: the child's files were not collected")
        if collect is not None and dead:
            try:
                collect(scratch)
            except Exception:  # noqa: BLE001 - what the child left is its own; reading it never raises here
                pass
        return outcome
    finally:
        process.kill()
        release_scratch(str(scratch))
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(logs, ignore_errors=True)


class Standby:
    """A child started before its payload exists: a fresh, isolated process that has already paid its start-up.

    It runs ``prepare`` (``package.module:function``; e.g. imports and the GPU's context) and then
    waits, in phase ``ready``, for :meth:`run` to hand it a payload; everything else is as in
    :func:`run_isolated` (own session, scrubbed environment, temporary working directory, per-phase
    timeouts, process group killed). Each standby serves exactly one payload. ``prepare`` is called as
    ``prepare(progress, claimed)``; ``claimed()`` turns True once the payload is on its way, so
    optional preparation can stop waiting. A standby whose parent dies reads end-of-file and exits.
    """

    def __init__(
        self,
        entry: str,
        prepare: str,
        *,
        gpu: str | int | None = None,
        env: dict[str, str] | None = None,
        trusted: bool = False,
    ) -> None:
        self.entry, self.prepare, self.gpu, self.env = entry, prepare, gpu, dict(env or {})
        self.trusted = trusted
        """Its result is taken once delivered (``_Watch.supervise``): only for a child that runs our code alone."""
        self.workdir = Path(tempfile.mkdtemp(prefix="cudaforge-"))
        self.watch = _Watch(
            _launch(entry, self.workdir, _child_env(gpu, env), prepare=prepare), self.workdir, time.monotonic()
        )
        self.used = False

    def matches(self, entry: str, gpu: str | int | None, env: dict[str, str] | None) -> bool:
        """Whether this standby can serve a run of ``entry`` on ``gpu`` with ``env``."""
        return (self.entry, None if self.gpu is None else str(self.gpu), self.env) == (
            entry,
            None if gpu is None else str(gpu),
            dict(env or {}),
        )

    def alive(self) -> bool:
        return not self.used and self.watch.proc.poll() is None

    def ready(self) -> bool:
        """Whether preparation is over (the child waits for its payload)."""
        self.watch.read()
        return self.watch.phase == "ready"

    def run(
        self,
        payload: dict[str, Any],
        *,
        timeouts: dict[str, float],
        default_timeout: float = 300.0,
        keep_workdir: bool = False,
        poll_interval: float = 0.02,
        on_phase: Callable[[str], None] | None = None,
    ) -> IsolatedOutcome:
        """Hand over ``payload`` and supervise the child to its end, as :func:`run_isolated` does."""
        if self.used:
            raise RuntimeError("a standby serves one payload; this one has been used")
        self.used = True
        write_atomic(self.workdir / "payload.json", json.dumps(payload), make_parents=False)
        watch = self.watch
        now = watch.read()
        watch.started = now  # the run's overall deadline counts from the hand-over
        if watch.phase == "ready":  # the time spent waiting for a payload is nobody's phase
            watch.phase_start = now
        try:
            assert watch.proc.stdin is not None
            watch.proc.stdin.write(b"go\n")
            watch.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died while waiting: supervise() reports how
        return watch.supervise(timeouts, default_timeout, poll_interval, keep_workdir, on_phase, trusted=self.trusted)

    def kill(self) -> None:
        """Kill the child's process group, used or not (a :meth:`run` in progress then reports it)."""
        try:
            os.killpg(self.watch.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        """Discard an unused standby: kill its process group and remove its working directory."""
        if not self.used:
            self.used = True
            _kill_group(self.watch.proc)
            if self.watch.proc.stdin is not None:
                self.watch.proc.stdin.close()
            remove_workdir(self.workdir)


SCRATCH_NOTE = "scratch_dirs"
"""A file in a child's working directory naming, one a line, the folders the child made elsewhere (a sandboxed
worker's scratch directory in the temporary folder) that go with it."""


def note_scratch(path: str | os.PathLike, workdir: str | os.PathLike) -> None:
    """In a child: have ``path`` (a ``cudaforge-*`` folder) removed with the working directory ``workdir``, also
    when the child is killed before it could remove it (a timeout, a discarded standby, a parent gone)."""
    with open(Path(workdir) / SCRATCH_NOTE, "a") as note:
        note.write(f"{os.fspath(path)}\n")


def remove_noted(workdir: str | os.PathLike) -> None:
    """Remove the folders noted in ``workdir`` (:func:`note_scratch`) that are still there; never raises. Only
    absolute ``cudaforge-*`` folders are removed, never through a link."""
    try:
        noted = (Path(workdir) / SCRATCH_NOTE).read_text().splitlines()
    except OSError:
        return
    for line in noted:
        path = Path(line.strip())
        if path.is_absolute() and path.name.startswith("cudaforge-") and path.is_dir() and not path.is_symlink():
            from cudaforge.proc.sandbox.scratch import release_scratch

            release_scratch(str(path))  # a sandbox's scratch may be a tmpfs of its own: unmounted first
            shutil.rmtree(path, ignore_errors=True)


def remove_workdir(workdir: str | os.PathLike) -> None:
    """Remove a child's working directory and the folders it noted; never raises."""
    remove_noted(workdir)
    shutil.rmtree(workdir, ignore_errors=True)


def _kill_group(proc: subprocess.Popen, reap_in_background: bool = False) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if reap_in_background:
        threading.Thread(target=proc.wait, daemon=True, name="cudaforge-reap").start()
    else:
        proc.wait()
