"""Reply parsing: the code that defines ``ModelNew``, and the JSON object the Judge was asked for.

Models wrap what they are asked for in prose, fence it with backticks or tildes (or not at
all), send several blocks, forget the closing fence, or write JSON with trailing commas and
single quotes. These functions find the intended part or say why there is none; they never
raise, whatever the reply.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from cudaforge import pyast
from cudaforge.proc.text import plain_strings

PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3", "pytorch", "torch"})
"""Fence info strings taken to mean Python."""
JSON_TAGS = frozenset({"", "json", "jsonc", "json5", "javascript", "js"})
"""Fence info strings that may hold the Judge's JSON."""

_THINK_OPEN = re.compile(r"<(think|thinking|reasoning)>", re.I)
_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*)$")
_CODE_START = re.compile(
    r"^(?:(?:import|from)\s+\w|(?:class|def|async\s+def)\s+\w|@\w|[A-Za-z_]\w*\s*(?::[^=]+)?=[^=])"
)
_MODEL_NEW_LINE = re.compile(r"^(?:class\s+ModelNew\b|ModelNew\s*=)", re.M)
_MAX_TRAILING_TRIM = 40
"""Unfenced replies: how many trailing lines of prose may be cut to make the code parse."""
_MAX_STARTS = 10
"""Unfenced replies: how many possible first lines of code are tried."""
MAX_CODE_REPLY_CHARS = 512 * 1024
"""A Coder reply longer than this is refused (a kernel source is tens of kilobytes; a 20 MB reply would be pasted
into the Judge's prompt and the run directory)."""
MAX_JSON_REPLY_CHARS = 256 * 1024
"""A Judge reply longer than this is refused (its JSON is a few hundred bytes)."""
_MAX_SPAN_CHARS = 64 * 1024
"""The longest ``{...}`` span taken for a JSON object; a longer one is not matched (bounds the scan's cost)."""
_MAX_FAILED_SPANS = 32
"""How many ``{`` that open no usable object are tried before the scan stops (nested braces cost n^2 otherwise)."""


@dataclass(frozen=True)
class Block:
    """One fenced block of a reply."""

    info: str
    """The fence's language tag, lower case (``""`` when none)."""
    text: str
    """The block's content, without the fences."""
    closed: bool
    """False when the reply ended before the closing fence."""


@dataclass(frozen=True)
class CodeExtraction:
    """The outcome of ``extract_code``."""

    ok: bool
    """True when ``code`` holds a source defining ``ModelNew``."""
    code: str = ""
    """The chosen source, ending in a newline (empty when not ok)."""
    reason: str = ""
    """Why nothing usable was found (empty when ok)."""


@dataclass(frozen=True)
class JsonExtraction:
    """The outcome of ``extract_json``."""

    ok: bool
    """True when ``data`` holds every required key with a non-empty value."""
    data: dict[str, Any] | None = None
    """The object found (required keys under their canonical names); partial when not ok, None when none."""
    reason: str = ""
    """Why the reply is not usable (empty when ok)."""
    raw: dict[str, Any] | None = None
    """The same object as the reply wrote it, its keys in the reply's own spelling (``"optimisation method"``)."""


def clean_reply(reply: str) -> str:
    """The reply with Windows line ends made ``\\n`` and ``<think>...</think>`` sections removed."""
    text = (reply or "").replace("\r\n", "\n").replace("\r", "\n")
    return _strip_think(text)


def fenced_blocks(text: str) -> list[Block]:
    """The fenced blocks of a Markdown text (```` ``` ```` or ``~~~``, three or more), in order.

    A block runs to the first fence line of the same character at least as long; one never
    closed runs to the end. A backtick fence whose info string holds a backtick is prose.
    """
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m or (m["fence"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        fence, indent = m["fence"], len(m["indent"])
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        body: list[str] = []
        j, closed = i + 1, False
        while j < len(lines):
            if close.match(lines[j]):
                closed = True
                break
            line = lines[j]
            body.append(line[min(indent, len(line) - len(line.lstrip(" "))) :])
            j += 1
        words = m["info"].strip().lower().split()
        blocks.append(Block(words[0].strip("{}.") if words else "", "\n".join(body), closed))
        i = j + 1
    return blocks


def _syntax_error(code: str) -> str:
    """``""`` when the code parses, else ``line N: message``."""
    try:
        pyast.parse(code)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except (ValueError, MemoryError, RecursionError) as exc:  # e.g. null bytes
        return str(exc)
    return ""


def defines_model_new(code: str) -> bool:
    """True when the code defines ``ModelNew`` at top level (by its AST; by its text if it does not parse)."""
    try:
        tree = pyast.parse(code)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return bool(_MODEL_NEW_LINE.search(code))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            return True
        if isinstance(node, ast.Assign):
            targets = node.targets
        else:
            targets = [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in targets):
            return True
    return False


def _finish(code: str) -> str:
    return code.strip("\n") + "\n"


def _from_blocks(blocks: list[Block]) -> CodeExtraction:
    """Choose among fenced blocks: the last one defining ModelNew that parses, else the last one defining it."""
    defining = [b for b in blocks if b.info in PYTHON_TAGS and defines_model_new(b.text)]
    if not defining:
        tags = ", ".join(b.info or "untagged" for b in blocks)
        count = f"{len(blocks)} code block" + ("s" if len(blocks) > 1 else "")
        return CodeExtraction(False, reason=f"the reply's {count} ({tags}) define no class ModelNew at top level")
    parsing = [b for b in defining if not _syntax_error(b.text)]
    if parsing:
        return CodeExtraction(True, _finish(parsing[-1].text))
    last = defining[-1]
    if not last.closed:
        return CodeExtraction(
            False,
            reason=f"the code block defining ModelNew is never closed and does not parse "
            f"({_syntax_error(last.text)}): the reply was probably cut off",
        )
    return CodeExtraction(True, _finish(last.text))  # the evaluator reports its syntax error


def _from_unfenced(text: str) -> CodeExtraction:
    """A reply without fences: the whole text, or the part after leading / before trailing prose."""
    if not _MODEL_NEW_LINE.search(text):
        return CodeExtraction(False, reason="the reply has no code block and no class ModelNew")
    if not _syntax_error(text) and defines_model_new(text):
        return CodeExtraction(True, _finish(text))
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _CODE_START.match(line)][:_MAX_STARTS]
    for start in starts:
        for end in range(len(lines), max(start, len(lines) - _MAX_TRAILING_TRIM), -1):
            if not lines[end - 1].strip():
                continue
            code = "\n".join(lines[start:end])
            if not _syntax_error(code) and defines_model_new(code):
                return CodeExtraction(True, _finish(code))
    first = "\n".join(lines[starts[0] :]) if starts else text
    return CodeExtraction(
        False, reason=f"the reply has no code block and its code does not parse ({_syntax_error(first)})"
    )


def extract_code(reply: str) -> CodeExtraction:
    """The Python source defining ``ModelNew`` in a Coder reply.

    Fenced blocks (```` ```python ````, ```` ```py ````, ```` ``` ````, ``~~~``) are preferred: of
    those defining ``ModelNew`` at top level, the last that parses, else the last (a closed
    block that does not parse is still returned, so the evaluator reports its syntax error;
    an unclosed one is a cut-off reply). A reply without fences is taken whole, or with the
    prose before and after its code cut away. Never raises.
    """
    text = clean_reply(reply)
    if not text.strip():
        return CodeExtraction(False, reason="the reply is empty")
    if len(text) > MAX_CODE_REPLY_CHARS:
        return CodeExtraction(
            False,
            reason=f"the reply is {len(text):,} characters long, more than the "
            f"{MAX_CODE_REPLY_CHARS:,} a kernel's source needs: send the ModelNew source alone",
        )
    blocks = fenced_blocks(text)
    if blocks:
        return _from_blocks(blocks)
    return _from_unfenced(text)


# --------------------------------------------------------------------------- JSON


def _match_brace(text: str, start: int) -> int | None:
    """Index of the ``}`` closing the ``{`` at ``start`` (strings respected), or None (also past
    ``_MAX_SPAN_CHARS``)."""
    depth, quote, i = 0, "", start
    stop = min(len(text), start + _MAX_SPAN_CHARS)
    while i < stop:
        c = text[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = ""
            elif c == "\n" and quote == "'":
                return None  # an apostrophe in prose, not a string
        elif c in "\"'":
            quote = c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


_LOOKS_LIKE_OBJECT = re.compile(r"\{\s*(?:[\"']|[A-Za-z_]\w*\s*:|\})")


def _objects_in(text: str) -> tuple[list[Any], list[str]]:
    """The values of the JSON objects written in a text, outermost first, and the errors of
    brace spans that looked like JSON but did not decode (their insides are searched too)."""
    values: list[Any] = []
    errors: list[str] = []
    failed = 0
    i = text.find("{")
    while i != -1 and failed < _MAX_FAILED_SPANS:
        scanned = _LOOKS_LIKE_OBJECT.match(text, i) is not None
        end = _match_brace(text, i) if scanned else None
        value, error = _decode(text[i : end + 1]) if end is not None else (None, "")
        if end is None or error:
            errors += [error] if error else []
            failed += scanned
            i = text.find("{", i + 1)
            continue
        values.append(value)
        i = text.find("{", end + 1)
    if i != -1:  # the scan gave up: an answer after the noise still counts (the last few objects, tried once each)
        tail: list[int] = []
        j = len(text)
        while len(tail) < 8 and (j := text.rfind("{", 0, j)) >= i:
            tail.append(j)
        for start in reversed(tail):
            end = _match_brace(text, start) if _LOOKS_LIKE_OBJECT.match(text, start) else None
            value, error = _decode(text[start : end + 1]) if end is not None else (None, "")
            if end is not None and not error:
                values.append(value)
    return values, errors


def _next_significant(text: str, i: int) -> str:
    """The next character at or after ``i`` that is not whitespace or inside a ``//`` or ``/* */`` comment."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 2 if "*/" in text[i:] else len(text)
        else:
            return text[i]
    return ""


def repair_json(text: str) -> str:
    """A careful rewrite of almost-JSON: single-quoted strings, trailing commas, comments,
    ``True``/``False``/``None`` and bare keys become JSON; string contents are kept as they are."""
    out: list[str] = []
    i, n = 0, len(text)
    last = ""  # the last significant character emitted
    while i < n:
        c = text[i]
        if c in "\"'":
            j, body = i + 1, []
            while j < n and text[j] != c:
                if text[j] == "\\" and j + 1 < n:
                    body.append("'" if c == "'" and text[j + 1] == "'" else text[j : j + 2])
                    j += 2
                    continue
                body.append('\\"' if c == "'" and text[j] == '"' else text[j])
                j += 1
            out.append('"' + "".join(body) + '"')
            last, i = '"', j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 2 if "*/" in text[i:] else n
        elif c == "," and _next_significant(text, i + 1) in ("}", "]"):
            i += 1
        elif c.isalpha() or c == "_":
            m = re.match(r"[A-Za-z_]\w*", text[i:])
            word = m.group(0) if m else c
            literal = {"True": "true", "False": "false", "None": "null"}.get(word, word)
            if last in ("{", ",") and _next_significant(text, i + len(word)) == ":":
                literal = f'"{word}"'
            out.append(literal)
            last, i = literal[-1], i + len(word)
        else:
            out.append(c)
            if not c.isspace():
                last = c
            i += 1
    return "".join(out)


def _decode(candidate: str) -> tuple[Any, str]:
    """The value of a JSON text (repaired if it must be), or None and the JSON error."""
    # plain_strings: a "\\ud800" escape in the model's JSON would decode to a lone surrogate, which no file, hash
    # or later prompt can hold
    try:
        return plain_strings(json.loads(candidate, strict=False)), ""
    except json.JSONDecodeError as exc:
        error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    try:
        return plain_strings(json.loads(repair_json(candidate), strict=False)), ""
    except (ValueError, RecursionError):
        return None, error


def _dicts_in(value: Any) -> Iterator[dict[str, Any]]:
    """A decoded value's dicts: itself, then nested ones, depth first."""
    if isinstance(value, dict):
        yield value
        for inner in value.values():
            yield from _dicts_in(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _dicts_in(inner)


def _key(name: str) -> str:
    """A key compared loosely: case, spaces, hyphens and -ize/-ise spellings ignored."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower()).replace("optimiz", "optimis")


def _blank(value: Any) -> bool:
    """True for None, a blank string, or an empty list or dict."""
    if isinstance(value, str):
        return not value.strip()
    return value is None or (isinstance(value, (list, dict)) and not value)


def _canonical(obj: dict[str, Any], required: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The object with required keys under their canonical names, and the required keys it lacks or leaves empty."""
    by_key = {_key(k): k for k in obj}
    data = dict(obj)
    missing = []
    for name in required:
        found = by_key.get(_key(name))
        if found is not None and found != name:
            data[name] = data.pop(found)
        if found is None or _blank(data.get(name)):
            missing.append(name)
    return data, missing


def extract_json(reply: str, required_keys: Sequence[str] = ()) -> JsonExtraction:
    """The JSON object a reply holds, with every required key (compared loosely; empty values count as missing).

    Looks in ``json`` fences and at every balanced ``{...}`` in the text; tolerates trailing
    commas, comments, single quotes and Python literals through ``repair_json`` (only when
    plain JSON fails). Of several objects, the last with every required key wins; if none has
    them all, the reply is not ok and the reason names the missing keys. Never raises.
    """
    text = clean_reply(reply)
    if not text.strip():
        return JsonExtraction(False, reason="the reply is empty")
    if len(text) > MAX_JSON_REPLY_CHARS:
        return JsonExtraction(
            False,
            reason=f"the reply is {len(text):,} characters long, more than the "
            f"{MAX_JSON_REPLY_CHARS:,} allowed: answer with the JSON object alone",
        )
    values, errors = [], []
    for block in fenced_blocks(text):
        if block.info in JSON_TAGS and block.text.strip().startswith(("{", "[")):
            value, error = _decode(block.text.strip())
            values += [value] if not error else []
            errors += [error] if error else []
    found, bad = _objects_in(text)
    values, errors = values + found, errors + bad
    objects = [obj for value in values for obj in _dicts_in(value)]
    if not objects:
        if not errors:
            return JsonExtraction(False, reason="the reply holds no JSON object")
        return JsonExtraction(False, reason=f"the reply holds no valid JSON object ({errors[-1]})")
    scored = [(*_canonical(obj, required_keys), obj) for obj in objects]
    complete = [(data, obj) for data, missing, obj in scored if not missing]
    if complete:
        return JsonExtraction(True, complete[-1][0], raw=dict(complete[-1][1]))
    data, missing, obj = min(reversed(scored), key=lambda dmo: len(dmo[1]))
    reason = f"the JSON object lacks (or leaves empty) the keys: {', '.join(missing)}"
    return JsonExtraction(False, data, reason=reason, raw=dict(obj))


def _strip_think(text: str) -> str:
    """Text without ``<think>...</think>`` (``thinking``, ``reasoning``) blocks, each open tag closed by the next
    close tag of its name; an open tag that is never closed stays. Linear in the text (a lazy ``.*?</\1>`` pattern
    rescanned to the end from every unclosed ``<think>``: 55 s on 256 KB of them)."""
    lower, out, pos, unclosed = text.lower(), [], 0, set()
    for found in _THINK_OPEN.finditer(text):
        tag = found.group(1).lower()
        if found.start() < pos or tag in unclosed:
            continue
        end = lower.find(f"</{tag}>", found.end())
        if end < 0:
            unclosed.add(tag)  # no later open tag of this name has a close either
            continue
        out.append(text[pos : found.start()])
        pos = end + len(tag) + 3
    out.append(text[pos:])
    return "".join(out)
