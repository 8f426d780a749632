"""`cudaforge integrate`: a run's best kernels patched into a whole model and evaluated by the real evaluator (on the
CPU: checked, untimed); recipes, the kernel chosen per rule, a kernel written for its task's shape alone caught in the
model, and the report's "In a model" section."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

import cudaforge  # noqa: E402
from cudaforge.eval.evaluator import Evaluator  # noqa: E402
from cudaforge.report import build_report  # noqa: E402
from cudaforge.report.tables import markdown  # noqa: E402
from cudaforge.run.integrate import (  # noqa: E402
    IntegrateError,
    best_kernels,
    candidate_source,
    choose_kernels,
    integrate,
    load_recipe,
    recipe_names,
)
from cudaforge.tasks import load_suite, selection  # noqa: E402
from cudaforge.track.store import RunStore  # noqa: E402
from cudaforge.types import TaskResult, source_hash  # noqa: E402

CANDIDATES = Path(cudaforge.__file__).resolve().parent / "resources" / "candidates"
RELU = (CANDIDATES / "triton_relu.py").read_text()  # Triton kernels, run in the interpreter on a CPU
SOFTMAX = (CANDIDATES / "triton_softmax.py").read_text()
RELU_FOR_256_BY_1024 = RELU.replace("n_elements = x.numel()", "n_elements = 256 * 1024")
assert RELU_FOR_256_BY_1024 != RELU


def write_run(path: Path, kernels: dict[str, tuple[str, float | None]]) -> Path:
    """A run directory of the tiny suite's tasks, each with its best kernel ``(source, speedup)``."""
    tasks = {t.name: t for t in load_suite(selection("tiny"))}
    store = RunStore(path)
    for name, (source, speedup) in kernels.items():
        task, digest = tasks[name], source_hash(source)
        ts = store.task(task.id)
        ts.write_json(None, "task.json", task.to_dict())
        ts.save_candidate(digest, source)
        store.append_result(TaskResult(task_id=task.id, correct=True, best_speedup=speedup, best_candidate_hash=digest))
    return path


@pytest.fixture(scope="module")
def evaluator(tmp_path_factory):
    # the protocol `cudaforge integrate` evaluates under: the guards enforcing, but for the static ones the generated
    # model trips by construction
    from cudaforge.eval.evaluator import default_eval_config
    from cudaforge.run.integrate import evaluation_config

    evaluator = Evaluator(
        evaluation_config(
            {
                **default_eval_config(),
                "device": "cpu",
                "correctness_trials": 2,
                "correctness_timeout_s": 120,
                "build_cache_dir": str(tmp_path_factory.mktemp("build")),
            }
        )
    )
    yield evaluator
    evaluator.close()


def test_recipes_are_read_and_bad_ones_refused_in_one_line(tmp_path):
    assert {"tiny_mlp", "transformer_block"} <= set(recipe_names())
    task, patches = load_recipe("transformer_block")
    assert [(p.module, p.task_glob, p.sizes) for p in patches] == [
        ("LayerNorm", "*/level1/*_LayerNorm", {"hidden": "normalized_shape.0"}),
        ("GELU", "*/level1/*_GELU", {}),
    ]
    with pytest.raises(IntegrateError, match="no recipe 'nope'.*tiny_mlp"):
        load_recipe("nope")
    bare = tmp_path / "bare.py"
    bare.write_text(task.source.split("# module class")[0].replace("PATCHES", "X"))
    with pytest.raises(IntegrateError, match="top-level PATCHES"):
        load_recipe(str(bare))


def test_the_fastest_correct_kernel_of_a_matching_task_is_chosen(tmp_path):
    slow = write_run(tmp_path / "slow", {"ReLU": (RELU, 1.1), "Softmax": (SOFTMAX, 2.0)})
    fast = write_run(tmp_path / "fast", {"ReLU": (RELU + "\n# faster\n", 1.7)})
    kernels = best_kernels([slow, fast])
    assert kernels["tiny/level1/1_ReLU"]["speedup"] == 1.7 and kernels["tiny/level1/1_ReLU"]["run"] == str(fast)
    recipe, patches = load_recipe("tiny_mlp")
    chosen = {p.module: p for p in choose_kernels(patches, kernels)}
    assert chosen["ReLU"].standalone_speedup == 1.7 and chosen["Softmax"].task_id == "tiny/level1/2_Softmax"
    _, layer_norm = load_recipe("transformer_block")
    assert "no correct kernel of a task matching" in choose_kernels(layer_norm, kernels)[0].why_not
    source = candidate_source(recipe, list(chosen.values()))
    compile(source, "<generated>", "exec")  # the generated candidate is Python
    assert "class ModelNew(nn.Module)" in source and "faster" in source


@pytest.mark.slow
def test_the_patched_model_is_checked_by_the_evaluator_and_a_shape_bound_kernel_is_caught(tmp_path, evaluator):
    good = write_run(tmp_path / "good", {"ReLU": (RELU, None), "Softmax": (SOFTMAX, None)})
    record = integrate("tiny_mlp", [str(good)], evaluator)
    assert record["status"] == "correct" and record["correct"] and record["in_model_speedup"] is None  # CPU: untimed
    assert [(p["module"], p["instances"], p["patched"]) for p in record["patches"]] == [
        ("ReLU", 1, True),
        ("Softmax", 1, True),
    ]
    written = json.loads((good / "integrate" / "tiny_mlp.json").read_text())
    assert written["status"] == "correct" and (good / "integrate" / "tiny_mlp.md").is_file()
    # the model's ReLU sees (192, 1536): a kernel written for (256, 1024) alone fails inside it
    bound = write_run(tmp_path / "bound", {"ReLU": (RELU_FOR_256_BY_1024, None)})
    failed = integrate("tiny_mlp", [str(bound)], evaluator)
    assert failed["status"] == "incorrect" and not failed["correct"]
    assert [p["patched"] for p in failed["patches"]] == [True, False]
    # the report shows the integration beside the run's tables
    text = markdown(build_report([good], bootstrap=0))
    assert "## In a model" in text and "| ReLU | tiny/level1/1_ReLU | 1 | untimed | yes |" in text
    assert "The model with the kernels patched in: correct; untimed (no GPU)." in text


def test_nothing_to_patch_is_said(tmp_path, evaluator):
    empty = write_run(tmp_path / "none", {"Softmax": (SOFTMAX, None)})
    record = integrate("transformer_block", [str(empty)], evaluator, out_dir=str(tmp_path / "out"))
    assert record["status"] == "nothing_to_patch" and (tmp_path / "out" / "transformer_block.json").is_file()
    assert [p["instances"] for p in record["patches"]] == [4, 2]  # two blocks: four LayerNorms, two GELUs


@pytest.mark.slow
def test_the_command(tmp_path):
    from cudaforge.cli import main

    good = write_run(tmp_path / "good", {"ReLU": (RELU, None), "Softmax": (SOFTMAX, None)})
    assert (
        main(["integrate", str(good), "recipe=tiny_mlp", f"out_dir={tmp_path / 'o'}", "eval.correctness_trials=1"]) == 0
    )
    assert json.loads((tmp_path / "o" / "tiny_mlp.json").read_text())["correct"] is True
    assert main(["integrate", str(good), "recipe=nope"]) == 2
    assert main(["integrate"]) == 2


def test_only_the_static_guards_the_generated_model_trips_report():
    from cudaforge.eval.evaluator import default_eval_config
    from cudaforge.run.integrate import STATIC_REPORTED, evaluation_config

    base = default_eval_config()
    cfg = evaluation_config(base)
    guards = cfg["guards"]
    assert cfg["guards_enforce"] is True and all(guards[name] == "report" for name in STATIC_REPORTED)
    kept = {k: v for k, v in base["guards"].items() if k not in STATIC_REPORTED}
    assert kept and all(guards[k] == v for k, v in kept.items())  # runtime and timing guards: as the protocol says
    assert guards["untimed_work"] == guards["timing_crosscheck"] == guards["input_mutation"] == "reject"
    old = {k: v for k, v in base.items() if k != "guards"} | {"guard_untimed_work": "report"}  # an older run's
    assert evaluation_config(old)["guards"]["untimed_work"] == "report"


def test_a_kernel_the_static_guards_reject_on_their_own_is_not_patched_in(tmp_path, evaluator):
    """A run whose guards only reported (a paper preset, an older version) recorded a hack as correct: inside the
    generated model it is a string no static guard sees, so each kernel is checked again on its own first."""
    threaded = RELU.replace("import torch\n", "import threading\nimport torch\n", 1).replace(
        "return triton_relu(x)", "threading.Thread(target=lambda: None).start()\n        return triton_relu(x)"
    )
    assert threaded.count("threading") == 2
    run = write_run(tmp_path / "hack", {"ReLU": (threaded, 9.0), "Softmax": (SOFTMAX, None)})
    record = integrate("tiny_mlp", [str(run)], evaluator)
    relu, softmax = record["patches"]
    assert not relu["patched"] and "fails the static guards on its own: concurrency" in relu["why_not"]
    assert softmax["patched"] and record["correct"]
