"""``cudaforge doctor``: one line per part of the setup a run needs, and what to do when one is missing.

Each check returns ``Check(name, ok, line, blocking)``: ``ok`` False and ``blocking`` True means a run with this
config cannot work (a model without its key, a demo that does not cover the suite); a missing GPU, ncu or
counters only narrows what a run measures and is said as such.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Check:
    name: str
    ok: bool
    line: str
    blocking: bool = False

    def render(self) -> str:
        mark = "ok" if self.ok else ("x " if self.blocking else "- ")
        return f"{mark:<3}{self.name:<10}{self.line}"


def _gpu() -> Check:
    from cudaforge.eval import visible_gpus

    try:
        import torch

        gpus = visible_gpus()
        if not gpus:
            why = "torch has no CUDA build" if torch.version.cuda is None else "no GPU visible"
            return Check(
                "gpu",
                False,
                f"{why} (torch {torch.__version__}): kernels are checked on the CPU, without timing or profiling",
            )
        names = ", ".join(torch.cuda.get_device_name(i) for i in range(len(gpus)))
        return Check(
            "gpu", True, f"{len(gpus)} visible: {names} (torch {torch.__version__}, CUDA {torch.version.cuda})"
        )
    except Exception as exc:  # noqa: BLE001 - a broken driver is a finding, not a crash
        return Check("gpu", False, f"CUDA did not start: {type(exc).__name__}: {exc}"[:300])


def _tool_version(path: str, args: list[str]) -> str:
    try:
        out = subprocess.run([path, *args], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"did not answer ({exc})"
    lines = [line for line in out.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no version printed"


def _nvcc() -> Check:
    from cudaforge.vendors import current

    nvcc = current().compiler(None)
    if not nvcc:
        return Check("nvcc", False, "not found: CUDA (load_inline) candidates cannot build; Triton ones still run")
    return Check("nvcc", True, f"{nvcc}: {_tool_version(nvcc, ['--version'])}")


def _ncu(ncu_path: str) -> Check:
    from cudaforge.profile.ncu import ncu_version, resolve_ncu

    ncu = resolve_ncu(ncu_path)
    if not ncu:
        return Check(
            "ncu",
            False,
            "Nsight Compute not found: profiles fall back to torch.profiler (no hardware metrics for the Judge)",
        )
    note = "counters are tried at the first profile (ERR_NVGPUCTRPERM falls back to torch.profiler)"
    return Check("ncu", True, f"{ncu}: {ncu_version(ncu) or 'version unknown'}; {note}")


def _triton() -> Check:
    try:
        import triton
    except ImportError:
        return Check("triton", False, "not installed: Triton candidates cannot run (pip install triton)")
    from cudaforge.languages import get

    switch = get("triton").interpret_env
    where = "compiled on the GPU" if _has_gpu() else f"run by its interpreter on the CPU ({switch}=1)"
    return Check("triton", True, f"{triton.__version__}: kernels {where}")


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


def _sandbox(config: Any) -> Check:
    """The run's own verdict on the sandbox (``run.preflight.check_sandbox``, which ``cudaforge run`` refuses on),
    then, where it holds, what the sandbox gives this machine."""
    import tempfile

    from cudaforge.proc.sandbox import Sandbox, SandboxMode, describe
    from cudaforge.run.preflight import check_sandbox

    problems = check_sandbox(config.eval)
    if problems:
        return Check("sandbox", False, problems[0].line(), blocking=True)

    scratch = tempfile.mkdtemp(prefix="cudaforge-doctor-")
    try:
        proc = Sandbox(mode=SandboxMode.auto, scratch=scratch, allow_weak=True).start(
            [sys.executable, "-c", "pass"], env={}
        )
        status = proc.status(timeout_s=20)
        proc.kill()
        proc.cleanup()
    except Exception as exc:  # noqa: BLE001
        return Check("sandbox", False, f"could not start: {type(exc).__name__}: {exc}"[:300], blocking=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    missing = list(dict.fromkeys(status.get("missing") or []))
    line = describe(status) + (
        f"; missing (eval.allow_weak_sandbox lets runs go on): {'; '.join(missing)}" if missing else ""
    )
    return Check("sandbox", True, line)


def _models(config: Any, task_ids: list[str]) -> list[Check]:
    from cudaforge.run.preflight import check_config, estimate_cost
    from cudaforge.search.simulator import pool_problems

    problems = check_config(config, task_ids) + pool_problems(config, task_ids)
    checks = [Check("models", False, p.line(), blocking=True) for p in problems]
    if not problems:
        checks.append(
            Check(
                "models",
                True,
                f"coder {config.coder.model}, judge {config.judge.model}: ready; "
                f"{estimate_cost(config, len(task_ids)).line()}",
            )
        )
    return checks


def _fit(config: Any, task_ids: list[str], checks: list[Check]) -> list[Check]:
    """The run's own verdict on what this machine cannot give it (``run.preflight.check_fit``, which ``cudaforge run``
    refuses on), from the GPU and ncu found above; what it only narrows for a run that costs nothing is a note."""
    from cudaforge.run.preflight import check_fit

    ok = {c.name: c.ok for c in checks}
    gpu, ncu = ok.get("gpu", True), ok.get("ncu", True)
    problems = check_fit(config, len(task_ids), gpu_found=gpu, ncu_found=ncu)
    if problems:
        return [Check("fit", False, p.line(), blocking=True) for p in problems]
    device = str(getattr(config.eval.device, "value", config.eval.device))
    if not gpu:
        why = "as asked (eval.device=cpu)" if device == "cpu" else "fine for the offline demo"
        return [Check("fit", False, f"no GPU here: correctness-only verdicts, no timing and no speedup ({why})")]
    return [Check("fit", True, "this machine gives the selected run what it measures")]


def _caches(config: Any) -> list[Check]:
    try:
        from cudaforge.cache_admin import cache_info
    except ImportError:
        return []
    checks = []
    for entry in cache_info(config):
        size = entry["bytes"] / 2**20
        where = entry["path"] or "in each run directory (llm_cache.sqlite)"
        checks.append(Check("cache", True, f"{entry['name']}: {where} ({size:,.1f} MB, {entry['files']} files)"))
    return checks


def run_checks(config: Any, task_ids: list[str], say: Callable[[str], None] = print) -> list[Check]:
    """Every check, each printed through ``say`` as it finishes."""
    checks: list[Check] = []
    steps: list[Callable[[], Any]] = [
        _gpu,
        _nvcc,
        lambda: _ncu(config.profile.ncu_path),
        _triton,
        lambda: _sandbox(config),
        lambda: _models(config, task_ids),
        lambda: _caches(config),
    ]
    steps.append(lambda: _fit(config, task_ids, checks))
    for step in steps:
        found = step()
        for check in found if isinstance(found, list) else [found]:
            checks.append(check)
            say(check.render())
    return checks
