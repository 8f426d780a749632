"""The agents layer: templates, reply parsing, and the Coder and Judge steps with scripted models."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import textwrap
import uuid

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import pytest  # noqa: E402

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
    '''
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
    '''
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
        trial=0, variant="default", expected_shape=[256, 1024], actual_shape=[256, 1024], expected_dtype="float32",
        actual_dtype="float32", max_abs_error=3.1, max_rel_error=1.0, mismatch_count=128, mismatch_fraction=0.0005,
        worst=[Mismatch(index=[255, 1023], expected=3.1, actual=0.0)], region="tail (from flat index 262016)",
        atol=1e-4, rtol=1e-4, message="values differ",
    ),
    guard_findings=[{"guard": "inputs_mutated", "verdict": "fail", "evidence": "input 0 changed"},
                    {"guard": "side_stream", "verdict": "pass", "evidence": ""}],
)  # fmt: skip
CORRECT = EvalResult(
    task_id=TASK.id,
    candidate_hash="0123456789abcdef",
    status=EvalStatus.CORRECT,
    message="correct on 8 trials",
    reference_timing=TimingStats(n=100, median=0.0412, mean=0.0415, min=0.04, max=0.05, std=0.001, ci_low=0.041, ci_high=0.042),
    candidate_timing=TimingStats(n=100, median=0.0251, mean=0.0252, min=0.024, max=0.03, std=0.001, ci_low=0.025, ci_high=0.0255),
    speedup=SpeedupStats(median=1.64, ci_low=1.6, ci_high=1.68),
)  # fmt: skip
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
    optimize = P.optimize_context(TASK, KERNEL, result=CORRECT, feedback=OPTIMIZATION_FEEDBACK, gpu=GPU, backend=Backend.any)
    correction = P.correction_context(TASK, KERNEL, COMPILE_ERROR, gpu=GPU)
    optimization = P.optimization_context(TASK, KERNEL, CORRECT, gpu=GPU, metrics=METRICS, metric_set="cudaforge24")
    return {
        "coder/system": first,
        "coder/first_attempt": first,
        "coder/repair": repair,
        "coder/optimize": optimize,
        "coder/follow_up": P.coder_follow_up_context("the reply is empty", backend=Backend.triton),
        "coder/_output_format": {"backend": "cuda"},
        "judge/system": correction,
        "judge/correction": correction,
        "judge/optimization": optimization,
        "skills/distill": {"max_words": 300, "untimed": False, "groups": [{"name": "memory-bound", "items": [
            {"task": TASK.id, "level": 1, "before": "1.64x", "after": "2.10x", "gain": "1.28x faster",
             **dict(zip(["bottleneck", "method", "plan", "expected"], OPTIMIZATION_FEEDBACK.fields.values()))}]}]},
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
    for name in ["coder/system", "coder/first_attempt", "coder/repair", "coder/optimize", "coder/follow_up",
                 "judge/system", "judge/correction", "judge/optimization", "judge/follow_up"]:  # fmt: skip
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
    assert "Timing: not measured (no GPU)" in lib.render("judge/optimization", **P.optimization_context(
        TASK, KERNEL, cpu, gpu=GPU, metrics=None))  # fmt: skip


def test_zero_shot_and_backends_render(lib):
    for backend in Backend:
        text = lib.render("coder/first_attempt", **P.first_attempt_context(TASK, example=None, gpu=None, backend=backend))
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
    del context["backend"]  # read only by the partial that coder/repair includes
    with pytest.raises(PromptTemplateError, match=r"coder/repair' \(agents/coder/_output_format\.j2 line \d+\): 'backend'"):
        lib.render("coder/repair", **context)
    with pytest.raises(PromptTemplateError, match="not found"):
        lib.render("coder/nonexistent")


def test_a_template_can_be_overridden_by_path(tmp_path):
    custom = tmp_path / "terse.j2"
    custom.write_text("{#- Context:\n  task  dict\n  backend  str\n-#}\nWrite ModelNew for {{ task.id }}.\n"
                      '{% include "coder/_output_format.j2" %}\n')  # fmt: skip
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
    shutil.copytree(P.DEFAULT_ROOT, root)
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
    assert timing == {"measured": True, "reference_ms": "0.0412", "candidate_ms": "0.0251", "speedup": "1.64",
                      "speedup_ci": "[1.6, 1.68]", "baseline": "eager", "note": ""}  # fmt: skip
    assert P.metrics_context(METRICS)["launch__grid_size"] == "1024"
    sheet = {"name": "NVIDIA H200", "l2_cache_bytes": 52428800, "uuid": None, "warnings": [], "clocks": [1, 2.5],
             "peaks": {"dram_bandwidth_gb_s": 4800.0, "fp32_tflops": 67.0}}  # fmt: skip
    assert P.gpu_context(sheet) == {"name": "NVIDIA H200", "l2_cache_bytes": "52428800 (50 MiB)", "clocks": "1, 2.5",
                                    "peaks.dram_bandwidth_gb_s": "4800", "peaks.fp32_tflops": "67"}  # fmt: skip
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
    assert extract_json(reply, CORRECTION_KEYS).data == {"critical_issue": "a", "why_it_matters": "b", "minimal_fix_hint": "c"}
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
    assert not found.ok and found.data["critical_issue"] == "it's the \"tail\"" and found.data["x"] is True
    assert "minimal_fix_hint" in found.reason  # None counts as missing
    assert extract_json("{critical_issue: 'a', why_it_matters: 'b', minimal_fix_hint: 'c'}", CORRECTION_KEYS).ok


def test_json_missing_keys_are_named():
    found = extract_json('{"critical_issue": "a", "why_it_matters": "  "}', CORRECTION_KEYS)
    assert not found.ok and found.data["critical_issue"] == "a"
    assert found.reason.endswith("why_it_matters, minimal_fix_hint")


def test_json_garbage_is_rejected():
    assert extract_json("No issues found, the kernel looks right.", CORRECTION_KEYS).reason == "the reply holds no JSON object"
    found = extract_json('{"critical_issue": "a" "why": }', CORRECTION_KEYS)
    assert not found.ok and "no valid JSON object" in found.reason and "line 1" in found.reason
    assert extract_json("", CORRECTION_KEYS).reason == "the reply is empty"
    for reply in ["{" * 1000, "}" * 10 + "{", '{"a": "' + "\\" * 5, "[" * 5000 + "]" * 5000, "{'a': '\n'}"]:
        assert isinstance(extract_json(reply, ["a"]).ok, bool)


def test_json_keys_are_matched_loosely():
    reply = '{"Bottleneck": "dram", "optimization method": "float4", "modification-plan": "p", "expected_effect": "2x"}'
    found = extract_json(reply, OPTIMIZATION_KEYS)
    assert found.ok and found.data == {"bottleneck": "dram", "optimisation_method": "float4",
                                       "modification_plan": "p", "expected_effect": "2x"}  # fmt: skip


def test_json_the_last_complete_object_wins():
    template = '{"critical_issue": "<issue>", "why_it_matters": "<why>", "minimal_fix_hint": "<fix>"}'
    reply = f"The format is {template}. My answer:\n```json\n{GOOD_JSON}\n```"
    assert extract_json(reply, CORRECTION_KEYS).data == CORRECTION_FEEDBACK.fields
    wrapped = json.dumps({"verdict": CORRECTION_FEEDBACK.fields})
    assert extract_json(wrapped, CORRECTION_KEYS).data == CORRECTION_FEEDBACK.fields
    partial_then_complete = '{"critical_issue": "a"} then {"critical_issue": "a", "why_it_matters": "b", "minimal_fix_hint": "c"}'
    assert extract_json(partial_then_complete, CORRECTION_KEYS).ok


# --------------------------------------------------------------------------- Coder


def test_coder_good_reply(lib):
    llm = FakeLLM(fenced(KERNEL))
    result = Coder(llm, lib).first_attempt(TASK, gpu=GPU, task_id=TASK.id, round=0)
    assert result.ok and result.source == KERNEL + "\n" and result.failure == ""
    assert result.mode is CoderMode.first_attempt and result.conversation.follow_ups == 0
    (messages, meta), = llm.calls
    assert [m["role"] for m in messages] == ["system", "user"] and result.messages == messages
    assert "elementwise" in messages[1]["content"] and REFERENCE in messages[1]["content"]
    assert meta == {"mode": "first_attempt", "task_id": TASK.id, "round": 0, "follow_up": 0}
    assert result.reply == fenced(KERNEL) and result.conversation.transcript()[-1]["content"] == fenced(KERNEL)


def test_coder_bad_then_good_uses_one_follow_up(lib):
    llm = FakeLLM("I would fuse the ReLU and the scale into one kernel.", fenced(KERNEL))
    result = Coder(llm, lib).repair(TASK, KERNEL, COMPILE_ERROR, feedback=CORRECTION_FEEDBACK)
    assert result.ok and result.source == KERNEL + "\n" and result.conversation.follow_ups == 1
    assert result.conversation.parse_errors[0].startswith("the reply has no code block") and result.conversation.parse_errors[1] == ""
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
        ("coder", "first_attempt", 0), ("coder", "first_attempt", 1), ("judge", "correction", 0)]  # fmt: skip
    assert all(r.meta["task_id"] == TASK.id and r.prompt_tokens > 0 for r in rows)
