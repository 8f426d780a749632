"""The build corpus: CUDA candidates in the styles LLM coders and public releases write them (not ours), generated
(``benchmarks/build_corpus_bench.py`` writes them into its work folder; nothing of it is kept in the tree).

    python benchmarks/build_corpus.py DIR     # writes DIR/<style>_<op>.py, to read them

Five operations (ReLU, the exact GELU, a scaled add, a row softmax, a sum over the middle dimension) in ten styles, and two that must fail:

  kernelbench   KernelBench's own example: ``#include <torch/extension.h>`` in the CUDA source, a declaration in
                ``cpp_sources``, ``functions=[...]``, built at import
  pybind        ``torch/extension.h`` in both sources and a ``PYBIND11_MODULE`` block, no ``functions``
  lazy_forward  the sources at module level, ``load_inline`` on the first ``forward`` call, stream and dtype
                dispatch through ``ATen/cuda/CUDAContext.h`` and ``AT_DISPATCH_FLOATING_TYPES``
  in_init       ``load_inline`` in ``ModelNew.__init__``, ``verbose=True`` and ``-O3 --use_fast_math``
  public_try    ``from torch.utils.cpp_extension import load_inline`` inside ``__init__``, the build in a ``try``
                whose handler re-raises, ``verbose=False``, ``-O3 --use_fast_math`` (issue 33's public release)
  aliased       ``import torch.utils.cpp_extension as ce``, ``ce.load_inline`` in ``__init__`` with the sources
                copied into the function's own constants and an f-string name
  per_instance  ``in_init`` with a name that changes per instance (``id(self)``): built at run time
  load_files    the sources written to ``tempfile.mkdtemp()`` in ``__init__`` and built with ``load``: at run time
  cupy_raw      the same kernel through ``cupy.RawKernel`` (NVRTC at its first launch), on torch's tensors
  triton_autotune  a Triton kernel under ``@triton.autotune`` (a compile per configuration at its first launch)
  fail_*        the binding names the ``__global__`` function (an undefined symbol when the module loads), a
                missing semicolon in the kernel
"""

from __future__ import annotations

from pathlib import Path

OPS = {
    # name: (task, element expression or row kernel kind)
    "relu": ("tiny/level1/1_ReLU", "v > 0.f ? v : 0.f"),
    "gelu": ("main/level1/1_GELU", "0.5f * v * (1.f + erff(v * 0.70710678118654752f))"),  # exact, as F.gelu
    "scale_add": ("tiny/level1/1_ReLU", "fmaxf(v * 1.0f + 0.0f, 0.f)"),
    "softmax": ("tiny/level1/2_Softmax", "softmax"),
    "row_sum": ("main/level1/2_SumReduceDim1", "sum"),
}

ELEMENTWISE = """
__global__ void {op}_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {{ float v = x[i]; y[i] = {expr}; }}
}}
"""
SOFTMAX = """
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    extern __shared__ float red[];
    const float* xr = x + (int64_t)r * cols;
    float m = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, xr[c]);
    red[threadIdx.x] = m; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]); __syncthreads(); }
    m = red[0]; __syncthreads();
    float sum = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += expf(xr[c] - m);
    red[threadIdx.x] = sum; __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s]; __syncthreads(); }
    sum = red[0];
    for (int c = threadIdx.x; c < cols; c += blockDim.x) y[(int64_t)r * cols + c] = expf(xr[c] - m) / sum;
}
"""
ROW_SUM = """
__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int batch, int reduce, int cols) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (int64_t)batch * cols) return;
    const float* p = x + (i / cols) * (int64_t)reduce * cols + i % cols;
    float s = 0.f;
    for (int r = 0; r < reduce; ++r) s += p[(int64_t)r * cols];
    y[i] = s;
}
"""


def kernel(op: str) -> str:
    expr = OPS[op][1]
    return SOFTMAX if expr == "softmax" else ROW_SUM if expr == "sum" else ELEMENTWISE.format(op=op, expr=expr)


def launcher(op: str, stream: bool) -> str:
    """The host function ``{op}_cuda``; ``stream``: launch on ATen's current stream (CUDAContext.h)."""
    s = ", 0, at::cuda::getCurrentCUDAStream()" if stream else ""
    if OPS[op][1] == "softmax":
        return (
            f"torch::Tensor softmax_cuda(torch::Tensor x) {{\n    auto y = torch::empty_like(x);\n"
            f"    int rows = x.size(0), cols = x.size(1);\n"
            f"    softmax_kernel<<<rows, 256, 256 * sizeof(float){s.replace(', 0', '')}>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);\n"
            f"    return y;\n}}\n"
        )
    if OPS[op][1] == "sum":  # (B, R, C) -> (B, C): the middle dimension summed, one thread per column
        return (
            f"torch::Tensor row_sum_cuda(torch::Tensor x) {{\n    int batch = x.size(0), reduce = x.size(1), cols = x.size(2);\n"
            f"    auto y = torch::empty({{batch, cols}}, x.options());\n    int64_t n = (int64_t)batch * cols;\n"
            f"    row_sum_kernel<<<(n + 255) / 256, 256{s}>>>(x.data_ptr<float>(), y.data_ptr<float>(), batch, reduce, cols);\n"
            f"    return y;\n}}\n"
        )
    return (
        f"torch::Tensor {op}_cuda(torch::Tensor x) {{\n    auto y = torch::empty_like(x);\n    int64_t n = x.numel();\n"
        f"    const int threads = 256;\n    const int64_t blocks = (n + threads - 1) / threads;\n"
        f"    {op}_kernel<<<blocks, threads{s}>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
        f"    return y;\n}}\n"
    )


HEADER = '''"""Build corpus, style {style}: {op}. Task {task}.{extra}"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
'''


def kernelbench(op: str) -> str:
    cuda = "#include <torch/extension.h>\n#include <cuda_runtime.h>\n" + kernel(op) + "\n" + launcher(op, False)
    return (
        HEADER.format(style="kernelbench", op=op, task=OPS[op][0], extra="")
        + f"\ncuda_source = r'''{cuda}'''\n\ncpp_source = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n"
        f'ext = load_inline(\n    name="{op}_ext",\n    cpp_sources=cpp_source,\n    cuda_sources=cuda_source,\n'
        f'    functions=["{op}_cuda"],\n    verbose=False,\n    extra_cflags=[""],\n    extra_ldflags=[""],\n)\n\n\n'
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n        self.ext = ext\n\n"
        f"    def forward(self, x):\n        return self.ext.{op}_cuda(x.contiguous())\n"
    )


def pybind(op: str) -> str:
    cuda = "#include <torch/extension.h>\n" + kernel(op) + "\n" + launcher(op, False)
    cpp = (
        f"#include <torch/extension.h>\ntorch::Tensor {op}_cuda(torch::Tensor x);\n\n"
        f'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n    m.def("{op}_cuda", &{op}_cuda, "{op} (CUDA)");\n}}\n'
    )
    return (
        HEADER.format(style="pybind", op=op, task=OPS[op][0], extra="")
        + f"\nCUDA_SRC = r'''{cuda}'''\n\nCPP_SRC = r'''{cpp}'''\n\n"
        f'{op}_module = load_inline(name="{op}_pybind", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],'
        f' extra_cuda_cflags=["-O3"], verbose=False)\n\n\n'
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n        return {op}_module.{op}_cuda(x.contiguous())\n"
    )


def lazy_forward(op: str) -> str:
    if OPS[op][1] in ("softmax", "sum"):  # row kernels: float only, on ATen's current stream
        cuda = (
            "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n"
            + kernel(op)
            + "\n"
            + launcher(op, True)
        )
        return _lazy(op, cuda)
    k = kernel(op).replace(
        "const float* __restrict__ x, float* __restrict__ y", "const scalar_t* __restrict__ x, scalar_t* __restrict__ y"
    )
    k = k.replace("__global__ void", "template <typename scalar_t>\n__global__ void").replace(
        "float v = x[i];", "float v = (float)x[i];"
    )
    launch = launcher(op, True).replace(
        f"{op}_kernel<<<", f'AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "{op}", [&] {{ {op}_kernel<scalar_t><<<'
    )
    launch = launch.replace(
        "x.data_ptr<float>(), y.data_ptr<float>()", "x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>()"
    )
    launch = launch.replace(");\n    return y;", "); });\n    return y;")
    return _lazy(op, "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n" + k + "\n" + launch)


def _lazy(op: str, cuda: str) -> str:
    return (
        HEADER.format(
            style="lazy_forward", op=op, task=OPS[op][0], extra=" The extension is built on the first forward call."
        )
        + f"\n{op.upper()}_CUDA = r'''{cuda}'''\n{op.upper()}_CPP = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n        self._ext = None\n\n"
        f"    def forward(self, x):\n        if self._ext is None:\n"
        f'            self._ext = load_inline(name="{op}_lazy", cpp_sources={op.upper()}_CPP, cuda_sources={op.upper()}_CUDA,\n'
        f'                                    functions=["{op}_cuda"], with_cuda=True)\n'
        f"        return self._ext.{op}_cuda(x.contiguous())\n"
    )


def in_init(op: str) -> str:
    cuda = (
        "#include <torch/extension.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n"
        + kernel(op)
        + "\n"
        + launcher(op, False)
    )
    return (
        HEADER.format(style="in_init", op=op, task=OPS[op][0], extra=" The extension is built in ModelNew.__init__.")
        + f'\nsource = """{cuda}"""\ncpp_src = "torch::Tensor {op}_cuda(torch::Tensor x);"\n\n\n'
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        f'        self.{op} = load_inline(\n            name="{op}_init",\n            cpp_sources=cpp_src,\n'
        f'            cuda_sources=source,\n            functions=["{op}_cuda"],\n            verbose=True,\n'
        f'            extra_cuda_cflags=["-O3", "--use_fast_math"],\n        )\n\n'
        f"    def forward(self, x):\n        return self.{op}.{op}_cuda(x.contiguous())\n"
    )


def public_try(op: str) -> str:
    """What issue 33 found in a public release: the import inside ``__init__``, the build in a ``try`` whose
    handler re-raises, ``verbose=False`` and ``-O3 --use_fast_math``."""
    cuda = "#include <torch/extension.h>\n#include <cuda_runtime.h>\n" + kernel(op) + "\n" + launcher(op, False)
    return (
        HEADER.format(
            style="public_try",
            op=op,
            task=OPS[op][0],
            extra=" load_inline imported and called inside __init__, in a try.",
        ).replace("from torch.utils.cpp_extension import load_inline\n", "")
        + f"\n{op}_cuda_source = r'''{cuda}'''\n{op}_cpp_source = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        f"        from torch.utils.cpp_extension import load_inline\n        try:\n"
        f'            self.ext = load_inline(name="{op}_public", cpp_sources={op}_cpp_source, cuda_sources={op}_cuda_source,\n'
        f'                                   functions=["{op}_cuda"], verbose=False,\n'
        f'                                   extra_cuda_cflags=["-O3", "--use_fast_math"])\n'
        f'        except Exception as exc:\n            raise RuntimeError(f"could not build the {op} kernel: {{exc}}")\n\n'
        f"    def forward(self, x):\n        return self.ext.{op}_cuda(x.contiguous())\n"
    )


def aliased(op: str) -> str:
    """The module under another name (``import torch.utils.cpp_extension as ce``), the sources copied into the
    function's own constants, the name an f-string of a module constant."""
    cuda = "#include <torch/extension.h>\n" + kernel(op) + "\n" + launcher(op, False)
    return (
        HEADER.format(style="aliased", op=op, task=OPS[op][0], extra=" cpp_extension imported as ce.").replace(
            "from torch.utils.cpp_extension import load_inline\n", "import torch.utils.cpp_extension as ce\n"
        )
        + f"\nVERSION = 2\nKERNEL = r'''{cuda}'''\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        f'        cuda_src = KERNEL\n        decl = "torch::Tensor {op}_cuda(torch::Tensor x);"\n'
        f'        self.mod = ce.load_inline(name=f"{op}_alias_v{{VERSION}}", cpp_sources=[decl], cuda_sources=[cuda_src],\n'
        f'                                  functions=["{op}_cuda"], extra_cuda_cflags=["-O3"])\n\n'
        f"    def forward(self, x):\n        return self.mod.{op}_cuda(x.contiguous())\n"
    )


def per_instance(op: str) -> str:
    """An extension name that changes per instance (``id(self)``): only run time knows it, so the build happens
    there and its seconds are counted as compile time."""
    return (
        in_init(op)
        .replace("style in_init", "style per_instance")
        .replace(" The extension is built in ModelNew.__init__.", " Its name changes per instance (id(self)).")
        .replace(f'name="{op}_init",', f'name=f"{op}_inst_{{id(self)}}",')
    )


def load_files(op: str) -> str:
    """Sources written to files at run time (``tempfile.mkdtemp()``) and built with ``load``: the paths are known
    only then, so the build happens at run time, counted as compile time."""
    cuda = "#include <torch/extension.h>\n" + kernel(op) + "\n" + launcher(op, False)
    cpp = (
        f"#include <torch/extension.h>\ntorch::Tensor {op}_cuda(torch::Tensor x);\n"
        f'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("{op}_cuda", &{op}_cuda); }}\n'
    )
    return (
        HEADER.format(
            style="load_files", op=op, task=OPS[op][0], extra=" Sources written to files, then load()."
        ).replace(
            "from torch.utils.cpp_extension import load_inline\n",
            "import os\nimport tempfile\nfrom torch.utils.cpp_extension import load\n",
        )
        + f"\nCU = r'''{cuda}'''\nCPP = r'''{cpp}'''\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        f'        folder = tempfile.mkdtemp(prefix="{op}_")\n        paths = []\n'
        f'        for file_name, text in (("{op}.cu", CU), ("{op}.cpp", CPP)):\n'
        f'            path = os.path.join(folder, file_name)\n            with open(path, "w") as f:\n'
        f"                f.write(text)\n            paths.append(path)\n"
        f'        self.ext = load(name="{op}_files", sources=paths, extra_cuda_cflags=["-O3"], build_directory=folder)\n\n'
        f"    def forward(self, x):\n        return self.ext.{op}_cuda(x.contiguous())\n"
    )


def cupy_raw(op: str) -> str:
    """The same CUDA kernel through ``cupy.RawKernel`` (NVRTC at the first launch), on torch's tensors."""
    name = f"{op}_kernel"
    launch = (
        (
            "rows, cols = x.shape\n        y = torch.empty_like(x)\n"
            "        self.kernel((rows,), (256,), (cp.asarray(x), cp.asarray(y), cp.int32(rows), cp.int32(cols)),"
            " shared_mem=256 * 4)\n"
        )
        if OPS[op][1] == "softmax"
        else (
            "batch, reduce, cols = x.shape\n        y = torch.empty((batch, cols), device=x.device, dtype=x.dtype)\n"
            "        self.kernel(((batch * cols + 255) // 256,), (256,), (cp.asarray(x), cp.asarray(y), cp.int32(batch), "
            "cp.int32(reduce), cp.int32(cols)))\n"
        )
        if OPS[op][1] == "sum"
        else (
            "y = torch.empty_like(x)\n        n = x.numel()\n"
            "        self.kernel(((n + 255) // 256,), (256,), (cp.asarray(x), cp.asarray(y), cp.int64(n)))\n"
        )
    )
    return (
        HEADER.format(
            style="cupy_raw", op=op, task=OPS[op][0], extra=" cupy.RawKernel, compiled at its first launch."
        ).replace("from torch.utils.cpp_extension import load_inline\n", "import cupy as cp\n")
        + f"\nKERNEL = r'''\nextern \"C\" {kernel(op).replace('int64_t', 'long long').replace('-INFINITY', '-__int_as_float(0x7f800000)')}'''\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
        f'        self.kernel = cp.RawKernel(KERNEL, "{name}")\n\n'
        f"    def forward(self, x):\n        x = x.contiguous()\n        {launch}"
        f"        return y\n"
    )


TRITON_BODY = {
    "relu": "tl.maximum(v, 0.0)",
    "gelu": "0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))",
    "scale_add": "tl.maximum(v * 1.0 + 0.0, 0.0)",
}


def triton_autotune(op: str) -> str:
    """A Triton kernel under ``@triton.autotune`` over block sizes (compiled per configuration at its first
    launch): elementwise, or one row per program for the row operations."""
    head = HEADER.format(
        style="triton_autotune", op=op, task=OPS[op][0], extra=" @triton.autotune over block sizes."
    ).replace("from torch.utils.cpp_extension import load_inline\n", "import triton\nimport triton.language as tl\n")
    if op in TRITON_BODY:
        return (
            head
            + "\n\n@triton.autotune(configs=[triton.Config({'BLOCK': b}, num_warps=w) for b, w in ((256, 2), (1024, 4), (4096, 8))],\n"
            "                 key=['n'])\n@triton.jit\n"
            f"def {op}_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            f"    mask = offs < n\n    v = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
            f"    tl.store(y_ptr + offs, {TRITON_BODY[op]}, mask=mask)\n\n\n"
            f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n\n"
            f"    def forward(self, x):\n        x = x.contiguous()\n        y = torch.empty_like(x)\n        n = x.numel()\n"
            f"        {op}_kernel[lambda meta: (triton.cdiv(n, meta['BLOCK']),)](x, y, n)\n        return y\n"
        )
    if op == "row_sum":  # (B, R, C) -> (B, C): a block of columns per program, the middle dimension summed in a loop
        return (
            head
            + "\n\n@triton.autotune(configs=[triton.Config({'BLOCK': b}, num_warps=w) for b, w in ((128, 4), (256, 4), (512, 8))],\n"
            "                 key=['cols'])\n@triton.jit\n"
            "def row_sum_kernel(x_ptr, y_ptr, reduce, cols, BLOCK: tl.constexpr):\n    b = tl.program_id(0)\n"
            "    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)\n    mask = offs < cols\n"
            "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n    base = x_ptr + b.to(tl.int64) * reduce * cols\n"
            "    for r in range(0, reduce):\n        acc += tl.load(base + r * cols + offs, mask=mask, other=0.0)\n"
            "    tl.store(y_ptr + b * cols + offs, acc, mask=mask)\n\n\n"
            "class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n\n"
            "    def forward(self, x):\n        x = x.contiguous()\n        batch, reduce, cols = x.shape\n"
            "        y = torch.empty((batch, cols), device=x.device, dtype=x.dtype)\n"
            "        row_sum_kernel[lambda meta: (batch, triton.cdiv(cols, meta['BLOCK']))](x, y, reduce, cols)\n        return y\n"
        )
    reduce = "m = tl.max(v, axis=0)\n    e = tl.exp(v - m)\n    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)"
    other = "-float('inf')"
    out = "torch.empty_like(x)"
    return (
        head
        + "\n\n@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (4, 8)], key=['cols'])\n@triton.jit\n"
        f"def {op}_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):\n    row = tl.program_id(0)\n    offs = tl.arange(0, BLOCK)\n"
        f"    mask = offs < cols\n    v = tl.load(x_ptr + row * cols + offs, mask=mask, other={other})\n    {reduce}\n\n\n"
        f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n        x = x.contiguous()\n        rows, cols = x.shape\n        y = {out}\n"
        f"        {op}_kernel[(rows,)](x, y, cols, BLOCK=triton.next_power_of_2(cols))\n        return y\n"
    )


STYLES = (
    "kernelbench",
    "pybind",
    "lazy_forward",
    "in_init",
    "public_try",
    "aliased",
    "per_instance",
    "load_files",
    "cupy_raw",
    "triton_autotune",
)
"""Every style, in the corpus's order."""
AHEAD_STYLES = ("lazy_forward", "in_init", "public_try", "aliased")
"""Styles whose deferred call is known at import (built ahead); ``per_instance`` and ``load_files`` build at run time."""


def failing() -> dict[str, str]:
    bind_kernel = (
        kernelbench("relu")
        .replace('functions=["relu_cuda"]', 'functions=["relu_kernel"]')
        .replace(
            'cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"',
            'cpp_source = "torch::Tensor relu_kernel(torch::Tensor x);"',
        )
        .replace(
            "style kernelbench: relu.",
            "style fail: the binding names the __global__ function (an undefined symbol at load).",
        )
    )
    typo = (
        kernelbench("gelu")
        .replace("float v = x[i];", "float v = x[i]")
        .replace("style kernelbench: gelu.", "style fail: a missing semicolon in the kernel.")
    )
    return {"fail_bind_kernel": bind_kernel, "fail_typo": typo}


def write_corpus(dest: Path) -> list[Path]:
    """Write the 52 candidates into ``dest`` (made if missing); their paths, sorted."""
    dest.mkdir(parents=True, exist_ok=True)
    texts = {f"{style}_{op}": globals()[style](op) for style in STYLES for op in OPS}
    texts.update(failing())
    for name, text in texts.items():
        (dest / f"{name}.py").write_text(text)
    return sorted(dest / f"{name}.py" for name in texts)


if __name__ == "__main__":
    import sys

    written = write_corpus(Path(sys.argv[1] if len(sys.argv) > 1 else "build_corpus"))
    print(f"{len(written)} candidates in {written[0].parent}")
