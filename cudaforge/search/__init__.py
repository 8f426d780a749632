"""Search strategies: loops that keep several candidates alive (best-of-N, beam, tree search), and an offline
simulator of the Coder to compare them cheaply (docs/agents.md, "Search strategies"; docs/simulator.md).

Each strategy is one module with a ``shape`` function (``strategy.graph: cudaforge.search.<module>:shape``) and one
YAML file under ``configs/strategy/``; ``cudaforge.search.engine`` holds what they share."""
