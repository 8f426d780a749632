"""The compile and link flags a candidate may pass to ``load_inline``/``load``: parsed and allow-listed.

A candidate's flags reach nvcc, the host compiler and the linker, which ninja runs through ``/bin/sh`` inside
the compiler's sandbox. Whatever the sandbox holds, flags that read or write files by name, change the toolchain or
carry shell syntax have no place in a kernel's build, and are refused here on the trusted side with one line the
Coder can act on (:class:`FlagRefused`). What is allowed: macros (``-D``/``-U``, plain names and values),
optimisation and debug levels, language standards, warnings (``-W...`` but not the ``-Wl,``/``-Wa,``/``-Wp,``
pass-throughs), code-generation options (``-f...``, ``-m...``) but those that name files or load plugins, nvcc's
own options for architectures, fast math, register limits, ptxas verbosity and relaxed constexpr, ``-Xcompiler``
with host flags from this same list, include folders the compiler's sandbox can read anyway (relative ones, and
the toolkit's and the interpreter's), and ``-l<library>`` for the linker.
"""

from __future__ import annotations

import os
import re

_MACRO = re.compile(r"^-([DU])([A-Za-z_][A-Za-z0-9_]*)(=[A-Za-z0-9_.+\-]*)?$")
"""``-DNAME``, ``-DNAME=value`` (value: letters, digits, ``_ . + -``), ``-UNAME``."""

_PLAIN = {
    "-O",
    "-O0",
    "-O1",
    "-O2",
    "-O3",
    "-Os",
    "-Ofast",
    "-Og",
    "-g",
    "-g0",
    "-g1",
    "-g2",
    "-g3",
    "-ggdb",
    "-w",
    "-pedantic",
    "-pthread",
    "-fopenmp",
    "-fPIC",
    "-fpic",
    "-ffast-math",
    "-DNDEBUG",
    "-v",
    "--verbose",
    "-shared",
}
"""Host-compiler flags allowed exactly as written (the device compiler's come from the vendor: ``device_flags``)."""

_PATTERNS = [
    re.compile(r"^--?std=(c|c\+\+|gnu|gnu\+\+)(\d\d|[0-9a-z]{2,3})$"),
    re.compile(r"^-W(?![lap],)[A-Za-z0-9][A-Za-z0-9_=+\-]*$"),  # warnings, not the -Wl, -Wa, -Wp pass-throughs
    re.compile(r"^-m[a-z0-9][a-z0-9_=.\-]*$"),  # -march=native, -mavx2, -mtune=...
    re.compile(
        r"^-f(?!plugin|dump|profile|save-optimization|debug-prefix-map|file-prefix-map|macro-prefix-map|"
        r"opt-info|callgraph-info|auto-profile|create-profile|record|stack-usage|pch|sanitize|"
        r"instrument|coverage|test-coverage|lto|use-ld|diagnostics-|ident|working-directory|modules|module-|deps|"
        r"compare-debug|self-test)"
        r"[a-z0-9][a-z0-9_=.,+\-]*$"
    ),
]
"""Families of allowed host-compiler flags (anything that names a file or loads a plugin excluded)."""

_SPLIT = {"-Xcompiler", "--compiler-options", "-D", "-U", "-I", "-isystem", "-std", "-x"}
"""Options whose value may come as the next item (``["-D", "X=1"]``): joined before checking."""


def _device() -> tuple[set[str], list[re.Pattern[str]], set[str]]:
    """The vendor's device-compiler flags (``GpuVendor.device_flags``), compiled once."""
    global _DEVICE
    if _DEVICE is None:
        from cudaforge.vendors import current

        found = current().device_flags()
        _DEVICE = (set(found["plain"]), [re.compile(f"^(?:{p})$") for p in found["patterns"]], set(found["split"]))
    return _DEVICE


_DEVICE: tuple[set[str], list[re.Pattern[str]], set[str]] | None = None

_REFUSED = {
    "-include": "reads a file of its choosing into every compile",
    "-imacros": "reads a file of its choosing into every compile",
    "-B": "changes where the compiler finds its own programs",
    "-specs": "replaces the compiler's driver specs",
    "-fplugin": "loads a plugin into the compiler",
    "-wrapper": "runs the compiler under another program",
    "@": "reads more flags from a file",
    "-save-temps": "writes intermediate files outside the build",
    "-M": "writes dependency files by name",
    "-o": "names the output file",
    "-ccbin": "replaces the host compiler",
    "--compiler-bindir": "replaces the host compiler",
    "-Xlinker": "passes options to the linker",
    "--linker-options": "passes options to the linker",
    "-Wl,": "passes options to the linker",
    "-Wa,": "passes options to the assembler",
    "-Wp,": "passes options to the preprocessor",
    "-odir": "names the output folder",
    "--output-directory": "names the output folder",
    "--keep": "keeps intermediate files by name",
    "-keep": "keeps intermediate files by name",
    "--sysroot": "replaces the system root",
    "-isysroot": "replaces the system root",
    "-T": "names a linker script",
    "-L": "adds a library folder",
    "-fuse-ld": "replaces the linker",
    "-dumpdir": "names an output folder",
    "-dumpbase": "names output files",
    "-iprefix": "names include folders indirectly",
    "--dryrun": "does not compile",
    "-E": "does not compile",
}
"""Flags refused with the reason given (matched as prefixes)."""

_LIBRARY = re.compile(r"^-l[A-Za-z0-9_+.\-]+$")


class FlagRefused(ValueError):
    """A candidate's flag is not allowed; the message is one line the Coder can act on."""


def _reason(flag: str) -> str:
    for prefix, why in _REFUSED.items():
        if flag.startswith(prefix):
            return why
    if any(c in flag for c in "`$;|&<>(){}\\'\"\n\r\t *?![]#~"):
        return "holds shell syntax or spaces"
    return "is not on the allow-list of compile flags"


def _include_ok(path: str, roots: tuple[str, ...]) -> bool:
    if not path or any(c in path for c in "`$;|&<>(){}\\'\"\n\r\t *?![]#~"):
        return False
    if path.startswith("="):  # GCC reads a leading = as the system root: any absolute folder
        return False
    if not os.path.isabs(path):
        return ".." not in path.split("/")
    real = os.path.normpath(path)
    return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def _joined(flags: list[str], device: bool = True) -> list[str]:
    """``flags`` with each flag that takes its value as the next argument joined to it (``-D X`` -> ``-DX``); the
    device compiler's own such flags (``-Xptxas``) only for ``device`` flags: the host compiler knows none of them,
    and would read their "value" as a flag of its own."""
    out: list[str] = []
    items = list(flags)
    i = 0
    while i < len(items):
        flag = items[i]
        if (flag in _SPLIT or (device and flag in _device()[2])) and i + 1 < len(items):
            sep = "" if flag in ("-D", "-U", "-I", "-t") else ("=" if flag in ("-std",) else " ")
            out.append(f"{flag}{sep}{items[i + 1]}")
            i += 2
            continue
        out.append(flag)
        i += 1
    return out


def check(flags: list[str], what: str, include_roots: tuple[str, ...] = ()) -> list[str]:
    """``flags`` as the candidate gave them for ``what`` (``extra_cflags``, ``extra_cuda_cflags``,
    ``extra_ldflags``), checked; returns them unchanged when every one is allowed, else raises
    :class:`FlagRefused` naming the first that is not and why. Include folders (``-I``/``-isystem``) must be
    relative to the build or inside ``include_roots``."""
    # torch writes the flags into the build file joined by spaces, so the compiler sees each word of a flag as an
    # argument of its own: the words are what is checked ("-Xptxas -include" in extra_cflags is two arguments to
    # g++, the second one refused); empty ones are dropped, as torch drops them
    for f in flags:
        if any((c.isspace() and c not in " \t") or (ord(c) < 32 and c != "\t") or ord(c) == 127 for c in f):
            raise FlagRefused(
                f"{what}: the flag {f[:80]!r} holds a line break or another control character (torch writes the flags "
                "into one line of the build file); drop it, and separate flags with spaces"
            )
    words = [word for f in flags for word in f.split()]
    for flag in _joined(words, device=what == "extra_cuda_cflags"):
        _check_one(flag, what, include_roots)
    return list(flags)


def _check_one(flag: str, what: str, include_roots: tuple[str, ...]) -> None:
    refuse = (  # noqa: E731
        lambda why: FlagRefused(
            f"{what}: the flag {flag[:80]!r} {why}; drop it (allowed: macros, -O levels, -std=, warnings, -f/-m "
            "code-generation options, architectures, fast math, register limits, -l<library>)"
        )
    )
    if what == "extra_ldflags":
        if _LIBRARY.match(flag) or flag in ("-shared", "-pthread", "-fopenmp", "-lineinfo"):
            return
        raise refuse(_reason(flag) if not flag.startswith("-L") else "adds a library folder of its choosing")
    if flag.startswith(("-I", "-isystem", "-iquote", "-idirafter")):
        path = flag.split(" ", 1)[1] if " " in flag else re.sub(r"^-(I|isystem|iquote|idirafter)", "", flag)
        if _include_ok(path.strip(), include_roots):
            return
        raise refuse("names an include folder outside the build and the toolchain")
    if flag.startswith(("-Xcompiler", "--compiler-options")):
        inner = re.sub(r"^(-Xcompiler|--compiler-options)[= ]?", "", flag)
        if not inner.strip(","):  # a last one would pass on whatever the build appends after it
            raise refuse("passes nothing on")
        for part in inner.split(","):
            if part:
                _check_one(part, what, include_roots)
        return
    plain, patterns, _ = _device()
    if flag in _PLAIN or flag in plain or _MACRO.match(flag) or any(p.match(flag) for p in (*_PATTERNS, *patterns)):
        if any(c in flag for c in "`$;|&<>(){}\\'\"\n\r\t*?!#~"):  # belt and braces: nothing for /bin/sh
            raise refuse("holds shell syntax")
        return
    raise refuse(_reason(flag))


PCH_FLAGS = re.compile(r"^(-O[0-3s]?|-Ofast|-Og|-g[0-3]?|-w|-std=(c|gnu)\+\+\d\d|-fPIC|-DNDEBUG|-Wall|-Wextra)\Z")
"""Host flags a precompiled header is made for: the common ones. Any other flag set compiles the binding file
without one (a precompiled header per distinct set of macros would grow the cache without bound)."""


def _family(flag: str) -> str:
    """What a flag sets (``-O2`` and ``-O3`` both set the optimisation level: the last one wins)."""
    return (
        "-O"
        if flag.startswith("-O")
        else "-g"
        if flag.startswith("-g")
        else "-std"
        if flag.startswith("-std")
        else flag
    )


def pch_worthy(extra_cflags: list[str]) -> bool:
    """Whether a build with these host flags (the candidate's ``extra_cflags``) gets a precompiled header: common
    flags only, and at most one of each kind (so their order changes nothing, and :func:`pch_order` may sort them)."""
    families = [_family(f) for f in extra_cflags]
    return all(PCH_FLAGS.match(f) for f in extra_cflags) and len(set(families)) == len(families)


def pch_order(extra_cflags: list[str]) -> list[str]:
    """The flags of a :func:`pch_worthy` build in one order: every ordering of one set makes one header, not one each
    (two orderings of ``-O2 -w -DNDEBUG -fPIC`` once made two headers of half a gigabyte)."""
    return sorted(extra_cflags)
