"""Does a finished torch.profiler session cost anything later? (GPU; the standby worker warms the profiler.)

    python benchmarks/launch_residue.py --out DIR

In one fresh process: host time of many tiny launches and the event time of a ~1 ms kernel,
before any profiler session, then after one; and how long the first and the second session
take. Writes ``launch_residue.json`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cudaforge.eval.timing import time_one  # noqa: E402


def launches(n: int = 3000) -> float:
    """Median host microseconds per launch of a tiny kernel, over 5 rounds of ``n``."""
    x = torch.empty(1, device="cuda")
    rounds = []
    for _ in range(5):
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(n):
            x.add_(1)
        torch.cuda.synchronize()
        rounds.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(rounds)


def kernel_ms() -> float:
    x = torch.randn(32768, 12288, device="cuda")
    return time_one(torch.nn.functional.gelu, args=(x,), trials=100, warmup=10).stats().median


def session() -> float:
    from torch.profiler import ProfilerActivity, profile

    started = time.perf_counter()
    with profile(activities=[ProfilerActivity.CUDA]):
        torch.empty(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.empty(1, device="cuda").add_(1)
    report = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    report["before"] = {"launch_us": launches(), "gelu_ms": kernel_ms()}
    report["first_session_s"] = session()
    report["after"] = {"launch_us": launches(), "gelu_ms": kernel_ms()}
    report["second_session_s"] = session()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "launch_residue.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
