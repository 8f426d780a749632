"""A small campaign under the CudaForge authors' harness whose kernels our protocol judges differently (issue 35).

    python benchmarks/authors_contrast.py RUN_DIR [cudaforge run overrides ...]

Runs ``cudaforge run suite=main eval=cudaforge_authors`` over three tasks of the main suite, one round each, with both
agents answered by the scripted model ``scripted/contrast`` through the real litellm path (no provider, $0). The
Coder's kernel for each task is written the way models write them, and each meets one difference between the
authors' harness and ours:

- ``level2/1_LinearGELUScale``: the linear layer's parameters renamed (``w``, ``b``) and initialised by the kernel's
  own code. The authors' aligner copies the reference's weights onto them by shape, so the kernel is correct there;
  ours copies by name and shape only, so its own random weights stay and its output is wrong.
- ``level1/1_GELU``: the output kept per input shape and returned again on every later call. The authors' harness
  checks one input set and times the same inputs, so the kept output is right there; ours draws fresh inputs for
  every timed call and catches the stale output.
- ``level1/3_Softmax``: an honest Triton softmax (``benchmarks/candidates/triton_softmax.py``), the control.

Then ``cudaforge rescore RUN_DIR eval=default`` and ``cudaforge report RUN_DIR RESCORE_DIR`` show, per kernel, the
verdict under each protocol and the check of ours that changed it (benchmarks/results/2026-12-04_h200/ (call13)).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("WANDB_MODE", "disabled")

from campaign_main import reply  # noqa: E402  (the Judge's fixed answers, the prompt's task)

MODEL = "scripted/contrast"
TASKS = ("level1/1_GELU", "level1/3_Softmax", "level2/1_LinearGELUScale")

GELU_EPILOGUE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y * scale, mask=mask)


def gelu_scale(x, scale):
    x = x.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    gelu_scale_kernel[(triton.cdiv(n, 4096),)](x, out, n, scale, BLOCK=4096, num_warps=8)
    return out
"""

KERNELS = {
    # parameters of its own names and its own initialisation: the authors' aligner maps the reference's onto them
    "level2/1_LinearGELUScale": GELU_EPILOGUE
    + """

class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.w = nn.Parameter(torch.randn(out_features, in_features) * in_features ** -0.5)
        self.b = nn.Parameter(torch.zeros(out_features))
        self.scaling_factor = float(scaling_factor)

    def forward(self, x):
        return gelu_scale(torch.addmm(self.b, x, self.w.t()), self.scaling_factor)
""",
    # the output kept per input shape: right for the one input set the authors' harness checks and times
    "level1/1_GELU": GELU_EPILOGUE
    + """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._kept = {}

    def forward(self, x):
        key = (tuple(x.shape), x.dtype, x.device)
        if key not in self._kept:
            self._kept[key] = gelu_scale(x, 1.0)
        return self._kept[key]
""",
    "level1/3_Softmax": (HERE / "candidates" / "triton_softmax.py").read_text(),
}


def coder_reply(task_id: str) -> str:
    """The Coder's kernel for a task of the campaign (``main/level1/1_GELU``...)."""
    return f"Here is the kernel.\n```python\n{KERNELS[task_id.split('/', 1)[1]]}```"


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-") or "=" in argv[0]:
        sys.exit(__doc__)
    from cudaforge.cli import main as cudaforge
    from cudaforge.llm.scripted import install_script

    install_script("contrast", lambda messages: reply(messages, coder=coder_reply))
    names = "[" + ",".join(t.split("_", 1)[1] for t in TASKS) + "]"
    return cudaforge(
        [
            "run",
            "suite=main",
            f"suite.names={names}",
            "eval=cudaforge_authors",
            f"coder.model={MODEL}",
            f"judge.model={MODEL}",
            "coder.input_cost_per_token=0",
            "coder.output_cost_per_token=0",
            "judge.input_cost_per_token=0",
            "judge.output_cost_per_token=0",
            "tracker=disabled",
            "strategy.max_rounds=1",
            "profile.enabled=false",
            f"hydra.run.dir={argv[0]}",
            *argv[1:],
        ]
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
