"""``cudaforge repair``: a damaged run directory made resumable."""

from __future__ import annotations

import sys

HELP = """usage: cudaforge repair RUN_DIR

Makes a damaged run directory resumable, losing nothing it recorded: lines of results.jsonl that are not results go
to results.quarantine.jsonl (their tasks run again), a response cache or checkpoint database SQLite cannot read is
moved aside (NAME.corrupt-STAMP), and the response cache is rebuilt from the round folders and the ledger, so a
resumed task replays the calls it had paid for. Finished tasks are never touched.

examples:
  cudaforge repair outputs/runs/2026-12-02_10-00-00
  cudaforge repair runs/table1/shard_3
  cudaforge repair outputs/multirun/2026-12-02_10-00-00/0_strategy-cudaforge

exit status: 0 repaired (resume with the same command), 2 a usage error (not a run directory, or a run is using
it). See docs/architecture.md, "Run state"."""


def main(args: list[str]) -> int:
    from cudaforge.run.repair import repair
    from cudaforge.track.store import RunDirBusy

    if len(args) != 1 or args[0].startswith("-") or "=" in args[0]:
        print("cudaforge repair: error: say one run directory: cudaforge repair RUN_DIR", file=sys.stderr)
        return 2
    try:
        repair(args[0], say=lambda line: print(line, flush=True))
    except (ValueError, RunDirBusy) as exc:
        print(f"cudaforge repair: error: {exc}", file=sys.stderr)
        return 2
    print(f"repaired: resume with the same command and hydra.run.dir={args[0]}")
    return 0
