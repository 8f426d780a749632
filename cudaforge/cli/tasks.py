"""``cudaforge tasks list | audit | diff | pin``: the selected tasks, their audit, and problem sets compared or pinned."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app

if TYPE_CHECKING:
    from cudaforge.config import AuditConfig

HELP: dict[str, str] = {
    "tasks list": """usage: cudaforge tasks list [key=value ...]

Prints the tasks a suite selection holds (id, level, name). Writes nothing.

examples:
  cudaforge tasks list suite=main
  cudaforge tasks list suite=main suite.levels=[1] suite.first_n=5
  cudaforge tasks list suite=kernelbench suite.root=~/KernelBench/KernelBench

config group: suite. exit status: 0, or 2 a usage error.""",
    "tasks audit": """usage: cudaforge tasks audit [key=value ...]

Flags degenerate tasks (constant or input-independent outputs, NaN/Inf, nondeterminism, references too fast to
time), which make reward hacking easy. On a CPU, tasks sized for a GPU run their 'small' inputs.

examples:
  cudaforge tasks audit suite=tiny
  cudaforge tasks audit suite=main output=audit.json
  cudaforge tasks audit suite=kernelbench suite.root=PATH suite.levels=[1]

config groups: suite, audit (audit.fail_on: which finding severities fail, default [hack_enabling,broken]).
exit status: 0 nothing of those severities, 1 some task has one, 2 a usage error.""",
    "tasks diff": """usage: cudaforge tasks diff ROOT_A ROOT_B

Lists the problems two KernelBench-layout folders hold differently: matched by level and problem number, a
problem is `changed` when its reference file's content hash (or its name) differs, or is only in one of them.
Use it to see how the problem set a paper used differs from the one you run (docs/reproducing.md).

examples:
  cudaforge tasks diff ~/KernelBench-2024/KernelBench ~/KernelBench/KernelBench
  cudaforge tasks diff ~/CudaForge/KernelBench ~/KernelBench/KernelBench
  cudaforge tasks diff cudaforge/resources/suites/main my_suite

exit status: 0 the same problems, 1 some differ, 2 a usage error (a folder missing or not in that layout).""",
    "tasks pin": """usage: cudaforge tasks pin ROOT [LEVEL ...]

Prints the digest of a KernelBench-layout folder's problems (of the levels given, else all) and how many each level
holds: the value of suite.expected_problem_set, which makes `cudaforge run` refuse any other copy of the problems
(suite.allow_other_problem_set=true runs it anyway, and the report marks the run `other problem set`). The paper
overlays (experiment=cudaforge_*) pin the CudaForge authors' copy, levels 1-3: b7d841ce26e051dd.

examples:
  cudaforge tasks pin ~/CudaForge/KernelBench 1 2 3
  cudaforge tasks pin cudaforge/resources/suites/main

exit status: 0 printed, 2 a usage error (a folder missing, not in that layout, or without the levels asked).""",
}


def _tasks_list(cfg: DictConfig) -> int:
    from cudaforge.tasks import load_suite

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    for task in tasks:
        print(f"{task.id}\tlevel {task.level}\t{task.name}")
    print(f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}")
    return 0


def _tasks_audit(cfg: DictConfig) -> int:
    import time

    from cudaforge.tasks import load_suite
    from cudaforge.tasks.audit import audit_tasks, summary_line, write_report

    tasks = load_suite(OmegaConf.to_object(cfg.suite))
    audit_cfg = cast("AuditConfig", OmegaConf.to_object(cfg.audit))
    fail_on = audit_cfg.fail_on
    print(
        f"auditing {len(tasks)} tasks ({audit_cfg.batch_size} per child; findings that fail: "
        f"{', '.join(s.value for s in fail_on) or 'none'}) ...",
        flush=True,
    )
    started = time.monotonic()
    audits = audit_tasks(tasks, audit_cfg, on_result=lambda a: print(a.line(fail_on), flush=True))
    seconds = time.monotonic() - started
    print(summary_line(audits, fail_on, seconds))
    if cfg.output:
        write_report(cfg.output, audits, cfg.suite.name, fail_on, seconds)
        print(f"report: {cfg.output}")
    return 1 if any(a.fails(fail_on) for a in audits) else 0


def main(args: list[str], action: str) -> int:
    if action == "diff":
        from cudaforge.tasks.diff import main_diff

        return main_diff(args)
    if action == "pin":
        from cudaforge.tasks.identity import main_pin

        return main_pin(args)
    return run_app(f"tasks {action}", {"list": _tasks_list, "audit": _tasks_audit}[action], args)
