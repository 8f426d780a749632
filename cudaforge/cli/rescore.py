"""``cudaforge rescore``: a run's kept kernels evaluated again under another protocol."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from cudaforge.cli.hydra_args import run_app, single_run
from cudaforge.track.store import RESCORED_FILE, RESULTS_FILE

HELP = """usage: cudaforge rescore RUN_DIR eval=PROTOCOL [rescore.all_rounds=true] [key=value ...]

Evaluate a run's kept kernels again under another evaluation protocol (each task's best kernel, or every round's),
on this machine's GPUs (the CPU checks correctness only), into a new run directory that names the original.
`cudaforge report RUN_DIR NEW_DIR` then shows both protocols side by side and which verdicts changed, and why.
An interrupted rescore goes on where it stopped when run again with the same hydra.run.dir.

examples:
  cudaforge rescore outputs/runs/A eval=cudaforge_paper
  cudaforge rescore outputs/runs/B eval=default rescore.all_rounds=true
  cudaforge rescore outputs/runs/A eval=cudaforge_paper eval.atol_fp32=1e-4 hydra.run.dir=outputs/rescore/A

config groups: eval (the protocol), rescore (keys rescore.*). exit status: 0 rescored, 1 some kernel failed to
evaluate (crashed), 2 a usage error. See docs/reproducing.md."""


def _rescore(cfg: DictConfig) -> int:
    from hydra.core.hydra_config import HydraConfig

    from cudaforge.eval import Evaluator
    from cudaforge.run.rescore import rescore

    if not cfg.rescore.run:
        raise ValueError("say which run: cudaforge rescore RUN_DIR eval=PROTOCOL")
    if not (Path(cfg.rescore.run) / RESULTS_FILE).is_file():
        raise FileNotFoundError(f"{cfg.rescore.run}: not a run directory (no results.jsonl)")
    hydra_cfg = HydraConfig.get()
    protocol, out_dir = hydra_cfg.runtime.choices.get("eval", "default"), hydra_cfg.runtime.output_dir
    evaluator = Evaluator(OmegaConf.to_object(cfg.eval))
    where = f"GPU {', '.join(evaluator.gpus)}" if evaluator.gpus else "the CPU (no GPU: correctness only)"
    print(f"rescoring {cfg.rescore.run} under eval={protocol} on {where} -> {out_dir}", flush=True)
    try:
        summary = rescore(
            cfg.rescore.run,
            out_dir,
            evaluator,
            protocol=protocol,
            all_rounds=cfg.rescore.all_rounds,
            say=lambda line: print(line, flush=True),
        )
    finally:
        evaluator.close()
    for note in summary["notes"]:
        print(f"NOTE: {note}")
    print(
        f"{summary['kernels']} kernels rescored, {summary['changed']} changed verdict; "
        f"`cudaforge report {cfg.rescore.run} {out_dir}` sets the two side by side"
    )
    rows = Path(out_dir) / RESCORED_FILE
    crashed = [line for line in rows.read_text().splitlines() if '"crashed"' in line] if rows.is_file() else []
    return 1 if crashed else 0


def main(args: list[str]) -> int:
    return run_app("rescore", _rescore, single_run(args, "rescore.run"))
