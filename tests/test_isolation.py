"""Isolation: every fault of untrusted code becomes an outcome, never a parent crash."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from cudaforge.proc.isolation import run_isolated, scrubbed_env

TESTS = str(Path(__file__).resolve().parent)


def _test_sandbox():
    """A sandbox whose root also holds this folder of tests (the stand-in entries live here; a checkout's other
    folders stay out of a sandbox by default)."""
    from cudaforge.proc.sandbox import Sandbox, default_read_paths

    return Sandbox(read=[*default_read_paths(), TESTS])


def run(entry, payload=None, **kw):
    env = {"PYTHONPATH": TESTS}
    kw.setdefault("timeouts", {})
    kw.setdefault("default_timeout", 30)
    return run_isolated(f"standins.entries:{entry}", payload or {}, env=env, **kw)


def test_ok_round_trip_with_scrubbed_env_and_temp_cwd(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "t")
    monkeypatch.setenv("WANDB_API_KEY", "w")
    monkeypatch.setenv("HARMLESS", "1")
    out = run("echo", {"x": [1, 2]}, gpu=3)
    assert out.status == "ok" and out.result["echo"] == {"x": [1, 2]}
    env = out.result["env"]
    assert "OPENAI_API_KEY" not in env and "MY_SERVICE_TOKEN" not in env and "WANDB_API_KEY" not in env
    assert env["HARMLESS"] == "1" and env["CUDA_VISIBLE_DEVICES"] == "3"
    assert out.result["cwd"] != os.getcwd() and not Path(out.result["cwd"]).exists()  # temp dir removed


def test_no_gpu_hides_every_gpu():
    assert run("echo", gpu=None).result["env"]["CUDA_VISIBLE_DEVICES"] == ""


def test_hang_times_out_and_the_whole_group_dies(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    started = time.monotonic()
    out = run("hang", {"spawn_child": True, "pidfile": str(pidfile), "phase": "compile"}, timeouts={"compile": 1.5})
    assert out.status == "timeout" and out.phase == "compile"
    assert "1.5 s timeout" in out.error
    assert time.monotonic() - started < 20
    for _ in range(50):
        if pidfile.exists() and pidfile.read_text():
            break
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    time.sleep(0.2)
    status = Path(f"/proc/{pid}/status")
    # The grandchild was killed with its group: gone, or a zombie nobody has reaped yet.
    assert not status.exists() or "State:\tZ" in status.read_text()


def test_phase_timeouts_are_per_phase():
    out = run("phases", {"sleep": 0.6}, timeouts={"a": 5, "b": 5, "c": 5})
    assert out.status == "ok" and set(out.phase_seconds) >= {"a", "b", "c"}
    assert all(out.phase_seconds[p] >= 0.5 for p in "abc")
    out = run("phases", {"sleep": 0.6}, timeouts={"a": 5, "b": 0.3, "c": 5})
    assert out.status == "timeout" and out.phase == "b"


@pytest.mark.parametrize(
    "entry, words",
    [("segfault", "SIGSEGV"), ("oom_kill", "out-of-memory"), ("abort", "SIGABRT"), ("exits", "exited with code 3")],
)
def test_crashes_are_described(entry, words):
    out = run(entry)
    assert out.status == "crashed" and words in out.error


def test_exception_is_reported_with_its_traceback():
    out = run("raises")
    assert out.status == "error" and "ValueError: the entry failed on purpose" in out.error


def test_scrubbed_env_keeps_path_and_adds_extra(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    env = scrubbed_env({"EXTRA": "1"})
    assert "ANTHROPIC_API_KEY" not in env and env["EXTRA"] == "1" and env["PATH"] == os.environ["PATH"]


def test_parent_survives_many_faults_in_a_row():
    statuses = [run(e).status for e in ("segfault", "raises", "echo", "abort", "echo")]
    assert statuses == ["crashed", "error", "ok", "crashed", "ok"]
    assert sys.executable  # still here


def test_wrapper_prefixes_the_child_command():
    out = run("echo", {"x": 1}, wrapper=["env", "CUDAFORGE_WRAPPED=yes"])
    assert out.status == "ok", out.error
    assert out.result["env"]["CUDAFORGE_WRAPPED"] == "yes" and out.result["echo"] == {"x": 1}


# --------------------------------------------------------------------------- standby children


def standby(prepare="prepare_marker", entry="echo_prepared", **kw):
    from cudaforge.proc.isolation import Standby

    return Standby(f"standins.entries:{entry}", f"standins.entries:{prepare}", env={"PYTHONPATH": TESTS}, **kw)


def wait_ready(child, limit=60.0):
    started = time.monotonic()
    while not child.ready():
        assert time.monotonic() - started < limit, "the standby never became ready"
        time.sleep(0.02)


def test_standby_prepares_before_its_payload_and_serves_it_once(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "secret")
    child = standby(gpu=2)
    wait_ready(child)
    handed = time.time()
    out = child.run({"x": 1}, timeouts={}, default_timeout=30)
    assert out.status == "ok" and out.result["echo"] == {"x": 1}
    prepared = out.result["prepared"]
    assert prepared["pid"] == out.result["pid"]  # the same process prepared and ran the payload
    assert prepared["at"] < handed and prepared["claimed_at_prepare"] is False
    assert out.result["stdin"] == ""  # the go-ahead is consumed: the entry's stdin is empty
    env = out.result["env"]
    assert "ANTHROPIC_API_KEY" not in env and env["CUDA_VISIBLE_DEVICES"] == "2"
    assert not Path(out.result["cwd"]).exists()
    assert "ready" not in out.phase_seconds or out.phase_seconds["ready"] < 5  # idle waiting is not a phase
    assert out.phase_seconds["start"] > 0 and "work" in out.phase_seconds
    assert not child.alive()
    with pytest.raises(RuntimeError, match="one payload"):
        child.run({}, timeouts={})


def test_a_claimed_standby_stops_waiting_in_its_preparation():
    child = standby("prepare_until_claimed")
    time.sleep(0.5)
    assert not child.ready()  # still waiting, as for a busy GPU's lock
    out = child.run({}, timeouts={}, default_timeout=30)
    assert out.status == "ok"
    assert out.result["prepared"]["claimed"] is True and out.result["prepared"]["waited_s"] < 30


def test_a_failed_preparation_is_not_fatal():
    out = standby("prepare_fails").run({"y": 2}, timeouts={}, default_timeout=30)
    assert out.status == "ok" and out.result["echo"] == {"y": 2} and out.result["prepared"] == {}
    assert "preparation broke" in out.stderr_tail


def test_standby_faults_and_timeouts_are_outcomes_as_without_one():
    out = standby(entry="hang").run({"phase": "work"}, timeouts={"work": 1.0}, default_timeout=30)
    assert out.status == "timeout" and "'work'" in out.error
    out = standby(entry="segfault").run({}, timeouts={}, default_timeout=30)
    assert out.status == "crashed" and "SIGSEGV" in out.error


def test_standby_match_and_close():
    child = standby(gpu="1")
    assert child.matches("standins.entries:echo_prepared", 1, {"PYTHONPATH": TESTS})
    assert not child.matches("standins.entries:echo_prepared", 0, {"PYTHONPATH": TESTS})
    assert not child.matches("standins.entries:echo_prepared", 1, {})
    pid, workdir = child.watch.proc.pid, child.workdir
    child.close()
    assert not child.alive() and not workdir.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_folders_a_child_noted_go_with_it_when_it_is_killed(tmp_path):
    """A discarded standby, and a child killed for a timeout, leave no scratch folder (a sandboxed worker's)."""
    from cudaforge.proc.isolation import SCRATCH_NOTE

    child = standby("prepare_scratch")
    wait_ready(child)
    scratch = Path((child.workdir / SCRATCH_NOTE).read_text().strip())
    assert (scratch / "file").exists()
    child.close()
    assert not scratch.exists() and not child.workdir.exists()
    out = run("hang_with_scratch", {"record": str(tmp_path / "scratch")}, timeouts={"work": 1.0})
    assert out.status == "timeout"
    scratch = Path((tmp_path / "scratch").read_text())
    assert scratch.name.startswith("cudaforge-cand-") and not scratch.exists()


def test_a_standby_whose_parent_goes_away_exits_without_a_result():
    import subprocess

    script = (  # noqa: UP031
        "import sys, time; sys.path.insert(0, %r)\n"
        "from cudaforge.proc.isolation import Standby\n"
        "s = Standby('standins.entries:echo_prepared', 'standins.entries:prepare_marker', env={'PYTHONPATH': %r})\n"
        "print(s.watch.proc.pid, s.workdir, flush=True)\n"
    ) % (str(Path(TESTS).parent), TESTS)
    parent = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    pid, workdir = parent.stdout.split()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(int(pid), 9)
        pytest.fail("the orphaned standby kept running")
    assert not Path(workdir).exists()  # nobody is left to read it: the child removed it


@pytest.mark.slow
def test_announcing_phases_never_extends_a_deadline():
    """A phase's budget counts all the time spent in it, however often it is announced; junk lines are ignored;
    and the whole run is capped by the sum of the budgets."""
    started = time.monotonic()
    out = run("spam_phases", {"phases": ["a"]}, timeouts={"a": 1.5})
    assert out.status == "timeout" and "'a'" in out.error and time.monotonic() - started < 10
    started = time.monotonic()
    out = run("spam_phases", {"phases": ["a", "b"]}, timeouts={"a": 2.0, "b": 2.0}, default_timeout=0.5)
    assert out.status == "timeout" and time.monotonic() - started < 12


@pytest.mark.parametrize(
    "text, repeat, words",
    [
        ('{"status": "correct"', 1, "malformed"),
        ("[1, 2, 3]", 1, "not a JSON object"),
        ("[" * 100000 + "]" * 100000, 1, "malformed"),
        ("\xff\xfe", 1, "malformed"),
    ],
)
def test_a_malformed_result_file_is_a_crash_not_an_exception(text, repeat, words):
    out = run("write_result", {"text": text, "repeat": repeat})
    assert out.status == "crashed" and words in out.error


def _gone(pid: int, limit: float = 10.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_a_trusted_childs_result_is_taken_once_delivered_and_the_child_killed(tmp_path):
    """A child of ours that marked its result delivered is not waited for (a process that held a CUDA context takes
    a while to go); its group is killed. Without the mark the parent waits as before (here, to the timeout)."""
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    out = run("delivers_then_lingers", {"pidfile": str(pidfile)}, default_timeout=60, trusted=True)
    assert out.status == "ok" and out.result == {"delivered": True} and time.monotonic() - started < 30
    assert _gone(int(pidfile.read_text()))
    # no mark, a mark without a result, or a child that is not ours alone: waited for (here, to the timeout)
    for payload, trusted in (({"mark": False}, True), ({"result": False}, True), ({}, False)):
        out = run(
            "delivers_then_lingers",
            {"pidfile": str(pidfile), **payload},
            timeouts={"start": 2.0},
            default_timeout=2.0,
            trusted=trusted,
        )
        assert out.status == "timeout"
    from cudaforge.proc.isolation import _describe_exit

    assert "killed by the evaluator" in _describe_exit(None)  # no exit code to describe: said, never raised
    child = standby(entry="delivers_then_lingers", trusted=True)
    wait_ready(child)
    out = child.run({"pidfile": str(pidfile)}, timeouts={}, default_timeout=60)
    assert out.status == "ok" and out.result == {"delivered": True} and _gone(int(pidfile.read_text()))


def test_the_evaluator_trusts_its_verifiers_mark_only_behind_the_whole_wall():
    from cudaforge.eval.evaluator import Evaluator

    assert Evaluator({"device": "cpu"})._trusted_verifier()
    assert not Evaluator({"device": "cpu", "sandbox": "off"})._trusted_verifier()
    assert not Evaluator({"device": "cpu", "allow_weak_sandbox": True})._trusted_verifier()


def test_the_child_runner_marks_its_result_delivered_by_the_name_the_parent_looks_for():
    from cudaforge.proc.isolation import RESULT_DELIVERED

    out = run("echo", {"x": 1}, keep_workdir=True)
    try:
        assert out.status == "ok" and (Path(out.result["cwd"]) / RESULT_DELIVERED).is_file()
    finally:
        import shutil

        shutil.rmtree(out.result["cwd"], ignore_errors=True)


def test_a_sandboxed_child_runs_in_its_scratch_and_reads_nothing_outside(tmp_path):
    """``run_isolated(sandbox=...)``: the child's working directory and home are the sandbox's scratch, a file outside
    its read list stays unreadable, ``collect`` sees what it left once it is dead, and the scratch is gone after."""

    secret = tmp_path / "secret.txt"
    secret.write_text("sk-not-for-candidates")
    left = {}

    def collect(scratch):
        left["text"] = (scratch / "left.txt").read_text()
        left["scratch"] = scratch

    outcome = run("sandbox_probe", {"secret": str(secret)}, sandbox=_test_sandbox(), collect=collect)
    assert outcome.status == "ok", outcome
    seen = outcome.result
    assert seen["cwd"] == seen["home"] == str(left["scratch"]) and left["text"] == "made in the sandbox"
    assert not left["scratch"].exists()
    if (outcome.sandbox or {}).get("landlock"):
        assert "secret" not in seen and seen["secret_error"] in ("PermissionError", "FileNotFoundError")
    if (outcome.sandbox or {}).get("rootfs") == "minimal":
        assert seen["secret_error"] == "FileNotFoundError"  # not in the sandbox's root at all


def test_a_link_left_for_the_parent_to_read_is_not_followed(tmp_path):
    """A sandboxed child owns its working directory: a link there in place of its result (to a file it cannot read
    itself) is a crash for the parent, never a read through the link."""

    secret = tmp_path / "secret.txt"
    secret.write_text('{"stolen": "sk-not-for-candidates"}')
    outcome = run("link_result", {"secret": str(secret)}, sandbox=_test_sandbox())
    assert outcome.status == "crashed" and outcome.result is None
    assert "sk-not-for" not in outcome.error + outcome.stdout_tail + outcome.stderr_tail


def test_a_program_the_sandbox_cannot_execute_is_named(tmp_path):
    """A wrapper outside what the sandbox may read (here a script in a temporary folder) never runs; the outcome says
    which program and why, not just an exit code."""

    tool = tmp_path / "tool"
    tool.write_text('#!/bin/sh\nexec "$@"\n')
    tool.chmod(0o755)
    outcome = run("echo", {}, sandbox=_test_sandbox(), wrapper=[str(tool)])
    assert outcome.status == "crashed" and f"could not run {tool}" in outcome.error, outcome.error


def test_every_child_of_ours_has_its_exit_said_by_one_describer():
    """The isolated children and the evaluation's sandboxed worker share one exit describer and one log reader."""
    import signal

    from cudaforge.eval.worker import remote
    from cudaforge.proc.isolation import SANDBOX_REFUSED, describe_exit, tail

    assert remote.describe_exit is describe_exit and remote.tail is tail
    assert describe_exit(-signal.SIGSEGV) == "the process died of SIGSEGV (segmentation fault)"
    worker = describe_exit(128 + signal.SIGKILL, who="the worker", sandboxed=True)
    assert worker == "the worker died of SIGKILL (killed: often the out-of-memory killer)"
    assert describe_exit(128 + signal.SIGKILL) == "the process exited with code 137"  # no init in between: a status
    assert "sandbox refused to start the worker" in describe_exit(SANDBOX_REFUSED, who="the worker", sandboxed=True)
    assert describe_exit(None, gone="the worker stopped answering") == "the worker stopped answering"
    assert describe_exit(-200) == "the process died of signal 200"


def test_the_atomic_writer_never_writes_through_what_is_planted_beside_it(tmp_path):
    """``write_atomic`` makes its temporary file new under a name no one can guess: a link planted at any name
    beside the target is not written through, and a failed write leaves no temporary file behind."""
    import os

    from cudaforge.proc.files import write_atomic

    victim = tmp_path / "victim"
    victim.write_text("untouched")
    for name in (".result.json.tmp", f".result.json.{os.getpid()}.tmp", "result.json.tmp"):
        os.symlink(victim, tmp_path / name)
    write_atomic(tmp_path / "result.json", '{"ok": true}')
    assert victim.read_text() == "untouched" and not (tmp_path / "result.json").is_symlink()
    assert (tmp_path / "result.json").read_text() == '{"ok": true}'
    assert oct((tmp_path / "result.json").stat().st_mode & 0o777) == oct(0o666 & ~_umask())
    write_atomic(tmp_path / "deep" / "b.bin", b"\x00\x01")
    assert (tmp_path / "deep" / "b.bin").read_bytes() == b"\x00\x01"
    with pytest.raises(TypeError):
        write_atomic(tmp_path / "c", 3)  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()) == []


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_progress_file_of_fresh_phase_names_keeps_a_bounded_record(tmp_path):
    """The red team: a sandboxed child writes its own progress.jsonl, and every fresh phase name became a key of the
    parent's record (hundreds of MiB in 20 s). Past MAX_PHASES names, a new one counts as OTHER_PHASE; names are
    plain UTF-8 (a lone surrogate in one made the stored record unwritable)."""
    from cudaforge.proc import isolation

    lines = "".join(json.dumps({"phase": f"p{i}\ud800"}) + "\n" for i in range(5000))
    (tmp_path / "progress.jsonl").write_text(lines)
    watch = isolation._Watch(None, tmp_path, time.monotonic())
    for _ in range(50):  # the file is read PROGRESS_READ_CAP bytes at a time
        watch.read()
    assert len(watch.phase_seconds) <= isolation.MAX_PHASES + 2  # the names kept, the phase it is in, "other"
    assert isolation.OTHER_PHASE in watch.phase_seconds or watch.phase == isolation.OTHER_PHASE
    json.dumps(watch.phase_seconds, ensure_ascii=False).encode("utf-8")
