"""Does a finished torch.profiler session cost anything later? (GPU; the standby worker warms the profiler.)

    python benchmarks/launch_residue.py --out DIR

In one fresh process: host time of many tiny launches and the event time of a ~1 ms kernel,
before anything, after importing ``torch._inductor`` (what a standby worker imports ahead: a first
profiler session would otherwise import it), then after one profiler session; and how long the
import, the first and the second session take (the first session, after the import, is CUPTI's
and Kineto's start-up). ``--teardown`` sets Kineto's ``TEARDOWN_CUPTI=1`` (CUPTI detached after
each session). Writes ``launch_residue[_teardown].json`` and prints it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
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
    parser.add_argument("--teardown", action="store_true", help="TEARDOWN_CUPTI=1 (Kineto detaches CUPTI)")
    args = parser.parse_args()
    if args.teardown:
        os.environ["TEARDOWN_CUPTI"] = "1"
    torch.empty(1, device="cuda").add_(1)
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "teardown_cupti": args.teardown,
    }
    report["before"] = {"launch_us": launches(), "gelu_ms": kernel_ms()}
    started = time.perf_counter()
    importlib.import_module("torch._inductor")
    report["import_inductor_s"] = time.perf_counter() - started
    report["after_import"] = {"launch_us": launches(), "gelu_ms": kernel_ms()}
    report["first_session_s"] = session()
    report["after"] = {"launch_us": launches(), "gelu_ms": kernel_ms()}
    report["second_session_s"] = session()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"launch_residue{'_teardown' if args.teardown else ''}.json").write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
