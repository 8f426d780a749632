"""The agents layer: templates, reply parsing, and the Coder and Judge steps with scripted models."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import textwrap
import uuid
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402

from cudaforge import languages  # noqa: E402
from cudaforge.agents import (  # noqa: E402
    CORRECTION_KEYS,
    OPTIMIZATION_KEYS,
    Backend,
    Coder,
    CoderMode,
    CoderResult,
    Feedback,
    Judge,
    JudgeMode,
    JudgeResult,
    PromptLibrary,
    PromptTemplateError,
    extract_code,
    extract_json,
)
from cudaforge.agents import prompts as P  # noqa: E402
from cudaforge.agents import templates as templates_module  # noqa: E402
from cudaforge.types import (  # noqa: E402
    CorrectnessDiff,
    EvalResult,
    EvalStatus,
    Mismatch,
    SpeedupStats,
    Task,
    TimingStats,
)

# --------------------------------------------------------------------------- fixtures

REFERENCE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, scale: float):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return torch.relu(x) * self.scale

    def get_inputs():
        return [torch.randn(256, 1024)]

    def get_init_inputs():
        return [2.0]
    """
).strip()

KERNEL = textwrap.dedent(
    '''
    import torch
    import torch.nn as nn
    from torch.utils.cpp_extension import load_inline

    cuda_src = r"""
    #include <torch/extension.h>
    __global__ void relu_scale(const float* x, float* y, float s, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) y[i] = fmaxf(x[i], 0.f) * s;
    }
    torch::Tensor relu_scale_cuda(torch::Tensor x, double s) {
        auto y = torch::empty_like(x);
        int n = x.numel();
        relu_scale<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
        return y;
    }
    """
    ext = load_inline(name="relu_scale", cpp_sources="torch::Tensor relu_scale_cuda(torch::Tensor x, double s);",
                      cuda_sources=cuda_src, functions=["relu_scale_cuda"])

    class ModelNew(nn.Module):
        def __init__(self, scale: float):
            super().__init__()
            self.scale = scale

        def forward(self, x):
            return ext.relu_scale_cuda(x, self.scale)
    '''
).strip()

TASK = Task(id="tiny/level1/7_ReLUScale", suite="tiny", level=1, problem_id=7, name="ReLUScale", source=REFERENCE)

GPU = {
    "name": "NVIDIA H200",
    "compute_capability": "9.0",
    "sm_count": 132,
    "memory_gib": 139.8,
    "memory_bandwidth_gb_s": 4800.0,
    "peak_fp32_tflops": 67.0,
    "peak_fp16_tensor_tflops": 989.0,
    "l2_cache_mib": 50,
    "shared_memory_per_sm_kib": 228,
    "registers_per_sm": 65536,
}
METRICS = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": {"value": 41.3, "unit": "%"},
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": (12.5, "%"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": "88.1 %",
    "launch__grid_size": 1024,
}

COMPILE_ERROR = EvalResult(
    task_id=TASK.id,
    candidate_hash="0123456789abcdef",
    status=EvalStatus.COMPILE_ERROR,
    message='the CUDA source did not compile:\ncuda.cu(5): error: identifier "fmaxff" is undefined\n'
    "    if (i < n) y[i] = fmaxff(x[i], 0.f) * s;",
    compile_log_trimmed='cuda.cu(5): error: identifier "fmaxff" is undefined\n    if (i < n) y[i] = fmaxff(x[i], 0.f) * s;',
)
INCORRECT = EvalResult(
    task_id=TASK.id,
    candidate_hash="0123456789abcdef",
    status=EvalStatus.INCORRECT,
    message="output mismatch",
    diff=CorrectnessDiff(
        trial=0,
        variant="default",
        expected_shape=[256, 1024],
        actual_shape=[256, 1024],
        expected_dtype="float32",
        actual_dtype="float32",
        max_abs_error=3.1,
        max_rel_error=1.0,
        mean_abs_error=0.0004,
        mismatch_count=128,
        mismatch_fraction=0.0005,
        worst=[Mismatch(index=[255, 1023], expected=3.1, actual=0.0)],
        region="tail (from flat index 262016)",
        atol=1e-4,
        rtol=1e-4,
        message="values differ",
    ),
    guard_findings=[
        {"guard": "inputs_mutated", "verdict": "fail", "evidence": "input 0 changed"},
        {"guard": "side_stream", "verdict": "pass", "evidence": ""},
    ],
)
CORRECT = EvalResult(
    task_id=TASK.id,
    candidate_hash="0123456789abcdef",
    status=EvalStatus.CORRECT,
    message="correct on 8 trials",
    reference_timing=TimingStats(
        n=100, median=0.0412, mean=0.0415, min=0.04, max=0.05, std=0.001, ci_low=0.041, ci_high=0.042
    ),
    candidate_timing=TimingStats(
        n=100, median=0.0251, mean=0.0252, min=0.024, max=0.03, std=0.001, ci_low=0.025, ci_high=0.0255
    ),
    speedup=SpeedupStats(median=1.64, ci_low=1.6, ci_high=1.68),
)
CORRECTION_FEEDBACK = Feedback(
    JudgeMode.correction,
    {
        "critical_issue": "Grid covers n-1 elements: the last block is never launched.",
        "why_it_matters": "The tail of the output stays zero, so 128 elements mismatch.",
        "minimal_fix_hint": "Launch (n + 255) / 256 blocks.",
    },
)
OPTIMIZATION_FEEDBACK = Feedback(
    JudgeMode.optimization,
    {
        "bottleneck": "DRAM throughput is 41% of peak with scalar 4-byte loads.",
        "optimisation_method": "Vectorised float4 loads and stores",
        "modification_plan": "Process four elements per thread with float4; handle the tail separately.",
        "expected_effect": "DRAM throughput above 80%, about 1.8x faster.",
    },
)


@pytest.fixture(scope="module")
def lib() -> PromptLibrary:
    """The bundled templates."""
    return PromptLibrary()


def contexts(lib: PromptLibrary) -> dict[str, dict]:
    """A realistic context for every template that is sent on its own."""
    example = lib.example("elementwise_add")
    first = P.first_attempt_context(TASK, example=example, gpu=GPU, backend=Backend.cuda)
    repair = P.repair_context(TASK, KERNEL, INCORRECT, feedback=CORRECTION_FEEDBACK, backend=Backend.cuda)
    optimize = P.optimize_context(
        TASK, KERNEL, result=CORRECT, feedback=OPTIMIZATION_FEEDBACK, gpu=GPU, backend=Backend.any
    )
    correction = P.correction_context(TASK, KERNEL, COMPILE_ERROR, gpu=GPU)
    optimization = P.optimization_context(TASK, KERNEL, CORRECT, gpu=GPU, metrics=METRICS, metric_set="cudaforge24")
    return {
        "coder/system": first,
        "coder/first_attempt": first,
        "coder/repair": repair,
        "coder/optimize": optimize,
        "coder/follow_up": P.coder_follow_up_context("the reply is empty", backend=Backend.triton),
        "coder/_output_format": {"kernel_rule": P.backend_context(Backend.cuda)["kernel_rule"]},
        "judge/system": correction,
        "judge/correction": correction,
        "judge/optimization": optimization,
        "skills/distill": {
            "max_words": 300,
            "untimed": False,
            "groups": [
                {
                    "name": "memory-bound",
                    "items": [
                        {
                            "task": TASK.id,
                            "level": 1,
                            "before": "1.64x",
                            "after": "2.10x",
                            "gain": "1.28x faster",
                            **dict(
                                zip(["bottleneck", "method", "plan", "expected"], OPTIMIZATION_FEEDBACK.fields.values())
                            ),
                        }
                    ],
                }
            ],
        },
        "judge/follow_up": P.judge_follow_up_context(
            "the reply holds no JSON object", mode=JudgeMode.correction, required_keys=CORRECTION_KEYS
        ),
    }


class FakeLLM:
    """A model whose ``complete`` returns scripted texts and records what it was sent."""

    @dataclasses.dataclass
    class Reply:
        text: str
        finish_reason: str | None = "stop"

    def __init__(self, *texts: str, finish_reason: str | None = "stop") -> None:
        self.texts = list(texts)
        self.finish_reason = finish_reason
        self.calls: list[tuple[list[dict], dict]] = []

    def complete(self, messages: list[dict], **meta):
        self.calls.append((messages, meta))
        item = self.texts[len(self.calls) - 1]
        if isinstance(item, Exception):
            raise item
        return self.Reply(item, self.finish_reason)


def fenced(code: str, tag: str = "python") -> str:
    """A reply with prose around one fenced block."""
    return f"Here is the kernel.\n\n```{tag}\n{code}\n```\n\nIt fuses ReLU and the scale."


GOOD_JSON = json.dumps(CORRECTION_FEEDBACK.fields, indent=2)

# --------------------------------------------------------------------------- templates


def test_library_lists_the_templates(lib):
    for name in [
        "coder/system",
        "coder/first_attempt",
        "coder/repair",
        "coder/optimize",
        "coder/follow_up",
        "judge/system",
        "judge/correction",
        "judge/optimization",
        "judge/follow_up",
    ]:
        assert name in lib.names()
        assert lib.path(name).is_file()


def test_every_template_renders_with_a_realistic_context(lib):
    ctx = contexts(lib)
    assert set(ctx) == set(lib.names())
    rendered = {name: lib.render(name, **context) for name, context in ctx.items()}
    for name, text in rendered.items():
        assert text and "{{" not in text and "{%" not in text and "{#" not in text, name
    assert REFERENCE in rendered["coder/first_attempt"] and "class ModelNew" in rendered["coder/first_attempt"]
    assert "load_inline" in rendered["coder/first_attempt"] and "sm_count: 132" in rendered["coder/first_attempt"]
    assert KERNEL in rendered["coder/repair"] and "Launch (n + 255) / 256 blocks." in rendered["coder/repair"]
    assert "tail (from flat index 262016)" in rendered["coder/repair"]
    assert "inputs_mutated (fail): input 0 changed" in rendered["coder/repair"]
    assert "side_stream" not in rendered["coder/repair"]
    assert "float4" in rendered["coder/optimize"] and "speedup 1.64x" in rendered["coder/optimize"]
    assert '"critical_issue"' in rendered["judge/correction"] and "fmaxff" in rendered["judge/correction"]
    opt = rendered["judge/optimization"]
    assert "| dram__throughput.avg.pct_of_peak_sustained_elapsed | 41.3 % |" in opt
    assert "| sm__throughput.avg.pct_of_peak_sustained_elapsed | 12.5 % |" in opt
    assert "memory_bandwidth_gb_s: 4800" in opt and '"optimisation_method"' in opt
    assert "single most critical issue" in rendered["judge/system"]
    assert '"critical_issue", "why_it_matters", "minimal_fix_hint"' in rendered["judge/follow_up"]
    assert "Triton" in rendered["coder/follow_up"]


def test_optimization_without_metrics_or_timing_reasons_from_the_spec_sheet(lib):
    context = P.optimization_context(TASK, KERNEL, None, gpu={}, metrics={}, metric_set="ncu has no counter access")
    text = lib.render("judge/optimization", **context)
    assert "No hardware metrics are available (ncu has no counter access)" in text
    assert "(not available" in text and "Measured:" not in text
    cpu = dataclasses.replace(CORRECT, speedup=None, timing_unavailable_reason="no GPU")
    assert "Timing: not measured (no GPU)" in lib.render(
        "judge/optimization", **P.optimization_context(TASK, KERNEL, cpu, gpu=GPU, metrics=None)
    )


def test_zero_shot_and_backends_render(lib):
    for backend in Backend:
        text = lib.render(
            "coder/first_attempt", **P.first_attempt_context(TASK, example=None, gpu=None, backend=backend)
        )
        assert "Here is an example" not in text and "The kernels will run on this GPU" not in text
    with pytest.raises(PromptTemplateError):
        lib.render("coder/system", backend="opencl")


def test_every_template_documents_the_variables_it_reads(lib):
    for name in lib.names():
        assert lib.variables(name) == lib.documented_variables(name), name


def test_a_missing_variable_is_an_error_naming_the_template(lib):
    context = contexts(lib)["coder/repair"]
    del context["feedback"]
    with pytest.raises(PromptTemplateError, match=r"coder/repair.*'feedback' is undefined"):
        lib.render("coder/repair", **context)
    context = contexts(lib)["judge/correction"]
    context["task"] = {k: v for k, v in context["task"].items() if k != "source"}
    with pytest.raises(PromptTemplateError, match=r"judge/correction' \(agents/judge/correction\.j2 line \d+.*source"):
        lib.render("judge/correction", **context)
    context = contexts(lib)["coder/repair"]
    del context["kernel_rule"]  # read only by the partial that coder/repair includes
    with pytest.raises(
        PromptTemplateError, match=r"coder/repair' \(agents/coder/_output_format\.j2 line \d+\): 'kernel_rule'"
    ):
        lib.render("coder/repair", **context)
    with pytest.raises(PromptTemplateError, match="not found"):
        lib.render("coder/nonexistent")


def test_a_template_can_be_overridden_by_path(tmp_path):
    custom = tmp_path / "terse.j2"
    custom.write_text(
        "{#- Context:\n  task  dict\n  backend  str\n-#}\nWrite ModelNew for {{ task.id }}.\n"
        '{% include "coder/_output_format.j2" %}\n'
    )
    lib = PromptLibrary(templates={"coder/first_attempt": str(custom)})
    assert lib.path("coder/first_attempt") == custom.resolve()
    context = P.first_attempt_context(TASK, example=None, gpu=None, backend=Backend.cuda)
    text = lib.render("coder/first_attempt", **context)
    assert text.startswith(f"Write ModelNew for {TASK.id}.") and "Output format (strict)" in text
    relative = PromptLibrary(templates={"coder/first_attempt.j2": "terse.j2"}, base_dir=tmp_path)
    assert relative.render("coder/first_attempt", **context) == text
    assert "You are given this architecture" in PromptLibrary().render("coder/first_attempt", **context)


def test_a_template_can_be_swapped_for_another_of_the_folder(tmp_path):
    root = tmp_path / "agents"
    shutil.copytree(templates_module.DEFAULT_ROOT, root)
    (root / "coder" / "first_attempt_terse.j2").write_text("Task {{ task.id }}: write ModelNew.")
    lib = PromptLibrary(root, templates={"coder/first_attempt": "coder/first_attempt_terse"})
    context = P.first_attempt_context(TASK, example=None, gpu=None, backend=Backend.cuda)
    assert lib.render("coder/first_attempt", **context) == f"Task {TASK.id}: write ModelNew."
    with pytest.raises(PromptTemplateError, match="no template of that name"):
        PromptLibrary(templates={"coder/first_atempt": "coder/repair"})
    with pytest.raises(PromptTemplateError, match="no such file"):
        PromptLibrary(templates={"coder/repair": str(tmp_path / "missing.j2")})
    with pytest.raises(PromptTemplateError, match="does not exist"):
        PromptLibrary(tmp_path / "nowhere")


def test_the_bundled_examples_define_model_and_model_new(lib):
    for name in ["elementwise_add", "elementwise_add_triton"]:
        example = lib.example(name)
        assert "class Model(" in example["reference"] and "def get_inputs" in example["reference"]
        found = extract_code(fenced(example["solution"]))
        assert found.ok and found.code.strip() == example["solution"]
    assert "load_inline" in lib.example("elementwise_add")["solution"]
    assert "@triton.jit" in lib.example("elementwise_add_triton")["solution"]
    with pytest.raises(PromptTemplateError, match="missing"):
        lib.example("no_such_example")


def test_context_builders_are_plain_data():
    error = P.error_context(COMPILE_ERROR)
    assert error["status"] == "compile_error" and error["headline"] == "did not compile"
    assert error["summary"].count("fmaxff") == 2  # the trimmed log is in the message already: not repeated
    only_log = dataclasses.replace(COMPILE_ERROR, message="the CUDA source did not compile")
    assert P.error_context(only_log)["summary"].endswith("fmaxff(x[i], 0.f) * s;")
    long = dataclasses.replace(COMPILE_ERROR, message="x" * 20000, compile_log_trimmed="")
    clipped = P.error_context(long, max_chars=1000)["summary"]
    assert len(clipped) < 1100 and "characters cut" in clipped
    timing = P.timing_context(CORRECT)
    assert timing == {
        "measured": True,
        "reference_ms": "0.0412",
        "candidate_ms": "0.0251",
        "speedup": "1.64",
        "speedup_ci": "[1.6, 1.68]",
        "baseline": "eager",
        "note": "",
    }
    assert P.metrics_context(METRICS)["launch__grid_size"] == "1024"
    sheet = {
        "name": "NVIDIA H200",
        "l2_cache_bytes": 52428800,
        "uuid": None,
        "warnings": [],
        "clocks": [1, 2.5],
        "peaks": {"dram_bandwidth_gb_s": 4800.0, "fp32_tflops": 67.0},
    }
    assert P.gpu_context(sheet) == {
        "name": "NVIDIA H200",
        "l2_cache_bytes": "52428800 (50 MiB)",
        "clocks": "1, 2.5",
        "peaks.dram_bandwidth_gb_s": "4800",
        "peaks.fp32_tflops": "67",
    }
    plan = Feedback(JudgeMode.optimization, {"modification_plan": ["tile", "vectorise"]})
    assert P.feedback_context(plan) == {"modification_plan": "tile, vectorise"}
    json.dumps(contexts(PromptLibrary()))  # every context is JSON data


# --------------------------------------------------------------------------- extract_code


def test_code_in_a_python_fence():
    found = extract_code(fenced(KERNEL))
    assert found.ok and found.code == KERNEL + "\n" and found.reason == ""


@pytest.mark.parametrize("tag", ["py", "", "python3", "Python"])
def test_code_in_other_backtick_fences(tag):
    assert extract_code(fenced(KERNEL, tag)).code == KERNEL + "\n"


def test_code_in_tilde_and_long_fences():
    assert extract_code(f"~~~python\n{KERNEL}\n~~~").code == KERNEL + "\n"
    inner = KERNEL.replace("import torch\n", 'import torch\n"""Usage:\n```\nModelNew(2.0)(x)\n```\n"""\n', 1)
    found = extract_code(f"````python\n{inner}\n````")
    assert found.ok and found.code == inner + "\n"


def test_code_in_an_indented_fence():
    indented = "1. The kernel:\n   ```python\n" + textwrap.indent(KERNEL, "   ") + "\n   ```\n"
    assert extract_code(indented).code == KERNEL + "\n"


def test_unfenced_whole_source():
    assert extract_code(KERNEL).code == KERNEL + "\n"


def test_unfenced_source_with_prose_before_and_after():
    reply = f"Sure! Here's an optimised version:\n\n{KERNEL}\n\nThis launches one thread per element.\nHope it helps."
    found = extract_code(reply)
    assert found.ok and found.code == KERNEL + "\n"


def test_several_blocks_take_the_one_defining_model_new():
    cpp = "__global__ void relu_scale(const float* x) {}"
    usage = "model = ModelNew(2.0).cuda()\nprint(model(torch.randn(4, device='cuda')))"
    reply = f"Kernel:\n```cpp\n{cpp}\n```\nModule:\n```python\n{KERNEL}\n```\nUsage:\n```python\n{usage}\n```"
    assert extract_code(reply).code == KERNEL + "\n"


def test_several_blocks_defining_model_new_take_the_last():
    draft = KERNEL.replace("relu_scale_cuda(x, self.scale)", "torch.relu(x) * self.scale")
    reply = f"First try:\n```python\n{draft}\n```\nBetter:\n```python\n{KERNEL}\n```"
    assert extract_code(reply).code == KERNEL + "\n"


def test_no_model_new_is_rejected_with_a_reason():
    found = extract_code(fenced(REFERENCE))
    assert not found.ok and found.code == "" and "ModelNew" in found.reason and "1 code block (python)" in found.reason
    found = extract_code("I cannot write this kernel, sorry.")
    assert not found.ok and "no code block" in found.reason and "ModelNew" in found.reason
    nested = "import torch\nif True:\n    class ModelNew:\n        pass\n"
    assert "top level" in extract_code(fenced(nested)).reason
    assert extract_code("").reason == "the reply is empty"
    assert extract_code("   \n").reason == "the reply is empty"


def test_crlf_replies_are_normalised():
    found = extract_code(fenced(KERNEL).replace("\n", "\r\n"))
    assert found.ok and found.code == KERNEL + "\n" and "\r" not in found.code


def test_thinking_sections_are_ignored():
    draft = KERNEL.replace("relu_scale_cuda", "draft_cuda")
    reply = f"<think>\nMaybe:\n```python\n{draft}\n```\n</think>\nFinal:\n```python\n{KERNEL}\n```\n<think>no</think>"
    assert extract_code(reply).code == KERNEL + "\n"


def test_unclosed_fences():
    assert extract_code(f"```python\n{KERNEL}\n").code == KERNEL + "\n"  # closing fence forgotten
    cut = KERNEL[: KERNEL.index("return ext.")] + "return ext.relu_scale_cuda(x,"
    found = extract_code(f"```python\n{cut}")
    assert not found.ok and "cut off" in found.reason


def test_a_closed_block_that_does_not_parse_goes_to_the_evaluator():
    broken = KERNEL.replace("def forward(self, x):", "def forward(self, x)")
    found = extract_code(fenced(broken))
    assert found.ok and found.code == broken + "\n"


def test_an_earlier_complete_block_beats_a_cut_off_last_one():
    cut = KERNEL[: KERNEL.index("return ext.")] + "return ext.relu_scale_cuda(x,"
    assert extract_code(f"```python\n{KERNEL}\n```\nOr faster:\n```python\n{cut}").code == KERNEL + "\n"


def test_extract_code_never_raises_on_odd_input():
    for reply in ["```", "~~~\n", "```python\n```", "\x00class ModelNew", "{" * 500, "```python\n" + "(" * 300]:
        assert isinstance(extract_code(reply).ok, bool)


# --------------------------------------------------------------------------- extract_json


def test_json_in_a_fence():
    found = extract_json(f"My verdict:\n```json\n{GOOD_JSON}\n```\n", CORRECTION_KEYS)
    assert found.ok and found.data == CORRECTION_FEEDBACK.fields and found.reason == ""


def test_json_bare_inside_prose():
    reply = f"The grid is one block short. {json.dumps(CORRECTION_FEEDBACK.fields)} Let me know."
    assert extract_json(reply, CORRECTION_KEYS).data == CORRECTION_FEEDBACK.fields


def test_json_with_trailing_commas_and_comments():
    reply = '{\n "critical_issue": "a", // the bug\n "why_it_matters": "b",\n "minimal_fix_hint": "c",\n}'
    assert extract_json(reply, CORRECTION_KEYS).data == {
        "critical_issue": "a",
        "why_it_matters": "b",
        "minimal_fix_hint": "c",
    }
    assert extract_json('{"a": [1, 2,], "b": {"c": 3,},}', ["a", "b"]).data == {"a": [1, 2], "b": {"c": 3}}


def test_json_with_braces_and_quotes_inside_strings():
    fields = {
        "critical_issue": "The loop `for (int i = 0; i < n; ++i) {` never closes its } brace",
        "why_it_matters": 'nvcc stops at "expected a }" and it\'s fatal',
        "minimal_fix_hint": "Add the missing '}' after the loop body {x}",
    }
    reply = "Careful: `if (x) {` appears in prose.\n" + json.dumps(fields) + "\nDone }"
    assert extract_json(reply, CORRECTION_KEYS).data == fields


def test_json_with_single_quotes_and_python_literals():
    reply = "{'critical_issue': 'it\\'s the \"tail\"', 'why_it_matters': 'b', 'minimal_fix_hint': None, 'x': True}"
    found = extract_json(reply, CORRECTION_KEYS)
    assert not found.ok and found.data["critical_issue"] == 'it\'s the "tail"' and found.data["x"] is True
    assert "minimal_fix_hint" in found.reason  # None counts as missing
    assert extract_json("{critical_issue: 'a', why_it_matters: 'b', minimal_fix_hint: 'c'}", CORRECTION_KEYS).ok


def test_json_missing_keys_are_named():
    found = extract_json('{"critical_issue": "a", "why_it_matters": "  "}', CORRECTION_KEYS)
    assert not found.ok and found.data["critical_issue"] == "a"
    assert found.reason.endswith("why_it_matters, minimal_fix_hint")


def test_json_garbage_is_rejected():
    assert (
        extract_json("No issues found, the kernel looks right.", CORRECTION_KEYS).reason
        == "the reply holds no JSON object"
    )
    found = extract_json('{"critical_issue": "a" "why": }', CORRECTION_KEYS)
    assert not found.ok and "no valid JSON object" in found.reason and "line 1" in found.reason
    assert extract_json("", CORRECTION_KEYS).reason == "the reply is empty"
    for reply in ["{" * 1000, "}" * 10 + "{", '{"a": "' + "\\" * 5, "[" * 5000 + "]" * 5000, "{'a': '\n'}"]:
        assert isinstance(extract_json(reply, ["a"]).ok, bool)


def test_json_keys_are_matched_loosely():
    reply = '{"Bottleneck": "dram", "optimization method": "float4", "modification-plan": "p", "expected_effect": "2x"}'
    found = extract_json(reply, OPTIMIZATION_KEYS)
    assert found.ok and found.data == {
        "bottleneck": "dram",
        "optimisation_method": "float4",
        "modification_plan": "p",
        "expected_effect": "2x",
    }


def test_json_the_last_complete_object_wins():
    template = '{"critical_issue": "<issue>", "why_it_matters": "<why>", "minimal_fix_hint": "<fix>"}'
    reply = f"The format is {template}. My answer:\n```json\n{GOOD_JSON}\n```"
    assert extract_json(reply, CORRECTION_KEYS).data == CORRECTION_FEEDBACK.fields
    wrapped = json.dumps({"verdict": CORRECTION_FEEDBACK.fields})
    assert extract_json(wrapped, CORRECTION_KEYS).data == CORRECTION_FEEDBACK.fields
    partial_then_complete = (
        '{"critical_issue": "a"} then {"critical_issue": "a", "why_it_matters": "b", "minimal_fix_hint": "c"}'
    )
    assert extract_json(partial_then_complete, CORRECTION_KEYS).ok


# --------------------------------------------------------------------------- Coder


def test_coder_good_reply(lib):
    llm = FakeLLM(fenced(KERNEL))
    result = Coder(llm, lib).first_attempt(TASK, gpu=GPU, task_id=TASK.id, round=0)
    assert result.ok and result.source == KERNEL + "\n" and result.failure == ""
    assert result.mode is CoderMode.first_attempt and result.conversation.follow_ups == 0
    ((messages, meta),) = llm.calls
    assert [m["role"] for m in messages] == ["system", "user"] and result.messages == messages
    assert "elementwise" in messages[1]["content"] and REFERENCE in messages[1]["content"]
    assert meta == {"mode": "first_attempt", "task_id": TASK.id, "round": 0, "follow_up": 0}
    assert result.reply == fenced(KERNEL) and result.conversation.transcript()[-1]["content"] == fenced(KERNEL)


def test_coder_bad_then_good_uses_one_follow_up(lib):
    llm = FakeLLM("I would fuse the ReLU and the scale into one kernel.", fenced(KERNEL))
    result = Coder(llm, lib).repair(TASK, KERNEL, COMPILE_ERROR, feedback=CORRECTION_FEEDBACK)
    assert result.ok and result.source == KERNEL + "\n" and result.conversation.follow_ups == 1
    assert (
        result.conversation.parse_errors[0].startswith("the reply has no code block")
        and result.conversation.parse_errors[1] == ""
    )
    first, second = llm.calls[0][0], llm.calls[1][0]
    assert second[:2] == first and [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[2]["content"] == "I would fuse the ReLU and the scale into one kernel."
    assert "could not be used: the reply has no code block" in second[3]["content"]
    assert "ModelNew" in second[3]["content"] and llm.calls[1][1]["follow_up"] == 1
    assert result.messages == second


def test_coder_bad_then_bad_is_a_recorded_failure(lib):
    llm = FakeLLM(fenced(REFERENCE), "")
    result = Coder(llm, lib).optimize(TASK, KERNEL, result=CORRECT, feedback=OPTIMIZATION_FEEDBACK, gpu=GPU)
    assert not result.ok and result.source is None and result.failure == "the reply is empty"
    assert len(llm.calls) == 2 and result.conversation.replies == [fenced(REFERENCE), ""]
    assert "define no class ModelNew" in result.conversation.parse_errors[0]
    assert CoderResult.from_dict(json.loads(result.to_json())) == result


def test_coder_follow_up_budget_is_configurable(lib):
    llm = FakeLLM("no", "still no", "nope", fenced(KERNEL))
    assert not Coder(llm, lib, max_follow_ups=0).first_attempt(TASK).ok and len(llm.calls) == 1
    llm = FakeLLM("no", "still no", fenced(KERNEL))
    assert Coder(llm, lib, max_follow_ups=2).first_attempt(TASK).ok and len(llm.calls) == 3
    with pytest.raises(ValueError):
        Coder(llm, lib, max_follow_ups=-1)


def test_coder_notes_a_cut_off_reply(lib):
    llm = FakeLLM("```python\nimport torch\nclass ModelNew(", "```python\nimport torch\n", finish_reason="length")
    result = Coder(llm, lib).first_attempt(TASK)
    assert not result.ok and "token limit" in result.failure
    assert "token limit" in llm.calls[1][0][-1]["content"]


def test_coder_lets_client_errors_propagate(lib):
    class TransportError(Exception):
        pass

    with pytest.raises(TransportError):
        Coder(FakeLLM(TransportError("rate limited")), lib).first_attempt(TASK)


def test_coder_zero_shot_and_triton_examples(lib):
    llm = FakeLLM(fenced(KERNEL), fenced(KERNEL))
    Coder(llm, lib, example=None).first_attempt(TASK)
    Coder(llm, lib, backend=Backend.triton).first_attempt(TASK)
    assert "Here is an example" not in llm.calls[0][0][1]["content"]
    assert "@triton.jit" in llm.calls[1][0][1]["content"] and "Triton" in llm.calls[1][0][0]["content"]


def test_agents_are_stateless(lib):
    llm = FakeLLM("junk", "junk", fenced(KERNEL))
    coder = Coder(llm, lib)
    failed, good = coder.first_attempt(TASK), coder.first_attempt(TASK)
    assert not failed.ok and good.ok and good.conversation.follow_ups == 0
    assert llm.calls[2][0] == llm.calls[0][0]  # the second step starts afresh
    with pytest.raises(dataclasses.FrozenInstanceError):
        coder.max_follow_ups = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- Judge


def test_judge_correction_good_reply(lib):
    llm = FakeLLM(f"The tail is never written.\n```json\n{GOOD_JSON}\n```")
    result = Judge(llm, lib).correction(TASK, KERNEL, INCORRECT, gpu=GPU, task_id=TASK.id)
    assert result.ok and result.feedback == CORRECTION_FEEDBACK and result.failure == ""
    system, user = llm.calls[0][0]
    assert "single most critical issue" in system["content"] and "max abs error 3.1" in user["content"]
    assert llm.calls[0][1] == {"mode": "correction", "task_id": TASK.id, "follow_up": 0}
    assert JudgeResult.from_dict(json.loads(result.to_json())) == result


def test_judge_bad_then_good_uses_one_follow_up(lib):
    good = json.dumps(OPTIMIZATION_FEEDBACK.fields).replace("}", ",}")  # a trailing comma is fine
    llm = FakeLLM('{"bottleneck": "dram"}', good)
    result = Judge(llm, lib).optimization(TASK, KERNEL, CORRECT, gpu=GPU, metrics=METRICS, metric_set="cudaforge24")
    assert result.ok and result.feedback == OPTIMIZATION_FEEDBACK and result.conversation.follow_ups == 1
    follow_up = llm.calls[1][0][-1]["content"]
    assert "optimisation_method, modification_plan, expected_effect" in follow_up
    assert '"bottleneck", "optimisation_method"' in follow_up and "optimization review" in follow_up
    assert "41.3 %" in llm.calls[0][0][1]["content"]


def test_judge_bad_then_bad_is_a_recorded_failure(lib):
    llm = FakeLLM("The kernel looks fine to me.", "Really, it is fine.")
    result = Judge(llm, lib).correction(TASK, KERNEL, COMPILE_ERROR)
    assert not result.ok and result.feedback is None and result.failure == "the reply holds no JSON object"
    assert len(llm.calls) == 2 and result.conversation.replies[-1] == "Really, it is fine."


def test_judge_required_keys_follow_the_config(lib):
    llm = FakeLLM('{"issue": "grid", "fix": "add a block", "extra": 1}')
    judge = Judge(llm, lib, correction_keys=["issue", "fix"])
    result = judge.correction(TASK, KERNEL, INCORRECT)
    assert result.ok and result.feedback.fields == {"issue": "grid", "fix": "add a block"}


# --------------------------------------------------------------------------- through the real client


@pytest.fixture
def script_name():
    """A fresh script name, uninstalled after the test."""
    from cudaforge.llm import remove_script

    name = f"agents{uuid.uuid4().hex[:8]}"
    yield name
    remove_script(name)


def test_coder_and_judge_through_the_llm_client(lib, script_name):
    from cudaforge.config import LLMConfig
    from cudaforge.llm import Ledger, LLMClient, install_script

    script = install_script(script_name, ["Let me think about tiling first.", fenced(KERNEL), GOOD_JSON])
    ledger = Ledger()
    config = LLMConfig(model=f"scripted/{script_name}")
    coder = Coder(LLMClient(config, role="coder", ledger=ledger), lib)
    result = coder.first_attempt(TASK, gpu=GPU, task_id=TASK.id, round=0)
    assert result.ok and result.source == KERNEL + "\n" and result.conversation.follow_ups == 1
    assert script.calls[1][-1]["role"] == "user" and "could not be used" in script.calls[1][-1]["content"]
    judge = Judge(LLMClient(config, role="judge", ledger=ledger), lib)
    verdict = judge.correction(TASK, result.source, INCORRECT, task_id=TASK.id, round=0)
    assert verdict.ok and verdict.feedback == CORRECTION_FEEDBACK
    rows = ledger.rows
    assert [(r.role, r.meta["mode"], r.meta["follow_up"]) for r in rows] == [
        ("coder", "first_attempt", 0),
        ("coder", "first_attempt", 1),
        ("judge", "correction", 0),
    ]
    assert all(r.meta["task_id"] == TASK.id and r.prompt_tokens > 0 for r in rows)


# --------------------------------------------------------------------------- the cudaforge_paper template set


from cudaforge.agents import PAPER_OPTIMIZATION_KEYS, TEMPLATE_SETS  # noqa: E402
from cudaforge.agents.judge import judge_metric_names  # noqa: E402
from cudaforge.profile.metrics import CUDAFORGE24  # noqa: E402
from cudaforge.profile_types import KernelProfile, MetricValue, ProfileResult, ProfileStatus, Roofline, RuleMessage  # noqa: E402

GOLDEN = Path(__file__).parent / "fixtures" / "agents_cudaforge_paper"
"""One file per agent and mode: the system and user messages the paper set sends (``CUDAFORGE_UPDATE_GOLDEN=1``
rewrites them)."""

SPEC_SHEET = {  # shaped as cudaforge.hardware.specs.gpu_spec_sheet returns it
    "name": "NVIDIA H200",
    "compute_capability": "9.0",
    "sm_count": 132,
    "memory_bytes": 150_119_129_088,
    "l2_cache_bytes": 62_914_560,
    "shared_memory_per_block_bytes": 49152,
    "shared_memory_per_block_optin_bytes": 232448,
    "shared_memory_per_sm_bytes": 233472,
    "registers_per_sm": 65536,
    "max_threads_per_sm": 2048,
    "warp_size": 32,
    "uuid": "GPU-00000000-0000-0000-0000-000000000000",
    "max_sm_clock_mhz": 1980,
    "max_memory_clock_mhz": 3201,
    "memory_bus_width_bits": 6144,
    "power_limit_w": 700.0,
    "driver_version": "570.00",
    "peaks": {
        "memory_gbs": 4800,
        "fp32_tflops": 67.0,
        "tf32_tflops": 494.5,
        "fp16_tflops": 989.5,
        "bf16_tflops": 989.5,
        "int8_tops": 1979.0,
        "table_key": "h200",
        "label": "H200 SXM 141GB",
        "source": "table",
    },
    "warnings": [],
    "notes": [],
}
EXTRA_METRIC = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
"""A metric outside the paper's 24, as ncu's full set reports it."""


def _metrics(scale: float) -> dict[str, MetricValue]:
    """The 24 metrics with made-up values, the duration, and one metric outside the 24."""
    values = {
        name: MetricValue(round((i + 1) * scale * 1.23456, 5), "%" if "pct" in name else "")
        for i, name in enumerate(CUDAFORGE24)
    }
    values["smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct"] = MetricValue(None, "%")  # n/a on sm_90
    return {**values, "gpu__time_duration.sum": MetricValue(25100.0, "nsecond"), EXTRA_METRIC: MetricValue(12.5, "%")}


KERNEL_NAME = "relu_scale(const float *, float *, float, int)"
PROFILE = ProfileResult(
    task_id=TASK.id,
    candidate_hash="0123456789abcdef",
    status=ProfileStatus.OK,
    metric_set="full",
    kernels=[
        KernelProfile(0, KERNEL_NAME, "relu_scale", True, "(1024, 1, 1)", "(256, 1, 1)", 0.0251, _metrics(1.0)),
        KernelProfile(
            1,
            "void at::native::copy_kernel(...)",
            "copy_kernel",
            False,
            "(8, 1, 1)",
            "(128, 1, 1)",
            0.002,
            _metrics(0.5),
        ),
        KernelProfile(2, KERNEL_NAME, "relu_scale", True, "(1024, 1, 1)", "(256, 1, 1)", 0.0249, _metrics(2.0)),
    ],
    totals={"gpu__time_duration.sum": MetricValue(50000.0, "nsecond"), CUDAFORGE24[0]: MetricValue(3.7, "cycle")},
    library_kernel_names=["copy_kernel"],
    library_kernel_ms=0.002,
    rules=[RuleMessage(rule="SOLBottleneck", type="OPT", message="memory is the bottleneck", kernel="relu_scale")],
    roofline=Roofline(floor_ms=0.0011, bound="memory", sol_fraction=0.044),
    spec=SPEC_SHEET,
).to_dict()
"""A profile record as the loop stores it (``judge_metrics`` and ``kernels`` are what the Judge reads)."""

PAPER_OPTIMIZATION = Feedback(
    JudgeMode.optimization,
    {
        "bottleneck": "DRAM throughput is 41% of peak with scalar 4-byte loads.",
        "optimisation_method": "Vectorised float4 loads and stores",
        "modification_plan": "Process four elements per thread with float4; handle the tail separately.",
    },
)
PAPER_OPTIMIZATION_REPLY = json.dumps(
    {
        "bottleneck": PAPER_OPTIMIZATION.fields["bottleneck"],
        "optimisation method": PAPER_OPTIMIZATION.fields["optimisation_method"],
        "modification plan": PAPER_OPTIMIZATION.fields["modification_plan"],
    },
    indent=2,
)


@pytest.fixture(scope="module")
def paper() -> PromptLibrary:
    """The cudaforge_paper templates."""
    return PromptLibrary(template_set="cudaforge_paper")


def paper_prompts(paper: PromptLibrary) -> dict[str, list[dict]]:
    """The messages each agent sends in each mode with the paper set, through the agents' own methods."""
    llm = FakeLLM(fenced(KERNEL), fenced(KERNEL), fenced(KERNEL), GOOD_JSON, PAPER_OPTIMIZATION_REPLY)
    coder = Coder(llm, paper, backend=Backend.cuda)
    judge = Judge(llm, paper, metric_names=judge_metric_names("cudaforge24"))
    assert coder.first_attempt(TASK, gpu=SPEC_SHEET).ok
    assert coder.repair(TASK, KERNEL, INCORRECT, feedback=CORRECTION_FEEDBACK).ok
    assert coder.optimize(TASK, KERNEL, result=CORRECT, feedback=PAPER_OPTIMIZATION, gpu=SPEC_SHEET).ok
    assert judge.correction(TASK, KERNEL, INCORRECT, gpu=SPEC_SHEET).feedback == CORRECTION_FEEDBACK
    verdict = judge.optimization(
        TASK,
        KERNEL,
        CORRECT,
        gpu=SPEC_SHEET,
        metrics=PROFILE["judge_metrics"],
        metric_set="full",
        kernels=PROFILE["kernels"],
    )
    assert verdict.feedback == PAPER_OPTIMIZATION
    names = ["coder_first_attempt", "coder_repair", "coder_optimize", "judge_correction", "judge_optimization"]
    return {name: messages for name, (messages, _) in zip(names, llm.calls)}


def as_text(messages: list[dict]) -> str:
    return "".join(f"=== {m['role']} ===\n{m['content']}\n" for m in messages)


@pytest.mark.parametrize(
    "name", ["coder_first_attempt", "coder_repair", "coder_optimize", "judge_correction", "judge_optimization"]
)
def test_paper_prompts_match_the_golden_files(paper, name):
    text = as_text(paper_prompts(paper)[name])
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("CUDAFORGE_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{path} differs (CUDAFORGE_UPDATE_GOLDEN=1 rewrites it)"


def _timing_free(text: str) -> bool:
    """No timing of CORRECT in the text: no measured speedup, no milliseconds, no "Measured:" line."""
    numbers = any(s in text for s in ("0.0412", "0.0251", "1.64", "1.6, 1.68", " ms", "Measured", "eager"))
    return not numbers and not re.search(r"speedup\W*\d", text, re.I)


def test_paper_prompts_show_what_the_papers_agents_saw_and_nothing_else(paper):
    prompts = {name: as_text(messages) for name, messages in paper_prompts(paper).items()}
    reference_only = ("class Model(", "def get_inputs", "torch.relu(x) * self.scale")
    first = prompts["coder_first_attempt"]
    assert REFERENCE in first and paper.example("elementwise_add")["solution"] in first
    assert "H200" not in first and "sm_count" not in first and _timing_free(first)
    repair = prompts["coder_repair"]
    assert KERNEL in repair and not any(s in repair for s in reference_only), "the correction Coder: no reference"
    assert "critical_issue: Grid covers n-1 elements" in repair and "minimal_fix_hint: Launch" in repair
    assert "Outputs are not close (atol=0.0001, rtol=0.0001). max_abs_err=3.100e+00, mean_abs_err=4.000e-04" in repair
    assert "[255, 1023]" not in repair and "tail (from flat index" not in repair  # only the largest error
    assert "H200" not in repair and "dram__" not in repair and _timing_free(repair)
    optimize = prompts["coder_optimize"]
    assert KERNEL in optimize and not any(s in optimize for s in reference_only), "the optimisation Coder: no reference"
    assert '"optimisation method": "Vectorised float4 loads and stores"' in optimize
    assert '"modification plan": ' in optimize and "atol=1e-4 or rtol=1e-4" in optimize
    assert "GPU name: NVIDIA H200" in optimize and "Architecture: Hopper" in optimize
    assert "dram__" not in optimize and "sm__" not in optimize and _timing_free(optimize)
    correction = prompts["judge_correction"]
    assert REFERENCE in correction and KERNEL in correction and '"minimal_fix_hint": "<20 words at most>"' in correction
    assert "max_abs_err=3.100e+00" in correction and "H200" not in correction and _timing_free(correction)
    optimization = prompts["judge_optimization"]
    assert REFERENCE in optimization and KERNEL in optimization and "Architecture: Hopper" in optimization
    assert '"optimisation method": "<35 words at most>"' in optimization and _timing_free(optimization)
    assert "gpu__time_duration" not in optimization and "roofline" not in optimization.lower()
    assert "copy_kernel" not in optimization and EXTRA_METRIC not in optimization


def test_the_paper_judge_reads_exactly_the_24_metrics_of_the_last_launch(paper):
    user = paper_prompts(paper)["judge_optimization"][1]["content"]
    block = user.split("# Nsight Compute metrics (verbatim)\n", 1)[1].rsplit("\n\nRead all of the above", 1)[0]
    metrics = json.loads(block)
    assert list(metrics) == [KERNEL_NAME]
    assert list(metrics[KERNEL_NAME]) == list(CUDAFORGE24)
    assert metrics[KERNEL_NAME][CUDAFORGE24[0]] == round(1 * 2.0 * 1.23456, 3)  # launch 2, rounded as the paper's code
    assert metrics[KERNEL_NAME]["smsp__warp_issue_stalled_memory_dependency_per_warp_active.pct"] is None
    everything = P.optimization_context(
        TASK, KERNEL, CORRECT, gpu=None, metrics=PROFILE["judge_metrics"], kernels=PROFILE["kernels"]
    )["kernel_metrics"]
    assert set(everything[KERNEL_NAME]) == {*CUDAFORGE24, "gpu__time_duration.sum", EXTRA_METRIC}  # judge_metrics=all
    assert P.kernel_metrics_context([{"name": "k", "own": True, "metrics": {}}]) == {}  # no ncu metrics: {}


def test_the_24_metric_switch_limits_the_default_judges_table_too(lib):
    table = PROFILE["judge_metrics"]
    assert "roofline floor" in table and f"[relu_scale#2] {EXTRA_METRIC}" in table
    kept = P.select_metrics(table, CUDAFORGE24)
    assert {P._TABLE_PREFIX.sub("", key) for key in kept} == set(CUDAFORGE24)
    assert f"[total] {CUDAFORGE24[0]}" in kept and "[relu_scale#0] launch" not in kept
    assert P.select_metrics(table, ()) == table
    llm = FakeLLM(json.dumps(OPTIMIZATION_FEEDBACK.fields))
    Judge(llm, lib, metric_names=CUDAFORGE24).optimization(
        TASK, KERNEL, CORRECT, gpu=GPU, metrics=table, metric_set="full", kernels=PROFILE["kernels"]
    )
    user = llm.calls[0][0][1]["content"]
    rows = [line.split(" | ")[0].strip("| ") for line in user.splitlines() if line.startswith("| [")]
    assert rows and {P._TABLE_PREFIX.sub("", row) for row in rows} == set(CUDAFORGE24)
    assert "roofline" not in user and "SOLBottleneck" not in user and "speedup 1.64x" in user  # timing stays (ours)
    assert judge_metric_names("all") == () and judge_metric_names("cudaforge24") == CUDAFORGE24
    with pytest.raises(ValueError, match="known: all, cudaforge24"):
        judge_metric_names("top10")
    # profile_set: what the arm's metric set names, without the duration every set also collects
    assert judge_metric_names("profile_set", "cudaforge24") == CUDAFORGE24
    assert judge_metric_names("profile_set", "cudaforge24", ["extra.metric"]) == (*CUDAFORGE24, "extra.metric")
    assert judge_metric_names("profile_set", "full") == ()  # ncu's own section set: every metric it holds
    assert judge_metric_names("profile_set", "custom", ["a.sum"]) == ("a.sum",)


def test_the_paper_judge_accepts_the_papers_keys_and_fills_our_feedback(paper):
    judge = Judge(FakeLLM(PAPER_OPTIMIZATION_REPLY), paper)
    assert judge.optimization_keys == PAPER_OPTIMIZATION_KEYS and judge.correction_keys == CORRECTION_KEYS
    result = judge.optimization(TASK, KERNEL, CORRECT, gpu=SPEC_SHEET)
    assert result.ok and result.feedback.fields == PAPER_OPTIMIZATION.fields
    underscored = json.dumps(PAPER_OPTIMIZATION.fields)  # our spelling is accepted too
    assert Judge(FakeLLM(underscored), paper).optimization(TASK, KERNEL, CORRECT).feedback == PAPER_OPTIMIZATION
    reply = f"The candidate never writes its tail.\n```json\n{GOOD_JSON}\n```"
    assert Judge(FakeLLM(reply), paper).correction(TASK, KERNEL, INCORRECT).feedback == CORRECTION_FEEDBACK
    # the default set still asks for its fourth key, and passes on what it has when the follow-up lacks it too
    partial = Judge(FakeLLM(PAPER_OPTIMIZATION_REPLY, PAPER_OPTIMIZATION_REPLY), PromptLibrary()).optimization(
        TASK, KERNEL, CORRECT
    )
    assert partial.ok and partial.missing == ["expected_effect"] and partial.feedback.fields["expected_effect"] == ""
    assert "expected_effect" in partial.failure and len(partial.conversation.parse_errors) == 2


def test_malformed_paper_judge_replies_fail_as_before(paper):
    partial = json.dumps({"bottleneck": "dram", "optimisation method": "float4"})
    llm = FakeLLM(partial, "No JSON here, sorry.")
    result = Judge(llm, paper).optimization(TASK, KERNEL, CORRECT)
    assert not result.ok and result.feedback is None and result.failure == "the reply holds no JSON object"
    assert "lacks (or leaves empty) the keys: modification_plan" in result.conversation.parse_errors[0]
    follow_up = llm.calls[1][0][-1]["content"]
    assert '"bottleneck", "optimisation method", "modification plan"' in follow_up
    llm = FakeLLM("{'critical_issue': 'a'", '{"critical_issue": "a", "why_it_matters": ""}')
    result = Judge(llm, paper).correction(TASK, KERNEL, COMPILE_ERROR)  # the last reply's advice, passed on in part
    assert result.ok and result.missing == ["why_it_matters", "minimal_fix_hint"] and "why_it_matters" in result.failure
    assert result.feedback.fields == {"critical_issue": "a", "why_it_matters": "", "minimal_fix_hint": ""}
    assert '"critical_issue", "why_it_matters", "minimal_fix_hint"' in llm.calls[1][0][-1]["content"]


def test_every_paper_template_renders_and_documents_what_it_reads(paper, lib):
    assert set(lib.names()) <= set(paper.names())  # what the set lacks comes from the default folder
    for name in paper.names():
        assert paper.variables(name) == paper.documented_variables(name), name
        if name == "skills/distill":  # not a Coder or Judge prompt: the default folder's
            continue
        assert paper.path(name).is_relative_to(templates_module.DEFAULT_ROOT / "cudaforge_paper"), name
        head = paper.path(name).read_text().split("-#}", 1)[0]  # the opening comment says what it mirrors
        assert re.search(r"Mirrors:.*Leaves out:|Not in the paper:", head, re.S), name
    context = P.first_attempt_context(TASK, example=None, gpu=None, backend="cuda")
    zero_shot = paper.render("coder/first_attempt", **context)
    assert "The following example" not in zero_shot and REFERENCE in zero_shot
    no_judge = P.optimize_context(TASK, KERNEL, result=None, feedback=None, gpu=None, backend="cuda")
    text = paper.render("coder/optimize", **no_judge)
    assert "No optimisation instructions were given." in text
    assert "GPU name: unknown" in text and "(none available)" in text
    text = paper.render("coder/repair", **P.repair_context(TASK, KERNEL, COMPILE_ERROR, feedback=None, backend="cuda"))
    assert "No critical problem was named beforehand." in text and "fmaxff" in text


def test_template_sets_are_named_and_checked(paper):
    assert set(TEMPLATE_SETS) == {"default", "cudaforge_paper"} and paper.template_set.name == "cudaforge_paper"
    assert PromptLibrary().template_set is TEMPLATE_SETS["default"]
    with pytest.raises(PromptTemplateError, match="unknown template set 'paper'; known: default, cudaforge_paper"):
        PromptLibrary(template_set="paper")
    with pytest.raises(ValueError, match="asks for cuda or any kernels, not triton"):
        Coder(FakeLLM(), paper, backend=Backend.triton)
    assert Coder(FakeLLM(), paper, backend=Backend.any).example_context()["name"] == "elementwise_add"
    custom = PromptLibrary(template_set="cudaforge_paper", templates={"coder/repair": "coder/optimize"})
    assert custom.path("coder/repair") == paper.path("coder/optimize")  # a swap names a template of the set


def test_the_error_log_keeps_the_tail_of_one_text():
    lines = "\n".join(f"line {i}" for i in range(400))
    long = dataclasses.replace(COMPILE_ERROR, message=lines, compile_log_trimmed="")
    log = P.error_log(long)
    assert log.splitlines() == [f"line {i}" for i in range(250, 400)]
    message = "TypeError: relu_scale_cuda(): incompatible arguments\nInvoked with: tensor([[...]])"
    pybind = dataclasses.replace(COMPILE_ERROR, status=EvalStatus.RUNTIME_ERROR, message=message)
    assert P.error_log(pybind) == "TypeError: relu_scale_cuda(): incompatible arguments"
    shapes = dataclasses.replace(INCORRECT, diff=dataclasses.replace(INCORRECT.diff, actual_shape=[256, 1023]))
    assert "expected shape [256, 1024] float32, got [256, 1023] float32" in P.error_log(shapes)


def test_a_named_gpu_sheet_comes_from_the_datasheet_table():
    from cudaforge.hardware import specs

    sheet = specs.named_gpu_sheet("Quadro RTX 6000")
    assert sheet == specs.named_gpu_sheet("quadro-rtx-6000")
    card = P.gpu_card_context(sheet)
    assert card["name"] == "Quadro RTX 6000" and card["architecture"] == "Turing"
    assert card["details"]["compute_capability"] == "7.5" and card["details"]["peaks.fp32_tflops"] == "16.3"
    assert "peaks.tf32_tflops" not in card["details"]  # Turing has none
    assert P.gpu_card_context(SPEC_SHEET)["architecture"] == "Hopper"
    assert set(specs.COMPUTE_CAPABILITIES) == set(specs.PEAK_TABLE)
    with pytest.raises(ValueError, match="no such GPU in the datasheet table; use 'local' or one of: b200"):
        specs.named_gpu_sheet("Voodoo 2")


def test_the_runner_wires_the_agents_group(tmp_path):
    from cudaforge.config import CudaforgeConfig, JudgeMetrics, TemplateSetName
    from cudaforge.run.runner import make_context

    cfg = CudaforgeConfig()
    cfg.profile.enabled, cfg.eval.device = False, "cpu"
    cfg.agents.template_set, cfg.agents.judge_metrics = TemplateSetName.cudaforge_paper, JudgeMetrics.cudaforge24
    cfg.agents.gpu_spec = "Quadro RTX 6000"
    cfg.strategy.backend = "cuda"
    ctx = make_context(cfg, tmp_path / "run")
    assert ctx.coder.prompts.template_set.name == "cudaforge_paper" and ctx.judge.prompts is ctx.coder.prompts
    assert ctx.judge.metric_names == CUDAFORGE24 and ctx.judge.optimization_keys == PAPER_OPTIMIZATION_KEYS
    assert ctx.gpu_spec["name"] == "Quadro RTX 6000" and ctx.gpu_spec["architecture"] == "Turing"
    default = make_context(dataclasses.replace(CudaforgeConfig(), profile=cfg.profile, eval=cfg.eval), tmp_path / "d")
    assert default.coder.prompts.template_set.name == "default" and default.judge.metric_names == ()


def test_replies_too_long_for_their_use_are_refused_with_a_reason():
    from cudaforge.agents.parsing import MAX_CODE_REPLY_CHARS, MAX_JSON_REPLY_CHARS, extract_code, extract_json

    code = extract_code("```python\nclass ModelNew: pass\n" + "# pad\n" * (MAX_CODE_REPLY_CHARS // 6) + "```")
    assert not code.ok and "characters long" in code.reason and "ModelNew source alone" in code.reason
    judge = extract_json('{"bottleneck": "x"}' + " " * MAX_JSON_REPLY_CHARS, ["bottleneck"])
    assert not judge.ok and "JSON object alone" in judge.reason


def test_the_json_scan_of_nested_noise_is_bounded_and_still_finds_the_answer_after_it(monkeypatch):
    """A 60 KB reply of nested braces cost over a minute of quadratic scanning in the parent; the scan now tries a
    bounded number of spans, then the last few objects of the reply."""
    from cudaforge.agents import parsing

    calls = []
    real = parsing._match_brace
    monkeypatch.setattr(parsing, "_match_brace", lambda text, start: calls.append(start) or real(text, start))
    noise = "{" + '"k": {' * 9000 + "}" * 9000
    found = parsing.extract_json(
        noise + ' and so: {"bottleneck": "dram", "optimisation method": "tile"}', ["bottleneck"]
    )
    assert found.ok and found.data["bottleneck"] == "dram"
    assert len(calls) <= parsing._MAX_FAILED_SPANS + 8


@pytest.mark.parametrize("language", languages.coder_languages(), ids=lambda lang: lang.name)
def test_each_coder_language_brings_its_prompt_rule_example_and_follow_up(lib, language):
    """The Coder's prompts say what the registry's language module says (cudaforge/languages/<name>.py)."""
    coder = Coder(FakeLLM(), lib, backend=language.name)
    example = coder.example_context()
    assert example["name"] == language.example and languages.detect(example["solution"]) == language.name
    context = P.first_attempt_context(TASK, example=example, gpu=None, backend=language.name)
    first = lib.render("coder/first_attempt", **context)
    assert f"custom {language.title} kernels" in first and language.prompt_rule in first
    assert f"hand-written {language.title} kernels" in lib.render("coder/system", **context)
    follow = lib.render("coder/follow_up", **P.coder_follow_up_context("no code block", backend=language.name))
    assert f"at top level, {language.follow_up}." in follow


def test_any_offers_the_choice_languages_and_the_judge_reads_a_languages_notes(lib):
    text = lib.render("coder/first_attempt", **P.first_attempt_context(TASK, example=None, gpu=None, backend="any"))
    assert "custom CUDA or Triton kernels" in text
    assert all(lang.prompt_choice in text for lang in languages.choice_languages())
    cute = (Path(languages.__file__).parents[1] / "resources" / "candidates" / "cute_dsl_relu.py").read_text()
    notes = languages.get("cute_dsl").judge_notes
    assert notes in lib.render("judge/optimization", **P.optimization_context(TASK, cute, CORRECT, gpu=GPU, metrics={}))
    assert "CuTe" not in lib.render(
        "judge/optimization", **P.optimization_context(TASK, KERNEL, CORRECT, gpu=GPU, metrics={})
    )


def test_whole_numbers_print_as_integers_in_the_metric_block_as_the_authors_code_prints_them():
    """Issue 54: integers printed as floats in the metric block (``3449.0`` for ``3449``)."""
    kernels = [{"name": "k", "own": True, "metrics": {"regs": 32.0, "cycles": 3449.0, "pct": 45.678912, "na": None}}]
    table = P.kernel_metrics_context(kernels)
    assert table == {"k": {"regs": 32, "cycles": 3449, "pct": 45.679, "na": None}}
    assert templates_module.to_json(table, 2).count(".0") == 0 and '"cycles": 3449' in templates_module.to_json(
        table, 2
    )


def test_the_error_log_is_in_the_authors_harness_form_and_their_repair_builder_reads_it():
    """Issue 54: the Judge and the Coder read cudaforge's error summary, not the text the authors' harness produced."""
    import importlib
    import sys

    log = P.error_log(INCORRECT)  # then the integrity findings, one a line
    assert log.splitlines()[0] == (
        "ValueError: Outputs are not close (atol=0.0001, rtol=0.0001). max_abs_err=3.100e+00, mean_abs_err=4.000e-04"
    )
    authors = dataclasses.replace(INCORRECT.diff, atol=0.001, rtol=0.001, variant="hidden:negated")
    assert P.error_log(dataclasses.replace(INCORRECT, diff=authors)).splitlines()[:2] == [
        "on the hidden:negated inputs",
        "ValueError: Outputs are not close (atol=0.001, rtol=0.001). max_abs_err=3.100e+00, mean_abs_err=4.000e-04",
    ]
    compiled = dataclasses.replace(
        COMPILE_ERROR, compile_log="ninja: build stopped\nkernel.cu(3): error: x", compile_log_trimmed=""
    )
    assert P.error_log(compiled).endswith("ninja: build stopped\nkernel.cu(3): error: x")
    standin = Path(__file__).parent / "standins" / "cudaforge_authors"
    sys.path.insert(0, str(standin))
    try:
        error = importlib.import_module("prompts.error")
        prompt = error.build_error_prompt(old_code=KERNEL, error_log=log, problem=None, gpu_name="Stand-in GPU")
    finally:
        sys.path.remove(str(standin))
    assert f"LOG:{log}\n" in prompt  # what their builder embeds, as their harness would have handed it
