"""benchmarks/campaign_main.py: the scripted agents of the GPU campaign answer every main-suite task with a kernel."""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

import campaign_main  # noqa: E402

from cudaforge.tasks import load_suite, selection  # noqa: E402


def _code(reply: str) -> str:
    return reply.split("```python\n", 1)[1].rsplit("```", 1)[0]


def test_every_main_task_gets_a_kernel_and_the_judge_answers_in_our_keys():
    tasks = load_suite(selection("main"))
    assert len(tasks) == 30
    bundled = 0
    for task in tasks:
        source = _code(
            campaign_main.reply(
                [
                    {"role": "system", "content": "You are the Coder."},
                    {"role": "user", "content": f"Write a kernel for task `{task.id}`."},
                ]
            )
        )
        tree = ast.parse(source)
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        assert "ModelNew" in classes and "Model" not in classes, task.id  # the reference class is renamed
        assert "triton" in source or "load_inline" in source, task.id  # a kernel of its own, not torch alone
        bundled += campaign_main.candidate_for(task.id) is not None
    assert bundled == 2  # GELU and Softmax reuse the bundled candidates
    for marker, keys in (
        ("critical_issue", {"critical_issue", "why_it_matters", "minimal_fix_hint"}),
        ("", {"bottleneck", "optimisation_method", "modification_plan", "expected_effect"}),
    ):
        reply = campaign_main.reply(
            [
                {"role": "system", "content": "You are the Judge."},
                {"role": "user", "content": f"task `main/level1/1_GELU` {marker}"},
            ]
        )
        assert set(json.loads(reply.split("```json\n")[1].split("```")[0])) == keys


def test_the_authors_contrast_campaign_answers_its_three_tasks_with_kernels_that_meet_one_difference_each():
    import authors_contrast

    for task_id in authors_contrast.TASKS:
        message = [
            {"role": "system", "content": "You are the Coder."},
            {"role": "user", "content": f"Write a kernel for task `main/{task_id}`."},
        ]
        source = _code(authors_contrast.reply(message, coder=authors_contrast.coder_reply))
        tree = ast.parse(source)
        assert "ModelNew" in {n.name for n in tree.body if isinstance(n, ast.ClassDef)} and "@triton.jit" in source
    linear = authors_contrast.KERNELS["level2/1_LinearGELUScale"]
    assert "self.w = " in linear and "self.linear" not in linear  # renamed weights: the authors' aligner maps them
    assert "self._kept[key]" in authors_contrast.KERNELS["level1/1_GELU"]  # the output kept per input shape
