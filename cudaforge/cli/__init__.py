"""The ``cudaforge`` command: one module per command under ``cudaforge/cli/``, each with its help beside it.

``cudaforge COMMAND [ACTION] [HYDRA OVERRIDES...]``. Every command that composes a config composes the same tree
(``configs/cudaforge.yaml``), so any override works with any of them; the logic lives in the library, and each
command only composes, calls and prints. A command's module has ``HELP`` (its page for ``--help``; a dict by full
name, ``"tasks list"``, where it has actions) and ``main(args)`` (``main(args, action)`` where it has actions); ``COMMANDS`` names them.
Hydra's command line is handled once, in :mod:`cudaforge.cli.hydra_args`.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

from cudaforge.paths import CONFIG_DIR

COMMANDS: dict[str, str] = {
    "tasks": "tasks",
    "eval": "eval",
    "run": "run",
    "profile": "profile",
    "baseline": "baseline",
    "rescore": "rescore",
    "merge": "merge",
    "repair": "repair",
    "plan": "plan",
    "report": "report",
    "export": "export",
    "integrate": "integrate",
    "skill": "skill",
    "doctor": "doctor",
    "cache": "cache",
}
"""Command -> its module under ``cudaforge.cli`` (imported when the command runs, so ``--help`` stays quick)."""

ACTIONS: dict[str, tuple[str, ...]] = {"tasks": ("list", "audit", "diff", "pin"), "skill": ("distill", "compare")}
"""The commands that take an action word first, and their actions."""

USAGE = """usage: cudaforge SUBCOMMAND [ACTION] [key=value ...]

subcommands:
  tasks list    print the selected tasks (e.g. suite=tiny, suite=kernelbench suite.root=PATH)
  tasks audit   flag degenerate tasks (constant or input-independent outputs, NaN/Inf, ...)
  tasks diff ROOT_A ROOT_B
  tasks pin ROOT [LEVEL ...]
                the problems two KernelBench-layout folders hold differently (content hashes)
  eval          evaluate one candidate: task=ID candidate=PATH.py
  run           run the Coder/Judge loop over a suite
  profile       profile one candidate with Nsight Compute
  baseline      time a suite's references (eager and torch.compile)
  rescore RUN_DIR eval=PROTOCOL
                a run's kept kernels evaluated again under another protocol (report them side by side)
  merge SHARD_DIR [SHARD_DIR ...] out=DIR
                a campaign's shards (suite.shard_count=N suite.shard_index=I) joined into one run directory
  repair RUN_DIR
                a damaged run directory made resumable: bad result lines quarantined, unreadable databases moved
                aside, the response cache rebuilt from the round folders and the ledger
  plan [RUN_DIR]
                expected dollars, LLM calls and hours of a suite under a config; with RUN_DIR, beside what it took
  report RUN_DIR [RUN_DIR ...]
                tables (Markdown, LaTeX, CSV) and plots of runs beside published ones
  export RUN_DIR [RUN_DIR ...] format=sft|trajectories|preferences|turns
                datasets (JSONL, Hugging Face `datasets`-loadable) of verified kernels, or every turn labelled
  integrate RUN_DIR [RUN_DIR ...] recipe=NAME
                the runs' best kernels patched into a whole model, checked and timed end to end
  skill distill RUN_DIR [RUN_DIR ...]
                a skill document from the Judge's advice that led to verified speedups
  skill compare WITH_RUN WITHOUT_RUN (or their sweep folder)
                the paired with/without-skill difference, with intervals (docs/teaching.md)
  doctor        check the setup: GPU, nvcc, ncu, Triton, the sandbox, the models' keys, the caches
  cache info | cache clear [KIND ...]
                where the caches are and their sizes; empty them

`cudaforge SUBCOMMAND --help` says what one does, its keys and examples.

Overrides are Hydra's: group=option (suite=main), key=value (eval.timing_trials=50),
--cfg job to print the composed config, -m for sweeps, --config-dir DIR to add your own
configs (an experiment/ folder beside ours). See docs/configuration.md.
cudaforge --version prints the version and where the package data lives.
"""


def module(command: str) -> ModuleType:
    """The module of ``command`` (a key of ``COMMANDS``)."""
    return importlib.import_module(f"cudaforge.cli.{COMMANDS[command]}")


def help_texts() -> dict[str, str]:
    """Every command's ``--help`` page, by its full name (``run``, ``tasks list``, ...)."""
    pages: dict[str, str] = {}
    for command in COMMANDS:
        text = module(command).HELP
        pages.update(text if isinstance(text, dict) else {command: text})  # a dict: by full name ("tasks list")
    return pages


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``cudaforge`` console script; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-V", "--version", "version"):
        from cudaforge import __version__

        print(f"cudaforge {__version__} (package data: {CONFIG_DIR.parent})")
        return 0
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"cudaforge: unknown subcommand {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    actions = ACTIONS.get(command)
    action = rest[0] if actions and rest and rest[0] in actions else None
    if actions and action is None:
        words = ", ".join(f"`{a}`" for a in actions[:-1]) + f" or `{actions[-1]}`"
        example = "list suite=tiny" if command == "tasks" else "distill RUN_DIR"
        print(f"cudaforge {command}: say {words} (e.g. cudaforge {command} {example})", file=sys.stderr)
        return 2
    if action:
        rest = rest[1:]
    page = module(command).HELP
    if any(a in ("-h", "--help") for a in rest):
        print(page[f"{command} {action}"] if isinstance(page, dict) else page)
        return 0
    try:
        code: int = module(command).main(rest, action) if action else module(command).main(rest)
        return code
    except ValueError as exc:  # the command line's sugar refused (run directories given both ways, ...)
        print(f"cudaforge {command}{f' {action}' if action else ''}: error: {exc}", file=sys.stderr)
        return 2


__all__ = ["COMMANDS", "USAGE", "help_texts", "main"]
