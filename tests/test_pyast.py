"""Our one ``ast.parse``: one thread at a time (CPython 3.11's AST constructor is not thread-safe)."""

from __future__ import annotations

import ast
import threading
import time
from types import SimpleNamespace

import pytest

from cudaforge import pyast


def test_parses_run_one_at_a_time_and_errors_pass_through(monkeypatch):
    inside, most = [0], [0]
    real = ast.parse

    def slow_parse(source, filename="<unknown>"):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.02)  # long enough for the other threads to try to enter
        inside[0] -= 1
        return real(source, filename=filename)

    monkeypatch.setattr(pyast, "ast", SimpleNamespace(parse=slow_parse))  # pytest itself parses with ast.parse
    threads = [threading.Thread(target=pyast.parse, args=("x = 1\n",)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    monkeypatch.undo()
    with pytest.raises(SyntaxError):
        pyast.parse("def (:\n")
    with pytest.raises(RecursionError):
        pyast.parse("y = " + " + ".join(["y"] * 100_000))  # the deep-expression hack
    assert isinstance(pyast.parse("x = 1\n"), ast.Module)  # and the next parse is fine


def test_a_recursion_depth_mismatch_from_another_thread_is_retried(monkeypatch):
    real, calls = ast.parse, []

    def flaky(source, filename="<unknown>"):
        calls.append(source)
        if len(calls) == 1:  # what a parse in a thread outside our lock can cause
            raise SystemError("AST constructor recursion depth mismatch (before=24, after=21)")
        return real(source, filename=filename)

    monkeypatch.setattr(pyast, "ast", SimpleNamespace(parse=flaky))
    assert isinstance(pyast.parse("x = 1\n"), ast.Module) and len(calls) == 2
    other = SimpleNamespace(parse=lambda source, filename="": (_ for _ in ()).throw(SystemError("other")))
    monkeypatch.setattr(pyast, "ast", other)
    with pytest.raises(SystemError, match="other"):  # any other SystemError is not ours to hide
        pyast.parse("x = 1\n")
