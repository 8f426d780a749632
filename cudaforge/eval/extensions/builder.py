"""Building one extension through the cache: the key, the per-key file lock, the light and plain attempts (raced
or in sequence), the precompiled header of ``main.cpp``, and eviction of the least recently used builds."""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.caches import touch
from cudaforge.eval.extensions.artefacts import (
    LIBRARY_MAX,
    LOG_HEAD,
    LOG_TAIL,
    PCH_MAX,
    file_lock,
    ninja_steps,
    open_artefact,
    read_bounded,
    write_into,
)
from cudaforge.eval.extensions.flags import pch_order
from cudaforge.eval.extensions.headers import BIND_HEADER, BIND_HEADER_TEXT
from cudaforge.eval.extensions.logs import (
    EDG_DIAG,
    SOURCE_ONLY_ERROR,
    UNDEFINED,
    failed_for_the_sources,
    find_failed_targets,
    missing_toolkit_header,
)
from cudaforge.eval.extensions.settings import BuildSettings, FallbackMode
from cudaforge.eval.extensions.spec import BuildSpec, wants_pch
from cudaforge.eval.extensions.toolchain import pip_cuda_includes, toolchain_fingerprint
from cudaforge.proc.files import write_atomic
from cudaforge.proc.isolation import scrubbed_env
from cudaforge.proc.sandbox.launch import REFUSED_EXIT
from cudaforge.vendors import current

_TORCH_NINJA = threading.Lock()
"""Held while torch writes a ninja file (its module-level ``CUDA_HOME`` may be patched meanwhile)."""
COMPILER_GB = 8.0
"""At most this much memory for one compiler sandbox (less with ``eval.sandbox_memory_gb``): a build, its race and a
header build may run at once beside the worker."""
GREP_NAMES_MAX = 64
GREP_NAME_CHARS_MAX = 256
GREP_TIMEOUT_S = 30.0
"""Bounds on the look in torch's headers for the names a light build found undefined (they come from the candidate's
source): more names, a longer one, or a slower look, and the build falls back to the untouched source instead."""
BUILD_BYTES = 4 << 30
BUILD_FILES = 20_000
"""The quota of one build's work folder (its variants' objects and libraries; a precompiled header's build)."""


def _call_filtered(fn: Any, **kwargs: Any) -> Any:
    """Call a private torch helper with the keyword arguments its version accepts."""
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in params})


@dataclass
class _Attempt:
    variant: str
    ok: bool
    log: str
    failed_targets: list[str]
    directory: Path
    measures: list[str]
    steps: dict[str, float] = field(default_factory=dict)
    """Seconds of each step: ninja's targets (``main.o``, ``cuda.cuda.o``, the library) and ``pch`` when built."""


# The first line of a main.cpp that a precompiled header serves, and that header (relative to an include folder).
_PCH_HEADERS = {"#include <torch/extension.h>": "torch/extension.h", f"#include <{BIND_HEADER}>": BIND_HEADER}


class Builder:
    """Builds one :class:`BuildSpec` into ``<cache>/<key>`` (under the key's lock)."""

    def __init__(self, settings: BuildSettings, extra_read: tuple[str, ...] = (), uid: int | None = None) -> None:
        import torch
        import torch.utils.cpp_extension as ce

        self.settings = settings
        self.extra_read = tuple(extra_read)
        self.uid = uid
        """The uid the compiler's sandbox runs as (the candidate's own, so it may read the candidate's scratch folder;
        None: a fresh one)."""
        self.ce = ce
        self._ninja_text: dict[Path, str] = {}
        self.torch_include = os.path.join(os.path.dirname(torch.__file__), "include")
        self.can_link_cuda = torch.version.cuda is not None and not getattr(torch.version, "hip", None)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._cancel: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    # -- ninja ---------------------------------------------------------------------------

    def _write_ninja(
        self, spec: BuildSpec, directory: Path, module_name: str, extra_cflags: list[str], extra_cuda_cflags: list[str]
    ) -> None:
        sources = [str(directory / f) for f in spec.files if f.endswith((".cpp", ".cu", ".cc", ".cxx", ".c"))]
        with _TORCH_NINJA:  # torch's module-level CUDA_HOME, patched below: one writer at a time (a race's two
            text = self._torch_ninja(spec, sources, module_name, extra_cflags, extra_cuda_cflags)  # variants)
        self._ninja_text[directory] = text
        write_into(directory, "build.ninja", text)

    def _torch_ninja(
        self,
        spec: BuildSpec,
        sources: list[str],
        module_name: str,
        extra_cflags: list[str],
        extra_cuda_cflags: list[str],
    ) -> str:
        """The text torch writes for a ninja build of ``sources``, written in a folder of ours."""
        ce = self.ce
        patched_home = spec.with_cuda and ce.CUDA_HOME is None
        if patched_home:  # CPU wheel: torch never looked for CUDA; nvcc is still here
            ce.CUDA_HOME = current().toolkit_home()  # type: ignore[attr-defined]  # self.ce is typed as ModuleType
        try:
            ldflags = _call_filtered(
                ce._prepare_ldflags,
                extra_ldflags=list(spec.extra_ldflags),
                with_cuda=spec.with_cuda,
                with_sycl=False,
                verbose=False,
                is_standalone=False,
            )
            with tempfile.TemporaryDirectory(prefix="cudaforge-ninja-") as ours:  # torch writes it here, a folder no
                _call_filtered(  # sandbox has seen; what the build folder gets is a copy of that text
                    ce._write_ninja_file_to_build_library,
                    path=os.path.join(ours, "build.ninja"),
                    name=module_name,
                    sources=sources,
                    extra_cflags=extra_cflags,
                    extra_cuda_cflags=extra_cuda_cflags,
                    extra_sycl_cflags=[],
                    extra_ldflags=ldflags,
                    extra_include_paths=list(spec.extra_include_paths),
                    with_cuda=spec.with_cuda,
                    with_sycl=False,
                    is_standalone=False,
                )
                return Path(ours, "build.ninja").read_text()
        finally:
            if patched_home:
                ce.CUDA_HOME = None  # type: ignore[attr-defined]  # self.ce is typed as ModuleType

    def _ninja(self, attempt_id: str, directory: Path, targets: list[str]) -> tuple[int, str]:
        cmd = (
            [shutil.which("ninja") or "ninja", "-v"]
            + (["-j", str(self.settings.max_jobs)] if self.settings.max_jobs else [])
            + targets
        )
        with self._lock:
            if self._cancel[attempt_id].is_set():
                return -1, "(cancelled)\n"
            proc = self._start_compiler(cmd, directory)
            self._procs[attempt_id] = proc
        out = self._read_until_deadline(proc)
        if proc.returncode == REFUSED_EXIT and "sandbox refused" not in out:
            out += "\nthe sandbox refused to run the compiler (its wall is missing here): " + self._refusal + "\n"
        with self._lock:
            self._procs.pop(attempt_id, None)
        return proc.returncode, out

    _refusal = ""

    def _read_until_deadline(self, proc: subprocess.Popen[bytes], head: int = LOG_HEAD, tail: int = LOG_TAIL) -> str:
        """A compiler run's output (bounded) once it ends, or once ``settings.timeout_s`` passed and it was killed."""
        fired: list[bool] = []

        def stop() -> None:
            fired.append(True)
            if hasattr(proc, "sandbox"):
                proc.sandbox.kill()
            else:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(self.settings.timeout_s, stop)
        timer.start()
        try:
            out = read_bounded(proc.stdout, head, tail)
            proc.wait()
        finally:
            timer.cancel()
        if fired:
            out += f"\n(the compiler timed out after {self.settings.timeout_s:.0f} s and was killed)\n"
        return out

    def _start_compiler(self, cmd: list[str], directory: Path) -> subprocess.Popen[bytes]:
        """ninja (and the compilers it runs) on candidate sources: in a sandbox that reads the toolchain, the
        torch headers, the precompiled headers and ``extra_read``, and writes only ``directory``."""
        from cudaforge.proc.sandbox import Sandbox, SandboxMode, default_read_paths

        env = scrubbed_env({"TMPDIR": str(directory), "HOME": str(directory)})
        mode = SandboxMode(self.settings.sandbox)
        if mode is SandboxMode.off:
            return subprocess.Popen(
                cmd, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
            )
        read = [
            *default_read_paths(),
            self.torch_include,
            str(self.settings.pch_root()),
            str(self.bind_include()),
            str(self.settings.cache_root() / "cpu_shims"),
            *self.extra_read,
        ]
        sandbox = Sandbox(
            mode=mode,
            scratch=str(directory),
            read=read,
            uid=self.uid,
            cpu_seconds=3600,
            file_bytes=4 << 30,
            devices=["/dev/null"],  # no endless input (#include "/dev/zero")
            namespaces=self.settings.sandbox_namespaces,
            allow_weak=self.settings.allow_weak_sandbox,
            scratch_bytes=0,
            nproc_limit=False,  # the candidate's uid: its processes must not count
            memory_bytes=int(min(self.settings.memory_gb or COMPILER_GB, COMPILER_GB) * (1 << 30)),
        )
        started = sandbox.start(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        status = started.status()
        if not status.get("ok"):
            self._refusal = "; ".join(status.get("missing", []))
        started.proc.sandbox = started  # type: ignore[attr-defined]  # deliberate: the socket lives while it is watched
        return started.proc

    def _kill(self, attempt_id: str) -> None:
        with self._lock:
            self._cancel[attempt_id].set()
            proc = self._procs.get(attempt_id)
            if proc is not None and proc.poll() is None:
                if hasattr(proc, "sandbox"):
                    proc.sandbox.kill()  # every process of it, and its cgroups removed
                else:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)

    def _cpu_shims(self) -> str:
        shim = self.settings.cache_root() / "cpu_shims"
        header = shim / "c10" / "cuda" / "impl" / "cuda_cmake_macros.h"
        if not header.exists():
            header.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(
                header,
                "#pragma once\n// cudaforge: stands in for the header CUDA builds of torch generate\n"
                "#define C10_CUDA_BUILD_SHARED_LIBS\n",
            )
        return str(shim)

    def _read_ninja_var(self, directory: Path, var: str) -> str:
        """A variable of the ninja file this builder wrote for ``directory`` (its own copy, never the folder's)."""
        for line in self._ninja_text.get(directory, "").splitlines():
            if line.startswith(f"{var} = "):
                return line[len(var) + 3 :]
        return ""

    # -- precompiled header ---------------------------------------------------------------

    def _pch_dir(self, directory: Path) -> tuple[Path, str, str]:
        cflags = self._read_ninja_var(directory, "cflags")
        cflags = re.sub(r"-DTORCH_EXTENSION_NAME=\S+", "", cflags)
        cxx = self._read_ninja_var(directory, "cxx") or "c++"
        sig = hashlib.sha256(json.dumps([toolchain_fingerprint(), cxx, cflags]).encode()).hexdigest()[:24]
        return self.settings.pch_root() / sig, cxx, cflags

    def bind_include(self) -> Path:
        """The folder of :data:`BIND_HEADER` (written on first use), on every build's include path. Its name carries
        a hash of the header's text, so it is in the flags that sign a precompiled header: another text (another
        cudaforge sharing the folder) gets its own header and its own ``.gch``, never a stale one (GCC does not
        check a ``.gch`` against its header). Where the precompiled headers' folder cannot be written, the build
        cache's is used."""
        name = "include-" + hashlib.sha256(BIND_HEADER_TEXT.encode()).hexdigest()[:12]
        for root in (self.settings.pch_root(), self.settings.cache_root()):
            header = root / name / BIND_HEADER
            try:
                if not header.exists() or header.read_text() != BIND_HEADER_TEXT:
                    header.parent.mkdir(parents=True, exist_ok=True)
                    write_atomic(header, BIND_HEADER_TEXT)
                return root / name
            except OSError:
                continue
        raise OSError(f"cannot write {BIND_HEADER} under {self.settings.pch_root()} or {self.settings.cache_root()}")

    def _ensure_pch(self, pch_dir: Path, cxx: str, cflags: str, name: str = "torch/extension.h") -> tuple[bool, str]:
        """The precompiled header ``name`` for this flag set, made if missing: by the compiler in its sandbox (an
        argument list, no shell), in a work folder of its own; the trusted side keeps the result only if it is a
        regular file of at most :data:`PCH_MAX` bytes. A failure leaves a ``FAILED`` mark (without the compiler's
        output: nothing a compile read stays where another compile can include it)."""
        gch = pch_dir / f"{name}.gch"
        if gch.exists():
            touch(pch_dir)
            return True, ""
        failed = pch_dir / ("FAILED" if name == "torch/extension.h" else f"FAILED-{name.replace('/', '_')}")
        if failed.exists():  # this flag set cannot make a header: do not pay for trying again
            return False, ""
        with file_lock(
            pch_dir.with_suffix(".lock")
        ):  # both headers of a flag set under the one lock cache admin respects
            if gch.exists():
                return True, ""
            if failed.exists():
                return False, ""
            gch.parent.mkdir(parents=True, exist_ok=True)
            header = (
                os.path.join(self.torch_include, "torch", "extension.h")
                if name == "torch/extension.h"
                else str(self.bind_include() / name)
            )
            from cudaforge.proc.sandbox.scratch import new_scratch, release_scratch

            compiler = shutil.which(cxx) or cxx
            work = Path(new_scratch("pch", BUILD_BYTES, BUILD_FILES))
            try:
                argv = [compiler, *shlex.split(cflags), "-x", "c++-header", header, "-o", str(work / "header.gch")]
                proc = self._start_compiler(argv, work)
                out = self._read_until_deadline(proc, 16 << 10, 16 << 10)
                fd = None
                if proc.returncode == 0:
                    with contextlib.suppress(OSError):
                        fd = open_artefact(work / "header.gch", PCH_MAX)
                if fd is None:
                    if proc.returncode not in (0, REFUSED_EXIT) and failed_for_the_sources(out):
                        write_atomic(failed, "failed\n")  # only the compiler's own verdict, never a resource's
                    first = next((ln for ln in out.splitlines() if "error" in ln), out.strip()[:200])
                    return False, f"[pch] could not be built ({first[:200]}); compiling without it\n"
                tmp = gch.with_name(f".{gch.name}.{os.getpid()}.{threading.get_ident()}.tmp")
                with os.fdopen(fd, "rb") as src, open(tmp, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(tmp, gch)
            finally:
                release_scratch(str(work))
            return True, f"[pch] built {gch}\n"

    # -- one variant ------------------------------------------------------------------------

    def _objects(self, spec: BuildSpec) -> list[str]:
        objs = []
        for f in spec.files:
            stem, ext = os.path.splitext(f)
            if ext == ".cu" and spec.with_cuda:
                objs.append(f"{stem}.cuda.o")
            elif ext in (".cpp", ".cc", ".cxx", ".c"):
                objs.append(f"{stem}.o")
        return objs

    def _run_variant(
        self,
        attempt_id: str,
        spec: BuildSpec,
        files: dict[str, str],
        directory: Path,
        module_name: str,
        use_pch: bool,
        fresh: bool,
        make_pch: bool = True,
    ) -> _Attempt:
        """One variant's build; ``make_pch`` False: use the precompiled header if it is there, never build it (the
        plain build racing a light one: a cancelled race must not wait for a header the winner does not use)."""
        measures: list[str] = []
        if fresh and directory.exists():
            shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True, exist_ok=True)
        for fname, text in files.items():
            write_into(directory, fname, text)  # keeps mtimes: ninja rebuilds only what changed
        host = pch_order(list(spec.extra_cflags)) if use_pch and wants_pch(spec) else list(spec.extra_cflags)
        extra_cflags = host + [f"-I{self.bind_include()}"]
        extra_cuda = list(spec.extra_cuda_cflags)
        if spec.with_cuda and not current().names_arch(extra_cuda) and self.settings.arch:
            extra_cuda += current().arch_flags(self.settings.arch)
            measures.append(f"arch={self.settings.arch}")
        if spec.with_cuda and not self.can_link_cuda:
            # CPU torch: the header CUDA wheels generate at build time, and CUDA library headers
            # from pip's wheels if any are installed. Only compile checks see these; nothing links.
            for include in [self._cpu_shims()] + pip_cuda_includes():
                extra_cuda += ["-isystem", include]
        self._write_ninja(spec, directory, module_name, extra_cflags, extra_cuda)
        log = ""
        objects = self._objects(spec)
        link = self.can_link_cuda or not spec.with_cuda
        cu_objects = [o for o in objects if o.endswith(".cuda.o")]
        host_source = files.get("main.cpp") or next(  # a load() call's own host file serves as well (its first line)
            (files[f] for f in sorted(files) if f.endswith((".cpp", ".cc", ".cxx"))), ""
        )
        first = host_source.split("\n", 1)[0].strip()
        pch_header = next((header for line, header in _PCH_HEADERS.items() if first.startswith(line)), None)
        pch_seconds = 0.0
        use_pch = use_pch and wants_pch(spec)
        if use_pch and pch_header and not make_pch:
            use_pch = (self._pch_dir(directory)[0] / f"{pch_header}.gch").exists()
        if use_pch and pch_header:
            pch_dir, cxx, cflags = self._pch_dir(directory)
            early: dict[str, tuple[int, str]] = {}
            thread = None
            if not (pch_dir / f"{pch_header}.gch").exists() and cu_objects:
                # first use of this flag set: build the header while nvcc works on the kernels
                def compile_early() -> None:
                    try:
                        early["r"] = self._ninja(attempt_id, directory, cu_objects)
                    except Exception as exc:  # noqa: BLE001 - a failed start is a failed compile, said in the log
                        early["r"] = (-1, f"the compiler could not start: {type(exc).__name__}: {exc}\n")

                thread = threading.Thread(target=compile_early)
                thread.start()
            started = time.perf_counter()
            try:
                ok, pch_log = self._ensure_pch(pch_dir, cxx, cflags, pch_header)
            except BaseException:  # the early compile of the kernels does not go on alone
                if thread is not None:
                    self._kill(attempt_id)
                    thread.join()
                raise
            pch_seconds = time.perf_counter() - started if pch_log else 0.0
            early_steps = {}
            if thread is not None:
                thread.join()
                log += early["r"][1]
                early_steps = ninja_steps(directory)
            log += pch_log
            if thread is not None and early["r"][0] != 0:
                return _Attempt(attempt_id, False, log, find_failed_targets(log), directory, measures, early_steps)
            if ok:
                extra_cflags = [f"-I{pch_dir}", "-Winvalid-pch", *extra_cflags]  # before the header's own folder
                self._write_ninja(spec, directory, module_name, extra_cflags, extra_cuda)
                measures.append("pch")
        rc, out = self._ninja(attempt_id, directory, [] if link else objects)
        log += out
        steps = {**(early_steps if use_pch and pch_header else {}), **ninja_steps(directory)}
        if pch_seconds:
            steps["pch"] = round(pch_seconds, 2)
        return _Attempt(
            attempt_id, rc == 0, log, find_failed_targets(log) if rc != 0 else [], directory, measures, steps
        )

    # -- the whole build -------------------------------------------------------------------

    def build(self, spec: BuildSpec, key: str, module_name: str) -> tuple[_Attempt, list[str]]:
        """Build the light variants (in order) and the plain one; return the winner and fallbacks. The compiler works
        in a folder of its own (a tmpfs of at most :data:`BUILD_BYTES`, as root: a build cannot fill the disk);
        the cache keeps only the winner's checked library, in ``<cache>/<key>/<light|plain>/``."""
        from cudaforge.proc.sandbox.scratch import new_scratch, release_scratch

        root = self.settings.cache_root() / key
        work = Path(new_scratch("build", BUILD_BYTES, BUILD_FILES))
        try:
            attempt, fallbacks = self._build_in(spec, work, module_name)
            kept = root / attempt.directory.name
            shutil.rmtree(kept, ignore_errors=True)
            kept.mkdir(parents=True)
            library = attempt.directory / f"{module_name}.so"
            if attempt.ok and os.path.lexists(library):
                with (
                    os.fdopen(open_artefact(library, LIBRARY_MAX), "rb") as src,
                    open(kept / f".{module_name}.so.tmp", "wb") as dst,
                ):
                    shutil.copyfileobj(src, dst, 1 << 20)
                os.replace(kept / f".{module_name}.so.tmp", kept / f"{module_name}.so")
            attempt.directory = kept
            return attempt, fallbacks
        finally:
            release_scratch(str(work))

    def _build_in(self, spec: BuildSpec, work: Path, module_name: str) -> tuple[_Attempt, list[str]]:
        light = [(v, f) for v, f in spec.variants if v != "plain"]
        plain_files = dict(spec.variants)["plain"]
        fallbacks: list[str] = []
        for attempt_id in ("light", "plain"):
            self._cancel[attempt_id] = threading.Event()
        plain_result: list[_Attempt] = []

        race = bool(light) and self.settings.fallback_mode() is FallbackMode.RACE

        def run_plain() -> None:
            plain_result.append(
                self._run_variant(
                    "plain",
                    spec,
                    plain_files,
                    work / "plain",
                    module_name,
                    self.settings.use_pch,
                    fresh=True,
                    make_pch=not race,
                )
            )

        plain_thread = threading.Thread(target=run_plain)
        if race:
            plain_thread.start()
        try:
            winner = None
            for index, (variant, files) in enumerate(light):
                attempt = self._run_variant(
                    "light", spec, files, work / "light", module_name, self.settings.use_pch, fresh=index == 0
                )
                attempt.variant = variant
                if attempt.ok:
                    winner = attempt
                    break
                fallbacks.append(f"{variant} failed ({', '.join(attempt.failed_targets)})")
                if missing_toolkit_header(attempt.log) or self._errors_are_the_sources(attempt):
                    winner = attempt  # the untouched source would fail the same way: report it now
                    fallbacks.append(
                        "plain skipped: "
                        + (
                            "toolkit header missing"
                            if missing_toolkit_header(attempt.log)
                            else "errors do not depend on torch headers"
                        )
                    )
                    break
                if any(not t.endswith(".cuda.o") for t in attempt.failed_targets):
                    break  # the failure is not in the CUDA source: lighter headers would not help
            if winner is not None:
                if race:
                    self._kill("plain")
                    plain_thread.join()
                return winner, fallbacks
        except BaseException:  # a light attempt that raised leaves no racing compiler behind it
            if race:
                self._kill("plain")
                plain_thread.join()
            raise
        if not race:
            plain_thread.start()
        plain_thread.join()
        return plain_result[0], fallbacks

    def _errors_are_the_sources(self, attempt: _Attempt) -> bool:
        """True when every error of a failed light build would also stop the untouched build.

        That holds for errors in the candidate's own lines that are syntax errors, mismatches
        between built-in types, or undefined identifiers that no torch header declares (so
        no header we removed could have declared them). Anything else falls back.
        """
        if attempt.failed_targets != ["cuda.cuda.o"]:
            return False
        errors = [ln for ln in attempt.log.splitlines() if (m := EDG_DIAG.match(ln)) and m.group("kind") != "warning"]
        if not errors:
            return False
        undefined = set()
        for line in errors:
            if not line.startswith("cuda_sources("):
                return False
            found = UNDEFINED.search(line)
            if found:
                undefined.add(found.group(1))
            elif not SOURCE_ONLY_ERROR.search(line):
                return False
        # A single lowercase letter (a loop index the source forgot to declare, say) is declared by no header at a
        # scope the source could see (no C, POSIX, CUDA or torch name is one letter): grep would find it in some
        # inline function's body and fall back for nothing.
        undefined = {name for name in undefined if not (len(name) == 1 and name.islower())}
        if len(undefined) > GREP_NAMES_MAX or any(len(name) > GREP_NAME_CHARS_MAX for name in undefined):
            return False  # the names come from the candidate's source: past these bounds, fall back unasked
        if undefined:
            grep = ["grep", "-rqwF", "--include=*.h", "--include=*.cuh", "--include=*.hpp"]
            for name in sorted(undefined):
                grep += ["-e", name]
            try:
                grepped = subprocess.run(grep + [self.torch_include], capture_output=True, timeout=GREP_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                return False
            if grepped.returncode != 1:
                return False  # found in torch's headers (or grep failed): a header could matter
        return True
