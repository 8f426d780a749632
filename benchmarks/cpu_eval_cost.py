"""Seconds per CPU evaluation of a bundled candidate (three in a row), for the cost of the sandbox and verifier.

    python benchmarks/cpu_eval_cost.py [--repo PATH]   # PATH: another checkout to compare (e.g. a git worktree)

Prints the three wall times of ``Evaluator({"device": "cpu"}).evaluate(tiny ReLU, triton_relu.py)``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def main() -> None:
    """Time three CPU evaluations with the package found at ``--repo``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=HERE)
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo))
    from cudaforge.eval.evaluator import Evaluator
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/1_ReLU")
    source = (HERE / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    evaluator = Evaluator({"device": "cpu", "build_cache_dir": "/tmp/cudaforge-cpu-eval-cost"})
    times = []
    for _ in range(3):
        started = time.perf_counter()
        result = evaluator.evaluate(task, source)
        times.append(round(time.perf_counter() - started, 2))
    print(args.repo, result.status.value, times)


if __name__ == "__main__":
    main()
