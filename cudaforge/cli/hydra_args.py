"""Hydra's command line, handled once for every command.

* :func:`split_flags`: Hydra's flags (``-m``, ``--cfg job``, ``--config-dir DIR``, ...) told apart from overrides,
  wherever the user put them.
* :func:`positional_runs`, :func:`single_run`, :func:`group_keys`: the sugar of commands that read run directories
  (``cudaforge report DIR DIR``, ``cudaforge plan DIR``, ``cudaforge export DIR format=sft``) turned into overrides,
  each path quoted by :func:`quote` for Hydra's grammar.
* :func:`run_app`: the Hydra app a command runs in: overrides checked first (one line, never Hydra's dump), values
  checked once composed, the exit status set, a run directory that a refused command made removed again.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path

import hydra
from omegaconf import DictConfig

from cudaforge.config import mapping_keys, register_configs
from cudaforge.paths import CONFIG_DIR
from cudaforge.track.store import HYDRA_DIR, LOCK_FILE, PLAN_FILE

FLAGS_WITH_VALUE = {
    "--cfg",
    "-c",
    "--package",
    "-p",
    "--config-path",
    "-cp",
    "--config-name",
    "-cn",
    "--config-dir",
    "-cd",
    "--experimental-rerun",
}
"""Hydra's flags that always take a value (``--info`` takes one only when it names a section)."""
INFO_VALUES = {"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"}
"""The sections ``--info`` may name."""

QUIET_HYDRA = [
    "hydra.output_subdir=null",
    "hydra.run.dir=.",
    "hydra/job_logging=disabled",
    "hydra/hydra_logging=disabled",
]
"""What a command that prints rather than produces a run directory adds: it writes nothing to disk."""

KEEPS_RUN_DIR = ("run", "baseline", "rescore")
"""The commands whose Hydra directory is theirs to keep (config, results, logs)."""


class Exit:
    """The exit status the Hydra app sets for :func:`run_app` to return."""

    code = 0
    refused = False
    """The app refused to start (a usage error found after Hydra made its directory): the directory goes."""
    run_dir: str | None = None


def takes_value(flag: str, following: str) -> bool:
    """Whether ``flag`` takes the argument after it, ``following``, as its value."""
    return flag in FLAGS_WITH_VALUE or (flag in ("--info", "-i") and following in INFO_VALUES)


def split_flags(args: list[str]) -> tuple[list[str], list[str]]:
    """Hydra's flags, with their values, and the overrides, wherever the user put the flags (Hydra's own parser
    wants every flag before the first override). Overrides never start with ``-`` (a negative number follows ``=``)."""
    flags, rest, i = [], [], 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            flags.append(arg)
            if i + 1 < len(args) and takes_value(arg, args[i + 1]):
                flags.append(args[i + 1])
                i += 1
        else:
            rest.append(arg)
        i += 1
    return flags, rest


def quote(text: str) -> str:
    """``text`` as a Hydra quoted string: backslashes before a quote (or the closing one) doubled, quotes escaped."""
    text = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text)
    return "'" + text.replace("'", "\\'") + "'"


def _positional(args: list[str]) -> tuple[list[str], list[str], int]:
    """(the plain arguments, the rest, where the first plain one was among the rest). A plain argument is neither a
    flag nor a flag's value nor an override (one with ``=``; an existing directory counts as plain even when its
    name has ``=``, as Hydra's sweep folders do)."""
    plain: list[str] = []
    rest: list[str] = []
    expect_value, where = False, 0
    for i, arg in enumerate(args):
        if expect_value:
            rest.append(arg)
            expect_value = False
        elif arg.startswith("-"):
            rest.append(arg)
            expect_value = takes_value(arg, args[i + 1] if i + 1 < len(args) else "")
        elif "=" in arg and not Path(arg).expanduser().is_dir():
            rest.append(arg)
        else:
            where = where if plain else len(rest)
            plain.append(arg)
    return plain, rest, where


def _absolute(path: str) -> str:
    return quote(str(Path(path).expanduser().resolve()))


def positional_runs(args: list[str], key: str) -> list[str]:
    """``args`` with the run directories given as plain arguments turned into ``key=[...]`` (absolute, quoted), put
    where the first of them was. ValueError when they come both ways."""
    dirs, rest, where = _positional(args)
    if dirs:
        if any(a.lstrip("+~").startswith(f"{key}=") for a in rest):
            raise ValueError(f"give run directories either as positional arguments or as {key}=[...], not both")
        rest.insert(where, f"{key}=[{','.join(_absolute(d) for d in dirs)}]")
    return rest


def single_run(args: list[str], key: str) -> list[str]:
    """``args`` with the one run directory given as a plain argument turned into ``key=PATH``. ValueError for more
    than one."""
    dirs, rest, where = _positional(args)
    if len(dirs) > 1:
        raise ValueError(f"one run directory at a time, not {len(dirs)}")
    if dirs:
        rest.insert(where, f"{key}={_absolute(dirs[0])}")
    return rest


def group_keys(group: str, schema: type, args: list[str]) -> list[str]:
    """``args`` with the bare keys of ``schema`` (``format=sft``, ``reward.kind=binary``; not top-level keys of the
    config) prefixed with ``<group>.``; flags, their values and other overrides left as they are."""
    from cudaforge.config import CudaforgeConfig

    top = {f.name for f in dataclasses.fields(CudaforgeConfig)}
    fields = {f.name for f in dataclasses.fields(schema)} - top
    out, expect_value = [], False
    for i, arg in enumerate(args):
        if expect_value or arg.startswith("-") or "=" not in arg or Path(arg).expanduser().is_dir():
            out.append(arg)
            expect_value = (
                not expect_value and arg.startswith("-") and takes_value(arg, args[i + 1] if i + 1 < len(args) else "")
            )
            continue
        key = arg.split("=", 1)[0]
        bare = key.lstrip("+~")
        prefix = arg[: len(key) - len(bare)]
        out.append(f"{prefix}{group}.{arg[len(prefix) :]}" if bare.split(".")[0] in fields else arg)
    return out


def user_config_dirs(flags: list[str]) -> list[Path]:
    """The folders ``--config-dir`` adds to the search path."""
    dirs = []
    for i, flag in enumerate(flags):
        if flag in ("--config-dir", "-cd") and i + 1 < len(flags):
            dirs.append(Path(flags[i + 1]).expanduser())
        elif flag.startswith("--config-dir="):
            dirs.append(Path(flag.split("=", 1)[1]).expanduser())
    return dirs


def expand_home(override: str) -> str:
    """``key=~/x`` with the home folder written out: a shell leaves ``~`` after ``=`` as it is, and Hydra's grammar
    refuses it in a value (``suite.root=~/KernelBench/KernelBench`` would fail with a lexer error)."""
    key, eq, value = override.partition("=")
    if eq and not key.startswith("~") and (value == "~" or value.startswith("~/")):
        return f"{key}={Path(value).expanduser()}"
    return override


PLUGIN_LAUNCHERS = {
    "joblib": "hydra_plugins.hydra_joblib_launcher",
    "submitit_local": "hydra_plugins.hydra_submitit_launcher",
    "submitit_slurm": "hydra_plugins.hydra_submitit_launcher",
}
"""Launchers Hydra's own plugins register under their names (``hydra/launcher=joblib``), and the plugin's module."""


def launcher_problem(overrides: list[str]) -> str | None:
    """``hydra/launcher=X`` whose plugin is not installed: one line (Hydra would end in a traceback)."""
    import importlib

    import yaml

    for override in overrides:
        key, _, option = override.partition("=")
        if key.lstrip("+~") != "hydra/launcher" or not option or option == "basic":
            continue
        path = CONFIG_DIR / "hydra" / "launcher" / f"{option}.yaml"
        if not path.is_file():
            plugin = PLUGIN_LAUNCHERS.get(option)
            if plugin is None:
                ours = sorted(p.stem for p in (CONFIG_DIR / "hydra" / "launcher").glob("*.yaml"))
                return (
                    f"hydra/launcher={option}: no such launcher; options: basic, {', '.join(ours)}, and with "
                    f"'cudaforge[sweeps]' installed {', '.join(sorted(PLUGIN_LAUNCHERS))}"
                )
            module = plugin
        else:
            target = str((yaml.safe_load(path.read_text()) or {}).get("_target_", ""))
            module = target.rpartition(".")[0]
        try:
            importlib.import_module(module)
        except ImportError:
            return (
                f"hydra/launcher={option} needs the Hydra plugin {module.split('.')[1] if '.' in module else module}"
                f", which this interpreter cannot import: pip install 'cudaforge[sweeps]' (docs/reproducing.md)"
            )
    return None


def remove_if_empty(run_dir: str | None) -> None:
    """Remove a run directory that holds nothing but what Hydra wrote before the app refused to start."""
    import shutil

    if not run_dir or not Path(run_dir).is_dir():
        return
    left = [
        p
        for p in Path(run_dir).iterdir()
        if p.name not in (HYDRA_DIR, LOCK_FILE, PLAN_FILE) and not p.name.endswith(".log")
    ]
    if not left:
        shutil.rmtree(run_dir, ignore_errors=True)


def run_app(action: str, func: Callable[[DictConfig], int], overrides: list[str]) -> int:
    """Run ``func`` as the Hydra app of ``cudaforge <action>`` on ``overrides`` (flags among them); its status."""
    from cudaforge.cli.checks import check_overrides, check_values

    register_configs()
    flags, overrides = split_flags(overrides)
    overrides = [expand_home(o) for o in overrides]
    mappings = mapping_keys()  # key={a: b} set as written: ++ lets Hydra take names the schema cannot list
    overrides = [f"++{o}" if o.split("=", 1)[0] in mappings else o for o in overrides]
    launcher = launcher_problem(overrides)
    if launcher:
        print(f"cudaforge {action}: error: {launcher}", file=sys.stderr)
        return 2
    checkable = not any(
        f in ("--cfg", "-c", "--info", "-i", "--help", "-h", "--hydra-help", "-m", "--multirun") for f in flags
    )  # a sweep's values are checked by Hydra, one job at a time
    if checkable:
        problem = check_overrides(overrides, CONFIG_DIR, user_config_dirs(flags))
        if problem:
            print(f"cudaforge {action}: error: {problem}", file=sys.stderr)
            return 2
    Exit.code, Exit.refused, Exit.run_dir = 0, False, None

    @hydra.main(config_path=str(CONFIG_DIR), config_name="cudaforge", version_base="1.3")
    def app(cfg: DictConfig) -> None:
        from hydra.core.hydra_config import HydraConfig

        from cudaforge.tasks.loader import TaskError
        from cudaforge.types import GpuUnavailable

        Exit.run_dir = HydraConfig.get().runtime.output_dir
        problems = check_values(cfg)
        if problems:
            print("\n".join(f"cudaforge {action}: error: {p}" for p in problems), file=sys.stderr)
            Exit.code, Exit.refused = max(Exit.code, 2), True
            return
        try:
            code = func(cfg)
        except (TaskError, ValueError, FileNotFoundError, GpuUnavailable) as exc:  # GpuUnavailable: the machine's
            print(f"cudaforge {action}: error: {exc}", file=sys.stderr)  # (a lost GPU, a sandbox it cannot build)
            code, Exit.refused = 2, True
        Exit.code = max(Exit.code, code)  # a multirun: the worst of its jobs

    name = action.replace(" ", "_")
    quiet = [] if action in KEEPS_RUN_DIR else QUIET_HYDRA
    saved = sys.argv
    sys.argv = [f"cudaforge {action}", *flags, *quiet, f"hydra.job.name={name}", *overrides]
    # a named directory that already holds a run (a rescore resumed there): Hydra rewrites its .hydra/ before the
    # command can refuse, so what was there is put back when it does
    named = [o.split("=", 1)[1] for o in overrides if o.startswith("hydra.run.dir=")]
    kept = {p: p.read_bytes() for p in (Path(named[-1]) / HYDRA_DIR).glob("*.yaml")} if named else {}
    try:
        app()
    finally:
        sys.argv = saved
    if Exit.refused and action in KEEPS_RUN_DIR:
        for path, data in kept.items():
            path.write_bytes(data)
        remove_if_empty(Exit.run_dir)
    return Exit.code
