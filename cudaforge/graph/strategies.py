"""Strategies: which agent answers after each evaluation (docs/agents.md).

A strategy is data, not a code fork: ``configs/strategy/<name>.yaml`` sets the flags the graph reads when it
routes (``judge_corrects``, ``judge_optimizes``, ``profile``), what it insists on (``metric_set``, ``round_cap``) and,
for a loop of another shape, the function that wires the graph (``graph``: ``module:function``, the CudaForge loop's
``cudaforge.graph.loop:alternating`` by default). A strategy of your own is one such file in your ``--config-dir``,
and one module when its loop has another shape (docs/agents.md, "Adding a strategy").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from cudaforge.paths import RESOURCES

STRATEGY_DIR = RESOURCES / "configs" / "strategy"
"""The packaged strategies, one YAML file each (``schema.yaml`` aside)."""
FLAGS = ("judge_corrects", "judge_optimizes", "profile")
"""The routing flags every strategy sets."""
DEFAULT_GRAPH = "cudaforge.graph.loop:alternating"
"""The CudaForge loop's shape (``Strategy.graph``; the function lives in ``cudaforge.graph.loop``)."""


@dataclass(frozen=True)
class Strategy:
    """How the Coder and the Judge alternate."""

    name: str
    judge_corrects: bool
    """A failed candidate goes to the Judge (correction) before the Coder repairs it."""
    judge_optimizes: bool
    """A correct candidate goes to the Judge (optimisation) before the Coder optimises it."""
    profile: bool
    """Correct candidates are profiled; the metrics go to whoever speaks next."""
    metric_set: str | None = None
    """A metric set this strategy insists on (``full_metrics``: ncu's full set)."""
    max_rounds: int | None = None
    """A round cap this strategy insists on (``one_shot``: 1)."""
    graph: str = DEFAULT_GRAPH
    """The loop's shape: ``module:function`` wiring the graph (``cudaforge.graph.loop.build_graph``)."""
    search: dict[str, Any] = field(default_factory=dict, compare=False)
    """Options of the loop's shape (``strategy.search``: a search strategy's samples, beam width, Judge role)."""

    def nodes_per_round(self) -> int:
        """The Coder steps one round can hold: a search's ``samples`` times its ``beam_width`` (1 each when its
        options leave them out; the CudaForge loop: 1)."""
        return max(1, int(self.search.get("samples") or 1)) * max(1, int(self.search.get("beam_width") or 1))

    def round_cap(self, configured: int) -> int:
        """The rounds a task gets: ``strategy.max_rounds`` as configured, or this strategy's own cap when lower."""
        return min(configured, self.max_rounds or configured)

    @classmethod
    def from_config(cls, node: Any) -> Strategy:
        """The strategy of a config's ``strategy`` group (a DictConfig, a ``StrategyConfig`` or a dict): its own
        flags, and for those left null (a config written before strategies moved to YAML, or a schema default) the
        packaged strategy of its name's."""
        get = node.get if isinstance(node, dict) else lambda key, default=None: getattr(node, key, default)
        name = str(getattr(get("name", "cudaforge"), "value", get("name", "cudaforge")))
        values = {key: get(key) for key in FLAGS}
        metric_set, cap, graph, search = get("metric_set"), get("round_cap"), get("graph"), get("search")
        if any(v is None for v in values.values()):
            packaged = get_strategy(name)
            values = {key: getattr(packaged, key) if v is None else v for key, v in values.items()}
            if metric_set is None:
                metric_set = packaged.metric_set
            if cap is None:
                cap = packaged.max_rounds
            if graph is None:
                graph = packaged.graph
            search = search or packaged.search
        flags = {k: bool(v) for k, v in values.items()}
        options = dict(search or {})
        return cls(
            name, **flags, metric_set=metric_set, max_rounds=cap, graph=str(graph or DEFAULT_GRAPH), search=options
        )


def strategy_names() -> list[str]:
    """The packaged strategies' names."""
    return sorted(p.stem for p in STRATEGY_DIR.glob("*.yaml") if p.stem != "schema")


@cache
def get_strategy(name: str) -> Strategy:
    """The packaged strategy called ``name`` (its YAML file); an unknown name is an error listing the known ones."""
    import yaml

    name = str(getattr(name, "value", name))
    path = STRATEGY_DIR / f"{name}.yaml"
    if name == "schema" or not path.is_file():
        raise ValueError(f"unknown strategy {name!r}; known: {', '.join(strategy_names())}")
    data = yaml.safe_load(path.read_text()) or {}
    missing = [key for key in FLAGS if not isinstance(data.get(key), bool)]
    if missing:
        raise ValueError(f"{path}: the strategy sets no {', '.join(missing)} (true or false)")
    return Strategy(
        name,
        **{key: data[key] for key in FLAGS},
        metric_set=data.get("metric_set"),
        max_rounds=data.get("round_cap"),
        graph=str(data.get("graph") or DEFAULT_GRAPH),
        search=dict(data.get("search") or {}),
    )
