"""``cudaforge merge``: a campaign's shards joined into one run directory."""

from __future__ import annotations

import sys

HELP = """usage: cudaforge merge SHARD_DIR [SHARD_DIR ...] out=DIR

Joins the run directories of one campaign's shards (`cudaforge run suite.shard_count=N suite.shard_index=I`, run
on SLURM array jobs or other machines) into one run directory that report, rescore and export read as if every
task had run in one place: each finished task once, every LLM call and recorded reply, the shards' common config.
Merging is incremental: merge again into the same DIR as shards finish (nothing is added twice).

examples:
  cudaforge merge campaign/shard_0 campaign/shard_1 campaign/shard_2 out=campaign/merged
  cudaforge merge campaign/shard_* out=campaign/merged
  cudaforge merge /nfs/a/shard_0 /nfs/b/shard_1 out=outputs/runs/table1

exit status: 0 merged, every task finished; 1 merged, some tasks not finished yet; 2 a usage error (not run
directories, shards run with other settings). See docs/campaigns.md."""


def main(args: list[str]) -> int:
    from cudaforge.run.merge import MergeError, merge_runs
    from cudaforge.track.store import RunDirBusy, RunDirTooNew

    outs = [a.partition("=")[2] for a in args if a.startswith("out=")]
    other = [a for a in args if "=" in a and not a.startswith("out=")]
    shards = [a for a in args if "=" not in a]
    if len(outs) != 1 or other or not shards or any(a.startswith("-") for a in shards):
        print(
            "cudaforge merge: error: say SHARD_DIR [SHARD_DIR ...] out=DIR"
            + (f" (unknown: {' '.join(other)})" if other else ""),
            file=sys.stderr,
        )
        return 2
    try:
        record = merge_runs(outs[0], [*shards], say=lambda line: print(line, flush=True))  # a copy: list[str | Path]
    except (MergeError, RunDirBusy, RunDirTooNew) as exc:
        print(f"cudaforge merge: error: {exc}", file=sys.stderr)
        return 2
    return 1 if record["unfinished"] else 0
