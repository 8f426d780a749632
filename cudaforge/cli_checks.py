"""What the ``cudaforge`` command checks before Hydra runs an app, and the help it prints.

* ``HELP``: one short page per subcommand (what it does, its required keys, examples, the groups it reads).
* ``check_overrides``: composes the config with the user's overrides through Hydra's compose API and turns a
  failure into one or two lines with the nearest names ("did you mean suite=tiny?"), never Hydra's dump.
* ``check_values``: the values Hydra's types cannot check (``strategy.max_rounds >= 1``, ...), each naming its key.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from cudaforge import languages

_GROUPS = "suite, coder, judge, strategy, eval, profile, tracker, experiment"

HELP: dict[str, str] = {
    "run": """usage: cudaforge run [key=value ...]

Runs the Coder/Judge loop over a suite: for each task the Coder writes a kernel, the evaluator checks and times
it, the profiler measures it, the Judge says what to fix or optimise next, until the round or dollar budget ends.
Writes a run directory (results.jsonl, every round's sources, logs, LLM cache) and prints each task's best result.
Before any paid or long work it checks the models' keys and servers, the demo or replay coverage of the tasks,
and prints the most the run can cost. Defaults: the demo models on suite=tiny (offline, no key needed).

examples:
  cudaforge run                                          # offline demo: 3 tiny tasks on the CPU
  cudaforge run suite=main coder=openai_o3 judge=openai_o3 strategy.max_dollars=1
  cudaforge run experiment=cudaforge_table1 suite.root=~/KernelBench/KernelBench suite.first_n=5

config groups: {groups}
keys: strategy.max_rounds, strategy.max_dollars, strategy.max_minutes, concurrency, suite.levels, suite.first_n
exit status: 0 every task correct, 1 it ran and some task has no correct kernel or was not run (the provider
unreachable: the same command runs it again), 2 a usage error (nothing written), 130 interrupted (resume with the
same command and hydra.run.dir=RUN_DIR). With -m, the highest status of its jobs.
See docs/configuration.md.""",
    "eval": """usage: cudaforge eval task=TASK candidate=PATH.py [key=value ...]

Evaluates one candidate kernel against a task: static checks, build, correctness trials against the reference,
and on a GPU the timing (speedup with its confidence interval) and the integrity guards. On a CPU, tasks sized
for a GPU are checked on their 'small' inputs, without timing.
TASK is a task id (main/level1/1_GELU), a unique part of one (level1/1_GELU, 1_GELU; any bundled suite) or the
path of a problem file in KernelBench format.

examples:
  cudaforge eval task=level1/1_ReLU candidate=benchmarks/candidates/triton_relu.py
  cudaforge eval task=main/level1/1_GELU candidate=my_gelu.py output=result.json
  cudaforge eval task=problems/my_op.py candidate=my_op_kernel.py eval=quick

config groups: suite, eval
exit status: 0 correct, 1 evaluated and not correct, 2 a usage error, 3 compiled only, not verified (a CUDA
candidate on a machine without a GPU: nothing was run). See docs/evaluation.md.""",
    "profile": """usage: cudaforge profile task=TASK candidate=PATH.py [key=value ...]

Profiles one candidate with Nsight Compute (its own kernels only; a named metric set), with the task's roofline
and the GPU's spec sheet. Without a GPU it reports the task's FLOPs and minimum bytes only. TASK as for eval.

examples:
  cudaforge profile task=level1/3_MatmulBiasReLU candidate=benchmarks/candidates/cuda_matmul_bias_relu.py
  cudaforge profile task=level1/2_Softmax candidate=k.py profile=basic output=profile.json
  cudaforge profile task=level1/1_ReLU candidate=k.py profile=cudaforge24_hopper

config groups: suite, profile, eval
exit status: 0 profiled (or only the roofline, without a GPU), 1 the profile failed, 2 a usage error.""",
    "baseline": """usage: cudaforge baseline [key=value ...]

Times a suite's reference implementations on the GPU, eager and torch.compile, with confidence intervals, and
writes baseline.jsonl in a run directory. Needs a GPU.

examples:
  cudaforge baseline suite=main
  cudaforge baseline suite=main suite.levels=[1] eval.timing_trials=50
  cudaforge baseline suite=kernelbench suite.root=~/KernelBench/KernelBench output=base.jsonl

config groups: suite, eval
exit status: 0 every reference timed, 1 some failed, 2 no GPU or a usage error.""",
    "report": """usage: cudaforge report RUN_DIR [RUN_DIR ...] [key=value ...]

Tables (Markdown, LaTeX, CSV) and plots of one or more runs beside the published ones (the CudaForge paper's
Table 1): correctness, mean and median speedup, fast_p, dollars and minutes per kernel, with intervals.

examples:
  cudaforge report outputs/runs/2026-12-02_10-00-00
  cudaforge report outputs/multirun/2026-12-02_10-00-00          # a sweep: its jobs' runs
  cudaforge report RUN_A RUN_B report.out_dir=report/
  cudaforge report RUN report.failed_as=zero

config group: report (keys report.*). exit status: 0 written, 2 a usage error. See docs/reports.md.""",
    "rescore": """usage: cudaforge rescore RUN_DIR eval=PROTOCOL [rescore.all_rounds=true] [key=value ...]

Evaluate a run's kept kernels again under another evaluation protocol (each task's best kernel, or every round's),
on this machine's GPUs (the CPU checks correctness only), into a new run directory that names the original.
`cudaforge report RUN_DIR NEW_DIR` then shows both protocols side by side and which verdicts changed, and why.
An interrupted rescore goes on where it stopped when run again with the same hydra.run.dir.

examples:
  cudaforge rescore outputs/runs/A eval=cudaforge_paper
  cudaforge rescore outputs/runs/B eval=default rescore.all_rounds=true
  cudaforge rescore outputs/runs/A eval=cudaforge_paper eval.atol_fp32=1e-4 hydra.run.dir=outputs/rescore/A

config groups: eval (the protocol), rescore (keys rescore.*). exit status: 0 rescored, 1 some kernel failed to
evaluate (crashed), 2 a usage error. See docs/reproducing.md.""",
    "plan": """usage: cudaforge plan [RUN_DIR] [key=value ...]

Before a campaign: the dollars, LLM calls, tokens and hours to expect for the selected suite under a config (the
same overrides as `cudaforge run`), from the models' prices, the strategy's rounds, per-call figures (plan.* defaults
calibrated on the CudaForge paper, or measured in a finished run with plan.from_run=DIR) and per-round time (the
stored benchmark for this machine's device, or plan.round_seconds). With RUN_DIR: the run's plan beside what it
measured.

examples:
  cudaforge plan experiment=cudaforge_table1 suite.root=~/KernelBench/KernelBench plan.nodes=8 concurrency=4
  cudaforge plan suite=main coder=claude_sonnet_4 judge=openai_o3 plan.from_run=outputs/runs/PILOT
  cudaforge plan outputs/runs/A

keys: plan.* (nodes, gpus, from_run, input_tokens_per_call, output_tokens_per_call, llm_seconds_per_call,
round_seconds), output=FILE (the plan as JSON). exit status: 0 planned, 2 a usage error. See docs/campaigns.md.""",
    "export": """usage: cudaforge export RUN_DIR [RUN_DIR ...] format=sft|trajectories|preferences|turns [key=value ...]

Datasets (JSONL, loadable with Hugging Face datasets) of verified kernels from finished runs, or of every agent turn
labelled with its verdict (format=turns: hacks and failures included), with a card that says how they were made.

examples:
  cudaforge export RUN format=sft
  cudaforge export RUN_A RUN_B format=preferences min_speedup=1.2
  cudaforge export RUN format=turns out_dir=data/

keys: export.* (given without the prefix). exit status: 0 written, 2 a usage error. See docs/teaching.md.""",
    "integrate": """usage: cudaforge integrate RUN_DIR [RUN_DIR ...] [recipe=NAME|FILE] [key=value ...]

The runs' best kernels patched into a whole model (a recipe: the model built from its config with random weights,
and which module class each task's kernel replaces), checked against the eager model in the sandbox and, on a GPU,
timed end to end against eager and torch.compile. Writes <recipe>.json and .md into <first run>/integrate/, which
`cudaforge report` shows beside each kernel's standalone speedup.

examples:
  cudaforge integrate outputs/runs/A                                  # recipe tiny_mlp: the tiny suite's kernels
  cudaforge integrate RUN recipe=transformer_block                    # a main-suite run's LayerNorm and GELU
  cudaforge integrate RUN_A RUN_B recipe=tiny_mlp out_dir=results/     # recipe=PATH.py: a recipe of your own

keys: integrate.* (given without the prefix: recipe, out_dir), eval.* (the protocol). exit status: 0 the patched model
is correct, 1 it is not (or nothing could be patched), 2 a usage error. See docs/reports.md, "In a model".""",
    "skill distill": """usage: cudaforge skill distill RUN_DIR [RUN_DIR ...] [key=value ...]

Writes a skill document from the Judge's advice that led to verified speedups in finished runs.

examples:
  cudaforge skill distill RUN
  cudaforge skill distill RUN_A RUN_B model=openai/o3
  cudaforge skill distill RUN allow_untimed=true

keys: skill.* (given without the prefix). exit status: 0 written, 2 a usage error. See docs/teaching.md.""",
    "skill compare": """usage: cudaforge skill compare WITH_RUN WITHOUT_RUN [key=value ...]

The paired difference between a run with a skill and one without it, with confidence intervals.

examples:
  cudaforge skill compare RUN_WITH RUN_WITHOUT
  cudaforge skill compare SWEEP_DIR
  cudaforge skill compare RUN_WITH RUN_WITHOUT output=effect.json

keys: skill.*, report.*. exit status: 0, or 2 a usage error. See docs/teaching.md.""",
    "tasks list": """usage: cudaforge tasks list [key=value ...]

Prints the tasks a suite selection holds (id, level, name). Writes nothing.

examples:
  cudaforge tasks list suite=main
  cudaforge tasks list suite=main suite.levels=[1] suite.first_n=5
  cudaforge tasks list suite=kernelbench suite.root=~/KernelBench/KernelBench

config group: suite. exit status: 0, or 2 a usage error.""",
    "tasks audit": """usage: cudaforge tasks audit [key=value ...]

Flags degenerate tasks (constant or input-independent outputs, NaN/Inf, nondeterminism, references too fast to
time), which make reward hacking easy. On a CPU, tasks sized for a GPU run their 'small' inputs.

examples:
  cudaforge tasks audit suite=tiny
  cudaforge tasks audit suite=main output=audit.json
  cudaforge tasks audit suite=kernelbench suite.root=PATH suite.levels=[1]

config groups: suite, audit (audit.fail_on: which finding severities fail, default [hack_enabling,broken]).
exit status: 0 nothing of those severities, 1 some task has one, 2 a usage error.""",
    "merge": """usage: cudaforge merge SHARD_DIR [SHARD_DIR ...] out=DIR

Joins the run directories of one campaign's shards (`cudaforge run suite.shard_count=N suite.shard_index=I`, run
on SLURM array jobs or other machines) into one run directory that report, rescore and export read as if every
task had run in one place: each finished task once, every LLM call and recorded reply, the shards' common config.
Merging is incremental: merge again into the same DIR as shards finish (nothing is added twice).

examples:
  cudaforge merge campaign/shard_0 campaign/shard_1 campaign/shard_2 out=campaign/merged
  cudaforge merge campaign/shard_* out=campaign/merged
  cudaforge merge /nfs/a/shard_0 /nfs/b/shard_1 out=outputs/runs/table1

exit status: 0 merged, every task finished; 1 merged, some tasks not finished yet; 2 a usage error (not run
directories, shards run with other settings). See docs/campaigns.md.""",
    "repair": """usage: cudaforge repair RUN_DIR

Makes a damaged run directory resumable, losing nothing it recorded: lines of results.jsonl that are not results go
to results.quarantine.jsonl (their tasks run again), a response cache or checkpoint database SQLite cannot read is
moved aside (NAME.corrupt-STAMP), and the response cache is rebuilt from the round folders and the ledger, so a
resumed task replays the calls it had paid for. Finished tasks are never touched.

examples:
  cudaforge repair outputs/runs/2026-12-02_10-00-00
  cudaforge repair runs/table1/shard_3
  cudaforge repair outputs/multirun/2026-12-02_10-00-00/0_strategy-cudaforge

exit status: 0 repaired (resume with the same command), 2 a usage error (not a run directory, or a run is using
it). See docs/architecture.md, "Run state".""",
    "tasks diff": """usage: cudaforge tasks diff ROOT_A ROOT_B

Lists the problems two KernelBench-layout folders hold differently: matched by level and problem number, a
problem is `changed` when its reference file's content hash (or its name) differs, or is only in one of them.
Use it to see how the problem set a paper used differs from the one you run (docs/reproducing.md).

examples:
  cudaforge tasks diff ~/KernelBench-2024/KernelBench ~/KernelBench/KernelBench
  cudaforge tasks diff ~/CudaForge/KernelBench ~/KernelBench/KernelBench
  cudaforge tasks diff cudaforge/resources/suites/main my_suite

exit status: 0 the same problems, 1 some differ, 2 a usage error (a folder missing or not in that layout).""",
    "tasks pin": """usage: cudaforge tasks pin ROOT [LEVEL ...]

Prints the digest of a KernelBench-layout folder's problems (of the levels given, else all) and how many each level
holds: the value of suite.expected_problem_set, which makes `cudaforge run` refuse any other copy of the problems
(suite.allow_other_problem_set=true runs it anyway, and the report marks the run `other problem set`). The paper
overlays (experiment=cudaforge_*) pin the CudaForge authors' copy, levels 1-3: b7d841ce26e051dd.

examples:
  cudaforge tasks pin ~/CudaForge/KernelBench 1 2 3
  cudaforge tasks pin cudaforge/resources/suites/main

exit status: 0 printed, 2 a usage error (a folder missing, not in that layout, or without the levels asked).""",
    "doctor": """usage: cudaforge doctor [key=value ...]

Checks the whole setup and prints one line per check: the GPU, nvcc, ncu and its counters, Triton, the sandbox,
the configured models' keys and servers, and the caches with their sizes. Changes nothing.

examples:
  cudaforge doctor
  cudaforge doctor coder=openai_o3 judge=openai_o3
  cudaforge doctor suite=main

exit status: 0 nothing stops a run, 1 something does (each such line starts with 'x').""",
    "cache": """usage: cudaforge cache info | cudaforge cache clear [KIND ...]

Where cudaforge keeps its caches and how big they are: build (CUDA builds), pch (precompiled headers), tilelang
and triton (a source's own TileLang and Triton kernels; triton also the verifier's own), profiles (profiles and
task costs), llm (the file llm_cache.path names; by default each run keeps its own). `clear` empties the kinds
named (without a name: all but llm). Settings such as eval.build_cache_dir=DIR point it elsewhere;
eval.build_cache_max_gb (20) caps build + tilelang + triton.

examples:
  cudaforge cache info
  cudaforge cache clear build
  cudaforge cache clear pch profiles eval.build_cache_dir=/scratch/cudaforge

exit status: 0, or 2 an unknown kind. See docs/evaluation.md, "Caches".""",
}
for _key, _text in HELP.items():
    HELP[_key] = _text.replace("{groups}", _GROUPS)


def _config_options(config_dirs: list[Path]) -> dict[str, list[str]]:
    """Group -> option names found in the config directories (ours first, the user's added)."""
    options: dict[str, set[str]] = {}
    for root in config_dirs:
        if not root.is_dir():
            continue
        for group in root.iterdir():
            if group.is_dir() and not group.name.startswith(("_", ".")) and group.name != "hydra":
                options.setdefault(group.name, set()).update(p.stem for p in group.glob("*.yaml"))
    return {g: sorted(o) for g, o in options.items()}


def _keys(node: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config."""
    from omegaconf import DictConfig

    keys = []
    for key in node.keys() if isinstance(node, DictConfig) else []:
        dotted = f"{prefix}{key}"
        keys.append(dotted)
        try:
            child = node._get_node(key)
        except Exception:  # noqa: BLE001 - a key we cannot descend into is still a key
            continue
        if isinstance(child, DictConfig):
            keys += _keys(child, dotted + ".")
    return keys


def _near(word: str, choices: list[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(word, choices, n=n, cutoff=0.6)


def _mean(choices: list[str]) -> str:
    return f"; did you mean {' or '.join(choices)}?" if choices else ""


def check_overrides(overrides: list[str], config_dir: Path, user_dirs: list[Path]) -> str | None:
    """Compose the config with ``overrides`` (Hydra's compose API, our search path plus ``user_dirs``); None when it
    composes, else a one- or two-line message naming the bad override and the nearest valid names."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException, MissingConfigException
    from omegaconf.errors import OmegaConfBaseException

    plain = [
        o for o in overrides if not o.lstrip("+~").startswith("hydra.") and not o.lstrip("+~").startswith("hydra/")
    ]
    extra = [f"hydra.searchpath=[{','.join('file://' + str(d.resolve()) for d in user_dirs)}]"] if user_dirs else []
    options = _config_options([config_dir, *user_dirs])
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3", job_name="check"):
            try:
                compose("cudaforge", overrides=extra + plain)
                return None
            except MissingConfigException as exc:
                return _missing_option(str(exc), plain, options)
            except (HydraException, OmegaConfBaseException, ValueError) as exc:
                sweep = re.search(r"(?:Ambiguous value for argument|Sweep parameters) '([^']+)'", str(exc))
                if sweep:
                    return f"{sweep.group(1)}: several values are a sweep: add -m (cudaforge run -m {sweep.group(1)})"
                base = compose("cudaforge", overrides=extra)
                text = "\n".join(str(e) for e in (exc, exc.__cause__) if e is not None)
                return _bad_override(text, plain, _keys(base), options)
    except Exception:  # noqa: BLE001 - when the check itself cannot run, Hydra still says what is wrong
        return None
    finally:
        GlobalHydra.instance().clear()


def _missing_option(text: str, overrides: list[str], options: dict[str, list[str]]) -> str:
    found = re.search(r"Could not (?:find|load) '([^']+)/([^']+)'", text)
    if not found:
        return text.splitlines()[0]
    group, option = found.group(1), found.group(2)
    known = [o for o in options.get(group, []) if o != "schema"]
    near = [f"{group}={o}" for o in _near(option, known)]
    return f"no option {option!r} in config group {group}{_mean(near)} (options: {', '.join(known)})"


def _bad_override(text: str, overrides: list[str], keys: list[str], options: dict[str, list[str]]) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    bad = (
        re.search(r"override '([^']+)'", text)
        or re.search(r"override ([^\s=']+)=", text)
        or re.search(r"full_key: (\S+)", text)
        or re.search(r"Key '([^']+)'", text)
    )
    name = bad.group(1) if bad else ""
    override = next((o for o in overrides if o.lstrip("+~").split("=", 1)[0] in (name, name.split(".")[-1])), "")
    key = override.lstrip("+~").split("=", 1)[0] if override else name
    value_problem = next((line for line in lines if "could not be converted" in line or "Invalid value" in line), "")
    if value_problem and key:
        value_problem = re.sub(r"\s*full_key:.*", "", value_problem)
        return f"{override or key}: {value_problem}"
    if key and key not in keys:
        groups = [g for g in options if g != "hydra"]
        near = _near(key, keys) if "." in key else _near(key, sorted(set(groups + [k for k in keys if "." not in k])))
        near = [f"{n}=OPTION ({', '.join(options[n][:4])}, ...)" if n in options else n for n in near]
        return f"no config key {key!r}{_mean(near)} (docs/configuration.md lists every key)"
    return f"{override or key}: {lines[-1] if lines else text}" if (override or key) else (lines[0] if lines else text)


_MINIMUMS = [
    ("strategy.max_rounds", 1),
    ("strategy.memory_rounds", 0),
    ("strategy.max_follow_ups", 0),
    ("concurrency", 1),
    ("seed", 0),
    ("eval.correctness_trials", 1),
    ("eval.timing_trials", 1),
    ("eval.timing_min_trials", 2),
    ("eval.timing_stop_halfwidth", 0),
    ("eval.warmup", 0),
    ("eval.launch_inclusive_trials", 0),
    ("eval.telemetry_batch", 1),
    ("eval.telemetry_remeasure", 0),
    ("audit.batch_size", 1),
    ("audit.workers_per_gpu", 1),
    ("audit.cpu_workers", 1),
    ("audit.timeout_s", 1),
    ("plan.nodes", 1),
    ("plan.gpus", 1),
    ("plan.input_tokens_per_call", 0),
    ("plan.output_tokens_per_call", 0),
    ("plan.llm_seconds_per_call", 0),
    ("plan.round_seconds", 0),
    ("campaign.gpus_per_task", 0),
    ("campaign.cpus_per_task", 0),
    ("campaign.max_retries", 0),
    ("campaign.outage_trip_after", 1),
    ("campaign.outage_pause_s", 0),
    ("campaign.outage_max_pauses", 0),
]
_POSITIVE_OR_NULL = ["strategy.max_dollars", "strategy.max_minutes"]


_CHOICES = (("profile.units", ("base", "auto")), ("profile.clock_control", ("none", "base")))
"""String settings passed to ncu as they are, and the values it takes."""


def check_values(cfg: Any) -> list[str]:
    """Values that compose but cannot work, each as ``key=value: why``."""
    from omegaconf import OmegaConf

    problems = []
    for key, low in _MINIMUMS:
        value = OmegaConf.select(cfg, key)
        if value is not None and value < low:
            problems.append(f"{key}={value}: must be at least {low}")
    for key in _POSITIVE_OR_NULL:
        value = OmegaConf.select(cfg, key)
        if value is not None and value <= 0:
            problems.append(f"{key}={value}: must be positive, or null for no budget")
    for role in ("coder", "judge"):
        if OmegaConf.select(cfg, f"{role}.openai_compatible"):
            for key, what in (
                ("model", "=NAME (the name the server serves: GET /v1/models lists it)"),
                ("api_base", "=http://HOST:PORT/v1 (the server's address)"),
            ):
                if not OmegaConf.select(cfg, f"{role}.{key}"):
                    source = "coder" if role == "judge" else role  # the Judge's defaults follow the Coder's
                    problems.append(
                        f"{role}.{key}: not set; {role}=openai_compatible needs {source}.{key}{what} "
                        "(docs/own-model.md)"
                    )
    paired, runs = OmegaConf.select(cfg, "report.paired_with"), OmegaConf.select(cfg, "report.runs")
    if paired is not None and runs and not 0 <= paired < len(runs):
        problems.append(f"report.paired_with={paired}: there are {len(runs)} run(s), numbered from 0")
    for key, allowed in _CHOICES:
        value = OmegaConf.select(cfg, key)
        if value is not None and str(value) not in allowed:
            problems.append(f"{key}={value}: must be one of {', '.join(allowed)}")
    backend = str(
        getattr(OmegaConf.select(cfg, "strategy.backend"), "value", OmegaConf.select(cfg, "strategy.backend"))
    )
    if backend in languages.names() and languages.missing_message(backend):
        problems.append(f"strategy.backend={backend}: {languages.missing_message(backend)}")
    return problems
