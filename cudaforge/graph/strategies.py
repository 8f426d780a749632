"""Strategies: which agent answers after each evaluation (docs/agents.md).

A strategy is data, not a code fork: ``configs/strategy/<name>.yaml`` sets the flags the graph reads when it
routes (``judge_corrects``, ``judge_optimizes``, ``profile``), what it insists on (``metric_set``, ``round_cap``) and,
for a loop of another shape, the function that wires the graph (``graph``: a loop shape's registered name, or
``module:function``; the CudaForge loop, ``alternating``, by default). A strategy of your own is one such file in your
``--config-dir``, and one module when its loop has another shape (docs/agents.md, "Adding a strategy"); a package
registers a loop shape by name in the entry-point group ``cudaforge.strategies`` (:data:`LOOP_SHAPES`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from cudaforge import plugins
from cudaforge.paths import RESOURCES
from cudaforge.registry import Registry

STRATEGY_DIR = RESOURCES / "configs" / "strategy"
"""The packaged strategies, one YAML file each (``schema.yaml`` aside)."""
FLAGS = ("judge_corrects", "judge_optimizes", "profile")
"""The routing flags every strategy sets."""
DEFAULT_GRAPH = "alternating"
"""The CudaForge loop's shape (``Strategy.graph``): its registered name; the function is
``cudaforge.graph.loop:alternating``, a name that works as well."""


def _a_function(name: str, shape: Callable[..., None]) -> str | None:
    return None if callable(shape) else "not a function"


LOOP_SHAPES: Registry[Callable[..., None]] = Registry(
    "loop shape",
    plugins.STRATEGIES,
    built_in={
        "alternating": "cudaforge.graph.loop:alternating",
        "best_of_n": "cudaforge.search.best_of_n:shape",
        "beam": "cudaforge.search.beam:shape",
        "tree": "cudaforge.search.tree:shape",
    },
    check=_a_function,
)
"""The loop shapes by name (``strategy.graph``): each a function wiring the graph from the loop's nodes
(``cudaforge.graph.loop.LoopShape``): the CudaForge loop and the searches (:mod:`cudaforge.search`, loaded when a
strategy names them); a package adds one in the entry-point group ``cudaforge.strategies``."""


def graph_name(spec: str) -> str:
    """``strategy.graph`` as its registered name where it spells out a built-in loop shape's function
    (``cudaforge.graph.loop:alternating`` -> ``alternating``, as configs written before the registry say it)."""
    spec = str(spec)
    return next((name for name, target in LOOP_SHAPES.built_in().items() if target == spec), spec)


def graph_builder(spec: str) -> Callable[..., None]:
    """The loop shape ``spec`` names (``strategy.graph``): a registered loop shape's name, or ``module:function``;
    an error (ValueError) says what is wrong with it."""
    spec = str(spec)
    if ":" not in spec:
        if spec in LOOP_SHAPES:
            try:
                return LOOP_SHAPES.get(spec)
            except ValueError as exc:
                raise ValueError(f"strategy.graph={spec!r}: {exc}") from None
        raise ValueError(
            f"strategy.graph={spec!r}: no loop shape is registered by that name (known: "
            f"{', '.join(LOOP_SHAPES.names())}); or name a function as module:function "
            "(e.g. cudaforge.graph.loop:alternating)"
        )
    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise ValueError(
            f"strategy.graph={spec!r}: name a function as module:function (e.g. cudaforge.graph.loop:alternating)"
        )
    import importlib

    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"strategy.graph={spec!r}: cannot import {module_name}: {exc}") from None
    shape = getattr(module, name, None)
    if not callable(shape):
        raise ValueError(f"strategy.graph={spec!r}: {module_name} has no function {name}")
    return cast(Callable[..., None], shape)


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
    """The loop's shape: a registered loop shape's name (:data:`LOOP_SHAPES`) or ``module:function``, the function
    wiring the graph (``cudaforge.graph.loop.build_graph``)."""
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
            name,
            **flags,
            metric_set=metric_set,
            max_rounds=cap,
            graph=graph_name(graph or DEFAULT_GRAPH),
            search=options,
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
