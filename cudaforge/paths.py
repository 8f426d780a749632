"""Where the package and its data are: found from the package's own location, never the working directory."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
"""The folder holding the package: a checkout's root, or site-packages when installed."""
PACKAGE_DIR = Path(__file__).resolve().parent
"""The package itself (``cudaforge/``)."""
RESOURCES = PACKAGE_DIR / "resources"
"""The package data: configs, agent templates, suites, the demo transcript, published tables, candidates."""
CONFIG_DIR = RESOURCES / "configs"
"""The Hydra config tree."""
