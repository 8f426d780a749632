"""Named task subsets: level -> problem ids, usable as ``suite.subset=<name>``."""

from __future__ import annotations

from pathlib import Path

import yaml

NAMED_SUBSETS: dict[str, dict[int, list[int]]] = {
    # The CudaForge paper's 25-task ablation subset D* of KernelBench (arXiv 2511.01884).
    "cudaforge_dstar": {
        1: [13, 10, 16, 29, 35, 72, 7, 89, 93, 34],
        2: [17, 19, 40, 3, 13, 21, 38, 28, 26, 34],
        3: [5, 18, 32, 41, 21],
    },
}


def resolve_subset(name_or_path: str) -> dict[int, list[int]]:
    """Return the subset called ``name_or_path``, or read it from a YAML file ``{level: [ids]}``."""
    if name_or_path in NAMED_SUBSETS:
        return NAMED_SUBSETS[name_or_path]
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(NAMED_SUBSETS))
        raise ValueError(f"unknown subset {name_or_path!r}: not one of [{known}] and not a YAML file")
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a subset file maps level numbers to lists of problem ids")
    try:
        return {int(level): [int(i) for i in ids] for level, ids in data.items()}
    except (TypeError, ValueError):
        raise ValueError(f"{path}: a subset file maps level numbers to lists of problem ids") from None
