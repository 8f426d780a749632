"""Command-line sugar of ``cudaforge export`` and ``cudaforge skill``: run directories as positional
arguments, and the group's own keys without their prefix (``format=sft`` for ``export.format=sft``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cudaforge.config import CudaforgeConfig

_TOP_LEVEL = {f.name for f in dataclasses.fields(CudaforgeConfig)}
_FLAGS_WITH_VALUE = {
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
    "--info",
    "-i",
    "--experimental-rerun",
}


def _quote(text: str) -> str:
    """A Hydra single-quoted string."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def group_overrides(group: str, schema: type, args: list[str]) -> list[str]:
    """``args`` with positional run directories turned into ``<group>.runs=[...]`` and bare keys of ``schema``
    (``format=sft``, ``reward.kind=binary``; not top-level keys) prefixed with ``<group>.``; flags and other
    overrides are left as they are.

    ValueError when run directories come both ways.
    """
    fields = {f.name for f in dataclasses.fields(schema)} - _TOP_LEVEL
    dirs, rest, flag_value = [], [], False
    for arg in args:
        if flag_value or arg.startswith("-"):
            rest.append(arg)
            flag_value = not flag_value and arg in _FLAGS_WITH_VALUE
        elif "=" not in arg or Path(arg).expanduser().is_dir():
            dirs.append(arg)
        else:
            key = arg.split("=", 1)[0]
            bare = key.lstrip("+~")
            prefix = arg[: len(key) - len(bare)]
            rest.append(f"{prefix}{group}.{arg[len(prefix) :]}" if bare.split(".")[0] in fields else arg)
    if dirs:
        if any(a.lstrip("+~").startswith(f"{group}.runs=") for a in rest):
            raise ValueError(f"give run directories either as positional arguments or as {group}.runs=[...], not both")
        paths = ",".join(_quote(str(Path(d).expanduser().resolve())) for d in dirs)
        rest.insert(0, f"{group}.runs=[{paths}]")
    return rest
