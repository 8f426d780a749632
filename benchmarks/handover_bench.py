"""The verifier's hand-over and exit: what one evaluation costs outside the verifier's own seconds.

    python benchmarks/handover_bench.py [--repeats 5] [--gpu 0]

A standby verifier is started and waited for, then handed one candidate (the bundled Triton ReLU on ``tiny``'s
ReLU; on a CPU it runs in Triton's interpreter); per evaluation it prints the wall time of the hand-over to the
result, the verifier's own total (``fingerprint["verifier_s"]``) and the rest: writing the payload, the child
reading it, the result's file and, unless the result is taken as soon as it is delivered, the child's exit.
Without ``--gpu`` it runs on the CPU (the standby path is the evaluator's on a GPU; here it is driven directly).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cudaforge.eval.evaluator import WORKER_ENTRY, WORKER_PREPARE, Evaluator  # noqa: E402
from cudaforge.proc.isolation import Standby  # noqa: E402
from cudaforge.tasks import find_task, selection  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gpu", default=None, help="a GPU's index (default: the CPU)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats: at least 1")
    task = find_task(selection("tiny"), "level1/1_ReLU")
    source = (REPO / "benchmarks" / "candidates" / "triton_relu.py").read_text()
    device = "cpu" if args.gpu is None else "cuda"
    evaluator = Evaluator({"device": device}, gpus=None if args.gpu is None else [args.gpu])
    env = evaluator._env(device)
    payload = {
        "task": task.to_dict(),
        "candidate": source,
        "eval": evaluator.cfg.to_dict(),
        "build": evaluator.build_settings().to_dict(),
        "device": device,
    }
    evaluator.evaluate(task, source)  # the build and the JIT caches warm: not counted
    rest = []
    for i in range(args.repeats):
        standby = Standby(WORKER_ENTRY, WORKER_PREPARE, gpu=args.gpu, env=env, trusted=evaluator._trusted_verifier())
        while not standby.ready() and standby.alive():
            time.sleep(0.02)
        started = time.monotonic()
        outcome = standby.run(payload, timeouts=evaluator._timeouts())
        wall = time.monotonic() - started
        if outcome.status != "ok" or outcome.result is None:
            print(f"run {i}: {outcome.status}: {outcome.error[:300]}", file=sys.stderr)
            return 1
        own = outcome.result["fingerprint"]["verifier_s"]
        rest.append(wall - own["total"])
        print(
            f"run {i}: {outcome.result['status']}, wall {wall:.3f} s, verifier {own['total']:.3f} s (tail "
            f"{own['tail']:.3f} s), hand-over and exit {rest[-1] * 1e3:.1f} ms",
            flush=True,
        )
    print(f"hand-over and exit: median {statistics.median(rest) * 1e3:.1f} ms over {len(rest)} evaluations on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
