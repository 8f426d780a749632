"""The interception of ``torch.utils.cpp_extension.load_inline`` and ``load``: the worker's calls become build
requests that the trusted side serves through the cache (``cudaforge.eval.extensions.service``)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from cudaforge.caches import GB, evict_lru, touch
from cudaforge.eval.extensions.artefacts import file_lock
from cudaforge.eval.extensions.builder import Builder
from cudaforge.eval.extensions.headers import light_cuda_source, light_file_variants, light_main_source
from cudaforge.eval.extensions.logs import (
    build_hints,
    failed_for_the_sources,
    missing_toolkit_header,
    trim_compiler_log,
)
from cudaforge.eval.extensions.records import (
    BuildError,
    BuildRecord,
    BuildRecorder,
    ModuleNotLoadable,
    ToolchainIncomplete,
)
from cudaforge.eval.extensions.settings import BuildSettings
from cudaforge.eval.extensions.spec import BuildSpec, as_list, cache_key, module_name_of
from cudaforge.eval.extensions.toolchain import toolchain_fingerprint
from cudaforge.proc.files import write_atomic


class Hooks:
    """The state behind :func:`build_hooks`: settings, recorder, modules loaded in this process."""

    def __init__(
        self,
        settings: BuildSettings,
        recorder: BuildRecorder,
        remote: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        extra_read: tuple[str, ...] = (),
        uid: int | None = None,
    ) -> None:
        self.settings = settings
        self.recorder = recorder
        self.remote = remote
        """In a sandboxed worker: asks the trusted side to build ``inputs`` (``serve_build``) and returns its reply."""
        self.extra_read = extra_read
        self.uid = uid
        """The uid of the compiler's sandbox (the candidate's; None: a fresh one)."""
        self.loaded: dict[str, Any] = {}

    # -- sources, as load_inline assembles them -----------------------------------------------

    def inline_spec(
        self,
        name: str,
        cpp_sources: Any,
        cuda_sources: Any,
        functions: Any,
        extra_cflags: Any,
        extra_cuda_cflags: Any,
        extra_ldflags: Any,
        extra_include_paths: Any,
        with_cuda: Any,
        is_python_module: bool,
        with_pytorch_error_handling: bool,
        no_implicit_headers: bool,
    ) -> tuple[BuildSpec, dict[str, Any]]:
        cpp = as_list(cpp_sources)
        cuda = as_list(cuda_sources)
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            functions = {f: f for f in functions}
        if functions is not None and not isinstance(functions, dict):
            raise ValueError(f"Expected 'functions' to be a list or dict, but was {type(functions)}")
        # ``#line`` makes diagnostics name lines of the candidate's own strings; files of those
        # names sit beside the sources so that compilers can quote the offending line.
        bindings = []
        if functions:
            bindings.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
            for fn, doc in functions.items():
                wrapped = f"torch::wrap_pybind_function({fn})" if with_pytorch_error_handling else fn
                bindings.append(f'm.def("{fn}", {wrapped}, "{doc}");')
            bindings.append("}")
        main = [] if no_implicit_headers else ["#include <torch/extension.h>"]
        main += ['#line 1 "cpp_sources"', *cpp]
        if bindings:
            main += ['#line 1 "load_inline_bindings"', *bindings]
        files = {
            "main.cpp": "\n".join(main),
            "cpp_sources": "\n".join(cpp),
            "load_inline_bindings": "\n".join(bindings),
        }
        variants: list[tuple[str, dict[str, str]]] = []
        light = self.settings.light_headers and not no_implicit_headers
        main_light = light_main_source("\n".join(cpp), "\n".join(bindings)) if light else None
        lighter = {"main.cpp": main_light} if main_light is not None else {}
        if cuda:
            prefix = (
                []
                if no_implicit_headers
                else ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
            )
            user = "\n".join(cuda)
            files["cuda_sources"] = user
            plain = "\n".join(prefix + ['#line 1 "cuda_sources"', user])
            if light:
                headers = os.path.join(os.path.dirname(cast(str, importlib.import_module("torch").__file__)), "include")
                for tier in ("min", "types"):
                    text = light_cuda_source(user, tier, headers)
                    if text is None:
                        continue
                    if tier == "min":
                        text = "#include <cuda.h>\n#include <cuda_runtime.h>\n" + text
                    else:
                        text = "\n".join(prefix + ['#line 1 "cuda_sources"', text])
                    variants.append((f"light:{tier}", {**files, **lighter, "cuda.cu": text}))
            files["cuda.cu"] = plain
        if not cuda and lighter:  # C++ alone: only main.cpp to make lighter (with a CUDA source that needs all of
            variants.append(("light:bind", {**files, **lighter}))  # torch, nvcc is the longer step: not worth two)
        variants.append(("plain", dict(files)))
        with_cuda_flag = bool(cuda) if with_cuda is None else bool(with_cuda)
        spec = BuildSpec(
            name=name,
            files=files,
            variants=variants,
            extra_cflags=[f.strip() for f in as_list(extra_cflags) + self.settings.extra_cflags if f.strip()],
            extra_cuda_cflags=[
                f.strip() for f in as_list(extra_cuda_cflags) + self.settings.extra_cuda_cflags if f.strip()
            ],
            extra_ldflags=[f.strip() for f in as_list(extra_ldflags) if f.strip()],
            extra_include_paths=[os.path.abspath(p) for p in as_list(extra_include_paths)],
            with_cuda=with_cuda_flag,
            is_python_module=is_python_module,
        )
        inputs = {
            "kind": "inline",
            "name": name,
            "cpp_sources": cpp,
            "cuda_sources": cuda,
            "functions": functions,
            "extra_cflags": as_list(extra_cflags),
            "extra_cuda_cflags": as_list(extra_cuda_cflags),
            "extra_ldflags": as_list(extra_ldflags),
            "extra_include_paths": spec.extra_include_paths,
            "with_cuda": with_cuda_flag,
            "is_python_module": is_python_module,
            "with_pytorch_error_handling": with_pytorch_error_handling,
            "no_implicit_headers": no_implicit_headers,
        }
        return spec, inputs

    def file_spec(
        self,
        name: str,
        sources: Any,
        extra_cflags: Any,
        extra_cuda_cflags: Any,
        extra_ldflags: Any,
        extra_include_paths: Any,
        with_cuda: Any,
        is_python_module: bool,
    ) -> tuple[BuildSpec, dict[str, Any]]:
        paths = [os.path.abspath(p) for p in as_list(sources)]
        files: dict[str, str] = {}
        for i, path in enumerate(paths):
            base = os.path.basename(path)
            files[base if base not in files else f"{i}_{base}"] = Path(path).read_text()
        includes = [os.path.abspath(p) for p in as_list(extra_include_paths)]
        folders = sorted({os.path.dirname(p) for p in paths})
        files.update(_local_headers(folders, files))  # their "local.h" files
        if _includes_left_behind(files, folders):  # in a subfolder, of another suffix, past the bound: the folder
            includes += [f for f in folders if f not in includes]  # stays an include path, as torch builds it
        with_cuda_flag = any(p.endswith((".cu", ".cuh")) for p in paths) if with_cuda is None else bool(with_cuda)
        inputs = {
            "kind": "files",
            "name": name,
            "files": files,
            "extra_cflags": as_list(extra_cflags),
            "extra_cuda_cflags": as_list(extra_cuda_cflags),
            "extra_ldflags": as_list(extra_ldflags),
            "extra_include_paths": includes,
            "with_cuda": with_cuda_flag,
            "is_python_module": is_python_module,
        }
        return files_spec(
            name,
            files,
            includes,
            with_cuda_flag,
            is_python_module,
            self.settings,
            as_list(extra_cflags),
            as_list(extra_cuda_cflags),
            as_list(extra_ldflags),
        ), inputs

    # -- build or hit, then import ----------------------------------------------------------

    def build_and_load(self, spec: BuildSpec, inputs: dict[str, Any]) -> Any:
        started = time.perf_counter()
        key = cache_key(keyed(inputs), self.settings)
        module_name = module_name_of(key)
        record = BuildRecord(
            name=spec.name, module_name=module_name, key=key, status="failed", cached=True, seconds=0.0
        )
        self.recorder.records.append(record)
        if key in self.loaded:  # the same call again (a load_inline in forward, built before): no round trip
            record.status = "built"
            return self.loaded[key]
        try:
            if self.remote is not None:
                return self._remote_build_and_load(spec, inputs, record)
            return self._build_and_load(spec, key, module_name, record)
        except (BuildError, ModuleNotLoadable):
            raise
        except Exception as exc:  # the machinery itself broke (no ninja, a torch without the helpers ...)
            record.status = "crashed"
            record.error = record.error or f"{type(exc).__name__}: {exc}"
            raise
        finally:
            record.seconds = time.perf_counter() - started

    def _remote_build_and_load(self, spec: BuildSpec, inputs: dict[str, Any], record: BuildRecord) -> Any:
        """The sandboxed side: the trusted side builds (or finds) the extension and hands over a copy to load."""
        reply = cast("Callable[[dict[str, Any]], dict[str, Any]]", self.remote)(inputs)  # called only with a remote
        for name in (
            "status",
            "variant",
            "measures",
            "fallbacks",
            "steps",
            "log",
            "log_trimmed",
            "error",
            "key",
            "module_name",
        ):
            if name in reply:
                setattr(record, name, reply[name])
        record.cached = bool(reply.get("cached"))
        if record.status == "toolchain_error":
            raise ToolchainIncomplete(record.error, record)
        if record.status == "failed":
            raise BuildError(record.error, record)
        if record.status == "compiled_only":
            raise ModuleNotLoadable(record.error, record)
        if record.status != "built" or not reply.get("path"):
            record.status = "crashed"
            raise RuntimeError(record.error or "the build service gave no library")
        return self._load(spec, record.key, record.module_name, reply["path"], record)

    def resolve(self, spec: BuildSpec, key: str, module_name: str, record: BuildRecord) -> str:
        """The trusted side: build ``spec`` into the cache (or find it there); the path of its library.

        Raises ToolchainIncomplete, BuildError or ModuleNotLoadable as the build went."""
        root = self.settings.cache_root()
        manifest_path = root / key / "build.json"
        with file_lock(root / "locks" / f"{key}.lock"):
            manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
            if manifest is not None and manifest["status"] == "failed" and not self.settings.cache_failures:
                manifest = None
            if manifest is not None and manifest.get("module_name") != module_name:  # made by another recipe
                manifest = None
            if manifest is None:
                record.cached = False
                manifest = self._build(spec, key, module_name)
                keep = {
                    "failed": self.settings.cache_failures and failed_for_the_sources(manifest["log"]),
                    "toolchain_error": False,
                }
                if keep.get(manifest["status"], True):
                    write_atomic(manifest_path, json.dumps(manifest, indent=1))
            touch(root / key)  # when it was last used, for the size limit's eviction
        if not record.cached and self.settings.max_cache_gb > 0:
            with contextlib.suppress(OSError):  # a cache we may not trim still serves this build
                evict_lru(root, int(self.settings.max_cache_gb * GB), pch_root=self.settings.pch_root())
        record.status = manifest["status"]
        record.variant = manifest["variant"]
        record.measures = manifest["measures"]
        record.fallbacks = manifest["fallbacks"]
        record.steps = manifest.get("steps", {})
        record.log = manifest["log"]
        record.log_trimmed = manifest["log_trimmed"]
        record.build_dir = str(root / key / manifest["directory"])
        if record.status == "toolchain_error":
            record.error = (
                f"extension '{spec.name}' could not be checked here: the CUDA toolkit lacks "
                f"{missing_toolkit_header(record.log)}, which the sources need (not the candidate's fault)"
            )
            raise ToolchainIncomplete(record.error, record)
        if record.status == "failed":
            record.error = f"Error building extension '{spec.name}':\n{record.log_trimmed}"
            raise BuildError(record.error, record)
        if record.status == "compiled_only":
            record.error = (
                f"extension '{spec.name}' compiled, but this torch ({toolchain_fingerprint()['torch']}) "
                "has no CUDA: it was not linked or loaded"
            )
            raise ModuleNotLoadable(record.error, record)
        return os.path.join(record.build_dir, f"{module_name}.so")

    def _build_and_load(self, spec: BuildSpec, key: str, module_name: str, record: BuildRecord) -> Any:
        return self._load(spec, key, module_name, self.resolve(spec, key, module_name, record), record)

    def _load(self, spec: BuildSpec, key: str, module_name: str, library: str, record: BuildRecord) -> Any:
        if not spec.is_python_module:
            import torch

            torch.ops.load_library(library)  # type: ignore[no-untyped-call]  # torch's load_library is unannotated
            self.loaded[key] = library
            return library
        try:
            found = cast("importlib.machinery.ModuleSpec", importlib.util.spec_from_file_location(module_name, library))
            module = importlib.util.module_from_spec(found)
            cast("importlib.abc.Loader", found.loader).exec_module(module)  # a library's spec, with its loader
        except ImportError as exc:  # e.g. "undefined symbol": a function declared but never defined
            record.status = "failed"
            record.error = f"Error loading extension '{spec.name}': {exc}"
            record.log += f"\n{record.error}\n"
            record.log_trimmed = trim_compiler_log(record.log)
            raise BuildError(record.error, record) from exc
        self.loaded[key] = module
        return module

    def _build(self, spec: BuildSpec, key: str, module_name: str) -> dict[str, Any]:
        builder = Builder(self.settings, self.extra_read, self.uid)
        started = time.perf_counter()
        attempt, fallbacks = builder.build(spec, key, module_name)
        measures = list(attempt.measures)
        if attempt.variant.startswith("light:"):
            measures.append("headers=" + attempt.variant.split(":", 1)[1])
        linked = builder.can_link_cuda or not spec.with_cuda
        status = "built" if linked else "compiled_only"
        if not attempt.ok:
            status = "toolchain_error" if missing_toolkit_header(attempt.log) else "failed"
        return {
            "status": status,
            "variant": attempt.variant,
            "measures": measures,
            "fallbacks": fallbacks,
            "steps": attempt.steps,
            "log": attempt.log,
            "log_trimmed": "\n".join(
                [*(build_hints(attempt.log, spec.files) if not attempt.ok else []), trim_compiler_log(attempt.log)]
            ),
            "directory": attempt.directory.name,
            "module_name": module_name,
            "seconds": round(time.perf_counter() - started, 3),
            "fingerprint": toolchain_fingerprint(),
            "arch": self.settings.arch,
            "created": time.time(),
        }


FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,120}\Z")


def keyed(inputs: dict[str, Any]) -> dict[str, Any]:
    """What a build's cache key hashes: its request without the extension's name. The same sources and flags under
    another name (one made from ``id(self)`` or a counter, new for every instance) find the library built first; the
    library's module name comes from the key alone (``module_name_of``), so no request's name shapes it."""
    out = {k: v for k, v in inputs.items() if k != "name"}
    if isinstance(out.get("files"), dict):  # their order is the link order: a list keeps it in the key
        out["files"] = [[name, text] for name, text in out["files"].items()]
    return out


LOCAL_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".cuh", ".inl", ".inc")
LOCAL_HEADERS_MAX = 64
LOCAL_HEADERS_BYTES = 2 << 20
"""The headers beside a ``load`` call's sources travel with them (read in the candidate's sandbox, written beside the
sources in the build's folder, so ``#include "local.h"`` finds them as it does beside torch's own build, and their
text is in the cache key): at most this many files and bytes. The folder itself is no include path: files written to
a fresh ``tempfile.mkdtemp()`` every run then hit the cache, and the precompiled header serves them. Headers in
subfolders of it are not taken."""


def _local_headers(folders: list[str], taken: dict[str, str]) -> dict[str, str]:
    """The header files directly in ``folders`` (name -> text), where no file of that name is taken; bounded."""
    found: dict[str, str] = {}
    size = 0
    for folder in folders:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(LOCAL_HEADER_SUFFIXES) or entry.name in taken or entry.name in found:
                continue
            if not FILE_NAME.match(entry.name) or not entry.is_file(follow_symlinks=False):  # match: from the start
                continue
            try:
                text = Path(entry.path).read_text()
            except (OSError, UnicodeDecodeError):
                continue
            size += len(text)
            if len(found) >= LOCAL_HEADERS_MAX or size > LOCAL_HEADERS_BYTES:
                return found
            found[entry.name] = text
    return found


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def _includes_left_behind(files: dict[str, str], folders: list[str]) -> bool:
    """Whether a file includes (in quotes) a file of the sources' folders that is not among ``files`` (run in the
    candidate's sandbox, where those folders are): then the folders stay include paths, as before headers travelled
    (the folders are in the cache key then, and no precompiled header serves the build)."""
    targets = {
        t
        for text in files.values()
        for t in _QUOTED_INCLUDE.findall(_COMMENTS.sub(" ", text))
        if t not in files and not os.path.isabs(t) and ".." not in t.split("/")
    }
    return any(os.path.exists(os.path.join(folder, t)) for t in targets for folder in folders)


def files_spec(
    name: str,
    files: dict[str, str],
    includes: list[str],
    with_cuda: bool,
    is_module: bool,
    settings: BuildSettings,
    cflags: list[str],
    cuda_cflags: list[str],
    ldflags: list[str],
) -> BuildSpec:
    """The spec of a ``load`` call's files: their lighter header tiers first (``light_file_variants``), then as
    written."""
    variants: list[tuple[str, dict[str, str]]] = []
    if settings.light_headers:
        torch_include = os.path.join(os.path.dirname(cast(str, importlib.import_module("torch").__file__)), "include")
        variants = light_file_variants(files, torch_include)
    return BuildSpec(
        name=name,
        files=dict(files),
        variants=[*variants, ("plain", dict(files))],
        extra_cflags=[f.strip() for f in cflags + settings.extra_cflags if f.strip()],
        extra_cuda_cflags=[f.strip() for f in cuda_cflags + settings.extra_cuda_cflags if f.strip()],
        extra_ldflags=[f.strip() for f in ldflags if f.strip()],
        extra_include_paths=list(includes),
        with_cuda=with_cuda,
        is_python_module=is_module,
    )
