"""The build path as a candidate would attack it (issue 32): nothing it supplies reaches a shell, an unsandboxed
compiler, a copy or a read on the trusted side.

Each test plants what an adversarial candidate controls (flags, file names, links in its scratch, build folders)
and checks the trusted side's answer: a refusal the Coder can act on, or an operation that follows no link and
keeps only a checked artefact. The compiler runs here for real (g++ on tiny sources; no torch headers).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import time
from pathlib import Path

import pytest

from cudaforge.eval.extensions import BuildSettings, FallbackMode, serve_build
from cudaforge.eval.extensions import flags as build_flags
from cudaforge.eval.extensions.artefacts import read_bounded, write_into
from cudaforge.eval.extensions.builder import Builder
from cudaforge.eval.extensions.service import deliver
from cudaforge.proc.sandbox import linux

pytest.importorskip("torch")

LINUX_SANDBOX = linux.landlock_abi() > 0 and os.geteuid() == 0
HONEST = [
    ["-O3"],
    ["-O3", "--use_fast_math"],
    ["-O2", "-std=c++17"],
    ["--expt-relaxed-constexpr", "-lineinfo"],
    ["-arch=sm_90a"],
    ["-arch", "sm_80"],
    ["-gencode=arch=compute_90a,code=sm_90a"],
    ["-Xptxas", "-v"],
    ["-Xcompiler", "-fopenmp"],
    ["-DBLOCK=256", "-UNDEBUG", "-DUSE_FP16"],
    ["-maxrregcount=64"],
    ["-Wno-deprecated-declarations", "-w"],
    ["-march=native", "-funroll-loops"],
    ["--ptxas-options=-v"],
    ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__"],
    [" ", ""],
    ["-I./include"],
    ["-O3 --use_fast_math", "-Xptxas -v"],  # several words in one string: the compiler sees each as an argument
]
"""Flag lists seen in released KernelBench-style kernels and in what models write: all allowed."""
ATTACKS = {
    "-DX=`python3 stage2.py`": "shell",
    "-DX=$(id)": "shell",
    "-include /etc/shadow": "reads a file",
    "-imacros=/root/.netrc": "reads a file",
    "-B/tmp/evil": "changes where",
    "-specs=/tmp/x": "specs",
    "-fplugin=/tmp/p.so": "plugin",
    "-wrapper=/bin/sh": "another program",
    "@/tmp/flags": "from a file",
    "-save-temps=cwd": "intermediate",
    "-MF/etc/cron.d/x": "dependency",
    "-o/tmp/out": "output",
    "-ccbin=/tmp/cc": "host compiler",
    "-Wl,--wrap=malloc": "linker",
    "-Xlinker -rpath": "linker",
    "-I/root": "include folder",
    "-isystem/etc": "include folder",
    "-fprofile-generate=/tmp": "allow-list",
    "-DX=1;id": "shell",
    "-O3 -include /etc/shadow": "reads a file",  # words of one string are arguments of their own
    "-O2\n-DX=1": "line break",  # red team: a new line of the ninja file, which dropped every flag after it
    "-O2\u00a0-include": "control character",  # a space str.split() sees and the shell does not
    # red team, 2026-12-05: flags that make the compiler read or write files by name, or escape the include check
    "-fmodules-ts": "allow-list",
    "-fmodule-mapper=map.h": "allow-list",
    "-fdeps-file=x.json": "allow-list",
    "-fcompare-debug": "allow-list",
    "-I=/etc": "include folder",
    "-isystem=/root": "include folder",
    "-iquote=/": "include folder",
    "-idirafter=/proc": "include folder",
    "-Xcompiler": "passes nothing on",
}
"""A flag that must be refused, and a word of why."""


def test_a_device_flags_word_in_the_host_flags_is_not_taken_as_its_value():
    """The red team: "-Xptxas -include" as one host flag passed the check (the pair is nvcc's) while g++ got
    -Xptxas and -include as arguments of their own. Each word is checked as the compiler sees it, and the device
    compiler's pairs are pairs only in the device flags."""
    for flag in ("-Xptxas -include", "--ptxas-options -ofoo"):
        with pytest.raises(build_flags.FlagRefused, match="drop it"):
            build_flags.check([flag], "extra_cflags", ("/usr/local/cuda",))
    assert build_flags.check(["-Xptxas -v"], "extra_cuda_cflags") == ["-Xptxas -v"]


@pytest.mark.parametrize("flags", HONEST, ids=[" ".join(f) or "empty" for f in HONEST])
def test_the_flags_released_kernels_pass_are_allowed(flags):
    assert build_flags.check(flags, "extra_cuda_cflags", ("/usr/local/cuda",)) == flags


@pytest.mark.parametrize("flag, why", list(ATTACKS.items()), ids=list(ATTACKS))
def test_flags_that_reach_files_the_toolchain_or_a_shell_are_refused_in_one_line(flag, why):
    items = flag.split(" ") if flag.startswith(("-include", "-Xlinker")) else [flag]
    with pytest.raises(build_flags.FlagRefused) as caught:
        build_flags.check(items, "extra_cflags", ("/usr/local/cuda",))
    message = str(caught.value)
    assert "\n" not in message and "drop it" in message and why in message


def test_linker_flags_name_libraries_only():
    assert build_flags.check(["-lcublas", "-lcuda"], "extra_ldflags") == ["-lcublas", "-lcuda"]
    for flag in ("-L/tmp", "-Wl,-rpath,/tmp", "-T/tmp/script.ld", "/tmp/libx.so", "-fuse-ld=/tmp/ld"):
        with pytest.raises(build_flags.FlagRefused):
            build_flags.check([flag], "extra_ldflags")


def test_a_precompiled_header_is_made_only_for_common_host_flags():
    assert build_flags.pch_worthy([]) and build_flags.pch_worthy(["-O3"]) and build_flags.pch_worthy(["-O2", "-g"])
    assert not build_flags.pch_worthy(["-DSEED=1"]) and not build_flags.pch_worthy(["-O3", "-march=native"])
    assert not build_flags.pch_worthy(["-O2", "-O3"]) and not build_flags.pch_worthy(["-w", "-w"])  # order would count
    orders = [
        ["-O2", "-w", "-DNDEBUG", "-fPIC"],
        ["-fPIC", "-DNDEBUG", "-w", "-O2"],
        ["-w", "-O2", "-fPIC", "-DNDEBUG"],
    ]
    assert (
        all(build_flags.pch_worthy(o) for o in orders) and len({tuple(build_flags.pch_order(o)) for o in orders}) == 1
    )


@pytest.mark.skipif(not LINUX_SANDBOX, reason="needs root and Landlock for the compiler's sandbox")
def test_shell_syntax_in_a_candidates_flags_never_runs(tmp_path):
    """The first attack of the round: a flag with a command substitution. Refused before anything is written."""
    marker = tmp_path / f"pwned-{secrets.token_hex(4)}"
    settings = BuildSettings(
        cache_dir=str(tmp_path / "cache"), arch="9.0", use_pch=True, fallback=FallbackMode.SEQUENTIAL
    ).resolved()
    inputs = {
        "kind": "inline",
        "name": "x",
        "cpp_sources": ["int f() { return 1; }"],
        "cuda_sources": [],
        "functions": None,
        "extra_cflags": [f"-DX=`touch {marker}`"],
        "extra_cuda_cflags": [],
        "extra_ldflags": [],
        "extra_include_paths": [],
        "with_cuda": False,
        "is_python_module": True,
    }
    reply, record = serve_build(inputs, settings, None)
    assert reply["status"] == "failed" and "shell" in reply["error"] and "extra_cflags" in reply["error"]
    assert not marker.exists() and not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


@pytest.mark.skipif(not LINUX_SANDBOX, reason="needs root and Landlock for the compiler's sandbox")
def test_the_header_build_takes_an_argument_list_and_keeps_no_log(tmp_path):
    """Even flags that reached the header build as text would not be run by a shell: the precompiled header is
    built from an argument list inside the compiler's sandbox; a failure leaves a mark without the compiler's output
    (which would quote what the compile read)."""
    marker = tmp_path / f"pwned-{secrets.token_hex(4)}"
    settings = BuildSettings(cache_dir=str(tmp_path / "cache"), arch="9.0").resolved()
    builder = Builder(settings)
    pch_dir = settings.pch_root() / "0123456789abcdef01234567"
    ok, log = builder._ensure_pch(pch_dir, "c++", f"-O0 -DX=$(touch {marker}) -DY=`touch {marker}`", "cudaforge/bind.h")
    assert not marker.exists()
    failed = list(pch_dir.glob("FAILED*"))
    if ok:  # the macro's text is harmless to g++: the header was built, as a regular file of ours
        assert (pch_dir / "cudaforge" / "bind.h.gch").is_file() and not failed
    else:
        assert [f.read_text() for f in failed] == ["failed\n"]
    assert not list(settings.pch_root().glob(".work-*"))  # the sandbox's work folder is gone


def test_a_build_file_is_never_written_through_a_link(tmp_path):
    folder = tmp_path / "build"
    folder.mkdir()
    target = tmp_path / "victim.py"
    target.write_text("ORIGINAL")
    (folder / "main.cpp").symlink_to(target)
    write_into(folder, "main.cpp", "int main() {}")
    assert target.read_text() == "ORIGINAL" and not (folder / "main.cpp").is_symlink()
    assert (folder / "main.cpp").read_text() == "int main() {}"
    (folder / "sub").mkdir()
    with pytest.raises(OSError):
        write_into(folder, "sub", "x")  # a folder where a file belongs is not ours to remove: the build fails


def test_a_library_is_delivered_under_a_fresh_name_without_following_links(tmp_path):
    """The third attack: links planted in the candidate's scratch (``ext`` to the virtualenv) made root overwrite a
    C extension there. The copy now goes to a fresh name through a descriptor of the folder."""
    venv_ext = tmp_path / "venv" / "site-packages" / "_c.so"
    venv_ext.parent.mkdir(parents=True)
    venv_ext.write_bytes(b"\x7fELF real extension")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "ext").symlink_to(venv_ext.parent, target_is_directory=True)
    for guess in ("mod.so", "ext/mod.so", ".ext-mod.so"):
        try:
            (scratch / guess).symlink_to(venv_ext)
        except OSError:
            pass
    library = tmp_path / "cache" / "mod.so"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF built")
    path = deliver(library, scratch, "mod")
    assert venv_ext.read_bytes() == b"\x7fELF real extension"
    assert Path(path).parent == scratch and Path(path).read_bytes() == b"\x7fELF built"
    assert not Path(path).is_symlink() and stat.S_IMODE(os.stat(path).st_mode) == 0o755


def test_only_a_regular_elf_library_of_bounded_size_leaves_a_build_folder(tmp_path, monkeypatch):
    from cudaforge.eval.extensions import artefacts, service

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    secret = tmp_path / "secret"
    secret.write_text("sk-secret")
    linked = tmp_path / "linked.so"
    linked.symlink_to(secret)
    with pytest.raises(OSError):
        deliver(linked, scratch, "m")  # a link the compiler's sandbox left: never read through
    script = tmp_path / "script.so"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(OSError):
        deliver(script, scratch, "m")
    monkeypatch.setattr(artefacts, "LIBRARY_MAX", 16)
    monkeypatch.setattr(service, "LIBRARY_MAX", 16)
    big = tmp_path / "big.so"
    big.write_bytes(b"\x7fELF" + bytes(64))
    with pytest.raises(OSError):
        deliver(big, scratch, "m")
    assert os.listdir(scratch) == []


def test_a_compilers_output_is_read_bounded_head_and_tail(tmp_path):
    import io

    data = b"error: first\n" + b"w" * (5 << 20) + b"\nFAILED: last\n"
    text = read_bounded(io.BytesIO(data), head=1024, tail=1024)
    assert text.startswith("error: first") and text.rstrip().endswith("FAILED: last")
    assert len(text) < 4096 and "bytes of compiler output left out" in text


@pytest.mark.skipif(not LINUX_SANDBOX or not shutil.which("g++"), reason="needs root, Landlock and g++")
def test_the_compiler_runs_as_an_unprivileged_uid_and_sees_no_secret(tmp_path):
    """The second attack: the compiler ran unsandboxed with the candidate's flags. Now a source that includes a
    root-only file, or a file of the trusted side's, fails to compile: the compiler's root does not hold them."""
    secret = tmp_path / "secret.h"
    secret.write_text('#error "sk-secret-read"\n')
    os.chmod(secret, 0o600)
    settings = BuildSettings(
        cache_dir=str(tmp_path / "cache"),
        arch="9.0",
        use_pch=False,
        light_headers=False,
        fallback=FallbackMode.SEQUENTIAL,
    ).resolved()
    inputs = {
        "kind": "inline",
        "name": "peek",
        "cpp_sources": [f'#include "{secret}"\nint f() {{ return 1; }}'],
        "cuda_sources": [],
        "functions": None,
        "extra_cflags": [],
        "extra_cuda_cflags": [],
        "extra_ldflags": [],
        "extra_include_paths": [],
        "with_cuda": False,
        "is_python_module": True,
        "no_implicit_headers": True,
    }
    reply, record = serve_build(inputs, settings, None)
    assert reply["status"] == "failed"
    assert "sk-secret-read" not in record.log and "No such file" in record.log


@pytest.mark.skipif(not LINUX_SANDBOX or not shutil.which("g++"), reason="needs root, Landlock and g++")
def test_a_build_cannot_fill_the_disk_and_such_a_failure_is_not_kept(tmp_path, monkeypatch):
    """The red team's sixth finding: objects of gigabytes (``char a[1 << 30] = {1};``) filled the build folder in the
    cache. The compiler now works in a tmpfs of bounded size; the build fails for want of space, and that failure is
    not cached (the same inputs are built again next time), since it says nothing of the sources."""
    from cudaforge.eval.extensions import builder

    monkeypatch.setattr(builder, "BUILD_BYTES", 32 << 20)
    settings = BuildSettings(
        cache_dir=str(tmp_path / "cache"),
        arch="9.0",
        use_pch=False,
        light_headers=False,
        fallback=FallbackMode.SEQUENTIAL,
    ).resolved()
    inputs = {
        "kind": "inline",
        "name": "big",
        "cpp_sources": ["char a[256 << 20] = {1};\nint f() { return a[0]; }"],
        "cuda_sources": [],
        "functions": None,
        "extra_cflags": [],
        "extra_cuda_cflags": [],
        "extra_ldflags": [],
        "extra_include_paths": [],
        "with_cuda": False,
        "is_python_module": True,
        "no_implicit_headers": True,
    }
    reply, record = serve_build(inputs, settings, None)
    assert reply["status"] == "failed" and "No space left on device" in record.log
    kept = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in kept) < (1 << 20) and not list((tmp_path / "cache").rglob("build.json"))


def test_a_worker_gets_a_bounded_number_of_builds_each_with_a_bounded_log(tmp_path, monkeypatch):
    """The red team's fifth finding: a loop of failing ``load_inline`` calls grew the verifier to 7.5 GB of kept logs.
    Each worker's builds are counted and their logs kept head and tail."""
    from cudaforge.eval.extensions import service

    monkeypatch.setattr(service, "MAX_BUILD_REQUESTS", 3)
    monkeypatch.setattr(service, "KEPT_LOG", 1000)
    settings = BuildSettings(cache_dir=str(tmp_path / "cache"), arch="9.0").resolved()
    records: list = []
    bad = {
        "kind": "inline",
        "name": "x",
        "cpp_sources": ["int f() { return 1; }"],
        "extra_cflags": ["-include", "/etc/" + "x" * 5000],
    }
    replies = [service.serve_build_counted(dict(bad), records, settings, str(tmp_path), None) for _ in range(5)]
    assert len(records) == 3 and all(len(r.log) <= 1000 for r in records)
    assert [r["status"] for r in replies] == ["failed"] * 5 and "more than 3 builds" in replies[-1]["error"]


def test_no_precompiled_header_is_made_per_macro_set_or_include_folder():
    """The red team's ninth finding: an include folder in the candidate's scratch (new every evaluation) made a new
    half-gigabyte header every evaluation of one source."""
    from cudaforge.eval.extensions.spec import BuildSpec, wants_pch

    def spec(cflags, includes):
        return BuildSpec(
            name="x",
            files={},
            variants=[],
            extra_cflags=cflags,
            extra_cuda_cflags=[],
            extra_ldflags=[],
            extra_include_paths=includes,
            with_cuda=True,
            is_python_module=True,
        )

    assert wants_pch(spec(["-O3"], [])) and wants_pch(spec([], []))
    assert not wants_pch(spec(["-O3"], ["/tmp/cudaforge-cand-1-x"])) and not wants_pch(spec(["-DSEED=7"], []))


@pytest.mark.skipif(not LINUX_SANDBOX or not shutil.which("g++"), reason="needs root, Landlock and g++")
def test_a_compiler_made_to_wait_is_killed_at_the_builds_deadline_and_nothing_is_cached(tmp_path):
    """The second round: ``#include`` of a pipe in the candidate's scratch that nothing writes to held the compile
    until the evaluation's own deadline. Each compiler run now has the build's deadline."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    os.mkfifo(scratch / "feed.h")
    os.chmod(scratch, 0o755)
    os.chmod(scratch / "feed.h", 0o666)
    settings = BuildSettings(
        cache_dir=str(tmp_path / "cache"),
        arch="9.0",
        use_pch=False,
        light_headers=False,
        fallback=FallbackMode.SEQUENTIAL,
        timeout_s=3.0,
    ).resolved()
    inputs = {
        "kind": "inline",
        "name": "wait",
        "cpp_sources": [f'#include "{scratch}/feed.h"\nint f() {{ return 1; }}'],
        "cuda_sources": [],
        "functions": None,
        "extra_cflags": [],
        "extra_cuda_cflags": [],
        "extra_ldflags": [],
        "extra_include_paths": [],
        "with_cuda": False,
        "is_python_module": True,
        "no_implicit_headers": True,
    }
    started = time.monotonic()
    reply, record = serve_build(inputs, settings, None, extra_read=(str(scratch),))
    assert time.monotonic() - started < 30 and reply["status"] == "failed" and "timed out" in record.log
    assert not list((tmp_path / "cache").rglob("build.json"))  # not the sources' fault: built again next time


def test_a_relative_include_folder_in_a_raw_request_is_refused(tmp_path):
    """Red team, round 3: a raw build request with ``extra_include_paths=["."]`` was made absolute against the trusted
    side's working folder (the verifier's, where its payload lies) and named it in the compile line."""
    from cudaforge.eval.extensions.intercept import Hooks
    from cudaforge.eval.extensions.records import BuildRecorder
    from cudaforge.eval.extensions.service import spec_from_inputs

    hooks = Hooks(BuildSettings(cache_dir=str(tmp_path / "cache")), BuildRecorder(), extra_read=(str(tmp_path),))
    request = {
        "kind": "inline",
        "name": "relinc",
        "cpp_sources": ['#include "payload.json"'],
        "cuda_sources": [],
        "functions": None,
        "extra_cflags": [],
        "extra_cuda_cflags": [],
        "extra_ldflags": [],
        "extra_include_paths": ["."],
        "with_cuda": False,
        "is_python_module": True,
    }
    with pytest.raises(build_flags.FlagRefused, match="not an absolute path"):
        spec_from_inputs(hooks, request)
    spec, _ = spec_from_inputs(hooks, {**request, "extra_include_paths": [str(tmp_path)]})  # the candidate's own
    assert spec.extra_include_paths == [str(tmp_path)]


def test_a_kept_jit_cache_never_parses_a_large_or_deep_json_file():
    """Red team, round 3: a JSON file nested 200000 deep in the candidate's Triton cache made the verifier raise
    RecursionError; a 60 MB one cost it 1.6 GB to parse."""
    from cudaforge.eval.jit_cache import JSON_FILE_MAX, is_kernel_file

    keep = (".json",)
    assert is_kernel_file("k.json", b'{"name": "k"}', keep)
    deep = b'{"a":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    assert len(deep) < JSON_FILE_MAX and not is_kernel_file("k.json", deep, keep)
    wide = b'{"a":[' + b"[]," * (JSON_FILE_MAX // 3) + b"[]]}"
    assert not is_kernel_file("k.json", wide, keep)


def test_a_forged_result_in_a_sandboxed_childs_scratch_is_read_bounded(tmp_path):
    from cudaforge.proc.isolation import SANDBOXED_RESULT_CAP, _read_result

    path = tmp_path / "result.json"
    path.write_bytes(b'{"a":[' + b"[]," * (SANDBOXED_RESULT_CAP // 3 + 10) + b"[]]}")
    result, why = _read_result(path, SANDBOXED_RESULT_CAP)
    assert result is None and "exceeds 16 MB" in why


def test_trimming_a_log_is_linear_in_what_the_candidate_made_the_compiler_print():
    """Red team, round 4: ``#warning ////...`` (70 slashes) in a candidate's source put a line in a successful build's
    log on which the path-shortening pattern backtracked exponentially: the trusted side hung until the compile
    deadline and the correct kernel came out ``timeout``."""
    import time as clock

    from cudaforge.eval.extensions.logs import _shorten_paths, trim_compiler_log

    started = clock.monotonic()
    for line in ("/" * 5000, "/a" * 5000, "x.cpp:1:1: warning: #warning " + "/" * 5000):
        _shorten_paths(line)
        trim_compiler_log(line + "\n" + line)
    assert clock.monotonic() - started < 2.0
    assert _shorten_paths("/tmp/b/x_1/main.cpp:12:5: error: e") == "main.cpp:12:5: error: e"
    assert _shorten_paths("in /v/lib/site-packages/torch/include/ATen/x.h:3") == "in <torch>/ATen/x.h:3"
    assert _shorten_paths("/a/main.cppx:1") == "/a/main.cppx:1"


def test_a_worker_reply_with_a_status_of_another_type_is_a_worker_failure():
    """Red team, round 4: ``{"ok": false, "status": []}`` raised TypeError in the trusted side, not WorkerFailure."""
    import socket

    from cudaforge.eval.worker.channel import Channel
    from cudaforge.eval.worker.remote import CandidateProcess, WorkerFailure

    ours, theirs = socket.socketpair()
    process = CandidateProcess.__new__(CandidateProcess)
    process.channel = Channel(ours)
    for status in ([], {"a": 1}, 3, None):
        Channel(theirs).send({"ok": False, "status": status, "message": "forged"})
        with pytest.raises(WorkerFailure) as caught:
            process.request({"op": "call"}, timeout_s=5)
        assert caught.value.status == "runtime_error"
    ours.close()
    theirs.close()
