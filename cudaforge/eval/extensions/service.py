"""The trusted side's build service: a worker's build request (``load_inline``/``load`` arguments as data, from
the hooks of :mod:`cudaforge.eval.extensions.intercept`) checked and turned into a ``BuildSpec``
(:func:`spec_from_inputs`), built through the cache and its library delivered into the worker's scratch
(:func:`serve_build`, :func:`deliver`); and the precompiled header warmed ahead (:func:`warm_pch`)."""

from __future__ import annotations

import os
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

from cudaforge.eval.extensions import flags as build_flags
from cudaforge.eval.extensions.artefacts import LIBRARY_MAX, open_artefact
from cudaforge.eval.extensions.builder import Builder
from cudaforge.eval.extensions.headers import BIND_HEADER
from cudaforge.eval.extensions.intercept import (
    FILE_NAME,
    LOCAL_HEADER_SUFFIXES,
    LOCAL_HEADERS_MAX,
    Hooks,
    files_spec,
    keyed,
)
from cudaforge.eval.extensions.records import (
    BuildError,
    BuildRecord,
    BuildRecorder,
    ModuleNotLoadable,
)
from cudaforge.eval.extensions.settings import BuildSettings
from cudaforge.eval.extensions.spec import BuildSpec, as_list, cache_key, module_name_of
from cudaforge.vendors import current


def _strings(value: Any, what: str) -> list[str]:
    items = as_list(value)
    if not all(isinstance(v, str) for v in items):
        raise ValueError(f"{what} must be strings")
    return items


def include_roots(hooks: Hooks) -> tuple[str, ...]:
    """Where a candidate's include folders may be: its own scratch folder (``extra_read``), the toolkit, the
    interpreter's packages and torch's headers, the system's; all of it read-only to the compiler's sandbox."""
    import sysconfig

    roots = [*hooks.extra_read, *current().toolkit_roots(), "/usr/include", "/usr/local/include"]
    roots += [p for key in ("purelib", "platlib", "include", "platinclude") if (p := sysconfig.get_paths().get(key))]
    return tuple(os.path.realpath(r) for r in roots if r)


def deliver(library: str | os.PathLike[str], folder: str | os.PathLike[str], label: str) -> str:
    """Copy an extension library the compiler's sandbox made into ``folder`` (a candidate's scratch, which the
    candidate may have filled with links): the library opened without following a link, a regular file of at most
    :data:`LIBRARY_MAX` bytes and an ELF object; the copy created under a fresh name of ours, exclusively and
    without following a link, through a descriptor of the folder. Returns the copy's path; OSError otherwise."""
    import secrets

    source = open_artefact(Path(library), LIBRARY_MAX)
    try:
        with os.fdopen(os.dup(source), "rb") as check:
            if check.read(4) != b"\x7fELF":
                raise OSError(f"{Path(library).name} is not a shared library")
        name = f".ext-{re.sub(r'[^A-Za-z0-9_]', '_', label)[:80]}-{secrets.token_hex(6)}.so"
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            target = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755, dir_fd=folder_fd)
        finally:
            os.close(folder_fd)
        with os.fdopen(target, "wb") as dst:
            os.lseek(source, 0, os.SEEK_SET)
            copied = 0
            while chunk := os.read(source, 1 << 20):
                copied += len(chunk)
                if copied > LIBRARY_MAX:
                    raise OSError(f"{Path(library).name} grew past {LIBRARY_MAX >> 20} MiB while copied")
                dst.write(chunk)
            os.fchmod(dst.fileno(), 0o755)
    finally:
        os.close(source)
    return os.path.join(os.fspath(folder), name)


FILES_SOURCES_MAX = 16
FILES_BYTES_MAX = 4 << 20
SOURCE_SUFFIXES = (".cpp", ".cu", ".cc", ".cxx", ".c")
"""What a ``load`` request's files may be: C, C++ and CUDA sources and (``LOCAL_HEADER_SUFFIXES``) headers. Nothing
else reaches the build folder: a ``json.py`` there would be Python's to import by any program started in it."""


def _strict_utf8(texts: Any, what: str) -> None:
    """A request's texts must encode as UTF-8 (a lone surrogate would fail only when written, as a crash of ours)."""
    for text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"{what}: not UTF-8 text ({exc.reason})") from None


def files_problem(files: dict[str, str]) -> str:
    """Why a ``load`` request's files are more than the trusted side takes (checked there, whatever the request):
    at most :data:`FILES_SOURCES_MAX` sources and :data:`LOCAL_HEADERS_MAX` other files, :data:`FILES_BYTES_MAX`
    bytes in all, and only sources and headers (``SOURCE_SUFFIXES``, ``LOCAL_HEADER_SUFFIXES``); "" when they are
    within it."""
    odd = sorted(name for name in files if not name.endswith(SOURCE_SUFFIXES + LOCAL_HEADER_SUFFIXES))
    if odd:
        return (
            f"load(): {odd[0][:80]!r} is neither a C, C++ or CUDA source nor a header "
            f"({' '.join(SOURCE_SUFFIXES + LOCAL_HEADER_SUFFIXES)}): a build takes only those"
        )
    sources = sum(1 for name in files if name.endswith(SOURCE_SUFFIXES))
    size = sum(len(text.encode("utf-8", "replace")) for text in files.values())
    if sources > FILES_SOURCES_MAX or len(files) - sources > LOCAL_HEADERS_MAX or size > FILES_BYTES_MAX:
        return (
            f"load(): {sources} source file(s), {len(files) - sources} other(s), {size} bytes: at most "
            f"{FILES_SOURCES_MAX} sources, {LOCAL_HEADERS_MAX} headers and {FILES_BYTES_MAX >> 20} MiB in all"
        )
    return ""


def spec_from_inputs(hooks: Hooks, inputs: dict[str, Any]) -> tuple[BuildSpec, dict[str, Any]]:
    """The trusted side's own ``BuildSpec`` for a build request (``load_inline``/``load`` arguments as data), and the
    request re-written the way a local call writes it (what the cache key hashes).

    Everything is validated: strings where strings belong, plain file names (no paths); raises ValueError."""
    kind, name = inputs.get("kind"), inputs.get("name")
    if not isinstance(name, str) or not name or len(name) > 200:
        raise ValueError("the extension's name must be a short string")
    flags = {
        k: _strings(inputs.get(k), k)
        for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags", "extra_include_paths")
    }
    if sum(len(f) for v in flags.values() for f in v) > 20_000 or sum(len(v) for v in flags.values()) > 200:
        raise build_flags.FlagRefused(
            "the build's flags are too many or too long (at most 200 flags, 20000 characters)"
        )
    roots = include_roots(hooks)
    for what in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags"):
        build_flags.check(flags[what], what, roots)
    for path in flags["extra_include_paths"]:
        if not os.path.isabs(path):  # the candidate's own hook sends absolute paths; a relative one would be made
            raise build_flags.FlagRefused(  # absolute here, against the trusted side's working folder
                f"extra_include_paths: {path[:80]!r} is not an absolute path (the build made it absolute in the "
                "candidate's folder; a raw request must too)"
            )
        build_flags.check([f"-I{path}"], "extra_include_paths", roots)
    if kind == "inline":
        _strict_utf8(
            [
                *_strings(inputs.get("cpp_sources"), "cpp_sources"),
                *_strings(inputs.get("cuda_sources"), "cuda_sources"),
            ],
            "sources",
        )
        functions = inputs.get("functions")
        if functions is not None and not (
            isinstance(functions, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in functions.items())
        ):
            raise ValueError("functions must map names to docstrings")
        return hooks.inline_spec(
            name,
            _strings(inputs.get("cpp_sources"), "cpp_sources"),
            _strings(inputs.get("cuda_sources"), "cuda_sources"),
            functions,
            flags["extra_cflags"],
            flags["extra_cuda_cflags"],
            flags["extra_ldflags"],
            flags["extra_include_paths"],
            inputs.get("with_cuda"),
            bool(inputs.get("is_python_module", True)),
            bool(inputs.get("with_pytorch_error_handling", True)),
            bool(inputs.get("no_implicit_headers", False)),
        )
    if kind == "files":
        files = inputs.get("files")
        if (
            not isinstance(files, dict)
            or not files
            or not all(isinstance(k, str) and FILE_NAME.match(k) and isinstance(v, str) for k, v in files.items())
        ):
            raise ValueError("files must map plain file names to their text")
        _strict_utf8(files.values(), "files")
        too_many = files_problem(files)
        if too_many:
            raise build_flags.FlagRefused(too_many)
        with_cuda, is_module = bool(inputs.get("with_cuda")), bool(inputs.get("is_python_module", True))
        canonical = {
            "kind": "files",
            "name": name,
            "files": dict(files),
            "extra_cflags": flags["extra_cflags"],
            "extra_cuda_cflags": flags["extra_cuda_cflags"],
            "extra_ldflags": flags["extra_ldflags"],
            "extra_include_paths": flags["extra_include_paths"],
            "with_cuda": with_cuda,
            "is_python_module": is_module,
        }
        return files_spec(
            name,
            dict(files),
            flags["extra_include_paths"],
            with_cuda,
            is_module,
            hooks.settings,
            flags["extra_cflags"],
            flags["extra_cuda_cflags"],
            flags["extra_ldflags"],
        ), canonical
    raise ValueError(f"unknown build kind {kind!r}")


MAX_BUILD_REQUESTS = 64
"""Build requests one worker may make (a loop of failing ``load_inline`` calls once held 7.5 GB of logs in the
verifier); past it each gets a failed build without a compile."""
KEPT_LOG = 64 << 10
"""Characters of a served build's log the caller keeps (head and tail); the Judge's trimmed log comes from it."""


def serve_build_counted(
    inputs: Any, records: list[BuildRecord], settings: BuildSettings, deliver_dir: str, uid: int | None
) -> dict[str, Any]:
    """:func:`serve_build` for one worker whose earlier builds are ``records``: at most :data:`MAX_BUILD_REQUESTS`
    of them, each record kept with a bounded log. The worker's scratch folder is where its library goes and what its
    compiler may read. Returns the reply for the worker."""
    from cudaforge.eval.bounded import cap_text

    if len(records) >= MAX_BUILD_REQUESTS:
        return {
            "status": "failed",
            "error": f"more than {MAX_BUILD_REQUESTS} builds requested in one evaluation: build each extension once",
            "log_trimmed": "",
        }
    reply, record = serve_build(
        inputs if isinstance(inputs, dict) else {}, settings, deliver_dir, extra_read=(deliver_dir,), uid=uid
    )
    record.log = cap_text(record.log, KEPT_LOG)
    records.append(record)
    return reply


def serve_build(
    inputs: dict[str, Any],
    settings: BuildSettings,
    deliver_dir: str | None,
    extra_read: tuple[str, ...] = (),
    uid: int | None = None,
) -> tuple[dict[str, Any], BuildRecord]:
    """The trusted side of a sandboxed worker's ``load_inline``/``load``: build (or find) the extension.

    The key is computed here, from the request as this side re-derived it; the compiler runs sandboxed
    (``BuildSettings.sandbox``); the cache is written only here. A built library is copied into
    ``deliver_dir`` (the worker's scratch directory) for the worker to load. Returns the reply for the
    worker and the build's record (for the result). Never raises for a bad request: it fails the build.
    """
    started = time.perf_counter()
    hooks = Hooks(settings, BuildRecorder(), extra_read=extra_read, uid=uid)
    record = BuildRecord(
        name=str(inputs.get("name"))[:200], module_name="", key="", status="failed", cached=True, seconds=0.0
    )
    try:
        spec, canonical = spec_from_inputs(hooks, inputs)
        key = cache_key(keyed(canonical), settings)
        record.key, record.module_name = key, module_name_of(key)
        library = hooks.resolve(spec, key, record.module_name, record)
        record.status = "built"
        path = deliver(library, deliver_dir, record.module_name) if deliver_dir else library
        reply: dict[str, Any] = {"path": path}
    except (BuildError, ModuleNotLoadable) as exc:
        record.error = record.error or str(exc)
        reply = {}
    except build_flags.FlagRefused as exc:  # the candidate's own flags: a compile error it can mend
        record.status, record.error = "failed", f"Error building extension '{record.name}': {exc}"
        record.log = record.log_trimmed = record.error
        reply = {}
    except ValueError as exc:
        record.status, record.error = "failed", f"a malformed build request: {exc}"
        record.log = record.log_trimmed = record.error
        reply = {}
    except Exception as exc:  # noqa: BLE001 - the machinery broke: the worker gets the reason, we stay up
        record.status, record.error = "crashed", f"{type(exc).__name__}: {exc}"
        reply = {}
    record.seconds = time.perf_counter() - started
    reply.update(
        status=record.status,
        cached=record.cached,
        variant=record.variant,
        measures=record.measures,
        fallbacks=record.fallbacks,
        steps=record.steps,
        log_trimmed=record.log_trimmed[:20000],
        error=record.error[:20000],
        key=record.key,
        module_name=record.module_name,
    )
    return reply, record


def warm_pch(
    settings: BuildSettings | None = None, extra_cflags_sets: tuple[tuple[str, ...], ...] = ((), ("-O3",))
) -> dict[str, str]:
    """Build the precompiled headers of ``main.cpp`` (``torch/extension.h`` and the lighter binding header
    ``cudaforge/bind.h``) for common host-flag sets ahead of any candidate.

    A build whose flag set has no header yet builds it first (about twice a binding-file
    compile, once per flag set and cache); call this once when a worker pool starts so that no
    candidate pays for it. Returns ``{flags: "ready" | "failed"}`` (ready: both headers).
    """
    settings = (settings or BuildSettings()).resolved()
    builder = Builder(settings)
    settings.cache_root().mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, tuple[Path, str, str], str]] = []
    with tempfile.TemporaryDirectory(dir=settings.cache_root()) as tmp:
        for index, flags in enumerate(extra_cflags_sets):
            spec = BuildSpec(
                name="pch_probe",
                files={"main.cpp": "", "cuda.cu": ""},
                variants=[],
                extra_cflags=[f for f in list(flags) + settings.extra_cflags if f.strip()],
                extra_cuda_cflags=[],
                extra_ldflags=[],
                extra_include_paths=[],
                with_cuda=True,
                is_python_module=True,
            )
            probe = Path(tmp) / str(index)
            probe.mkdir()
            cflags = [*spec.extra_cflags, f"-I{builder.bind_include()}"]  # as Builder._run_variant writes them
            builder._write_ninja(spec, probe, "pch_probe", cflags, current().arch_flags(cast(str, settings.arch)))
            found = builder._pch_dir(probe)
            jobs += [(" ".join(flags), found, name) for name in ("torch/extension.h", BIND_HEADER)]
        with ThreadPoolExecutor(len(jobs) or 1) as pool:  # flag sets side by side (a set's two headers share a lock)
            ready = list(pool.map(lambda job: builder._ensure_pch(*(*job[1], job[2]))[0], jobs))
    done: dict[str, str] = {}
    for (joined, _, _), ok in zip(jobs, ready):
        done[joined] = "ready" if ok and done.get(joined, "ready") == "ready" else "failed"
    return done
