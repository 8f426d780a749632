"""The sandbox and the trusted verifier, tried as an adversarial candidate would try them.

First the sandbox itself (``cudaforge.proc.sandbox``): what it lets a program read, write, reach and signal,
that it kills every process it holds, that ``required`` refuses what ``auto`` reports. Then the threat
corpus (the ``THREAT:`` entries of benchmarks/hacks/) through the real evaluator on the CPU, with the
name-matching guards off, and afterwards: the project's files, a run directory and a build cache
unchanged (checksums), no process of any candidate still alive, no planted secret in any result, and the
evaluator still evaluating. A control run without the sandbox shows the secret hack is a real one.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cudaforge.eval.evaluator import Evaluator
from cudaforge.eval.guards.corpus import check_result, find_entry_task, load_corpus
from cudaforge.proc.sandbox import Sandbox, SandboxMode, describe
from cudaforge.proc.sandbox.linux import landlock_abi
from cudaforge.types import EvalStatus, SandboxUnavailable

REPO = Path(__file__).resolve().parent.parent
THREATS = [e for e in load_corpus() if e.threat and not e.needs_cuda]
ORPHAN_MARK = "cudaforge-orphan-canary"
LINUX_SANDBOX = sys.platform == "linux" and landlock_abi() > 0


def run_in_sandbox(code: str, tmp_path: Path, **kwargs) -> tuple[subprocess.CompletedProcess, dict]:
    sandbox = Sandbox(mode=kwargs.pop("mode", SandboxMode.auto), scratch=str(tmp_path / "scratch"), **kwargs)
    tmp_path.mkdir(parents=True, exist_ok=True)
    os.makedirs(sandbox.scratch, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": sandbox.scratch}
    started = sandbox.start([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status = started.status()
    out, err = started.proc.communicate(timeout=120)
    started.kill()
    return subprocess.CompletedProcess([], started.proc.returncode, out.decode(), err.decode()), status


needs_landlock = pytest.mark.skipif(
    not LINUX_SANDBOX, reason="needs Linux with Landlock (the sandbox degrades without)"
)


@needs_landlock
def test_the_sandbox_confines_files_network_processes_and_signals(tmp_path):
    secret = tmp_path / "outside" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("canary")
    code = f"""
import os, socket, json
out = {{}}
try: open({str(secret)!r}).read(); out["read_outside"] = True
except OSError: out["read_outside"] = False
try: open({str(tmp_path / "outside" / "new.txt")!r}, "w").write("x"); out["write_outside"] = True
except OSError: out["write_outside"] = False
open("mine.txt", "w").write("ok"); out["write_scratch"] = open("mine.txt").read() == "ok"
try: socket.create_connection(("127.0.0.1", 22), timeout=1); out["tcp"] = True
except OSError as e: out["tcp"] = False
out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try: os.kill(1, 9); out["signal_init"] = True
except OSError: out["signal_init"] = False
out["caps"] = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
out["init_cmdline"] = open("/proc/1/cmdline", "rb").read().decode(errors="replace")
out["spec_env"] = [k for k in os.environ if "SPEC" in k]
print(json.dumps(out))
"""
    proc, status = run_in_sandbox(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["read_outside"] is False and seen["write_outside"] is False and seen["write_scratch"] is True
    assert seen["tcp"] is False and seen["signal_init"] is False and int(seen["caps"], 16) == 0
    launcher_args = seen["init_cmdline"].split("\x00--\x00")[0]  # what comes after "--" is the program's own
    assert "cudaforge.proc.sandbox.launch" in launcher_args and "{" not in launcher_args  # no spec to read there
    assert seen["spec_env"] == []  # nor in its own environment
    assert not (tmp_path / "outside" / "new.txt").exists()
    assert status["ok"] and status["landlock"]["abi"] >= 1 and status["capabilities"] == "none"
    if "pid" in status["namespaces"]:
        assert len(seen["pids"]) == 2 and seen["pids"][0] == 1  # its init and itself: no other process is visible
    assert "Landlock" in describe(status)


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="the checks of uids and quotas below are root's view")
def test_the_sandbox_sees_a_minimal_root_as_an_unprivileged_uid_of_its_own(tmp_path):
    """What the fourth and fifth attacks of the build-path round used is not there: the checkout (tests, run
    directories), the user's home, the host's /tmp (a verifier's payload.json), a unix socket of the host; the uid
    is never 0 and never another sandbox's; the seccomp filter and the limits are in place."""
    host_socket = tmp_path / "service.sock"
    server = __import__("socket").socket(__import__("socket").AF_UNIX)
    server.bind(str(host_socket))
    server.listen(1)
    (tmp_path / "payload.json").write_text("{}")
    code = f"""
import ctypes, json, os, socket
out = {{"uid": os.getuid()}}
out["checkout"] = os.path.exists({str(REPO / "tests")!r}) or os.path.exists({str(REPO / "README.md")!r})
out["package"] = os.path.exists({str(REPO / "cudaforge" / "eval" / "verifier" / "__init__.py")!r})
out["home"] = os.path.exists(os.path.expanduser("~root") + "/.bashrc")
out["host_tmp"] = os.path.exists({str(tmp_path / "payload.json")!r})
s = socket.socket(socket.AF_UNIX)
try: s.connect({str(host_socket)!r}); out["socket"] = True
except OSError: out["socket"] = False
open("/tmp/mine", "w").write("x"); out["private_tmp"] = open("/tmp/mine").read() == "x"
libc = ctypes.CDLL(None, use_errno=True)
out["io_uring"] = libc.syscall(425, 1, ctypes.create_string_buffer(120)) >= 0
out["chmod"] = True
try: os.chmod({str(REPO / "cudaforge" / "eval" / "worker" / "candidate_worker.py")!r}, 0)
except OSError: out["chmod"] = False
print(json.dumps(out))
"""
    runs = [run_in_sandbox(code, tmp_path / str(i)) for i in range(2)]
    server.close()
    seen = [json.loads(proc.stdout.strip().splitlines()[-1]) for proc, _ in runs]
    for view, (_, status) in zip(seen, runs):
        assert view["uid"] != 0 and view["uid"] == status["uid"], view
        assert view["package"] and view["private_tmp"]  # what it needs is there
        assert not any(view[k] for k in ("checkout", "home", "host_tmp", "socket", "io_uring", "chmod")), view
        assert status["rootfs"] == "minimal" and status["seccomp"] and not status["missing"] and not status["weak"]
        assert status.get("pids_max") and status.get("memory_max")  # this machine delegates both controllers
    assert seen[0]["uid"] != seen[1]["uid"]  # each sandbox its own uid
    assert (REPO / "cudaforge" / "eval" / "worker" / "candidate_worker.py").stat().st_mode & 0o444


@needs_landlock
def test_every_mount_the_sandbox_reads_is_read_only_the_mounts_below_a_bind_included(tmp_path):
    """The red team: a recursive bind made only its top mount read-only, so /sys's submounts (cgroup mounts here,
    debugfs or securityfs elsewhere) stayed writable, hidden only by a tmpfs or Landlock. Every mount of the
    sandbox but its own tmpfs folders, its scratch, its device nodes and /proc is now read-only, the submounts
    included."""
    code = """
import json
mounts = []
for line in open("/proc/self/mountinfo"):
    fields = line.split()
    sep = fields.index("-")
    mounts.append([fields[4], fields[5], fields[sep + 1]])
print(json.dumps(mounts))
"""
    proc, status = run_in_sandbox(code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    mounts = json.loads(proc.stdout.strip().splitlines()[-1])
    writable = [
        (point, fstype)
        for point, options, fstype in mounts
        if "rw" in options.split(",")
        and fstype not in ("tmpfs", "proc")
        and not point.startswith((str(tmp_path / "scratch"), "/dev/"))  # its scratch; device nodes (/dev/null)
    ]
    assert not writable, writable
    if status["rootfs"] == "minimal" and os.path.isdir("/sys/fs/cgroup"):
        assert any(point.startswith("/sys") for point, _, _ in mounts)  # /sys is there, and was checked


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare") or not os.path.isdir("/sys/fs/cgroup"),
    reason="needs root, unshare(1) and a /sys with mounts below it",
)
@pytest.mark.parametrize("setattr_number", [None, 999_999])  # the kernel's call, or one it lacks (ENOSYS)
def test_a_read_only_bind_makes_every_mount_below_it_read_only(tmp_path, setattr_number):
    """Where mount_setattr cannot be used (a kernel before 5.12, or a host filter that refuses it: the red team made
    it EPERM and the cgroup mounts came back writable), each mount below the bind is remounted on its own."""
    target = tmp_path / "sys"
    target.mkdir()
    code = f"""
import json
from cudaforge.proc.sandbox import linux
if {setattr_number!r} is not None:
    linux._SYS_MOUNT_SETATTR = {setattr_number!r}
linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)
linux.bind("/sys", {str(target)!r}, read_only=True)
mounts = [l.split()[4:6] for l in open("/proc/self/mountinfo") if l.split()[4].startswith({str(target)!r})]
print(json.dumps(mounts))
"""
    proc = subprocess.run(
        ["unshare", "-m", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    mounts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(mounts) > 1 and all("ro" in options.split(",") for _, options in mounts), mounts


@needs_landlock
def test_the_package_imports_in_the_sandbox_from_its_folder_on_the_path(tmp_path):
    """Where ``cudaforge`` is found through PYTHONPATH (no installed finder: the GPU machine's layout), Python lists
    the package's parent folder; in the sandbox's root that folder holds only what is bound below it."""
    from cudaforge.proc.sandbox import _package_root

    code = (
        f"import sys, os; sys.path[:] = [{_package_root()!r}] + [p for p in sys.path if 'python3' in p]; "
        f"import cudaforge; print('ok', sorted(os.listdir({_package_root()!r})))"
    )
    sandbox = Sandbox(scratch=str(tmp_path))
    started = sandbox.start(
        [sys.executable, "-S", "-c", code],
        env={"PATH": os.environ["PATH"]},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out = started.proc.communicate(timeout=60)[0].decode()
    listed = out.split("ok ", 1)[-1]
    assert "ok " in out and "cudaforge" in listed and "tests" not in listed and "README.md" not in listed, out


@needs_landlock
def test_a_sandboxed_program_sees_only_allow_listed_environment_variables(tmp_path):
    """Credentials under names no deny-list knows (found by the red team: all six reached a candidate) stay out."""
    planted = {
        "DATABASE_URL": "postgres://u:sk-pw@db/x",
        "HTTPS_PROXY": "http://u:sk-pw@proxy:3128",
        "MYSQL_PWD": "sk-pw",
        "SENTRY_DSN": "https://sk-pw@sentry/1",
        "DOCKER_AUTH_CONFIG": "sk-pw",
        "SLACK_WEBHOOK_URL": "https://hooks/sk-pw",
        "CUDAFORGE_API_TOKEN": "sk-pw",
        # the second round's: allowed prefixes with a credential in the name or the value
        "TORCHINDUCTOR_REMOTE_CACHE_PASS": "sk-pw",
        "TRITON_REMOTE_CACHE_URL": "redis://:sk-pw@cache:6379",
        "NVIDIA_NIM_API_BASE": "https://u:sk-pw@nim",
        "LC_AUTH": "sk-pw",
        "TORCH_HUB_AUTH": "sk-pw",
        "CUDAFORGE_STANDBY_EVAL": '{"guards_enforce": true, "sk-pw": 1}',
    }
    kept = {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "LC_ALL": "C.UTF-8"}
    sandbox = Sandbox(scratch=str(tmp_path))
    started = sandbox.start(
        [sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
        env={**os.environ, **planted, **kept},
        stdout=subprocess.PIPE,
    )
    seen = json.loads(started.proc.communicate(timeout=60)[0].decode().strip().splitlines()[-1])
    assert not set(planted) & set(seen) and "sk-pw" not in json.dumps(seen)
    assert all(seen.get(k) == v for k, v in kept.items()) and seen.get("PATH")


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="as a user every sandbox has that user's uid")
def test_a_candidates_processes_do_not_stop_its_compilers_forks(tmp_path):
    """The red team's first finding: the compiler's sandbox runs as the candidate's uid (to read its scratch), and
    RLIMIT_NPROC counts every process of a uid, so a candidate holding its limit of processes made the compiler's
    forks fail and a failed build was cached under an honest candidate's key. The compiler's sandbox sets no
    RLIMIT_NPROC (its own pids cgroup bounds it); one that did would fail."""
    from cudaforge.proc.sandbox import fresh_uid

    uid = fresh_uid()
    hog = Sandbox(scratch=str(tmp_path / "hog"), uid=uid, processes=24)
    (tmp_path / "hog").mkdir()
    holder = hog.start(
        [
            sys.executable,
            "-c",
            "import os, time\nfor _ in range(40):\n    try:\n        if os.fork() == 0:"
            "\n            time.sleep(60); os._exit(0)\n    except OSError: break\nprint('held', flush=True)\n"
            "time.sleep(60)",
        ],
        env={"PATH": os.environ["PATH"]},
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.proc.stdout.readline().strip() == b"held"
        forks = "import os\nfor _ in range(5):\n    pid = os.fork()\n    if pid == 0: os._exit(0)\n    os.waitpid(pid, 0)\nprint('forked')"
        results = {}
        for nproc in (True, False):
            folder = tmp_path / f"compiler-{nproc}"
            folder.mkdir()
            compiler = Sandbox(scratch=str(folder), uid=uid, processes=24, nproc_limit=nproc)
            started = compiler.start(
                [sys.executable, "-c", forks],
                env={"PATH": os.environ["PATH"]},
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            results[nproc] = started.proc.communicate(timeout=60)[0].decode()
        assert "forked" not in results[True] and "Resource temporarily unavailable" in results[True]
        assert "forked" in results[False]
    finally:
        holder.kill()


def test_only_a_failure_of_the_sources_is_kept():
    from cudaforge.eval.extensions.logs import failed_for_the_sources

    assert failed_for_the_sources('cuda_sources(3): error: identifier "j" is undefined\nFAILED: cuda.cuda.o\n')
    assert failed_for_the_sources("main.cpp:4:1: error: expected ';' before '}' token\n")
    assert not failed_for_the_sources("ninja: fatal: posix_spawn: Resource temporarily unavailable\nFAILED: main.o\n")
    assert not failed_for_the_sources("nvcc error   : 'cicc' died due to signal 9 (Kill signal)\nKilled signal\n")
    assert not failed_for_the_sources("c++: fatal error: vfork: Resource temporarily unavailable\n")
    assert not failed_for_the_sources("/tmp/x.s: Fatal error: can't write: No space left on device\n")
    assert not failed_for_the_sources("(cancelled)\n")


@needs_landlock
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
    reason="runs the launcher as another user: needs root, setpriv and a system Python",
)
def test_an_unprivileged_user_gets_the_wall_through_a_user_namespace():
    """As a user without root (here uid 1000, with the system's Python and a copy of the package anyone may read):
    the wall holds through an unprivileged user namespace, capabilities that namespace gave are dropped, and the
    layers root alone can give (cgroups, the scratch's tmpfs) are notes, not refusals."""
    tmp_path = Path(tempfile.mkdtemp(prefix="cudaforge-user-test-", dir="/tmp"))  # a folder the user can reach
    copy = tmp_path / "pkg"
    shutil.copytree(REPO / "cudaforge", copy / "cudaforge", ignore=shutil.ignore_patterns("__pycache__", "resources"))
    probe = copy / "probe.py"
    probe.write_text(f"""
import json, os, subprocess, sys
sys.path.insert(0, {str(copy)!r})
from cudaforge.proc.sandbox import Sandbox
started = Sandbox().start([sys.executable, "-c", "import os; print(os.getuid(), os.path.exists({str(probe)!r}))"],
                          env={{"PATH": "/usr/bin:/bin"}}, stdout=subprocess.PIPE)
status = started.status()
print(json.dumps({{"out": started.proc.communicate(timeout=60)[0].decode(), "status": status}}))
started.cleanup()
""")
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o055)
    try:
        run = subprocess.run(
            ["setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups", "/usr/bin/python3", str(probe)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "TMPDIR": "/tmp"},
        )
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    status = seen["status"]
    assert seen["out"].split() == ["1000", "False"], (seen, run.stderr)  # its own uid; the host's /tmp not there
    assert status["ok"] and not status["missing"] and status["capabilities"] == "none", status
    assert status["rootfs"] == "minimal" and status["seccomp"] and "user namespace" in " ".join(status["notes"])


@needs_landlock
def test_every_process_of_the_sandbox_dies_with_it(tmp_path):
    mark = f"{ORPHAN_MARK}-{secrets.token_hex(4)}"
    code = f"""
import os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time  # {mark}\\ntime.sleep(600)"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", "import time  # {mark}\\ntime.sleep(600)"])
time.sleep(0.5)
print("started")
"""
    proc, _ = run_in_sandbox(code, tmp_path)
    assert "started" in proc.stdout
    assert _survivors(mark) == []


@needs_landlock
def test_the_init_freezes_and_thaws_every_process(tmp_path):
    sandbox = Sandbox(scratch=str(tmp_path))
    code = "import time\nwhile True:\n    open('tick', 'a').write('.')\n    time.sleep(0.01)\n"
    started = sandbox.start([sys.executable, "-c", code], env={"PATH": os.environ["PATH"]})
    try:
        assert started.status()["ok"]
        time.sleep(1.0)
        assert started.stop()
        frozen = (tmp_path / "tick").stat().st_size
        time.sleep(0.3)
        assert (tmp_path / "tick").stat().st_size == frozen
        assert started.cont()
        time.sleep(0.3)
        assert (tmp_path / "tick").stat().st_size > frozen
    finally:
        assert started.kill() is True  # the launcher reaped and every cgroup of the sandbox gone: known dead
    cgroups = [c for c in (started.status() or {}).get("cgroups") or [] if isinstance(c, str)]
    assert all(not os.path.exists(c) for c in cgroups), cgroups


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="a uid of the sandbox's own needs root")
def test_without_cgroups_the_kill_waits_until_no_process_of_the_sandbox_is_left(tmp_path):
    """No cgroup (no process or memory limit asked): the launcher is killed at once, while its pid namespace dies
    after it; ``kill()`` returns only once no live process of the sandbox's own uid is left."""
    from cudaforge.proc.sandbox import _uid_gone

    sandbox = Sandbox(scratch=str(tmp_path), processes=0, memory_bytes=0, nproc_limit=False)
    code = "import os, time\nfor _ in range(12):\n    if os.fork() == 0:\n        time.sleep(60)\ntime.sleep(60)\n"
    started = sandbox.start([sys.executable, "-c", code], env={"PATH": os.environ["PATH"]})
    assert started.status()["ok"] and not started.status().get("cgroups"), started.status()
    time.sleep(1.0)
    assert sandbox.own_uid and not _uid_gone(sandbox.uid, deadline=0)  # its 13 processes run as its uid
    assert started.kill() is True
    assert _uid_gone(sandbox.uid, deadline=0)  # none left the moment kill() returned


def test_a_cgroup_that_outlives_the_kill_is_said_not_dead(tmp_path):
    """``kill()`` answers False when a sandbox's cgroup is still there after its wait (a process stuck in the kernel):
    the verifier then keeps none of the sandbox's files as final. A cgroup that goes, or is gone, answers True."""
    from cudaforge.proc.sandbox import _remove_cgroup

    lingering = tmp_path / "cudaforge-sandbox-x"
    lingering.mkdir()
    (lingering / "a process").write_text("")  # rmdir refuses, as the kernel refuses a cgroup with a process
    started = time.monotonic()
    assert _remove_cgroup(str(lingering), deadline=time.monotonic() + 0.2) is False
    assert 0.2 <= time.monotonic() - started < 2.0
    assert (lingering / "cgroup.kill").read_text() == "1"  # every process left in it was told to die
    empty = tmp_path / "cudaforge-sandbox-y"
    empty.mkdir()
    assert _remove_cgroup(str(empty), deadline=time.monotonic() + 0.2) is True and not empty.exists()
    assert _remove_cgroup(str(tmp_path / "never-made"), deadline=time.monotonic()) is True


@needs_landlock
def test_a_weak_sandbox_runs_only_where_allowed_and_says_so(tmp_path):
    code = "print('ran')"
    proc, status = run_in_sandbox(code, tmp_path, namespaces=False)  # auto: the wall is missing, so no
    assert proc.returncode == 97 and "ran" not in proc.stdout
    assert status["ok"] is False and any(m.startswith("namespaces") for m in status["missing"])
    assert any(m.startswith("minimal root") for m in status["missing"])
    weak = Sandbox(scratch=str(tmp_path / "scratch"), namespaces=False, allow_weak=True)
    started = weak.start(["/bin/echo", "ran"], env={}, stdout=subprocess.PIPE)  # readable by any uid, unlike a
    status = started.status()  # Python under a 0700 home: without a minimal root the unprivileged uid cannot run that
    assert started.proc.communicate(timeout=60)[0].decode().strip() == "ran" and started.proc.returncode == 0
    assert status["ok"] and status["weak"] and describe(status).startswith("WEAK")
    assert status["uid"] != 0  # even a weak sandbox never keeps uid 0
    proc, status = run_in_sandbox(code, tmp_path, namespaces=False, mode=SandboxMode.required, allow_weak=True)
    assert proc.returncode == 97 and "ran" not in proc.stdout and status["ok"] is False


@needs_landlock
def test_eval_sandbox_required_refuses_an_evaluation_it_cannot_protect(tmp_path):
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/1_ReLU")
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    cfg = {"device": "cpu", "sandbox": "required", "sandbox_namespaces": False, "build_cache_dir": str(tmp_path)}
    with pytest.raises(SandboxUnavailable) as refused:  # no verdict: the machine's (here the settings') failure
        Evaluator(cfg).evaluate(task, source)
    assert "eval.sandbox=required" in str(refused.value) and "namespaces" in str(refused.value)
    # the command line says it in one line, with exit status 2
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cudaforge.cli",
            "eval",
            "task=level1/1_ReLU",
            f"candidate={REPO / 'benchmarks' / 'candidates' / 'triton_relu.py'}",
            "eval.sandbox=required",
            "eval.sandbox_namespaces=false",
            f"eval.build_cache_dir={tmp_path}",
            f"hydra.run.dir={tmp_path / 'hydra'}",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "CUDA_VISIBLE_DEVICES": ""},
        timeout=300,
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-2000:]
    assert out.stderr.strip().splitlines()[-1].startswith("cudaforge eval: error: the sandbox could not be built")


# --------------------------------------------------------------------------- the threat corpus


def _survivors(mark: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
        except OSError:
            pass
    return found


def _checksums(root: Path) -> dict[str, str]:
    """Content, mode and modification time of every file under ``root`` (a chmod or utime is a change too)."""
    sums = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            info = path.lstat()
            sums[str(path.relative_to(root))] = (
                f"{hashlib.sha256(path.read_bytes()).hexdigest()} {info.st_mode:o} {info.st_mtime_ns}"
            )
    return sums


def _run_threats(entries, device: str, tmp_path_factory) -> dict:
    """Evaluate ``entries`` with secrets planted where a careless sandbox would show them, and checksum what no
    candidate may change: the installed package, a run directory (results and LLM cache), the build cache."""
    canary = f"sk-canary-{secrets.token_hex(8)}"
    planted = Path(f"/tmp/cudaforge-canary-{secrets.token_hex(4)}")
    planted.mkdir()
    (planted / "secret.txt").write_text(canary)
    (planted / ".netrc").write_text(f"machine api.openai.com login me password {canary}\n")
    run_dir = planted / "run"
    run_dir.mkdir()
    (run_dir / "results.jsonl").write_text('{"task": "x"}\n')
    (run_dir / "llm_cache.sqlite").write_bytes(b"SQLite format 3\0" + bytes(100))
    cache = tmp_path_factory.mktemp("build")
    (cache / "entry").write_text("kept")
    package = REPO / "cudaforge"
    before = {"package": _checksums(package), "run": _checksums(planted), "cache": _checksums(cache)}
    old_key = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = canary  # in the evaluating process's own environment
    try:

        def run(entry):
            cfg = {"device": device, "correctness_trials": 3, "build_cache_dir": str(cache), **entry.config}
            started = time.monotonic()
            result = Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)
            seconds = time.monotonic() - started
            print(f"threat {entry.name}: {result.status.value} in {seconds:.1f} s", flush=True)  # shown with -s
            return entry.name, (result, seconds)

        with ThreadPoolExecutor(int(os.environ.get("CUDAFORGE_THREAT_THREADS", "2"))) as pool:  # more on a GPU box
            results = dict(pool.map(run, entries))
        time.sleep(0.5)
        after = {"package": _checksums(package), "run": _checksums(planted), "cache": _checksums(cache)}
        marked = [
            str(p.relative_to(cache))
            for p in cache.rglob("*")
            if p.is_file() and ("pwned" in p.name or b"pwned by a candidate" in p.read_bytes())
        ]  # the build service adds builds here
        survivors = _survivors(ORPHAN_MARK)
    finally:
        if old_key is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = old_key
    return {
        "results": results,
        "before": before,
        "after": after,
        "survivors": survivors,
        "canary": canary,
        "planted": planted,
        "cache_marked": marked,
    }


def _remove(planted: Path) -> None:
    for path in sorted(planted.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    planted.rmdir()


def _assert_nothing_changed(run: dict) -> None:
    before, after = run["before"], run["after"]
    assert after["package"] == before["package"], "a candidate changed the installed evaluator"
    assert after["run"] == before["run"], "a candidate changed a run directory"
    changed = [k for k, v in before["cache"].items() if after["cache"].get(k) != v]
    assert changed == [], "a candidate changed an entry of the build cache"  # new builds of the service may be there
    assert run["cache_marked"] == [], "a candidate wrote into the build cache"
    assert run["survivors"] == [], "a candidate's process outlived its evaluation"
    for name, (result, _) in run["results"].items():
        assert run["canary"] not in result.to_json(), f"{name} got a secret into its result"


def _assert_verdict(entry, result, seconds: float) -> None:
    assert check_result(entry, result) == [], f"{entry.name}: {result.report()}"
    if entry.status == "timeout":  # deadlines are the parent's: announcements bought nothing
        budget = entry.config.get("correctness_timeout_s", 300)
        assert seconds < budget + 30, (entry.name, seconds)


@pytest.fixture(scope="module")
def threat_run(tmp_path_factory):
    """The threat corpus's CPU entries on the CPU (the planted secrets stay for the control test)."""
    run = _run_threats(THREATS, "cpu", tmp_path_factory)
    yield run
    _remove(run["planted"])


@pytest.mark.slow
@needs_landlock
@pytest.mark.parametrize("entry", THREATS, ids=[e.name for e in THREATS])
def test_each_threat_gets_its_verdict(entry, threat_run):
    _assert_verdict(entry, *threat_run["results"][entry.name])


@pytest.mark.slow
@needs_landlock
def test_after_the_threats_nothing_outside_the_sandboxes_changed(threat_run):
    _assert_nothing_changed(threat_run)


@pytest.mark.slow
@needs_landlock
def test_the_evaluator_still_works_after_the_threats(threat_run, tmp_path):
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/1_ReLU")
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    result = Evaluator({"device": "cpu", "correctness_trials": 2, "build_cache_dir": str(tmp_path)}).evaluate(
        task, source
    )
    assert result.status is EvalStatus.CORRECT, result.report()
    assert result.fingerprint["sandbox"]["landlock"]["abi"] >= 1


@pytest.mark.slow
def test_without_the_sandbox_the_secret_hack_is_real(threat_run, tmp_path):
    """The control: with eval.sandbox=off the same candidate finds the planted secret, so the tests above could fail."""
    entry = next(e for e in THREATS if e.name == "hack_home_secret")
    cfg = {"device": "cpu", "correctness_trials": 1, "build_cache_dir": str(tmp_path), "sandbox": "off", **entry.config}
    result = Evaluator(cfg).evaluate(find_entry_task(entry), entry.source)
    assert threat_run["canary"] in result.message


def test_a_compiler_installed_under_its_own_prefix_is_readable(tmp_path, monkeypatch):
    """The H200 image's gcc lives in /opt/gcc/bin with its headers in /opt/gcc/lib (call 5 of 2026-12-01 failed on
    them): a PATH directory named bin makes its prefix readable, except a home directory."""
    from cudaforge.proc.sandbox import default_read_paths

    tool = tmp_path / "opt" / "gcc" / "bin"
    tool.mkdir(parents=True)
    home_bin = Path("/root/bin") if Path("/root/bin").is_dir() else None
    monkeypatch.setenv("PATH", os.pathsep.join([str(tool), os.environ.get("PATH", "")]))
    paths = default_read_paths()
    assert str(tool) in paths and str(tool.parent) in paths
    assert "/root" not in paths and "/home" not in paths
    if home_bin:
        assert "/root" not in paths


@pytest.mark.gpu
@needs_landlock
def test_the_whole_threat_corpus_on_a_gpu(tmp_path_factory):
    """Every THREAT entry, those that need CUDA among them (the native timer patch, the hidden stream, the L2
    window), evaluated on the GPU: each gets its verdict, and nothing outside the sandboxes changed."""
    run = _run_threats([e for e in load_corpus() if e.threat], "cuda", tmp_path_factory)
    _remove(run["planted"])
    failures = []
    for check in [lambda: _assert_nothing_changed(run)] + [
        lambda e=e: _assert_verdict(e, *run["results"][e.name]) for e in load_corpus() if e.threat
    ]:
        try:
            check()
        except AssertionError as exc:
            failures.append(str(exc)[:1500])
    assert not failures, "\n\n".join(failures)


WRITES_ITS_OWN_FILES = """import os
import tempfile

os.makedirs("/tmp/cuda_extensions", exist_ok=True)  # as public releases keep their build folder
open("/tmp/cuda_extensions/marker", "w").write("x")
_made = tempfile.mkdtemp()
open(os.path.join(_made, "f"), "w").write("y")
os.environ["TORCH_EXTENSIONS_DIR"] = "/tmp/torch_extensions_of_mine"
os.makedirs("/tmp/torch_extensions_of_mine", exist_ok=True)
os.makedirs(os.path.expanduser("~/.cache/kernels"), exist_ok=True)  # its HOME is in its scratch
open(os.path.join(tempfile.gettempdir(), "probe"), "w").write("z")  # TMPDIR too
"""


@needs_landlock
@pytest.mark.skipif(os.geteuid() != 0, reason="the quota is a tmpfs of the sandbox's own (root)")
def test_a_candidate_writes_its_own_tmp_and_caches_and_a_write_past_its_quota_is_said_plainly(tmp_path):
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalStatus

    task = find_task(selection("tiny"), "level1/1_ReLU")
    kernel = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    evaluator = Evaluator(
        {
            "device": "cpu",
            "correctness_trials": 1,
            "sandbox": "required",
            "sandbox_scratch_gb": 0.01,
            "build_cache_dir": str(tmp_path / "cache"),
        }
    )
    result = evaluator.evaluate(task, WRITES_ITS_OWN_FILES + kernel)
    assert result.status is EvalStatus.CORRECT, result.report()  # writing there is normal, and allowed
    assert not (Path("/tmp/cuda_extensions") / "marker").exists()  # its /tmp was its own
    flood = WRITES_ITS_OWN_FILES + "open('/tmp/big', 'wb').write(b'0' * (20 << 20))\n" + kernel
    over = evaluator.evaluate(task, flood)
    assert over.status is EvalStatus.RUNTIME_ERROR, over.report()
    assert "(a write was refused for space: the candidate may write 0.01 GB" in over.message, over.message[-400:]


@needs_landlock
@pytest.mark.parametrize("planted", ["json.py", "cudaforge.py", "sitecustomize.py"])
def test_the_launcher_never_imports_from_the_scratch_it_starts_in(tmp_path, planted):
    """Red team (2026-12-05): a ``load()`` "source" named ``json.py``, written into the compiler's build folder, was
    imported by the sandbox's launcher (``python -m``, working folder = that scratch), as root, before the wall went
    up. The launcher now starts with ``-P`` from ``/`` and moves into the scratch itself: the program still starts
    there, and nothing planted there runs on the trusted side."""
    scratch = tmp_path / "scratch"
    scratch.mkdir(parents=True)
    marker = tmp_path / "PWNED"
    (scratch / planted).write_text(f"open({str(marker)!r}, 'w').write(str(__import__('os').getuid()))\n")
    sandbox = Sandbox(scratch=str(scratch))
    started = sandbox.start(
        ["/bin/sh", "-c", "pwd"], env={"PATH": os.environ["PATH"]}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    out = started.proc.communicate(timeout=60)[0].decode()
    started.kill()
    assert not marker.exists(), marker.read_text()
    assert started.proc.returncode == 0 and out.strip().splitlines()[-1] == str(scratch), out


@needs_landlock
def test_the_launcher_runs_no_user_site_of_the_home_it_is_given(tmp_path, monkeypatch):
    """Red team (2026-12-05): a compiler's HOME is its build folder, which a compile wrote and the next compile's
    launcher (root until the drop) starts with; an interpreter with user site-packages on (not a venv: conda, a
    system Python) ran a ``.pth`` planted under ``$HOME/.local``. The launcher starts with ``-s``. Checked with this
    venv's base interpreter, which has user site-packages on."""
    import cudaforge.proc.sandbox as sandbox_module

    base = getattr(sys, "_base_executable", sys.executable)
    probe = subprocess.run([base, "-c", "import site; print(site.ENABLE_USER_SITE)"], capture_output=True, text=True)
    assert probe.stdout.strip() == "True", "the base interpreter must have user site-packages on for this check"
    scratch = tmp_path / "scratch"
    marker = tmp_path / "PWNED"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    user_site = scratch / ".local" / "lib" / version / "site-packages"
    user_site.mkdir(parents=True)
    (user_site / "x.pth").write_text(f"import os; open({str(marker)!r}, 'w').write(str(os.getuid()))\n")
    monkeypatch.setattr(sandbox_module.sys, "executable", base)
    started = Sandbox(scratch=str(scratch)).start(
        ["/bin/sh", "-c", "echo ran"],
        env={"PATH": os.environ["PATH"], "HOME": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    out = started.proc.communicate(timeout=60)[0].decode()
    started.kill()
    assert not marker.exists(), f"ran as uid {marker.read_text()}"
    assert "ran" in out, out


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.isdir("/proc"), reason="names itself, as root, in /proc")
def test_a_process_name_of_any_bytes_does_not_stall_or_fool_the_wait_for_a_uid():
    """The wait for a sandbox's uid reads every process's /proc status, whose Name line the process sets itself
    (any bytes, a newline included): a name that is not UTF-8 and forges a Uid line neither raises nor hides the
    process (the kernel's own Uid line comes after it)."""
    from cudaforge.proc.sandbox import _uid_gone

    code = (
        "import ctypes, os, time\n"
        "os.setresuid(1500000123, 1500000123, 1500000123)\n"
        "ctypes.CDLL(None).prctl(15, b'\\xff\\xfe\\nUid:\\t1\\n', 0, 0, 0)\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        time.sleep(1.0)
        assert Path(f"/proc/{child.pid}/comm").read_bytes().startswith(b"\xff\xfe\nUid:")
        assert _uid_gone(1500000123, deadline=0) is False  # alive, whatever its name says
    finally:
        child.kill()
        child.wait()
    assert _uid_gone(1500000123, deadline=time.monotonic() + 1.0) is True
