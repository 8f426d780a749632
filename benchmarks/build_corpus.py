"""The build corpus: CUDA candidates in the styles LLM coders and public releases write them (not ours), generated
(``benchmarks/build_corpus_bench.py`` writes them into its work folder; nothing of it is kept in the tree).

    python benchmarks/build_corpus.py DIR     # writes DIR/<style>_<op>.py, to read them

Five operations (ReLU, GELU, a scaled add, a row softmax, a row sum) in four styles, and two that must fail:

  kernelbench   KernelBench's own example: ``#include <torch/extension.h>`` in the CUDA source, a declaration in
                ``cpp_sources``, ``functions=[...]``, built at import
  pybind        ``torch/extension.h`` in both sources and a ``PYBIND11_MODULE`` block, no ``functions``
  lazy_forward  the sources at module level, ``load_inline`` on the first ``forward`` call, stream and dtype
                dispatch through ``ATen/cuda/CUDAContext.h`` and ``AT_DISPATCH_FLOATING_TYPES``
  in_init       ``load_inline`` in ``ModelNew.__init__``, ``verbose=True`` and ``-O3 --use_fast_math``
  fail_*        the binding names the ``__global__`` function (an undefined symbol when the module loads), a
                missing semicolon in the kernel
"""

from __future__ import annotations

from pathlib import Path

OPS = {
    # name: (task, element expression or row kernel kind)
    "relu": ("tiny/level1/1_ReLU", "v > 0.f ? v : 0.f"),
    "gelu": ("main/level1/1_GELU", "0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)))"),
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
__global__ void row_sum_kernel(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int r = blockIdx.x;
    if (r >= rows) return;
    extern __shared__ float red[];
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += x[(int64_t)r * cols + c];
    red[threadIdx.x] = s; __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) { if (threadIdx.x < k) red[threadIdx.x] += red[threadIdx.x + k]; __syncthreads(); }
    if (threadIdx.x == 0) y[r] = red[0];
}
"""


def kernel(op: str) -> str:
    expr = OPS[op][1]
    return SOFTMAX if expr == "softmax" else ROW_SUM if expr == "sum" else ELEMENTWISE.format(op=op, expr=expr)


def launcher(op: str, stream: bool) -> str:
    """The host function ``{op}_cuda``; ``stream``: launch on ATen's current stream (CUDAContext.h)."""
    s = ", 0, at::cuda::getCurrentCUDAStream()" if stream else ""
    if OPS[op][1] == "softmax":
        return (f"torch::Tensor softmax_cuda(torch::Tensor x) {{\n    auto y = torch::empty_like(x);\n"
                f"    int rows = x.size(0), cols = x.size(1);\n"
                f"    softmax_kernel<<<rows, 256, 256 * sizeof(float){s.replace(', 0', '')}>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);\n"
                f"    return y;\n}}\n")
    if OPS[op][1] == "sum":
        return (f"torch::Tensor row_sum_cuda(torch::Tensor x) {{\n    int rows = x.size(0), cols = x.size(1);\n"
                f"    auto y = torch::empty({{rows, 1}}, x.options());\n"
                f"    row_sum_kernel<<<rows, 256, 256 * sizeof(float){s.replace(', 0', '')}>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);\n"
                f"    return y;\n}}\n")
    return (f"torch::Tensor {op}_cuda(torch::Tensor x) {{\n    auto y = torch::empty_like(x);\n    int64_t n = x.numel();\n"
            f"    const int threads = 256;\n    const int64_t blocks = (n + threads - 1) / threads;\n"
            f"    {op}_kernel<<<blocks, threads{s}>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);\n"
            f"    return y;\n}}\n")


HEADER = '''"""Build corpus, style {style}: {op}. Task {task}.{extra}"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
'''


def kernelbench(op: str) -> str:
    cuda = "#include <torch/extension.h>\n#include <cuda_runtime.h>\n" + kernel(op) + "\n" + launcher(op, False)
    return (HEADER.format(style="kernelbench", op=op, task=OPS[op][0], extra="") +
            f"\ncuda_source = r'''{cuda}'''\n\ncpp_source = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n"
            f"ext = load_inline(\n    name=\"{op}_ext\",\n    cpp_sources=cpp_source,\n    cuda_sources=cuda_source,\n"
            f"    functions=[\"{op}_cuda\"],\n    verbose=False,\n    extra_cflags=[\"\"],\n    extra_ldflags=[\"\"],\n)\n\n\n"
            f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n        self.ext = ext\n\n"
            f"    def forward(self, x):\n        return self.ext.{op}_cuda(x.contiguous())\n")


def pybind(op: str) -> str:
    cuda = "#include <torch/extension.h>\n" + kernel(op) + "\n" + launcher(op, False)
    cpp = (f"#include <torch/extension.h>\ntorch::Tensor {op}_cuda(torch::Tensor x);\n\n"
           f"PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n    m.def(\"{op}_cuda\", &{op}_cuda, \"{op} (CUDA)\");\n}}\n")
    return (HEADER.format(style="pybind", op=op, task=OPS[op][0], extra="") +
            f"\nCUDA_SRC = r'''{cuda}'''\n\nCPP_SRC = r'''{cpp}'''\n\n"
            f"{op}_module = load_inline(name=\"{op}_pybind\", cpp_sources=[CPP_SRC], cuda_sources=[CUDA_SRC],"
            f" extra_cuda_cflags=[\"-O3\"], verbose=False)\n\n\n"
            f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n\n"
            f"    def forward(self, x):\n        return {op}_module.{op}_cuda(x.contiguous())\n")


def lazy_forward(op: str) -> str:
    if OPS[op][1] in ("softmax", "sum"):  # row kernels: float only, on ATen's current stream
        cuda = "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n" + kernel(op) + "\n" + launcher(op, True)
        return _lazy(op, cuda)
    k = kernel(op).replace("const float* __restrict__ x, float* __restrict__ y", "const scalar_t* __restrict__ x, scalar_t* __restrict__ y")
    k = k.replace("__global__ void", "template <typename scalar_t>\n__global__ void").replace("float v = x[i];", "float v = (float)x[i];")
    launch = launcher(op, True).replace(f"{op}_kernel<<<", f"AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"{op}\", [&] {{ {op}_kernel<scalar_t><<<")
    launch = launch.replace("x.data_ptr<float>(), y.data_ptr<float>()", "x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>()")
    launch = launch.replace(");\n    return y;", "); });\n    return y;")
    return _lazy(op, "#include <torch/extension.h>\n#include <ATen/cuda/CUDAContext.h>\n" + k + "\n" + launch)


def _lazy(op: str, cuda: str) -> str:
    return (HEADER.format(style="lazy_forward", op=op, task=OPS[op][0],
                          extra=" The extension is built on the first forward call.") +
            f"\n{op.upper()}_CUDA = r'''{cuda}'''\n{op.upper()}_CPP = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n\n"
            f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n        self._ext = None\n\n"
            f"    def forward(self, x):\n        if self._ext is None:\n"
            f"            self._ext = load_inline(name=\"{op}_lazy\", cpp_sources={op.upper()}_CPP, cuda_sources={op.upper()}_CUDA,\n"
            f"                                    functions=[\"{op}_cuda\"], with_cuda=True)\n"
            f"        return self._ext.{op}_cuda(x.contiguous())\n")


def in_init(op: str) -> str:
    cuda = "#include <torch/extension.h>\n#include <cuda.h>\n#include <cuda_runtime.h>\n" + kernel(op) + "\n" + launcher(op, False)
    return (HEADER.format(style="in_init", op=op, task=OPS[op][0], extra=" The extension is built in ModelNew.__init__.") +
            f"\nsource = \"\"\"{cuda}\"\"\"\ncpp_src = \"torch::Tensor {op}_cuda(torch::Tensor x);\"\n\n\n"
            f"class ModelNew(nn.Module):\n    def __init__(self, *args):\n        super().__init__()\n"
            f"        self.{op} = load_inline(\n            name=\"{op}_init\",\n            cpp_sources=cpp_src,\n"
            f"            cuda_sources=source,\n            functions=[\"{op}_cuda\"],\n            verbose=True,\n"
            f"            extra_cuda_cflags=[\"-O3\", \"--use_fast_math\"],\n        )\n\n"
            f"    def forward(self, x):\n        return self.{op}.{op}_cuda(x.contiguous())\n")


def failing() -> dict[str, str]:
    bind_kernel = kernelbench("relu").replace('functions=["relu_cuda"]', 'functions=["relu_kernel"]').replace(
        'cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"',
        'cpp_source = "torch::Tensor relu_kernel(torch::Tensor x);"').replace(
        "style kernelbench: relu.", "style fail: the binding names the __global__ function (an undefined symbol at load).")
    typo = kernelbench("gelu").replace("float v = x[i];", "float v = x[i]").replace(
        "style kernelbench: gelu.", "style fail: a missing semicolon in the kernel.")
    return {"fail_bind_kernel": bind_kernel, "fail_typo": typo}


def write_corpus(dest: Path) -> list[Path]:
    """Write the 22 candidates into ``dest`` (made if missing); their paths, sorted."""
    dest.mkdir(parents=True, exist_ok=True)
    texts = {f"{style.__name__}_{op}": style(op) for style in (kernelbench, pybind, lazy_forward, in_init) for op in OPS}
    texts.update(failing())
    for name, text in texts.items():
        (dest / f"{name}.py").write_text(text)
    return sorted(dest / f"{name}.py" for name in texts)


if __name__ == "__main__":
    import sys

    written = write_corpus(Path(sys.argv[1] if len(sys.argv) > 1 else "build_corpus"))
    print(f"{len(written)} candidates in {written[0].parent}")
