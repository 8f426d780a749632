"""The tracking layer's settings: Weights & Biases (group ``tracker``).

Registered with Hydra by ``cudaforge/config.py`` (docs/configuration.md)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

# enums their layers define (one definition each), under the names the schemas have always used


class WandbMode(str, enum.Enum):
    """Weights & Biases mode."""

    online = "online"
    offline = "offline"
    disabled = "disabled"


@dataclass
class TrackerConfig:
    """Where results go besides the run directory."""

    wandb_mode: WandbMode = WandbMode.offline
    """W&B mode; the run directory is the source of truth either way."""
    project: str = "cudaforge"
    """W&B project."""
    entity: str | None = None
    """W&B entity (team)."""
    tags: list[str] = field(default_factory=list)
    """W&B tags."""
