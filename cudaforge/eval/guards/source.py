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

Attribute names given as literal strings are read as attributes before anything else looks at the AST:
``getattr(x, "relu")`` is ``x.relu``, ``operator.attrgetter("relu")(F)`` and ``F.__dict__["relu"]`` are
``F.relu``, ``operator.methodcaller("relu")(x)`` is ``x.relu()``, and ``setattr(self, "act", F.relu)`` binds
``self.act``.
What the guards cannot read (code made from strings, modules loaded from files, pickles, imports of anything
but the packages the evaluator provides, names computed at run time) is the ``dynamic_code`` guard's: the
candidate is one closed unit, and only what it says in its own text can be judged.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
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
INTROSPECTION_MODULES = ("gc", "inspect", "ctypes", "builtins", "dis", "cudaforge", "__main__", "cudaforge_reference")
INTROSPECTION_NAMES = ("sys.modules", "sys._getframe", "sys.settrace", "sys.setprofile", "sys._current_frames",
                       "sys.addaudithook")  # fmt: skip
INTROSPECTION_BUILTINS = {"globals", "locals", "vars", "breakpoint"}
INTROSPECTION_ATTRS = {"__globals__", "__code__", "__closure__", "__subclasses__", "__builtins__", "f_back",
                       "f_globals", "f_locals", "f_code", "gi_frame", "tb_frame", "cr_frame"}  # fmt: skip

DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__"}
"""Builtins that run code made from strings or import a module by a computed name."""
LOOKUP_BUILTINS = ("getattr", "setattr", "delattr")
"""Builtins that reach attributes by a string: the guards read literal names through them, so rebinding them (but
by a module-level def of the candidate's own) is a finding."""
DYNAMIC_MODULES = (
    "importlib", "imp", "_imp", "runpy", "zipimport", "pkgutil", "site", "code", "codeop", "py_compile", "compileall",
    "_frozen_importlib", "_frozen_importlib_external", "marshal", "pickle", "_pickle", "cPickle", "dill", "cloudpickle",
    "shelve", "copyreg", "copy_reg", "pydoc", "timeit", "doctest", "trace", "profile", "cProfile", "pdb", "bdb",
)  # fmt: skip
"""Modules that import, unpickle, unmarshal or run code the candidate's text does not show (``timeit``, ``doctest``,
``profile``, ``pdb``: they run strings)."""
DYNAMIC_SUBMODULES = ("importlib", "marshal", "pickle", "_pickle", "cPickle", "dill", "cloudpickle", "shelve",
                      "copyreg", "runpy", "zipimport", "pkgutil")  # fmt: skip
"""The same, when another module hands them out as an attribute (``torch.serialization.pickle``)."""
DYNAMIC_NAMES = (
    "types.ModuleType", "types.FunctionType", "types.LambdaType", "types.CodeType", "logging.config",
    "typing.get_type_hints", "typing.ForwardRef", "ctypes.CDLL", "ctypes.PyDLL", "ctypes.cdll", "ctypes.pydll",
    "ctypes.LibraryLoader", "ctypes.util", "numpy.ctypeslib", "torch.ops.load_library", "torch.classes.load_library",
    "torch.jit.load", "torch.jit._load", "torch.package", "torch.export.load", "torch.hub", "torch.serialization",
)  # fmt: skip
"""Qualified names (at any depth: ``os.sys.path`` is ``sys.path``) that build modules, functions or code objects, or
load a library or a program from a file."""
IMPORT_SYSTEM = ("sys.path", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.modules")
"""Where imports come from: changing any of them (or naming ``meta_path``/``path_hooks`` at all, or handing
``sys.path`` to a call) is dynamic code; reading ``sys.modules`` is the ``introspection`` guard's."""
MUTATORS = {"append", "insert", "extend", "remove", "pop", "popitem", "clear", "update", "setdefault", "__setitem__",
            "__delitem__", "__iadd__"}  # fmt: skip
"""Methods that change a list or a dict in place."""
DYNAMIC_DUNDERS = {"__dict__", "__getattribute__", "__getattr__", "__setattr__"}
"""Attributes that look other attributes up by a string the guards cannot follow."""
IMPORT_MACHINERY = {"__loader__", "__spec__"}
"""Module globals that hand the import machinery (a loader for any path) to the candidate."""
KNOWN_PACKAGES = ("torch", "triton", "numpy", "cupy", "cupyx", "cutlass", "cuda", "tilelang", "numba", "pycuda")
"""Packages a candidate may import besides the standard library and the kernel languages' own modules: torch, the
kernel languages' packages (``cuda`` is cuda-python, which CuTe DSL candidates import; ``numba`` and ``pycuda`` are
the other technologies the guards know kernels of)."""
KNOWN_MODULES = frozenset(sys.stdlib_module_names) | set(KNOWN_PACKAGES) | set(languages.names()) | {
    module.split(".")[0] for language in languages.languages() for module in language.modules
}
"""Top-level names an ``import`` may use: anything else could only be a module the candidate wrote itself."""
LOADABLE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd", ".pth")
"""File names Python can import or load: a candidate may not write them (CUDA and C++ sources it may)."""
PATH_CALLS = ("os.path.join", "posixpath.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
              "pathlib.PurePosixPath", "os.path.abspath", "os.path.realpath", "os.path.normpath",
              "os.path.expanduser", "os.fspath")  # fmt: skip
"""Calls whose result ends as their last argument does."""
TEMP_FILES = ("tempfile.NamedTemporaryFile", "tempfile.mkstemp", "tempfile.mktemp", "tempfile.TemporaryFile",
              "tempfile.SpooledTemporaryFile")  # fmt: skip
"""Calls that make a file named by their ``suffix``."""

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


def _binds(node: ast.AST) -> str | None:
    """The name a node binds (a def, class, assignment target, parameter, import or ``except ... as``), or None."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    return node.name if isinstance(node, ast.ExceptHandler) and node.name else None


def _literal_name(node: ast.AST, dotted: bool = False) -> str | None:
    """The attribute name a string literal spells (``a.b`` too when ``dotted``), or None."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
        return None
    parts = node.value.split(".") if dotted else [node.value]
    return node.value if all(part.isidentifier() for part in parts) else None


class _LiteralNames:
    """Rewrites lookups of literal attribute names into plain attribute accesses, so that every guard reads
    ``getattr(x, "relu")`` as ``x.relu``, ``operator.attrgetter("relu")(F)`` as ``F.relu``,
    ``operator.methodcaller("relu", 1)(x)`` as ``x.relu(1)`` and ``F.__dict__["relu"]`` (or ``.get("relu")``) as
    ``F.relu``. Only the builtins and the operator module's own functions, as the candidate imports them (a function
    of its own called ``getattr`` is left alone). Iterative, children before parents, so that lookups nest
    (``getattr(getattr(torch, "nn"), "functional")``) and a deep expression costs no recursion. The same pass
    counts the names the candidate binds."""

    def __init__(self) -> None:
        self.operator: dict[str, str] = {}
        """Local name -> ``operator``, ``operator.attrgetter`` or ``operator.methodcaller``."""
        self.bindings: Counter[str] = Counter()
        """How often each name is bound anywhere (def, class, assignment, parameter, import, ``as``, ``for``)."""
        self.definitions: set[str] = set()
        """Names bound only by one module-level def or class: there, a bare name is the candidate's, not a builtin."""

    def rewrite(self, tree: ast.Module) -> ast.Module:
        """``tree`` with every literal lookup rewritten in place (``bindings`` and ``definitions`` filled)."""
        order, stack = [], [tree]
        while stack:
            node = stack.pop()
            order.append(node)
            bound = _binds(node)
            if bound:
                self.bindings[bound] += 1
            if isinstance(node, ast.Import):
                self.operator.update((a.asname or a.name, "operator") for a in node.names
                                     if a.name in ("operator", "_operator"))  # fmt: skip
            elif isinstance(node, ast.ImportFrom) and node.module in ("operator", "_operator") and not node.level:
                self.operator.update((a.asname or a.name, f"operator.{a.name}") for a in node.names)
            stack.extend(ast.iter_child_nodes(node))
        self.definitions = {node.name for node in _top_level(tree.body) if isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and self.bindings[node.name] == 1}  # fmt: skip
        for node in reversed(order):
            for name, value in ast.iter_fields(node):
                if isinstance(value, ast.AST):
                    setattr(node, name, self._resolve(value))
                elif isinstance(value, list):
                    value[:] = [self._resolve(v) if isinstance(v, ast.AST) else v for v in value]
        return tree

    def _resolve(self, node: ast.AST) -> ast.AST:
        for _ in range(8):  # one rewrite can make another possible: methodcaller("get", "relu")(F.__dict__)
            new = self._rewritten(node)
            if new is node:
                break
            node = new
        return node

    def _operator(self, func: ast.expr) -> str:
        """``attrgetter``/``methodcaller`` when ``func`` is the operator module's, else ``""``."""
        if isinstance(func, ast.Name):
            name = self.operator.get(func.id, "")
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            name = f"operator.{func.attr}" if self.operator.get(func.value.id) == "operator" else ""
        else:
            name = ""
        return name.removeprefix("operator.") if name in ("operator.attrgetter", "operator.methodcaller") else ""

    @staticmethod
    def _attribute(value: ast.expr, name: str, where: ast.AST) -> ast.Attribute:
        return ast.copy_location(ast.Attribute(value, name, ast.Load()), where)

    def _rewritten(self, node: ast.AST) -> ast.AST:
        """The plain attribute access ``node`` stands for, or ``node`` itself."""
        if isinstance(node, ast.Subscript):
            value = node.value
            if isinstance(value, ast.Attribute) and value.attr == "__dict__" and isinstance(node.ctx, ast.Load) \
                    and _literal_name(node.slice):
                return self._attribute(value.value, node.slice.value, node)  # type: ignore[attr-defined]
            return node
        if not isinstance(node, ast.Call):
            return node
        func, args = node.func, node.args
        if (isinstance(func, ast.Name) and func.id == "getattr" and "getattr" not in self.definitions
                and 2 <= len(args) <= 3 and not node.keywords and _literal_name(args[1])):  # fmt: skip
            return self._attribute(args[0], args[1].value, node)  # type: ignore[attr-defined]
        if isinstance(func, ast.Attribute) and func.attr == "get" and isinstance(func.value, ast.Attribute) \
                and func.value.attr == "__dict__" and 1 <= len(args) <= 2 and not node.keywords \
                and _literal_name(args[0]):
            return self._attribute(func.value.value, args[0].value, node)  # type: ignore[attr-defined]
        if not isinstance(func, ast.Call) or len(args) != 1 or node.keywords or not func.args:
            return node
        kind = self._operator(func.func)
        if kind == "attrgetter" and len(func.args) == 1 and not func.keywords and _literal_name(func.args[0], True):
            value = args[0]
            for part in func.args[0].value.split("."):  # type: ignore[attr-defined]
                value = self._attribute(value, part, node)
            return value
        if kind == "methodcaller" and _literal_name(func.args[0]):
            method = self._attribute(args[0], func.args[0].value, node)  # type: ignore[attr-defined]
            return ast.copy_location(ast.Call(method, func.args[1:], func.keywords), node)
        return node


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
    bindings: Counter[str] = field(default_factory=Counter)
    """How often each name is bound anywhere (def, class, assignment, parameter, import, ``as``, ``for``)."""
    definitions: set[str] = field(default_factory=set)
    """Names bound only by one module-level def or class: there, a bare name is the candidate's, not a builtin."""

    @classmethod
    def parse(cls, source: str) -> _Module:
        tree = pyast.parse(source)
        tree.body = [n for n in tree.body if not _is_main_guard(n)]
        names = _LiteralNames()
        tree = names.rewrite(tree)
        module = cls(tree, bindings=names.bindings, definitions=names.definitions)
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
                elif self.literal_setattr(node):  # setattr(self, "act", F.relu) binds as self.act = F.relu does
                    obj, name, value = node.args  # type: ignore[union-attr]
                    self._bind([ast.Attribute(obj, name.value, ast.Store())], value)
            after = (len(self.aliases), len(self.self_aliases), len(self.extensions), len(self.self_extensions))
            if after == before:
                break

    def builtin(self, name: str) -> bool:
        """Whether a bare ``name`` may be the builtin of that name: unless the candidate's one binding of it is a
        module-level def or class, it is taken to be (a parameter or an assignment can hold the builtin itself:
        ``def f(run=exec)``, ``eval = eval``)."""
        return name not in self.definitions

    def literal_setattr(self, node: ast.AST) -> bool:
        """``setattr(obj, "<name>", value)`` with the builtin ``setattr`` and a literal name."""
        return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                and self.builtin("setattr") and len(node.args) == 3 and not node.keywords
                and _literal_name(node.args[1]) is not None)  # fmt: skip

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

    def torch_compute(self, nodes: list[ast.AST], calls: bool = True) -> list[str]:
        """PyTorch compute in ``nodes`` (kernels' own bodies are skipped), as ``what (line N)``: calls (unless not
        ``calls``) and compute functions taken as values (``map(torch.relu, xs)``, ``@torch.compile``)."""
        found: list[str] = []
        for top in nodes:
            called = set()
            for node in self._walk_outside_kernels(top):
                if isinstance(node, ast.Call):
                    called.add(id(node.func))
                elif isinstance(node, ast.Attribute):
                    called.add(id(node.value))  # a prefix of a longer name, not a value of its own
                what = self._compute_call(node) if calls else None
                if what is None and id(node) not in called:
                    what = self._compute_value(node)
                if what:
                    found.append(f"{what} ({_where(node)})")
        return found

    def kept_values(self, functions: list[ast.AST]) -> list[ast.expr]:
        """The values the module level and ``self.<attr> = ...`` assignments give the names ``functions`` read:
        a compute function kept there (``ACTS = {"relu": torch.relu}``) is called from ``functions``."""
        names = {n.id for fn in functions for n in ast.walk(fn) if isinstance(n, ast.Name)}
        attrs = {n.attr for fn in functions for n in ast.walk(fn) if self._is_self_attr(n)}  # type: ignore[misc]
        values = []
        for node in _top_level(self.tree.body):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id in names for t in targets):
                    values.append(node.value)
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(self._is_self_attr(t) and t.attr in attrs for t in targets):  # type: ignore[attr-defined]
                    values.append(node.value)
            elif self.literal_setattr(node):
                obj, name, value = node.args  # type: ignore[attr-defined]
                if isinstance(obj, ast.Name) and obj.id == "self" and name.value in attrs:
                    values.append(value)
        return values

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

    def _compute_value(self, node: ast.AST) -> str | None:
        """A compute function named but not called here (it is called wherever the value goes), or None."""
        if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(node.ctx, ast.Load):
            return None
        q = self.qual(node)
        if q and q.startswith("torch.") and not q.split(".")[-1].startswith("__"):
            what, rest = self._torch_call(q), q[len("torch."):]
            function = q.split(".")[-1] in TENSOR_COMPUTE_METHODS or rest.startswith(
                ("nn.functional.", "special.", "linalg.", "fft.", "Tensor.", *TORCH_COMPILERS))
            return f"{what} (taken as a value)" if what and function else None
        if isinstance(node, ast.Attribute) and node.attr in TENSOR_COMPUTE_METHODS and q is None:
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id != "self" and not (
                root.id in self.kernels or root.id in self.extensions or root.id in self.aliases
            ):
                return f".{node.attr} (a bound method taken as a value)"
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
        runs = [fn for fn in reach if fn.name != "__init__"]
        compute = m.torch_compute(runs) + m.torch_compute(m.kept_values(runs), calls=False)
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

    for node in ast.walk(m.tree):
        where = _where(node)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in _imported(node):
                guard = _import_guard(name)
                if guard in ("concurrency", "introspection"):
                    hits[guard].append(f"import {name} ({where})")
                elif guard == "io":
                    hits["io"].append(f"import {name} ({where}, network)")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if not isinstance(target, (ast.Attribute, ast.Subscript)):
                    continue
                base = target.value
                if _import_system(m, target):  # the dynamic_code guard's
                    handled.update(id(n) for n in ast.walk(target))
                elif m.qual(base) == "os.environ":
                    env_writes.append(f"os.environ[...] ({where})")
                    handled.add(id(base))
                elif _module_rooted(m, target):
                    text = ast.unparse(target)
                    hits["monkey_patch"].append(f"{text} = ... ({where})")
                    handled.update(id(n) for n in ast.walk(target))
        elif isinstance(node, ast.Call):
            q = m.qual(node.func) or ""
            func = node.func
            if q.startswith(CONCURRENCY_NAMES) and "current_stream" in ast.unparse(node):
                handled.update(id(n) for n in ast.walk(func))  # torch's current stream, wrapped: not a new one
            elif _import_system_call(m, node):  # the dynamic_code guard's
                handled.update(id(n) for n in ast.walk(func))
            elif isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and node.args \
                    and _module_rooted(m, node.args[0]):
                hits["monkey_patch"].append(f"{func.id}({ast.unparse(node.args[0])}, ...) ({where})")
            elif isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2 \
                    and _module_rooted(m, node.args[0]) and not isinstance(node.args[1], ast.Constant):
                hits["introspection"].append(f"getattr({ast.unparse(node.args[0])}, <computed name>) ({where})")
            elif isinstance(func, ast.Name) and func.id in INTROSPECTION_BUILTINS and m.builtin(func.id):
                hits["introspection"].append(f"{func.id}() ({where})")
            elif (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in (
                "io.open", "codecs.open", "os.open"
            ):
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
                elif _under(q, INTROSPECTION_NAMES):
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


def _under(q: str, names: tuple[str, ...], exact: bool = False) -> str | None:
    """The entry of ``names`` that ``q`` is (or, unless ``exact``, lies under), matched at any depth of ``q``
    (``os.sys.path`` is ``sys.path``); None when none is."""
    parts = q.split(".")
    for i in range(len(parts)):
        tail = ".".join(parts[i:])
        for name in names:
            if tail == name or (not exact and tail.startswith(name + ".")):
                return name
    return None


def _imported(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The module names an import statement loads (a relative one keeps its dots)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return ["." * node.level + (node.module or "")]


def _import_guard(name: str) -> str | None:
    """The guard an import of module ``name`` is a finding of (``dynamic_code`` only for the modules it names;
    whether an unknown module is one is decided with the candidate's own names), or None."""
    root = name.split(".")[0]
    if root in CONCURRENCY_MODULES or name.startswith("torch.multiprocessing"):
        return "concurrency"
    if root in NETWORK_MODULES:
        return "io"
    if root in INTROSPECTION_MODULES:
        return "introspection"
    if root in DYNAMIC_MODULES or _under(name, DYNAMIC_NAMES):
        return "dynamic_code"
    return None


def _import_system_object(m: _Module, node: ast.AST) -> str | None:
    """The import-system list or dict (``sys.path``, ``sys.modules`` ...) an expression is, or None."""
    q = m.qual(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
    return _under(q, IMPORT_SYSTEM, exact=True) if q else None


def _import_system(m: _Module, target: ast.AST) -> str | None:
    """The import-system list or dict that assigning to or deleting ``target`` changes, or None (rebinding a name,
    or an attribute of the candidate's own object, changes none)."""
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return None
    if isinstance(target, ast.Subscript):
        while isinstance(target, ast.Subscript):
            target = target.value
        return _import_system_object(m, target)
    return _import_system_object(m, target) if isinstance(target, ast.Attribute) else None


def _import_system_call(m: _Module, call: ast.Call) -> str | None:
    """The import-system list or dict a call changes in place (``sys.path.insert(...)``), or None."""
    func = call.func
    return _import_system_object(m, func.value) if isinstance(func, ast.Attribute) and func.attr in MUTATORS else None


class _Paths:
    """The files a candidate's calls write, and how their names end as far as its text says. Indexed in one pass
    and resolved with a memo, so its cost grows with the source, not with the product of its names and writes."""

    def __init__(self, m: _Module) -> None:
        self.m = m
        self.owner: dict[int, ast.AST | None] = {}
        """id(node) -> the function it is in (None: the module level)."""
        self.values: dict[tuple[int, str], list[ast.expr]] = {}
        """(id of a scope (0: the module level), name) -> the values the scope gives the name."""
        self.self_values: dict[str, list[ast.expr]] = {}
        """``self.<attr>`` -> the values assigned to it."""
        self.calls: dict[str, list[ast.Call]] = {}
        """Called name (``f`` of ``f(...)`` and ``obj.f(...)``) -> the calls."""
        self.methods: set[int] = set()
        """ids of functions defined directly in a class body (called with ``self`` bound)."""
        self.memo: dict[int, set[str | None]] = {}
        stack: list[tuple[ast.AST, ast.AST | None]] = [(m.tree, None)]
        while stack:
            node, scope = stack.pop()
            self.owner[id(node)] = scope
            self._index(node, scope)
            inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else scope
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))

    def _index(self, node: ast.AST, scope: ast.AST | None) -> None:
        """Record what ``node`` binds (assignment, ``with ... as``, ``for`` over a literal list), calls or defines."""
        if isinstance(node, ast.ClassDef):
            self.methods.update(id(n) for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            self.calls.setdefault(name, []).append(node)
        pairs: list[tuple[ast.AST, ast.expr]] = []
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            pairs = [(t, node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            pairs = [(node.optional_vars, node.context_expr)]
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, (ast.List, ast.Tuple)):
            pairs = [(node.target, element) for element in node.iter.elts]
        for target, value in pairs:
            if isinstance(target, ast.Name):
                self.values.setdefault((id(scope) if scope else 0, target.id), []).append(value)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                self.self_values.setdefault(target.attr, []).append(value)
            elif isinstance(target, ast.Tuple):
                for index, element in enumerate(target.elts):
                    if isinstance(element, ast.Name):  # a literal tuple's element, or a call's whole result
                        literal = isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts)
                        given = value.elts[index] if literal else value  # type: ignore[attr-defined]
                        self.values.setdefault((id(scope) if scope else 0, element.id), []).append(given)

    def writes(self, call: ast.Call) -> list[tuple[str, ast.expr, bool]]:
        """``(what, expression, is_suffix)`` for each file ``call`` creates or renames into: the expression is
        the file's path, or (``is_suffix``) the suffix a temporary file is given."""
        m, func, args = self.m, call.func, call.args
        q = m.qual(func) or ""
        what = f"{ast.unparse(func)[:60]}(...)"
        path = args[0] if args else next((k.value for k in call.keywords if k.arg == "file"), None)
        if (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in ("io.open", "codecs.open"):
            return [(what, path, False)] if path is not None and _opens_for_writing(call, 1) else []
        if q in TEMP_FILES:
            suffix = next((k.value for k in call.keywords if k.arg == "suffix"), None)
            return [(what, suffix, True)] if suffix is not None else []
        if q in ("os.rename", "os.replace", "os.renames", "os.link", "os.symlink", "shutil.copy", "shutil.copy2",
                 "shutil.copyfile", "shutil.move") and len(args) >= 2:  # fmt: skip
            return [(what, args[1], False)]
        if q == "torch.save" and len(args) >= 2:
            return [(what, args[1], False)]
        if q == "numpy.savetxt" and args:
            return [(what, args[0], False)]
        if not isinstance(func, ast.Attribute) or q:
            return []
        if func.attr in ("write_text", "write_bytes", "symlink_to", "hardlink_to", "touch"):
            return [(what, func.value, False)]
        if func.attr == "open" and _opens_for_writing(call, 0):
            return [(what, func.value, False)]
        if func.attr in ("rename", "replace", "tofile") and len(args) == 1:
            return [(what, args[0], False)]
        return []

    def tails(self, expr: ast.AST, depth: int = 0) -> set[str | None]:
        """How the name ``expr`` stands for ends, as literal text (None: computed, the guards cannot tell)."""
        if id(expr) not in self.memo:
            self.memo[id(expr)] = {None}  # while it is worked out: a name defined through itself is computed
            self.memo[id(expr)] = self._tails(expr, depth) if depth <= 8 else {None}
        return self.memo[id(expr)]

    def _union(self, values: list[ast.expr], depth: int) -> set[str | None]:
        return set().union(*(self.tails(v, depth) for v in values)) if values else {None}

    def _tails(self, expr: ast.AST, depth: int) -> set[str | None]:
        more = depth + 1
        if isinstance(expr, ast.Constant):
            return {expr.value} if isinstance(expr.value, str) else {None}
        if isinstance(expr, ast.JoinedStr):
            last = expr.values[-1] if expr.values else ast.Constant("")
            return {last.value} if isinstance(last, ast.Constant) else {None}
        if isinstance(expr, ast.BinOp):
            if isinstance(expr.op, (ast.Add, ast.Div)):
                return self.tails(expr.right, more)
            left = expr.left
            if isinstance(expr.op, ast.Mod) and isinstance(left, ast.Constant) and isinstance(left.value, str):
                return {None} if PERCENT_FORMAT_AT_END.search(left.value) else {left.value}
            return {None}
        if isinstance(expr, ast.Call):
            return self._call_tails(expr, more)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Call):
            return self._call_tails(expr.value, more)  # tempfile.mkstemp(suffix=...)[1]
        if isinstance(expr, ast.Attribute) and expr.attr == "name":
            return self.tails(expr.value, more)  # a temporary file's name
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self":
            return self._union(self.self_values.get(expr.attr, []), more)
        if isinstance(expr, ast.Name):
            return self._name_tails(expr, more)
        return {None}

    def _call_tails(self, call: ast.Call, depth: int) -> set[str | None]:
        func, args = call.func, call.args
        q = self.m.qual(func) or ""
        if q in TEMP_FILES or q == "tempfile.mkdtemp":
            suffix = next((k.value for k in call.keywords if k.arg == "suffix"), None)
            return self.tails(suffix, depth) if suffix is not None else {""}
        if q in PATH_CALLS or (isinstance(func, ast.Name) and func.id == "str" and not self.m.bindings["str"]):
            return self.tails(args[-1], depth) if args else {""}
        if isinstance(func, ast.Attribute) and not q:
            if func.attr == "format" and isinstance(func.value, ast.Constant) and isinstance(func.value.value, str):
                return {None} if func.value.value.endswith("}") else {func.value.value}
            if func.attr in ("joinpath", "with_suffix", "with_name") and args:
                return self.tails(args[-1], depth)
            if func.attr in ("resolve", "absolute", "expanduser") and not args:
                return self.tails(func.value, depth)
        return {None}

    def _name_tails(self, name: ast.Name, depth: int) -> set[str | None]:
        scope = self.owner.get(id(name))
        values = self.values.get((id(scope) if scope else 0, name.id))
        if values:
            return self._union(values, depth)
        if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if name.id in [a.arg for a in scope.args.posonlyargs + scope.args.args + scope.args.kwonlyargs]:
                return self._argument_tails(scope, name.id, depth)
            return self._union(self.values.get((0, name.id), []), depth)  # a global
        return {None}

    def _argument_tails(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, param: str, depth: int) -> set[str | None]:
        """The tails of what every call of ``fn`` in the module passes as ``param`` (None when it is never called)."""
        positional = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        bound = 1 if id(fn) in self.methods and positional[:1] in (["self"], ["cls"]) else 0  # staticmethods: 0
        defaults = dict(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults))
        defaults.update({a.arg: d for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None})
        index = positional.index(param) - bound if param in positional else -1
        found: set[str | None] = set()
        method = id(fn) in self.methods
        for call in self.calls.get(fn.name, []):
            if isinstance(call.func, ast.Attribute) != method:  # f.write(...) is no call of a function write
                continue
            value = next((k.value for k in call.keywords if k.arg == param), None)
            if value is None and 0 <= index < len(call.args) and not isinstance(call.args[index], ast.Starred):
                value = call.args[index]
            value = value if value is not None else defaults.get(param)
            found |= self.tails(value, depth) if value is not None else {None}
        return found or {None}


PERCENT_FORMAT_AT_END = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[diouxXeEfFgGcrsa]$")
"""A ``%`` conversion ending a format string: the formatted name ends with a value, not a literal."""


def _opens_for_writing(call: ast.Call, mode_index: int) -> bool:
    """Whether an ``open`` call's mode (argument ``mode_index`` or ``mode=``) is a literal that writes."""
    mode = call.args[mode_index] if len(call.args) > mode_index else next(
        (k.value for k in call.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


DYNAMIC_ADVICE = "write that code in the candidate itself"
"""What every ``dynamic_code`` finding about code kept elsewhere tells the Coder."""


def _lookup(what: str) -> str:
    """The evidence for an attribute lookup the guards cannot follow."""
    return f"{what} looks an attribute up by a name the guards cannot read, so they cannot tell what it reaches; " \
           "name the attribute in the code (index an nn.ModuleList or a list by number)"


def _dynamic_imports(node: ast.Import | ast.ImportFrom, built: set[str]) -> list[str]:
    """What an import loads that the guards cannot see: a module that imports, unpickles or runs code; a relative
    import; a module neither the evaluator provides nor the candidate builds (``built``: its extensions' names)."""
    found = []
    for name in _imported(node):
        root = name.split(".")[0]
        if _import_guard(name) == "dynamic_code":
            found.append(f"import {name} loads or rebuilds code the guards cannot see (modules, pickles, code "
                         f"objects); {DYNAMIC_ADVICE}")  # fmt: skip
        elif not root:
            found.append(f"from {name} import ...: the candidate is a single file with nothing beside it to import; "
                         f"{DYNAMIC_ADVICE}")  # fmt: skip
        elif _import_guard(name) is None and root not in KNOWN_MODULES and root not in built:
            found.append(f"import {name}: {root} is neither a package the evaluator provides (the standard library, "
                         "torch, triton, numpy, cupy, cutlass, tilelang ...) nor built by the candidate, so only a "
                         f"module the candidate wrote could answer; {DYNAMIC_ADVICE}")  # fmt: skip
    return found


def _dynamic_call(m: _Module, call: ast.Call, paths: _Paths) -> list[str]:
    """What a call does that the guards cannot follow: change where imports come from, look an attribute up by a
    computed name, keep a ``methodcaller``/``attrgetter`` for later, write a file Python could load."""
    func, args = call.func, call.args
    found = []
    changed = _import_system_call(m, call) or next(
        ("sys.path" for a in args if _import_system_object(m, a) == "sys.path"), None)
    if changed:
        found.append(f"{ast.unparse(func)[:60]}(...) can change {changed}, where imports come from; import only the "
                     "standard library and the kernel languages' packages")  # fmt: skip
    elif isinstance(func, ast.Name) and func.id in LOOKUP_BUILTINS and m.builtin(func.id) and len(args) >= 2 \
            and not _literal_name(args[1]) and not _module_rooted(m, args[0]):
        found.append(_lookup(f"{func.id}({ast.unparse(args[0])[:40]}, {ast.unparse(args[1])[:40]})"))
    elif _under(m.qual(func) or "", ("operator.methodcaller", "operator.attrgetter", "_operator.methodcaller",
                                     "_operator.attrgetter"), exact=True):  # fmt: skip
        found.append(f"{ast.unparse(call)[:60]} is kept or passed instead of applied at once (or its name is "
                     "computed), so the guards cannot tell what it calls; call the method itself")  # fmt: skip
    for what, expr, is_suffix in paths.writes(call):
        tails = paths.tails(expr)
        loadable = sorted(t for t in tails if t is not None and t.lower().endswith(LOADABLE_SUFFIXES))
        if loadable:
            written = f"a file ending in {loadable[0]!r}" if is_suffix else repr(loadable[0][-60:])
            found.append(f"{what} writes {written}, which Python can import or load; the candidate is one file: "
                         f"{DYNAMIC_ADVICE}")  # fmt: skip
        elif None in tails:
            found.append(f"{what} writes a file whose name the guards cannot work out (it may be a module the "
                         "candidate then loads); write only CUDA/C++ sources, under a name that ends in a literal "
                         ".cu, .cpp, .h or .cuh")  # fmt: skip
    return found


def _dynamic_name(m: _Module, node: ast.AST, called: set[int], prefixes: set[int]) -> list[str]:
    """What a name or attribute reaches that the guards cannot see: builtins that run strings or look names up
    (called, taken as values, or rebound), the import machinery, modules and functions that load or build code,
    ``__dict__``-like lookups. ``called``: ids of called expressions; ``prefixes``: ids of the bases of longer
    attribute chains (only the whole chain is judged)."""
    bound = _binds(node)
    if bound in LOOKUP_BUILTINS and m.builtin(bound):
        return [f"binds {bound}, a builtin the guards read by name, to something else; choose another name"]
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and m.builtin(node.id):
        if node.id in DYNAMIC_BUILTINS:
            shown = f"{node.id}(...)" if id(node) in called else f"{node.id}, taken as a value,"
            return [f"{shown} runs code the guards cannot see; {DYNAMIC_ADVICE}"]
        if node.id in (*LOOKUP_BUILTINS, "open") and id(node) not in called:
            return [_lookup(f"{node.id}, taken as a value,")]
        if node.id in IMPORT_MACHINERY:
            return [f"{node.id} hands the import machinery (a loader for any file) to the candidate; {DYNAMIC_ADVICE}"]
    if isinstance(node, ast.Attribute) and node.attr in DYNAMIC_DUNDERS:
        return [_lookup(ast.unparse(node)[:60])]
    if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in prefixes:
        return []
    q = m.qual(node) or ""
    if _under(q, DYNAMIC_NAMES) or any(part in DYNAMIC_SUBMODULES for part in q.split(".")[1:]):
        return [f"{q} builds or loads code, a module or a library the guards cannot see; build kernels from source "
                "in the candidate (load_inline, @triton.jit)"]  # fmt: skip
    if _under(q, ("sys.meta_path", "sys.path_hooks", "sys.path_importer_cache")):
        return [f"{q} is the import machinery; import only the standard library and the kernel languages' packages"]
    return []


def _dynamic_code(m: _Module, p: Policies) -> list[dict[str, str]]:
    """dynamic_code: code that runs without being in the candidate's text (strings run as code, modules it wrote
    or loads, pickles, imports of anything but the packages the evaluator provides), and attribute lookups by
    names the guards cannot read, anywhere in the candidate. One finding per line (the outermost thing found
    there), at most ``MAX_LISTED``, each starting ``line N:``."""
    paths = _Paths(m)
    nodes = list(ast.walk(m.tree))
    prefixes = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    built = {name for n in nodes if isinstance(n, ast.Call) and m.is_builder(n)
             for name in map(_literal_name, [*n.args[:1], *(k.value for k in n.keywords if k.arg == "name")]) if name}
    items: list[tuple[ast.AST, str]] = []
    for node in nodes:
        found = _dynamic_name(m, node, called, prefixes)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += _dynamic_imports(node, built)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            found += [f"{ast.unparse(t)[:60]} = ... changes where imports come from; import only the standard "
                      "library and the kernel languages' packages" for t in targets if _import_system(m, t)]
        elif isinstance(node, ast.Call):
            found += _dynamic_call(m, node, paths)
        items += [(node, text) for text in found]
    first: dict[str, str] = {}
    for node, text in sorted(items, key=lambda item: getattr(item[0], "lineno", 0)):
        first.setdefault(_where(node), f"{_where(node)}: {text}")
    lines = list(first.values())
    if len(lines) > MAX_LISTED:
        lines = lines[:MAX_LISTED - 1] + [f"{lines[MAX_LISTED - 1]} (and {len(lines) - MAX_LISTED} more such places)"]
    return [p.found("dynamic_code", line + ".") for line in lines]


def _module_rooted(m: _Module, node: ast.AST) -> str | None:
    """The module an expression is reached from (``torch`` for ``torch.nn.functional``), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return m.aliases.get(node.id) if isinstance(node, ast.Name) else None


def static_findings(source: str, policies: Policies | None = None, reference_source: str | None = None) -> list[dict[str, str]]:
    """Every static guard's findings for a candidate that parses and defines ``ModelNew``.

    ``reference_source`` (the task's source) lets the ``reference`` guard see a copied forward.
    """
    p = policies or Policies()
    module = _Module.parse(source)
    return _side_effects(module, p) + _dynamic_code(module, p) + _structure(module, p, reference_source)
