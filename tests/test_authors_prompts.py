"""The CudaForge authors' prompts read from a checkout (issue 35, item 3), against a stand-in with their layout
(tests/standins/cudaforge_authors: builders of the same names and signatures, written for these tests)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from cudaforge.agents.authors import AuthorsPrompts  # noqa: E402
from cudaforge.agents.prompts import PromptTemplateError  # noqa: E402

STANDIN = Path(__file__).resolve().parent / "standins" / "cudaforge_authors"
GPU = "Stand-in GPU"


def test_a_missing_or_partial_checkout_or_an_unknown_gpu_is_one_clear_error(tmp_path):
    with pytest.raises(PromptTemplateError, match="agents.authors_root=PATH"):
        AuthorsPrompts(None, GPU)
    partial = tmp_path / "partial"
    shutil.copytree(STANDIN, partial)
    (partial / "prompts" / "judger_repair.py").unlink()
    (partial / "prompts" / "hardware" / "gpu_specs.py").unlink()
    with pytest.raises(PromptTemplateError, match=r"missing prompts/judger_repair.py, prompts/hardware/gpu_specs.py"):
        AuthorsPrompts(partial, GPU)
    with pytest.raises(
        PromptTemplateError, match="'H200' is not a key of the authors' GPU sheet .*Stand-in GPU, Other GPU"
    ):
        AuthorsPrompts(STANDIN, "H200")


def test_every_prompt_is_what_the_authors_builder_returns():
    from cudaforge.agents.prompts import correction_context, first_attempt_context, optimization_context, repair_context
    from cudaforge.agents.records import Backend
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalResult, EvalStatus

    prompts = AuthorsPrompts(STANDIN, GPU)
    task = find_task(selection("tiny"), "level1/1_ReLU")
    kernel = "class ModelNew: pass  # the candidate"
    failed = EvalResult(task_id=task.id, candidate_hash="h", status=EvalStatus.RUNTIME_ERROR, message="boom")
    seed = prompts.render(
        "coder/first_attempt", **first_attempt_context(task, example=None, gpu=None, backend=Backend.cuda)
    )
    assert (
        seed.startswith("STANDIN-SEED gpu=Stand-in GPU arch=Standin few=class Model: pass")
        and task.source.strip() in seed
    )
    assert prompts.render("coder/system") == "STANDIN-SYSTEM coder"
    from cudaforge.agents.records import Feedback, JudgeMode

    feedback = Feedback(mode=JudgeMode.correction, fields={"critical_issue": "x"})
    repair = prompts.render(
        "coder/repair", **repair_context(task, kernel, failed, feedback=feedback, backend=Backend.cuda)
    )
    assert repair.startswith("STANDIN-REPAIR gpu=Stand-in GPU problem={'critical_issue': 'x'}") and kernel in repair
    judged = correction_context(task, kernel, failed, gpu=None)
    assert prompts.render("judge/system", **judged) == "STANDIN-JUDGE-SYSTEM repair"
    assert prompts.render("judge/correction", **judged).startswith("STANDIN-JUDGE-REPAIR")
    optimizing = optimization_context(
        task,
        kernel,
        None,
        gpu=None,
        metrics=None,
        kernels=[{"name": "relu_kernel", "metrics": {"dram__throughput": 51.23456}}],
    )
    opt = prompts.render("judge/optimization", **{"mode": "optimization", **optimizing})
    assert opt.startswith("STANDIN-JUDGE-OPT gpu=Stand-in GPU") and kernel in opt
    assert (
        prompts.render("judge/system", **{"mode": "optimization", **optimizing}) == "STANDIN-JUDGE-SYSTEM optimization"
    )
    assert prompts.template_set.name == "cudaforge_authors" and "critical_issue" in prompts.template_set.correction_keys


def test_the_judges_json_reaches_the_authors_builders_under_the_keys_it_was_written_with():
    """Issue 54: cudaforge renamed the Judge's keys to optimisation_method and modification_plan; the authors' builder
    reads "optimisation method" and "modification plan", so every optimisation prompt lost the Judge's advice."""
    import json

    from cudaforge.agents.judge import Judge
    from cudaforge.agents.prompts import optimize_context
    from cudaforge.agents.records import Backend
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalResult, EvalStatus

    prompts = AuthorsPrompts(STANDIN, GPU)
    task = find_task(selection("tiny"), "level1/1_ReLU")
    kernel = "class ModelNew: pass  # the candidate"
    correct = EvalResult(task_id=task.id, candidate_hash="h", status=EvalStatus.CORRECT)
    advice = {"bottleneck": "DRAM", "optimisation method": "float4 loads", "modification plan": "vectorise x"}

    class Once:
        def complete(self, messages, **meta):
            from types import SimpleNamespace

            return SimpleNamespace(text=json.dumps(advice), error=None)

    verdict = Judge(Once(), prompts).optimization(task, kernel, correct)
    assert verdict.ok and verdict.feedback.raw == advice  # as the reply wrote it
    assert verdict.feedback.fields["optimisation_method"] == "float4 loads"  # and ours, for our templates
    text = prompts.render(
        "coder/optimize",
        **optimize_context(task, kernel, result=correct, feedback=verdict.feedback, gpu=None, backend=Backend.cuda),
    )
    assert "read=DRAM|float4 loads|vectorise x" in text


@pytest.mark.slow
def test_a_run_with_the_authors_prompts_sends_them_and_records_where_they_came_from(tmp_path):
    from test_graph import BAD, CORRECTION, GOOD, config, relu, scripts  # noqa: F401

    from cudaforge.config import TemplateSetName
    from cudaforge.report import make_report
    from cudaforge.report.tables import markdown
    from cudaforge.run.runner import make_context, run_one
    from cudaforge.tasks import find_task, selection

    task = find_task(selection("tiny"), "level1/1_ReLU")
    cfg = config(tmp_path, rounds=2)
    cfg.agents.template_set = TemplateSetName.cudaforge_authors
    cfg.agents.authors_root, cfg.agents.authors_gpu = str(STANDIN), GPU
    cfg.strategy.backend = type(cfg.strategy.backend)("cuda")
    scripts([BAD, GOOD], [CORRECTION])
    ctx = make_context(cfg, tmp_path / "run")
    result = run_one(ctx, task)
    assert [r.status for r in result.history] == ["incorrect", "correct"]
    first = ctx.store.task(task.id).read_json(1, "coder.json")["conversation"]["messages"]
    assert first[0]["content"] == "STANDIN-SYSTEM coder" and first[1]["content"].startswith("STANDIN-SEED")
    repair = ctx.store.task(task.id).read_json(2, "coder.json")["conversation"]["messages"]
    assert repair[1]["content"].startswith("STANDIN-REPAIR gpu=Stand-in GPU problem={'critical_issue'")
    judge = ctx.store.task(task.id).read_json(1, "judge.json")["conversation"]["messages"]
    assert judge[1]["content"].startswith("STANDIN-JUDGE-REPAIR")
    record = json.loads((tmp_path / "run" / "prompts.json").read_text())
    assert record["template_set"] == "cudaforge_authors" and record["authors_root"] == str(STANDIN.resolve())
    report, _ = make_report(runs=[str(tmp_path / "run")], out_dir=str(tmp_path / "report"), plots=False, bootstrap=0)
    assert "prompts from the CudaForge authors' own builders" in markdown(report)


def test_the_checkouts_commit_or_digest_is_recorded_and_a_checkout_past_the_paper_era_is_warned_of(tmp_path):
    """Issue 54: the checkout was read at whatever commit it was on, and a copy without .git recorded none."""
    import shutil
    import sys

    from cudaforge.agents.authors import PAPER_ERA_COMMIT, content_digest

    copy = tmp_path / "CudaForge"
    shutil.copytree(STANDIN, copy)
    loaded = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "prompts"}
    try:
        described = AuthorsPrompts(copy, GPU).describe()  # their modules imported from this copy as `prompts`
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "prompts"]:
            del sys.modules[name]
        sys.modules.update(loaded)
    assert (
        described["commit"] is None and described["digest"] == content_digest(copy) and len(described["digest"]) == 16
    )
    assert described["paper_era"] is False and PAPER_ERA_COMMIT[:7] in described["warning"]
    assert "no .git" in described["warning"] and "second task block" in described["warning"]
    (copy / "prompts" / "error.py").write_text((copy / "prompts" / "error.py").read_text() + "\n# changed\n")
    assert content_digest(copy) != described["digest"]  # the digest follows the prompt files


@pytest.mark.slow
def test_what_goes_over_the_wire_is_what_the_authors_builders_return_byte_for_byte(tmp_path):
    """Issue 54: a run with the authors' prompts against a model server: each request's messages, as the server read
    them, are the strings their builders return for the same replies and error log (system role kept, nothing added,
    nothing reworded), in the order their main.py sends them."""
    import importlib
    import sys

    from standins.llm_server import StandInServer
    from test_graph import BAD, CORRECTION, GOOD, config

    from cudaforge.agents.prompts import error_log
    from cudaforge.config import TemplateSetName
    from cudaforge.run.runner import make_context, run_one
    from cudaforge.tasks import find_task, selection
    from cudaforge.types import EvalResult

    task = find_task(selection("tiny"), "level1/1_ReLU")
    cfg = config(tmp_path, rounds=2)
    cfg.agents.template_set = TemplateSetName.cudaforge_authors
    cfg.agents.authors_root, cfg.agents.authors_gpu = str(STANDIN), GPU
    cfg.strategy.backend = type(cfg.strategy.backend)("cuda")
    with StandInServer("authors-o3", replies=[BAD, CORRECTION, GOOD]) as server:
        for llm in (cfg.coder, cfg.judge):
            llm.model, llm.api_base, llm.openai_compatible, llm.system_messages = server.name, server.url, True, True
            llm.__post_init__()
        result = run_one(make_context(cfg, tmp_path / "run"), task)
    assert [r.status for r in result.history] == ["incorrect", "correct"]

    sys.path.insert(0, str(STANDIN))
    try:
        theirs = {
            m: importlib.import_module(f"prompts.{m}") for m in ("generate_custom_cuda", "error", "judger_repair")
        }
    finally:
        sys.path.remove(str(STANDIN))
    arch = tmp_path / "task.py"
    arch.write_text(task.source)
    # their main.py's kernel: the reply's code block, stripped, with one newline (utils/kernel_io.extract_code_block)
    code = lambda reply: reply.split("```python\n", 1)[1].rsplit("```", 1)[0].strip() + "\n"  # noqa: E731
    record = json.loads((tmp_path / "run" / "tasks" / "tiny__level1__1_ReLU" / "round_01" / "eval.json").read_text())
    log = error_log(EvalResult.from_dict(record), findings=False)  # their harness has no integrity findings
    assert log.startswith("ValueError: Outputs are not close (atol=") and "\n" not in log
    assert EvalResult.from_dict(record).guard_findings  # ours were there (no_custom_kernel), and were not sent
    judge_system, judge_user = theirs["judger_repair"].build_correctness_prompts(
        error_log=log, arch_path=arch, cuda_code=code(BAD)
    )
    coder_system = theirs["generate_custom_cuda"].default_system_prompt
    expected = [
        [
            {"role": "system", "content": coder_system},
            {"role": "user", "content": theirs["generate_custom_cuda"].build_seed_prompt(arch_path=arch, gpu_name=GPU)},
        ],
        [{"role": "system", "content": judge_system}, {"role": "user", "content": judge_user}],
        [
            {"role": "system", "content": coder_system},
            {
                "role": "user",
                "content": theirs["error"].build_error_prompt(
                    old_code=code(BAD), error_log=log, problem=json.loads(CORRECTION), gpu_name=GPU
                ),
            },
        ],
    ]
    sent = [body["messages"] for body in server.bodies]
    assert [b["model"] for b in server.bodies] == ["authors-o3"] * 3
    assert json.dumps(sent, ensure_ascii=False) == json.dumps(expected, ensure_ascii=False)
