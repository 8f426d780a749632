"""Static guards: what a candidate's source says about how it computes, read from its AST.

Nothing here runs the candidate or imports torch; the parent and the worker both call
:func:`static_findings`. Code under ``if __name__ == "__main__":`` never runs in an evaluation and
is ignored. Names are resolved through the candidate's imports (``import torch.nn.functional as
F``, ``from torch import relu``, ``S = torch.cuda.Stream``), so aliases do not hide a call.

What "the code ModelNew runs" means here: ``ModelNew.forward`` and everything it refers to,
transitively: its class's (and candidate-defined bases') methods called through ``self``, the
module's functions and classes it names (an ``autograd.Function``'s methods included), and what
``__init__`` stored on ``self``. ``__init__`` itself is not compute: weights may be made there with
torch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from cudaforge import languages, pyast
from cudaforge.eval.guards.policy import REPORT, Policies

# --------------------------------------------------------------------------- vocabularies

KERNEL_DECORATORS = languages.kernel_decorators()
"""Last names of decorators that make a function a GPU kernel (triton.jit, numba.cuda.jit, cute.kernel ...): the
registry's (``cudaforge.languages``)."""

KERNEL_BUILDERS = languages.kernel_builders()
"""Last names of calls that build kernels from source text (plus ``torch.utils.cpp_extension.load``): the
registry's."""

ATEN_NAMESPACES = {"aten", "prims", "quantized", "_quantized", "rngprims", "higher_order", "inductor", "_c10d_functional"}
"""``torch.ops`` namespaces that are torch's own (any other namespace is a custom op)."""

TORCH_LAYOUT = {
    "empty", "empty_like", "empty_strided", "empty_permuted", "zeros", "zeros_like", "ones", "ones_like", "full",
    "full_like", "arange", "tensor", "as_tensor", "asarray", "from_numpy", "as_strided", "is_tensor",
    "is_floating_point", "is_complex", "numel", "broadcast_shapes", "get_default_dtype", "no_grad",
    "inference_mode", "enable_grad", "set_grad_enabled", "is_grad_enabled", "manual_seed", "Size", "device",
    "dtype", "finfo", "iinfo", "result_type", "promote_types", "can_cast", "cat", "concat", "concatenate", "stack",
    "chunk", "split", "tensor_split", "narrow", "reshape", "flatten", "unflatten", "unsqueeze", "squeeze",
    "permute", "transpose", "swapaxes", "t", "movedim", "moveaxis", "view_as_real", "view_as_complex",
    "broadcast_to", "unbind", "select", "atleast_1d", "atleast_2d", "atleast_3d", "clone", "detach", "Tensor",
    "Generator", "get_device", "float32", "float16", "bfloat16", "float64", "int32", "int64", "bool", "uint8",
}  # fmt: skip
"""``torch.<name>`` calls that allocate, view, reshape or copy: allowed under ``torch_ops=strict``."""

TORCH_NEUTRAL_PREFIXES = (
    "cuda.", "utils.", "autograd.", "library.", "backends.", "_C.", "testing.", "profiler.", "version", "nn.init.",
    "nn.Parameter", "nn.Module", "nn.ModuleList", "nn.ModuleDict", "nn.ParameterList", "nn.ParameterDict",
    "nn.parameter.", "overrides.", "types.", "jit.annotations", "_assert", "amp.",
)  # fmt: skip
"""``torch.`` prefixes that are neither compute nor kernels (other guards look at some of them)."""

TORCH_COMPILERS = ("compile", "jit.script", "jit.trace", "_dynamo", "_inductor", "export")
"""torch's compilers: their kernels are torch's, not the candidate's."""

TENSOR_COMPUTE_METHODS = {
    "abs", "abs_", "acos", "add", "add_", "addbmm", "addcdiv", "addcmul", "addmm", "addmv", "all", "amax", "amin",
    "any", "argmax", "argmin", "argsort", "asin", "atan", "atan2", "baddbmm", "bmm", "ceil", "clamp", "clamp_",
    "clamp_max", "clamp_min", "clamp_min_", "clip", "clip_", "cos", "cosh", "cummax", "cumprod", "cumsum", "div",
    "div_", "dot", "eq", "erf", "erfinv", "exp", "exp_", "exp2", "expm1", "floor", "floor_divide", "fmod", "frac",
    "gather", "ge", "gelu", "gt", "hardtanh", "index_add", "index_add_", "index_fill", "index_put", "index_select",
    "le", "lerp", "log", "log10", "log1p", "log2", "log_softmax", "logaddexp", "logcumsumexp", "logsumexp", "lt",
    "masked_fill", "masked_fill_", "masked_scatter", "masked_select", "matmul", "max", "maximum", "mean", "median",
    "min", "minimum", "mm", "mul", "mul_", "multiply", "mv", "nan_to_num", "nanmean", "nansum", "ne", "neg",
    "neg_", "norm", "outer", "pow", "pow_", "prod", "reciprocal", "relu", "relu_", "remainder", "repeat",
    "repeat_interleave", "roll", "round", "rsqrt", "scatter", "scatter_", "scatter_add", "scatter_add_",
    "scatter_reduce", "sigmoid", "sigmoid_", "sign", "silu", "sin", "sinh", "softmax", "sort", "sqrt", "sqrt_",
    "square", "std", "sub", "sub_", "sum", "tanh", "tanh_", "topk", "trace", "tril", "triu", "true_divide",
    "trunc", "var", "where", "xlogy", "logical_and", "logical_or", "logical_not", "flip", "kthvalue", "cross",
}  # fmt: skip
"""Tensor methods that compute (views, casts, copies and fills are not here)."""

CONCURRENCY_MODULES = ("threading", "_thread", "multiprocessing", "concurrent", "asyncio", "subprocess", "sched")
CONCURRENCY_NAMES = (
    "os.fork", "os.forkpty", "os.system", "os.popen", "os.spawn", "os.exec", "os.posix_spawn", "pty.spawn",
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
    "torch.cuda.streams", "torch.Stream", "torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed",
    "torch.cuda.graph_pool_handle", "cupy.cuda.Stream", "cupy.cuda.ExternalStream", "cupy.cuda.graph",
    "numba.cuda.stream", "numba.cuda.external_stream",
)  # fmt: skip
"""Qualified-name prefixes of threads, processes, streams and graphs."""

CUDA_CONCURRENCY = re.compile(
    r"\b(cudaStreamCreate\w*|cuStreamCreate\w*|getStreamFromPool|getStreamFromExternal|cudaGraph(?:Create|Launch|"
    r"Instantiate|Add)\w*|cudaStreamBeginCapture\w*|cudaStreamPerThread|cudaStreamNonBlocking|pthread_create|"
    r"cudaLaunchHostFunc|cudaStreamAddCallback)\b|std::(?:j?thread|async)\b"
)
CUDA_PATCH = re.compile(r"\bTORCH_LIBRARY_IMPL\s*\(\s*aten\b|\bTORCH_LIBRARY_FRAGMENT\s*\(\s*aten\b")
CUDA_IO = re.compile(r"\b(fopen|getenv|socket|popen|system)\s*\(|\b(?:std::)?[io]?fstream\b")

GLOBAL_STATE_CALLS = (
    "torch.nn.modules.module.register_module_", "torch.overrides.TorchFunctionMode", "torch.utils._python_dispatch",
    "torch._C._set_torch_function_mode", "torch._C._push_on_torch", "torch.set_default_dtype", "torch.set_default_device", "torch.set_default_tensor_type",
    "torch.set_float32_matmul_precision", "torch.set_flush_denormal", "torch.use_deterministic_algorithms",
    "torch.set_num_threads", "torch.set_num_interop_threads", "torch.cuda.set_per_process",
    "torch.cuda.memory._set_allocator", "torch.cuda.memory.change_current_allocator", "torch.cuda.set_sync_debug",
    "torch._C._set", "unittest.mock", "mock.patch",
)  # fmt: skip
"""Calls that change torch's (or the process's) global behaviour for the reference too: global module hooks,
torch-function and dispatch modes, aten kernels registered over, default dtypes and devices, backend flags."""
BACKEND_SETTERS = ("enable_", "set_", "allow_", "flags", "sdp_kernel", "preferred_")
"""``torch.backends.*`` calls whose last name starts so: they switch a backend for the whole process."""

NETWORK_MODULES = ("socket", "ssl", "urllib", "http", "requests", "httpx", "aiohttp", "ftplib", "smtplib",
                   "telnetlib", "urllib3", "websocket", "websockets", "paramiko", "xmlrpc", "grpc")  # fmt: skip
FILE_READS = {"os.listdir", "os.scandir", "os.walk", "os.read", "pickle.load", "torch.load", "numpy.load",
              "numpy.fromfile", "json.load", "io.FileIO", "os.getenv", "os.environ.get"}  # fmt: skip
FILE_READ_MODULES = ("glob.", "shutil.")
INTROSPECTION_MODULES = ("gc", "inspect", "ctypes", "importlib", "builtins", "code", "codeop", "marshal", "dis",
                         "cudaforge", "__main__", "cudaforge_reference")  # fmt: skip
INTROSPECTION_NAMES = ("sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys._current_frames",
                       "sys.meta_path", "sys.path_hooks", "sys.addaudithook")  # fmt: skip
INTROSPECTION_BUILTINS = {"eval", "exec", "compile", "__import__", "globals", "locals", "vars", "breakpoint"}
INTROSPECTION_ATTRS = {"__globals__", "__code__", "__closure__", "__subclasses__", "__builtins__", "f_back",
                       "f_globals", "f_locals", "f_code", "gi_frame", "tb_frame", "cr_frame"}  # fmt: skip

MAX_LISTED = 6
"""At most this many places are listed in one finding's evidence."""


# --------------------------------------------------------------------------- the candidate's module


def _is_main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
        return False
    parts = [node.test.left, *node.test.comparators]
    names = [p for p in parts if isinstance(p, ast.Name) and p.id == "__name__"]
    mains = [p for p in parts if isinstance(p, ast.Constant) and p.value == "__main__"]
    return bool(names and mains)


def _top_level(body: list[ast.stmt]):
    """Top-level statements, descending into if/try/with blocks (not into functions or classes)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.With, ast.Try)) or type(node).__name__ == "TryStar":
            for block in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, block, []) or [])
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def _listed(items: list[str]) -> str:
    unique = list(dict.fromkeys(items))
    shown = ", ".join(unique[:MAX_LISTED])
    return shown + (f" and {len(unique) - MAX_LISTED} more" if len(unique) > MAX_LISTED else "")


def _strip_c_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _looks_like_c(text: str) -> bool:
    return any(k in text for k in ("#include", "__global__", "torch::", "extern \"C\"", "<<<", "__device__"))


@dataclass
class _Module:
    """The candidate's AST (without its ``__main__`` block) and what its names mean."""

    tree: ast.Module
    aliases: dict[str, str] = field(default_factory=dict)
    """Local name -> qualified name (``F`` -> ``torch.nn.functional``, ``S`` -> ``torch.cuda.Stream``)."""
    self_aliases: dict[str, str] = field(default_factory=dict)
    """``self.<attr>`` -> qualified name, where some method assigned it one."""
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    kernels: set[str] = field(default_factory=set)
    """Functions decorated as GPU kernels (``@triton.jit`` ...)."""
    extensions: set[str] = field(default_factory=set)
    """Names bound to built kernels or extensions (load_inline results, RawKernels, kernels' aliases)."""
    self_extensions: set[str] = field(default_factory=set)
    """``self.<attr>`` names bound to built kernels or extensions."""
    self_refs: dict[str, set[str]] = field(default_factory=dict)
    """``self.<attr>`` -> local names assigned to it (functions, classes, kernels)."""
    layers: set[str] = field(default_factory=set)
    """``self.<attr>`` (and module names) bound to ``torch.nn`` layers."""
    defined: set[str] = field(default_factory=set)
    """Every name the module binds itself (a local ``compile`` is not the builtin)."""

    @classmethod
    def parse(cls, source: str) -> _Module:
        tree = pyast.parse(source)
        tree.body = [n for n in tree.body if not _is_main_guard(n)]
        module = cls(tree)
        module._index()
        return module

    # ---------------------------------------------------------------- names

    def qual(self, node: ast.AST | None) -> str | None:
        """The qualified name an expression stands for (``torch.nn.functional.relu``), or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.self_aliases.get(node.attr)
            base = self.qual(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
            if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                base = self.qual(node.args[0])
                return f"{base}.{node.args[1].value}" if base else None
        return None

    def _index(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        self.aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.defined.add(node.id)
        for node in _top_level(self.tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node  # type: ignore[assignment]
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                self._is_kernel_decorator(d) for d in node.decorator_list
            ):
                self.kernels.add(node.name)
        for _ in range(4):  # value aliases and bindings, to a fixed point (chains are short)
            before = (len(self.aliases), len(self.self_aliases), len(self.extensions), len(self.self_extensions))
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    self._bind(node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
            after = (len(self.aliases), len(self.self_aliases), len(self.extensions), len(self.self_extensions))
            if after == before:
                break

    def _is_kernel_decorator(self, node: ast.expr) -> bool:
        target = node.func if isinstance(node, ast.Call) else node
        q = self.qual(target) or (target.id if isinstance(target, ast.Name) else "")
        if not q:
            return False
        parts = q.split(".")
        if parts[-1] not in KERNEL_DECORATORS or parts[0] in ("torch", "functools"):
            return False
        return parts[0] != "numba" or "cuda" in parts

    def is_builder(self, call: ast.Call) -> bool:
        """A call that builds kernels from source (load_inline, torch.utils.cpp_extension.load, RawKernel ...)."""
        q = self.qual(call.func) or ""
        last = q.split(".")[-1] if q else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
        return last in KERNEL_BUILDERS or q == "torch.utils.cpp_extension.load" or (
            q.startswith("triton.") and last == "jit"
        )

    def _refers_to_kernel(self, value: ast.AST) -> bool:
        for node in ast.walk(value):
            if isinstance(node, ast.Call) and self.is_builder(node):
                return True
            if isinstance(node, ast.Name) and node.id in self.kernels | self.extensions:
                return True
            if self._is_self_attr(node) and node.attr in self.self_extensions:  # type: ignore[union-attr]
                return True
        return False

    @staticmethod
    def _is_self_attr(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"

    def _bind(self, targets: list[ast.expr], value: ast.expr) -> None:
        q = self.qual(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
        layer = isinstance(value, ast.Call) and self._is_layer(value)
        kernel = self._refers_to_kernel(value)
        refs = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        for target in targets:
            if isinstance(target, ast.Name):
                if q and target.id not in self.aliases:
                    self.aliases[target.id] = q
                if kernel:
                    self.extensions.add(target.id)
                if layer:
                    self.layers.add(target.id)
            elif self._is_self_attr(target):
                attr = target.attr  # type: ignore[union-attr]
                if q:
                    self.self_aliases.setdefault(attr, q)
                if kernel:
                    self.self_extensions.add(attr)
                if layer:
                    self.layers.add(attr)
                self.self_refs.setdefault(attr, set()).update(refs)

    def _is_layer(self, call: ast.Call) -> bool:
        q = self.qual(call.func) or ""
        if not q.startswith("torch.nn.") or q.startswith("torch.nn.functional"):
            return False
        last = q.split(".")[-1]
        containers = {"Parameter", "ParameterList", "ParameterDict", "Module", "Identity", "Buffer"}
        return last[:1].isupper() and last not in containers

    # ---------------------------------------------------------------- ModelNew

    def model_new(self) -> tuple[ast.ClassDef | None, ast.expr | None]:
        """(the class ModelNew is, or None; the value of ``ModelNew = ...`` when it is an assignment)."""
        assigned = None
        for node in _top_level(self.tree.body):
            if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                return node, None
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets):
                assigned = node.value
        if isinstance(assigned, ast.Name) and assigned.id in self.classes:
            return self.classes[assigned.id], assigned
        return None, assigned

    def bases(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and its candidate-defined bases, nearest first."""
        chain, queue = [], [cls]
        while queue:
            c = queue.pop(0)
            if c in chain:
                continue
            chain.append(c)
            queue += [self.classes[b.id] for b in c.bases if isinstance(b, ast.Name) and b.id in self.classes]
        return chain

    def method(self, cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
        """The method ``name`` of ``cls`` or of its candidate-defined bases."""
        for c in self.bases(cls):
            for node in c.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                    return node  # type: ignore[return-value]
                if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                    if isinstance(node.value, ast.Name) and node.value.id in self.functions:
                        return self.functions[node.value.id]
        return None

    def methods(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        return [n for c in self.bases(cls) for n in c.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]  # type: ignore[misc]

    def reachable(self, cls: ast.ClassDef) -> list[ast.FunctionDef]:
        """``forward`` (or, without one, every method but ``__init__``) and everything it refers to."""
        forward = self.method(cls, "forward") or self.method(cls, "__call__")
        start = [forward] if forward else [m for m in self.methods(cls) if m.name != "__init__"]
        return self.closure(start, cls)

    def closure(self, start: list[ast.AST], cls: ast.ClassDef | None = None) -> list:
        """``start`` and the functions and methods it refers to, transitively (``self.`` resolves in ``cls``)."""
        seen: list = []
        queue = list(start)
        while queue:
            fn = queue.pop(0)
            if fn in seen:
                continue
            seen.append(fn)
            for node in ast.walk(fn):
                names: set[str] = set()
                if isinstance(node, ast.Name):
                    names.add(node.id)
                elif self._is_self_attr(node):
                    attr = node.attr  # type: ignore[union-attr]
                    found = self.method(cls, attr) if cls is not None else None
                    if found:
                        queue.append(found)
                    names |= self.self_refs.get(attr, set())
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.classes:
                    names.add(node.value.id)
                for name in names:
                    if name in self.functions and name not in self.kernels:
                        queue.append(self.functions[name])
                    elif name in self.classes:
                        queue += self.methods(self.classes[name])
        return seen

    def uses_kernel(self, functions: list[ast.FunctionDef]) -> list[str]:
        """How ``functions`` launch or refer to the candidate's kernels (empty: they do not)."""
        uses = []
        for fn in functions:
            for node in ast.walk(fn):
                if isinstance(node, ast.Name) and node.id in self.kernels | self.extensions:
                    uses.append(f"{node.id} ({_where(node)})")
                elif isinstance(node, ast.Attribute) and node.attr in self.kernels and self.qual(node) is None:
                    # a kernel kept in a class or an instance; not a module's function of the same name (torch.relu)
                    uses.append(f"{ast.unparse(node)} ({_where(node)})")
                elif self._is_self_attr(node) and node.attr in self.self_extensions:  # type: ignore[union-attr]
                    uses.append(f"self.{node.attr} ({_where(node)})")  # type: ignore[union-attr]
                elif isinstance(node, ast.Call) and self.is_builder(node):
                    uses.append(f"a kernel build ({_where(node)})")
                elif isinstance(node, ast.Attribute):
                    q = self.qual(node) or ""
                    parts = q.split(".")
                    if q.startswith("torch.ops.") and len(parts) >= 4 and parts[2] not in ATEN_NAMESPACES:
                        uses.append(f"{q} ({_where(node)})")
        return uses

    def defines_kernels(self) -> list[str]:
        """The kernels and kernel builds the module has, wherever they are."""
        found = sorted(self.kernels)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and self.is_builder(node):
                found.append(f"{self.qual(node.func) or 'a kernel build'} ({_where(node)})")
        return found

    # ---------------------------------------------------------------- torch compute

    def torch_compute(self, nodes: list[ast.AST]) -> list[str]:
        """PyTorch compute calls in ``nodes`` (kernels' own bodies are skipped), as ``what (line N)``."""
        found: list[str] = []
        for top in nodes:
            for node in self._walk_outside_kernels(top):
                what = self._compute_call(node)
                if what:
                    found.append(f"{what} ({_where(node)})")
        return found

    def _walk_outside_kernels(self, top: ast.AST):
        stack = [top]
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in self.kernels:
                continue
            yield node
            stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _compute_call(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            return "the @ operator (a matmul)"
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        q = self.qual(func)
        if q and q.startswith("torch."):
            return self._torch_call(q)
        if isinstance(func, ast.Name) and func.id in self.layers:
            return f"the nn layer {func.id}"
        if self._is_self_attr(func) and func.attr in self.layers:  # type: ignore[union-attr]
            return f"the nn layer self.{func.attr}"  # type: ignore[union-attr]
        if isinstance(func, ast.Subscript) and self._is_self_attr(func.value) and func.value.attr in self.layers:  # type: ignore[union-attr]
            return f"the nn layers in self.{func.value.attr}"  # type: ignore[union-attr]
        if isinstance(func, ast.Attribute) and func.attr in TENSOR_COMPUTE_METHODS and q is None:
            root = func.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                if self._is_self_attr(root) and root.attr in self.self_extensions:  # type: ignore[union-attr]
                    return None
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and (root.id in self.kernels | self.extensions or root.id in self.aliases):
                return None
            return f".{func.attr}()"
        return None

    def _torch_call(self, q: str) -> str | None:
        rest = q[len("torch."):]
        short = q.replace("torch.nn.functional.", "F.")
        if rest.startswith("ops."):
            parts = rest.split(".")
            return q if len(parts) > 1 and parts[1] in ATEN_NAMESPACES else None
        if rest.startswith(TORCH_COMPILERS):
            return f"{q} (its kernels are generated by torch, not written by you)"
        if rest.startswith("nn.functional."):
            return short
        if rest.startswith("Tensor."):
            return q if rest.split(".")[-1] in TENSOR_COMPUTE_METHODS else None
        if rest.startswith(("special.", "linalg.", "fft.", "sparse.", "nested.")):
            return q
        if rest.startswith(TORCH_NEUTRAL_PREFIXES) or rest in TORCH_LAYOUT:
            return None
        if rest.startswith("nn.") and rest.split(".")[-1][:1].isupper():
            return f"{q} built inside forward"
        return q if "." not in rest else None


# --------------------------------------------------------------------------- the guards


def _reference_forward(reference_source: str | None) -> list[str] | None:
    if not reference_source:
        return None
    try:
        tree = pyast.parse(reference_source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return _body_dump(item)
    return None


def _body_dump(fn: ast.FunctionDef) -> list[str]:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [ast.dump(stmt, annotate_fields=False) for stmt in body]


def _is_empty(fn: ast.FunctionDef) -> bool:
    return all(
        isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)) for s in fn.body
    )


def _structure(m: _Module, p: Policies, reference_source: str | None) -> list[dict[str, str]]:
    """reference, empty_body, no_custom_kernel, torch_compute, fallback."""
    found: list[dict[str, str]] = []
    cls, assigned = m.model_new()
    if isinstance(assigned, ast.Name) and assigned.id == "Model":
        found.append(p.found("reference", f"`ModelNew = Model` ({_where(assigned)}): ModelNew is the reference itself. "
                                          "Define a ModelNew class whose forward launches your own kernels."))  # fmt: skip
    if cls is not None:
        chain = m.bases(cls)
        for c in chain:
            for base in c.bases:
                if isinstance(base, ast.Name) and base.id == "Model":
                    found.append(p.found("reference", f"class {c.name} inherits from Model ({_where(base)}), the "
                                                      "reference: subclass nn.Module and implement forward yourself."))  # fmt: skip
        reach = m.reachable(cls)
        wraps = [f"{_where(n)}" for fn in reach + [m.method(cls, "__init__")] if fn is not None
                 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == "Model"]  # fmt: skip
        if wraps:
            found.append(p.found("reference", f"ModelNew uses the reference's Model ({_listed(wraps)}): it wraps "
                                              "the reference instead of computing the result itself."))  # fmt: skip
        forward = m.method(cls, "forward")
        if forward is not None and _is_empty(forward):
            found.append(p.found("empty_body", f"ModelNew.forward ({_where(forward)}) has an empty body (pass, ... "
                                               "or a docstring): it computes nothing and returns None."))  # fmt: skip
        compute = m.torch_compute([fn for fn in reach if fn.name != "__init__"])
        uses = m.uses_kernel(reach)
    else:  # ModelNew is made some other way: only what the whole module defines can be judged
        uses, compute = [], []
    defined = m.defines_kernels()
    if not defined:
        anywhere = compute or m.torch_compute([m.tree])
        tail = f" It computes with PyTorch: {_listed(anywhere)}." if anywhere else ""
        found.append(p.found("no_custom_kernel", "the candidate defines no kernel of its own (no load_inline/load "
                             "CUDA extension, @triton.jit function or CuPy RawKernel)." + tail +
                             " Write the computation as a CUDA or Triton kernel and launch it from forward."))  # fmt: skip
    elif cls is not None and not uses:
        found.append(p.found("no_custom_kernel", f"kernels are defined ({_listed(defined)}) but nothing ModelNew."
                             "forward runs refers to them: forward never launches them."))  # fmt: skip
    forward = m.method(cls, "forward") if cls is not None else None
    reference_body = _reference_forward(reference_source)
    if forward is not None and reference_body is not None and _body_dump(forward) == reference_body:
        found.append(p.found("reference", f"ModelNew.forward ({_where(forward)}) is the reference's forward, "
                                          "statement for statement: it runs PyTorch, not a kernel of yours."))  # fmt: skip
    if compute:
        if p.strict:
            evidence = (f"ModelNew.forward runs PyTorch compute: {_listed(compute)}. eval.torch_ops=strict allows "
                        "only allocation, views, reshapes and your own kernels: write these as kernels.")  # fmt: skip
        else:
            evidence = (f"ModelNew.forward runs PyTorch compute: {_listed(compute)} (allowed: torch_ops=lenient; "
                        "on a GPU their share of the time is measured).")  # fmt: skip
        found.append(p.found("torch_compute", evidence))
    found += _fallbacks(m, p)
    return found


def _fallbacks(m: _Module, p: Policies) -> list[dict[str, str]]:
    found = []
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            body_kernel = m.uses_kernel(m.closure([ast.Module(body=node.body, type_ignores=[])]))
            for handler in node.handlers:
                wrapped = ast.Module(body=handler.body, type_ignores=[])
                compute = m.torch_compute([wrapped])
                model = [n for n in ast.walk(wrapped) if isinstance(n, ast.Name) and n.id == "Model"]
                reraises = any(isinstance(n, ast.Raise) for n in ast.walk(wrapped))
                if compute or model:
                    what = _listed(compute) if compute else "the reference's Model"
                    found.append(p.found("fallback", f"the except branch at {_where(handler)} runs {what}: when the "
                                         "kernel fails, PyTorch silently computes the result. Let the error surface."))  # fmt: skip
                elif body_kernel and not reraises:
                    found.append(p.found("fallback", f"the try at {_where(node)} wraps your kernel ({body_kernel[0]}) "
                                         f"and the except branch at {_where(handler)} swallows its failure: let the "
                                         "error surface instead."))  # fmt: skip
        elif isinstance(node, ast.With):
            for item in node.items:
                q = m.qual(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
                if q == "contextlib.suppress" and m.uses_kernel(m.closure([ast.Module(body=node.body, type_ignores=[])])):
                    found.append(p.found("fallback", f"contextlib.suppress at {_where(node)} swallows your kernel's "
                                         "failure: let the error surface instead."))  # fmt: skip
    return found


def _side_effects(m: _Module, p: Policies) -> list[dict[str, str]]:
    """concurrency, monkey_patch, io, introspection."""
    hits: dict[str, list[str]] = {"concurrency": [], "monkey_patch": [], "io": [], "introspection": []}
    env_writes: list[str] = []
    handled: set[int] = set()

    def module_rooted(node: ast.AST) -> str | None:
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return m.aliases.get(node.id) if isinstance(node, ast.Name) else None

    for node in ast.walk(m.tree):
        where = _where(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                root = name.split(".")[0]
                if root in CONCURRENCY_MODULES or name.startswith("torch.multiprocessing"):
                    hits["concurrency"].append(f"import {name} ({where})")
                elif root in NETWORK_MODULES:
                    hits["io"].append(f"import {name} ({where}, network)")
                elif root in INTROSPECTION_MODULES:
                    hits["introspection"].append(f"import {name} ({where})")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if not isinstance(target, (ast.Attribute, ast.Subscript)):
                    continue
                base = target.value
                if m.qual(base) == "os.environ":
                    env_writes.append(f"os.environ[...] ({where})")
                    handled.add(id(base))
                elif module_rooted(target):
                    text = ast.unparse(target)
                    hits["monkey_patch"].append(f"{text} = ... ({where})")
                    handled.update(id(n) for n in ast.walk(target))
        elif isinstance(node, ast.Call):
            q = m.qual(node.func) or ""
            func = node.func
            if q.startswith(CONCURRENCY_NAMES) and "current_stream" in ast.unparse(node):
                handled.update(id(n) for n in ast.walk(func))  # torch's current stream, wrapped: not a new one
            elif isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args and module_rooted(node.args[0]):
                hits["monkey_patch"].append(f"{func.id}({ast.unparse(node.args[0])}, ...) ({where})")
            elif isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2 and module_rooted(node.args[0]) \
                    and not isinstance(node.args[1], ast.Constant):
                hits["introspection"].append(f"getattr({ast.unparse(node.args[0])}, <computed name>) ({where})")
            elif isinstance(func, ast.Name) and func.id in INTROSPECTION_BUILTINS and func.id not in m.defined:
                hits["introspection"].append(f"{func.id}() ({where})")
            elif isinstance(func, ast.Name) and func.id == "open" and "open" not in m.defined or q in ("io.open", "codecs.open", "os.open"):
                if _opens_for_reading(node):
                    hits["io"].append(f"open(...) for reading ({where})")
            elif q.startswith("torch.library.") and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) and re.match(r"(aten|prims)\b", c.value)
                for c in ast.walk(node)
            ):
                hits["monkey_patch"].append(f"{q}(...) on torch's own ops ({where})")
            elif q.startswith(GLOBAL_STATE_CALLS) or (
                q.startswith("torch.backends.") and q.split(".")[-1].startswith(BACKEND_SETTERS)
            ):
                hits["monkey_patch"].append(f"{q}() ({where})")
            elif isinstance(func, ast.Attribute) and m.qual(func.value) == "os.environ":
                handled.add(id(func.value))
                if func.attr in ("setdefault", "update", "pop", "clear", "__setitem__"):
                    env_writes.append(f"os.environ.{func.attr}() ({where})")
                else:
                    hits["io"].append(f"os.environ.{func.attr}() ({where}, reads the environment)")
            elif q in ("os.putenv", "os.unsetenv"):
                env_writes.append(f"{q}() ({where})")
            elif q in FILE_READS or q.startswith(FILE_READ_MODULES) or (
                isinstance(func, ast.Attribute) and func.attr in ("read_text", "read_bytes")
            ):
                hits["io"].append(f"{q or func.attr}() ({where})")  # type: ignore[union-attr]
        elif isinstance(node, ast.Name) and node.id == "__builtins__":
            hits["introspection"].append(f"__builtins__ ({where})")
        if isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in handled:
            q = m.qual(node) if not isinstance(node, ast.Name) or node.id in m.aliases else None
            if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION_ATTRS:
                hits["introspection"].append(f".{node.attr} ({where})")
            if q:
                if q.startswith(CONCURRENCY_NAMES):
                    hits["concurrency"].append(f"{q} ({where})")
                    handled.update(id(n) for n in ast.walk(node))
                elif q.startswith(INTROSPECTION_NAMES):
                    hits["introspection"].append(f"{q} ({where})")
                    handled.update(id(n) for n in ast.walk(node))
                elif q == "os.environ":
                    hits["io"].append(f"os.environ ({where}, reads the environment)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _looks_like_c(node.value):
            code = _strip_c_comments(node.value)
            for match in CUDA_CONCURRENCY.finditer(code):
                hits["concurrency"].append(f"{match.group(0)} in the CUDA source ({where})")
            for match in CUDA_PATCH.finditer(code):
                hits["monkey_patch"].append(f"{match.group(0)} in the CUDA source ({where}): re-registers aten ops")
            for match in CUDA_IO.finditer(code):
                hits["io"].append(f"{match.group(0).rstrip('( ')} in the CUDA source ({where})")

    advice = {
        "concurrency": "work must run on the calling thread and torch's current stream, where the timing sees it; "
                       "no threads, processes, new streams or CUDA graphs",
        "monkey_patch": "a candidate may not change torch, the clocks or other modules the evaluator and the "
                        "reference use",
        "io": "a kernel has no reason to read files, the environment or the network",
        "introspection": "these reach into the evaluator (the reference, its outputs, the clocks); a kernel "
                         "needs none of them",
    }  # fmt: skip
    found = [p.found(guard, f"{_listed(items)}: {advice[guard]}.") for guard, items in hits.items() if items]
    if env_writes:
        found.append(p.found("io", f"sets environment variables ({_listed(env_writes)}); allowed, noted.", verdict=REPORT))
    return found


def _opens_for_reading(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
    if mode is None:
        return True
    if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str):
        return True
    return "+" in mode.value or not any(c in mode.value for c in "wax")


def static_findings(source: str, policies: Policies | None = None, reference_source: str | None = None) -> list[dict[str, str]]:
    """Every static guard's findings for a candidate that parses and defines ``ModelNew``.

    ``reference_source`` (the task's source) lets the ``reference`` guard see a copied forward.
    """
    p = policies or Policies()
    module = _Module.parse(source)
    return _side_effects(module, p) + _structure(module, p, reference_source)
