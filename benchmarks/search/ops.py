"""The ``sim20`` suite's operations, as a table: each task's PyTorch reference and its kernels' arithmetic.

``make_pool.py`` writes the suite's task files and the simulator's pool from this table. An elementwise op gives its
reference (``torch``), the Triton expression of its output ``y`` in terms of the loaded inputs (``expr``) and a
wrong one (``wrong``, with why it is wrong). A row-wise op (over the last dimension) gives the reductions its kernels
make (``passes``: a name, ``sum`` or ``max``, the reduced expression, and what follows once it is reduced), then
either an elementwise output (``write``) or one value a row (``result``), and a wrong variant as a change of those
fields (``wrong``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Elementwise:
    """An elementwise op of one or two inputs of the same shape."""

    name: str
    doc: str
    torch: str
    expr: str
    wrong: str
    wrong_note: str
    inputs: tuple[str, ...] = ("x",)
    tanh: bool = False
    """The kernels need the ``_tanh`` helper (Triton has no stable tanh of its own in every version)."""


@dataclass(frozen=True)
class Pass:
    """One reduction over a row: ``name = reduce(expr)`` over the row, then ``finish`` (a statement, or "")."""

    name: str
    reduce: str
    expr: str
    finish: str = ""


@dataclass(frozen=True)
class RowWise:
    """A row-wise op over the last dimension: its reductions, then an elementwise ``write`` or one ``result`` a row."""

    name: str
    doc: str
    torch: str
    passes: tuple[Pass, ...]
    wrong: dict[str, object]
    wrong_note: str
    write: str = ""
    result: str = ""
    other: str = "0.0"
    """What a masked lane loads (the reductions' neutral value)."""


NEG_INF = '-float("inf")'

ELEMENTWISE = (
    Elementwise(
        "ReLU", "Elementwise ReLU", "torch.relu(x)", "tl.maximum(x, 0.0)", "tl.maximum(x, -1.0)", "clamps at -1, not 0"
    ),
    Elementwise(
        "LeakyReLU",
        "Elementwise LeakyReLU (negative slope 0.01)",
        "F.leaky_relu(x, negative_slope=0.01)",
        "tl.where(x > 0, x, 0.01 * x)",
        "tl.where(x > 0, x, 0.1 * x)",
        "a negative slope of 0.1, not 0.01",
    ),
    Elementwise(
        "GELUTanh",
        "Elementwise GELU, tanh approximation",
        'F.gelu(x, approximate="tanh")',
        "0.5 * x * (1.0 + _tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))",
        "0.5 * x * (1.0 + _tanh(0.7978845608028654 * x))",
        "drops the cubic term",
        tanh=True,
    ),
    Elementwise(
        "Sigmoid",
        "Elementwise sigmoid",
        "torch.sigmoid(x)",
        "1.0 / (1.0 + tl.exp(-x))",
        "1.0 / (1.0 + tl.exp(x))",
        "sigmoid(-x): the sign of the exponent flipped",
    ),
    Elementwise(
        "Tanh",
        "Elementwise tanh",
        "torch.tanh(x)",
        "_tanh(x)",
        "tl.minimum(tl.maximum(x, -1.0), 1.0)",
        "a hard clamp to [-1, 1], not tanh",
        tanh=True,
    ),
    Elementwise(
        "SiLU",
        "Elementwise SiLU (x * sigmoid(x))",
        "F.silu(x)",
        "x / (1.0 + tl.exp(-x))",
        "x / (1.0 + tl.exp(-1.702 * x))",
        "x * sigmoid(1.702 x): GELU's sigmoid approximation",
    ),
    Elementwise(
        "Softplus",
        "Elementwise softplus (beta 1, threshold 20)",
        "F.softplus(x)",
        "tl.maximum(x, 0.0) + tl.log(1.0 + tl.exp(-tl.abs(x)))",
        "tl.log(1.0 + tl.exp(-tl.abs(x)))",
        "forgets the max(x, 0) term",
    ),
    Elementwise(
        "HardSigmoid",
        "Elementwise hard sigmoid (clamp(x / 6 + 1/2, 0, 1))",
        "F.hardsigmoid(x)",
        "tl.minimum(tl.maximum(x / 6.0 + 0.5, 0.0), 1.0)",
        "tl.minimum(tl.maximum(0.2 * x + 0.5, 0.0), 1.0)",
        "Keras' slope of 0.2, not 1/6",
    ),
    Elementwise(
        "HardTanh",
        "Elementwise hard tanh (clamp to [-1, 1])",
        "F.hardtanh(x)",
        "tl.minimum(tl.maximum(x, -1.0), 1.0)",
        "tl.minimum(tl.maximum(x, 0.0), 1.0)",
        "clamps to [0, 1]",
    ),
    Elementwise(
        "ELU",
        "Elementwise ELU (alpha 1)",
        "F.elu(x)",
        "tl.where(x > 0, x, tl.exp(x) - 1.0)",
        "tl.where(x > 0, x, tl.exp(x))",
        "forgets the -1 of the negative side",
    ),
    Elementwise(
        "Abs",
        "Elementwise absolute value",
        "torch.abs(x)",
        "tl.abs(x)",
        "tl.where(x >= 0, x, -0.9 * x)",
        "scales the negative side by 0.9",
    ),
    Elementwise("Square", "Elementwise square", "x * x", "x * x", "x * tl.abs(x)", "keeps the sign"),
    Elementwise(
        "ScaledAdd",
        "Elementwise x + 0.5 * y of two tensors",
        "x + 0.5 * y",
        "x + 0.5 * y",
        "x + y",
        "forgets the scale of y",
        inputs=("x", "y"),
    ),
)
"""The elementwise tasks, in the suite's order."""

ROWWISE = (
    RowWise(
        "Softmax",
        "Softmax over the last dimension",
        "torch.softmax(x, dim=-1)",
        (Pass("m", "max", "x"), Pass("s", "sum", "tl.exp(x - m)")),
        {"write": "tl.exp(x - m)"},
        "never divides by the row's sum",
        write="tl.exp(x - m) / s",
        other=NEG_INF,
    ),
    RowWise(
        "LogSoftmax",
        "Log-softmax over the last dimension",
        "torch.log_softmax(x, dim=-1)",
        (Pass("m", "max", "x"), Pass("s", "sum", "tl.exp(x - m)")),
        {"write": "x - m"},
        "forgets the log of the row's sum",
        write="x - m - tl.log(s)",
        other=NEG_INF,
    ),
    RowWise(
        "RMSNorm",
        "RMS normalisation over the last dimension (eps 1e-6, no weight)",
        "x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)",
        (Pass("ss", "sum", "x * x", "r = 1.0 / tl.sqrt(ss / N + 1e-6)"),),
        {"passes": (Pass("ss", "sum", "x * x", "r = 1.0 / tl.sqrt(ss + 1e-6)"),)},
        "divides by the sum of squares, not their mean",
        write="x * r",
    ),
    RowWise(
        "LayerNorm",
        "Layer normalisation over the last dimension (eps 1e-5, no affine)",
        "F.layer_norm(x, (x.shape[-1],))",
        (
            Pass("mean", "sum", "x", "mean = mean / N"),
            Pass("var", "sum", "tl.where(mask, (x - mean) * (x - mean), 0.0)", "r = 1.0 / tl.sqrt(var / N + 1e-5)"),
        ),
        {"write": "x * r"},
        "never subtracts the mean from the output",
        write="(x - mean) * r",
    ),
    RowWise(
        "SumDim",
        "Sum over the last dimension",
        "torch.sum(x, dim=-1)",
        (Pass("s", "sum", "x"),),
        {"other": "1.0"},
        "masked lanes load 1.0, not 0.0 (wrong wherever the row is not a multiple of the block)",
        result="s",
    ),
    RowWise(
        "MeanDim",
        "Mean over the last dimension",
        "torch.mean(x, dim=-1)",
        (Pass("s", "sum", "x", "s = s / N"),),
        {"passes": (Pass("s", "sum", "x", "s = s / BLOCK"),)},
        "divides by the block, not the row's length",
        result="s",
    ),
    RowWise(
        "MaxDim",
        "Maximum over the last dimension",
        "torch.amax(x, dim=-1)",
        (Pass("m", "max", "x"),),
        {"passes": (Pass("m", "max", "tl.abs(x)"),)},
        "the largest magnitude, not the largest value",
        result="m",
        other=NEG_INF,
    ),
)
"""The row-wise tasks, after the elementwise ones."""
