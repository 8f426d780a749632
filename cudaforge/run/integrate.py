"""``cudaforge integrate``: a run's best kernels patched into a whole model, timed end to end against eager PyTorch
and torch.compile.

A *recipe* is a problem file in the task format (``Model``, ``get_inputs``, ``get_init_inputs``: the model built from
its config with random weights, nothing downloaded) with one more top-level literal, ``PATCHES``: which module class
each kernel replaces, and which of the kernel's task sizes come from the module instance::

    PATCHES = {
        "LayerNorm": {"task": "*/level1/*_LayerNorm", "sizes": {"hidden": "normalized_shape.0"}},
        "GELU": {"task": "*/level1/*_GELU"},
    }

The runs give, per rule, the best correct kernel of a task whose id matches ``task`` (the fastest; untimed runs: any
correct one). From them a candidate source is generated: its ``ModelNew`` builds the recipe's ``Model`` (the same
weights: it is built first, after the evaluator's seed, as the reference is), then replaces every instance of each
class by the kernel's ``ModelNew``, constructed from the kernel's task with its sizes set from the instance (the task's
globals, which ``get_init_inputs`` reads when called), and with the instance's parameters and buffers copied in,
in order. That candidate is then evaluated like any other (``Evaluator``): in the sandbox, checked against the eager
model, and on a GPU timed against it, so the in-model speedup is measured the way every speedup is; torch.compile of
the model is timed beside it (``eval/compile_beside.py``). Nothing of a kernel runs on the trusted side: its source
only travels inside the generated candidate. The generated candidate execs the kernels' sources and builds a model of
PyTorch layers, which the static guards cannot see through, so those report (``STATIC_REPORTED``); each kernel is
therefore checked again on its own by every static guard, all rejecting, before it is patched in (``static_refusal``:
the run it came from may have let them report), and every runtime and timing guard keeps its policy, so a kernel that
games the timing inside the model is still rejected.

The result (``<first run>/integrate/<recipe>.json`` and ``.md``) puts each kernel's standalone speedup beside the
model's; ``cudaforge report`` shows it in a section "In a model".
"""

from __future__ import annotations

import ast
import fnmatch
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cudaforge.eval import EvalConfig
from cudaforge.paths import RESOURCES
from cudaforge.pyast import parse
from cudaforge.tasks.loader import parse_problem
from cudaforge.track.store import RunDir, expand_run_dirs
from cudaforge.types import Task

RECIPES_DIR = RESOURCES / "integrate"
OUT_DIR = "integrate"
"""Where the results go, inside the first run directory."""


STATIC_REPORTED = ("no_custom_kernel", "reference", "monkey_patch", "introspection")
"""The static guards the generated candidate trips by construction (its kernels are exec'd strings, its model is
PyTorch layers, it registers the strings with linecache): they report; ``torch_ops`` stays lenient (reports)."""


def evaluation_config(eval_cfg: dict[str, Any]) -> dict[str, Any]:
    """The protocol an integration is evaluated under: the run's, with ``STATIC_REPORTED`` reporting and PyTorch
    compute allowed (``torch_ops=lenient``); the runtime and timing guards as the protocol says."""
    settings = EvalConfig.from_dict(eval_cfg).to_dict()  # the run's own, whenever it was written
    guards = {**settings["guards"], **{name: "report" for name in STATIC_REPORTED}}
    return {**settings, "guards": guards, "torch_ops": "lenient"}


class IntegrateError(ValueError):
    """A recipe or a request that cannot be integrated, said in one line."""


@dataclass
class Patch:
    """One rule of a recipe and the kernel chosen for it."""

    module: str
    """The module class name every instance of which is replaced."""
    task_glob: str
    sizes: dict[str, str] = field(default_factory=dict)
    """Task global -> attribute path on the instance (``normalized_shape.0``)."""
    task_id: str | None = None
    kernel_hash: str | None = None
    standalone_speedup: float | None = None
    run: str | None = None
    instances: int = 0
    why_not: str = ""
    task_source: str = field(default="", repr=False)
    kernel_source: str = field(default="", repr=False)


def recipe_names() -> list[str]:
    """The bundled recipes."""
    return sorted(p.stem for p in RECIPES_DIR.glob("*.py"))


def load_recipe(name: str) -> tuple[Task, list[Patch]]:
    """A bundled recipe by name, or a recipe file by path: its task and its ``PATCHES`` rules."""
    path = Path(name).expanduser()
    if not path.is_file():
        path = RECIPES_DIR / f"{name}.py"
    if not path.is_file():
        raise IntegrateError(f"no recipe {name!r}: give a recipe file or one of {', '.join(recipe_names())}")
    source = path.read_text()
    task = parse_problem(source, suite="integrate", level=4, problem_id=0, name=path.stem, path=str(path))
    task.id = f"integrate/{path.stem}"
    rules = None
    for node in parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "PATCHES" for t in node.targets):
            try:
                rules = ast.literal_eval(node.value)
            except ValueError:
                raise IntegrateError(f"{path}: PATCHES must be a literal mapping") from None
    if not isinstance(rules, dict) or not rules:
        raise IntegrateError(f"{path}: a recipe names its patches in a top-level PATCHES = {{class: {{task: glob}}}}")
    patches = []
    for module, rule in rules.items():
        if not (isinstance(rule, dict) and isinstance(rule.get("task"), str)):
            raise IntegrateError(f"{path}: PATCHES[{module!r}] needs a 'task' glob")
        sizes = rule.get("sizes") or {}
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in sizes.items()):
            raise IntegrateError(f"{path}: PATCHES[{module!r}]['sizes'] maps task globals to attribute paths")
        patches.append(Patch(str(module), rule["task"], dict(sizes)))
    return task, patches


def best_kernels(run_dirs: list[Path]) -> dict[str, dict[str, Any]]:
    """Task id -> the best correct kernel over the runs: ``source``, ``hash``, ``speedup`` (None untimed),
    ``task_source``, ``run``. The fastest timed one wins; an untimed one only where no run timed the task."""
    found: dict[str, dict[str, Any]] = {}
    for path in run_dirs:
        run = RunDir(path)
        for result in run.latest_results().values():
            if not (result.correct and result.best_candidate_hash):
                continue
            folder = next((t for t in run.tasks() if (t.task() or {}).get("id") == result.task_id), None)
            source = folder.candidate(result.best_candidate_hash) if folder else None
            task = (folder.task() or {}) if folder else {}
            if source is None or not task.get("source"):
                continue
            mine = {
                "source": source,
                "hash": result.best_candidate_hash,
                "speedup": result.best_speedup,
                "task_source": task["source"],
                "run": str(path),
            }
            known = found.get(result.task_id)
            if known is None or (mine["speedup"] or 0) > (known["speedup"] or 0):
                found[result.task_id] = mine
    return found


def choose_kernels(patches: list[Patch], kernels: dict[str, dict[str, Any]]) -> list[Patch]:
    """Each rule with its kernel (the fastest among the matching tasks), or ``why_not``."""
    for patch in patches:
        matching = sorted(t for t in kernels if fnmatch.fnmatch(t, patch.task_glob))
        if not matching:
            patch.why_not = f"no correct kernel of a task matching {patch.task_glob!r} in the runs"
            continue
        best = max(matching, key=lambda t: kernels[t]["speedup"] or 0)
        k = kernels[best]
        patch.task_id, patch.kernel_hash, patch.standalone_speedup, patch.run = best, k["hash"], k["speedup"], k["run"]
        patch.task_source, patch.kernel_source = k["task_source"], k["source"]
    return patches


_CANDIDATE = '''"""Generated by `cudaforge integrate`: the recipe's model with kernels from finished runs patched in."""
import linecache
import sys
import types

import torch
import torch.nn as nn

_SOURCES = {sources}
_PATCHES = {patches}
_LOADED = {{}}


def _module(name):
    if name not in _LOADED:
        source = _SOURCES[name]
        module = types.ModuleType(name)
        module.__file__ = f"<{{name}}>"
        linecache.cache[module.__file__] = (len(source), None, source.splitlines(keepends=True), module.__file__)
        sys.modules[name] = module
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        _LOADED[name] = module
    return _LOADED[name]


def _path(obj, path):
    for part in path.split("."):
        obj = obj[int(part)] if part.lstrip("-").isdigit() else getattr(obj, part)
    return obj


def _copy_state(new, old, where):
    for kind in ("parameters", "buffers"):
        mine, theirs = list(getattr(new, kind)()), list(getattr(old, kind)())
        if [tuple(t.shape) for t in mine] != [tuple(t.shape) for t in theirs]:
            raise RuntimeError(f"cudaforge integrate: the kernel for {{where}} has {{kind}} of shapes "
                               f"{{[tuple(t.shape) for t in mine]}}, the module {{[tuple(t.shape) for t in theirs]}}")
        with torch.no_grad():
            for a, b in zip(mine, theirs):
                a.copy_(b)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.net = _module("cudaforge_integrate_model").Model(*args)
        for module_class, task_name, kernel_name, sizes in _PATCHES:
            task, kernel = _module(task_name), _module(kernel_name)
            for name, child in list(self.net.named_modules()):
                if not name or type(child).__name__ != module_class:
                    continue
                for size, path in sizes.items():
                    setattr(task, size, int(_path(child, path)))
                new = kernel.ModelNew(*task.get_init_inputs())
                _copy_state(new, child, name)
                parent, _, leaf = name.rpartition(".")
                setattr(self.net.get_submodule(parent) if parent else self.net, leaf, new)

    def forward(self, *inputs):
        return self.net(*inputs)
'''


def candidate_source(recipe: Task, patches: list[Patch]) -> str:
    """The generated candidate (see the module text) for the rules that have a kernel."""
    sources = {"cudaforge_integrate_model": recipe.source}
    rules = []
    for i, patch in enumerate(p for p in patches if p.kernel_source):
        sources[f"cudaforge_integrate_task_{i}"] = patch.task_source
        sources[f"cudaforge_integrate_kernel_{i}"] = patch.kernel_source
        rules.append((patch.module, f"cudaforge_integrate_task_{i}", f"cudaforge_integrate_kernel_{i}", patch.sizes))
    return _CANDIDATE.format(sources=repr(sources), patches=repr(rules))


def static_refusal(patch: Patch, eval_cfg: EvalConfig) -> str:
    """Why a chosen kernel may not be patched in, or "": each kernel is checked again by the static guards on its own,
    every one of them rejecting (inside the generated candidate it is a string they cannot see, and the run it came
    from may have let them report: a paper preset, a guard set to report, an older version)."""
    from cudaforge.eval import GUARDS, check_candidate

    settings = eval_cfg.to_dict()
    static = {g.field: "reject" for g in GUARDS.values() if g.where == "static" and g.field and g.field != "torch_ops"}
    strict = {**settings, "guards_enforce": True, "guards": {**settings["guards"], **static}}
    found = check_candidate(patch.kernel_source, strict, patch.task_source)
    if found.ok:
        return ""
    rejected = [f"{f.get('guard')}: {f.get('evidence')}" for f in found.findings if f.get("verdict") == "reject"]
    return f"its kernel ({patch.task_id}) fails the static guards on its own: {(rejected or [found.message])[0]}"[:500]


def _census(recipe: Task) -> dict[str, int]:
    """Module class name -> instances in the recipe's model, from the reference built on the meta device."""
    from cudaforge.proc.isolation import run_isolated

    outcome = run_isolated(
        "cudaforge.tasks.held_out_child:module_census", {"source": recipe.source}, timeouts={}, default_timeout=180.0
    )
    if outcome.status != "ok" or not outcome.result:
        last = (outcome.error.strip().splitlines() or [outcome.status])[-1]
        raise IntegrateError(f"the recipe's model could not be built on the meta device: {last[:300]}")
    return dict(outcome.result["modules"])


def integrate(recipe_name: str, runs: list[str], evaluator: Any, out_dir: str | None = None) -> dict[str, Any]:
    """Patch the runs' best kernels into the recipe's model, evaluate it, time torch.compile beside it; write
    ``<recipe>.json`` and ``<recipe>.md`` (default into ``<first run>/integrate/``) and return the record."""
    if not runs:
        raise IntegrateError("say which run directories: cudaforge integrate RUN_DIR [RUN_DIR ...] recipe=NAME")
    run_dirs, _ = expand_run_dirs(list(runs))
    recipe, patches = load_recipe(recipe_name)
    census = _census(recipe)
    choose_kernels(patches, best_kernels([Path(p) for p in run_dirs]))
    for patch in patches:
        patch.instances = census.get(patch.module, 0)
        if patch.kernel_source and not patch.instances:
            patch.why_not = f"the model has no {patch.module} module"
            patch.kernel_source = ""
        elif patch.kernel_source:
            patch.why_not = static_refusal(patch, evaluator.cfg)
            patch.kernel_source = "" if patch.why_not else patch.kernel_source
    used = [p for p in patches if p.kernel_source]
    started = time.monotonic()
    record: dict[str, Any] = {
        "recipe": recipe.id,
        "recipe_path": recipe.path,
        "runs": [str(p) for p in run_dirs],
        "patches": [_patch_row(p) for p in patches],
    }
    if not used:
        record.update(status="nothing_to_patch", message="no rule of the recipe has a kernel in these runs")
    else:
        result = evaluator.evaluate(recipe, candidate_source(recipe, used))
        speedup = result.speedup
        record.update(
            status=result.status.value,
            correct=result.correct,
            message=result.message.strip()[:2000],
            in_model_speedup=speedup.median if speedup else None,
            in_model_ci=[speedup.ci_low, speedup.ci_high] if speedup else None,
            precision=speedup.precision if speedup else None,
            guard_findings=result.guard_findings,
            device=result.device,
        )
        record["compile"] = _compile(recipe, evaluator) if speedup else {}
        ratio = (record["compile"] or {}).get("compile_over_eager")
        record["in_model_over_compile"] = speedup.median / ratio if speedup and ratio else None
    record["seconds"] = round(time.monotonic() - started, 3)
    out = Path(out_dir).expanduser() if out_dir else Path(run_dirs[0]) / OUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    name = Path(recipe.path or recipe.name).stem
    (out / f"{name}.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    (out / f"{name}.md").write_text("\n".join(summary_lines(record)) + "\n")
    record["written"] = [str(out / f"{name}.json"), str(out / f"{name}.md")]
    return record


def _compile(recipe: Task, evaluator: Any) -> dict[str, Any]:
    from cudaforge.eval import time_compile_beside as compile_beside
    from cudaforge.run.runner import local_gpu_name

    gpu = evaluator.gpus[0]
    name = local_gpu_name(gpu) or f"gpu-{gpu}"  # an unnamed GPU: its id stands for it
    return compile_beside(recipe, gpu, name, evaluator.cfg, evaluator.build_cache, lock_dir=evaluator.lock_dir)


def _patch_row(p: Patch) -> dict[str, Any]:
    return {
        "module": p.module,
        "task_glob": p.task_glob,
        "sizes": p.sizes,
        "task_id": p.task_id,
        "kernel_hash": p.kernel_hash,
        "standalone_speedup": p.standalone_speedup,
        "run": p.run,
        "instances": p.instances,
        "patched": bool(p.kernel_source),
        "why_not": p.why_not,
    }


def _x(value: Any) -> str:
    return f"{value:.3f}x" if isinstance(value, (int, float)) else "untimed"


def summary_lines(record: dict[str, Any]) -> list[str]:
    """Markdown: each kernel's standalone speedup beside the model's."""
    out = [
        f"### {record['recipe']}",
        "",
        "| module | kernel of | instances | standalone speedup | patched |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for p in record["patches"]:
        out.append(
            f"| {p['module']} | {p['task_id'] or '-'} | {p['instances']} | "
            f"{_x(p['standalone_speedup']) if p['task_id'] else '-'} | {'yes' if p['patched'] else p['why_not']} |"
        )
    out.append("")
    if record.get("status") == "nothing_to_patch":
        return out + [f"Nothing patched: {record['message']}."]
    verdict = "correct" if record.get("correct") else f"not correct ({record.get('status')})"
    line = f"The model with the kernels patched in: {verdict}"
    if record.get("in_model_speedup") is not None:
        low, high = record["in_model_ci"]
        line += (
            f"; end to end {_x(record['in_model_speedup'])} [{low:.3f}, {high:.3f}] over eager "
            f"({record.get('precision') or 'precision unrecorded'})"
        )
        compiled = record.get("compile") or {}
        if record.get("in_model_over_compile") is not None:
            line += (
                f", {_x(record['in_model_over_compile'])} over torch.compile ({compiled.get('mode')}; compile "
                f"itself {_x(compiled.get('compile_over_eager'))} over eager)"
            )
        elif compiled:
            line += f"; torch.compile not timed ({compiled.get('status')}: {compiled.get('message', '')[:200]})"
    else:
        line += "; untimed (no GPU)"
    return out + [line + "."]


def report_lines(run_paths: list[Path]) -> list[str]:
    """The "In a model" section of a report: every integration written into the runs' ``integrate/`` folders."""
    lines: list[str] = []
    for path in run_paths:
        for file in sorted((Path(path) / OUT_DIR).glob("*.json")):
            try:
                record = json.loads(file.read_text())
                lines += [""] + summary_lines(record)
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return (
        [
            "",
            "## In a model",
            "",
            "Each kernel's standalone speedup (its task, as tabled above) beside the model's "
            "end-to-end speedup with the kernels patched in (`cudaforge integrate`, docs/reports.md).",
        ]
        + lines
        if lines
        else []
    )
