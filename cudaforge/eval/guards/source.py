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
import builtins
import re
import sys
from collections import Counter, deque
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

ATEN_NAMESPACES = {
    "aten",
    "prims",
    "quantized",
    "_quantized",
    "rngprims",
    "higher_order",
    "inductor",
    "_c10d_functional",
}
"""``torch.ops`` namespaces that are torch's own (any other namespace is a custom op)."""

TORCH_LAYOUT = {
    "empty",
    "empty_like",
    "empty_strided",
    "empty_permuted",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "arange",
    "tensor",
    "as_tensor",
    "asarray",
    "from_numpy",
    "as_strided",
    "is_tensor",
    "is_floating_point",
    "is_complex",
    "numel",
    "broadcast_shapes",
    "broadcast_tensors",
    "get_default_dtype",
    "no_grad",
    "nn.functional.pad",
    "inference_mode",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "manual_seed",
    "Size",
    "device",
    "dtype",
    "finfo",
    "iinfo",
    "result_type",
    "promote_types",
    "can_cast",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "chunk",
    "split",
    "tensor_split",
    "narrow",
    "reshape",
    "flatten",
    "unflatten",
    "unsqueeze",
    "squeeze",
    "permute",
    "transpose",
    "swapaxes",
    "t",
    "movedim",
    "moveaxis",
    "view_as_real",
    "view_as_complex",
    "broadcast_to",
    "unbind",
    "select",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "clone",
    "detach",
    "Tensor",
    "Generator",
    "get_device",
    "float32",
    "float16",
    "bfloat16",
    "float64",
    "int32",
    "int64",
    "bool",
    "uint8",
}
"""``torch.<name>`` calls that allocate, view, reshape or copy: allowed under ``torch_ops=strict``."""

TORCH_NEUTRAL_PREFIXES = (
    "cuda.",
    "utils.",
    "autograd.",
    "library.",
    "backends.",
    "_C.",
    "testing.",
    "profiler.",
    "version",
    "nn.init.",
    "nn.Parameter",
    "nn.Module",
    "nn.ModuleList",
    "nn.ModuleDict",
    "nn.ParameterList",
    "nn.ParameterDict",
    "nn.parameter.",
    "overrides.",
    "types.",
    "jit.annotations",
    "_assert",
    "amp.",
)
"""``torch.`` prefixes that are neither compute nor kernels (other guards look at some of them)."""

TORCH_COMPILERS = ("compile", "jit.script", "jit.trace", "_dynamo", "_inductor", "export")
"""torch's compilers: their kernels are torch's, not the candidate's."""

TENSOR_COMPUTE_METHODS = {
    "abs",
    "abs_",
    "acos",
    "add",
    "add_",
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "asin",
    "atan",
    "atan2",
    "baddbmm",
    "bmm",
    "ceil",
    "clamp",
    "clamp_",
    "clamp_max",
    "clamp_min",
    "clamp_min_",
    "clip",
    "clip_",
    "cos",
    "cosh",
    "cummax",
    "cumprod",
    "cumsum",
    "div",
    "div_",
    "dot",
    "eq",
    "erf",
    "erfinv",
    "exp",
    "exp_",
    "exp2",
    "expm1",
    "floor",
    "floor_divide",
    "fmod",
    "frac",
    "gather",
    "ge",
    "gelu",
    "gt",
    "hardtanh",
    "index_add",
    "index_add_",
    "index_fill",
    "index_put",
    "index_select",
    "le",
    "lerp",
    "log",
    "log10",
    "log1p",
    "log2",
    "log_softmax",
    "logaddexp",
    "logcumsumexp",
    "logsumexp",
    "lt",
    "masked_fill",
    "masked_fill_",
    "masked_scatter",
    "masked_select",
    "matmul",
    "max",
    "maximum",
    "mean",
    "median",
    "min",
    "minimum",
    "mm",
    "mul",
    "mul_",
    "multiply",
    "mv",
    "nan_to_num",
    "nanmean",
    "nansum",
    "ne",
    "neg",
    "neg_",
    "norm",
    "outer",
    "pow",
    "pow_",
    "prod",
    "reciprocal",
    "relu",
    "relu_",
    "remainder",
    "repeat",
    "repeat_interleave",
    "roll",
    "round",
    "rsqrt",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "sigmoid",
    "sigmoid_",
    "sign",
    "silu",
    "sin",
    "sinh",
    "softmax",
    "sort",
    "sqrt",
    "sqrt_",
    "square",
    "std",
    "sub",
    "sub_",
    "sum",
    "tanh",
    "tanh_",
    "topk",
    "trace",
    "tril",
    "triu",
    "true_divide",
    "trunc",
    "var",
    "where",
    "xlogy",
    "logical_and",
    "logical_or",
    "logical_not",
    "flip",
    "kthvalue",
    "cross",
}
"""Tensor methods that compute (views, casts, copies and fills are not here)."""

CONCURRENCY_MODULES = (
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "subprocess",
    "sched",
    "signal",
)  # a signal handler runs the candidate's code between the worker's steps
CONCURRENCY_NAMES = (
    "os.fork",
    "os.forkpty",
    "os.system",
    "os.popen",
    "os.spawn",
    "os.exec",
    "os.posix_spawn",
    "pty.spawn",
    "torch.cuda.Stream",
    "torch.cuda.stream",
    "torch.cuda.set_stream",
    "torch.cuda.ExternalStream",
    "torch.cuda.streams",
    "torch.Stream",
    "torch.cuda.CUDAGraph",
    "torch.cuda.graph",
    "torch.cuda.make_graphed",
    "torch.cuda.graph_pool_handle",
    "cupy.cuda.Stream",
    "cupy.cuda.ExternalStream",
    "cupy.cuda.graph",
    "numba.cuda.stream",
    "numba.cuda.external_stream",
    "torch.autograd.profiler",
    "torch.profiler",
    "torch.autograd._enable_profiler",
    "torch.autograd._disable_profiler",
    "torch.autograd._prepare_profiler",
    "torch.autograd._profiler_enabled",
    "torch._C._autograd",
    "torch.cuda.profiler",
    "torch.cuda.cudart",
)
"""Qualified-name prefixes of threads, processes, streams, graphs, and the profiler that records the timed calls."""

CUDA_CONCURRENCY = re.compile(
    r"\b(cudaStreamCreate\w*|cuStreamCreate\w*|getStreamFromPool|getStreamFromExternal|cudaGraph(?:Create|Launch|"
    r"Instantiate|Add)\w*|cudaStreamBeginCapture\w*|cudaStreamPerThread|cudaStreamNonBlocking|pthread_create|"
    r"cudaLaunchHostFunc|cudaStreamAddCallback|cuLaunchHostFunc|cuStreamAddCallback|cuGraph\w+|cuStreamWaitValue\w*|"
    r"cuStreamWriteValue\w*|cuStreamBatchMemOp\w*|cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*|dlopen|dlsym|"
    r"dlvsym|execve|cupti\w*|CUpti\w*|\w*[Pp]rofiler(?:Start|Stop)\w*)\b|std::(?:j?thread|async)\b|"
    r"\bthread\s+\w+\s*[({]|\bthread\s*[({]\s*\[|\basync\s*\(\s*(?:std::)?launch\b|(?<![\w.>])(?:syscall|clone3?)\s*\("
)
CUDA_PATCH = re.compile(
    r"\bTORCH_LIBRARY_IMPL\s*\(\s*aten\b|\bTORCH_LIBRARY_FRAGMENT\s*\(\s*aten\b|"
    r"\bnamespace\s+at\s*(?:::\s*\w+\s*)*\{"
)
CUDA_IO = re.compile(
    r"\b(fopen|fopen64|freopen|open|open64|openat|creat|opendir|readlink|getenv|secure_getenv|socket|popen|system|"
    r"fork|vfork|exec[lv]p?e?|fexecve|posix_spawnp?)\s*\(|\b(?:std::)?[io]?fstream\b|"
    r"\bstd::filesystem\b|\bextern\s+char\s*\*\s*\*\s*environ\b"
)
"""In C, C++ and CUDA sources: reading files or the environment, sockets, starting programs. (Native patches such as
``dlopen``/``mprotect`` are left to the walls: ``hack_native_timer`` shows the verifier's clock catching one.)"""

GLOBAL_STATE_CALLS = (
    "torch.nn.modules.module.register_module_",
    "torch.overrides.TorchFunctionMode",
    "torch.utils._python_dispatch",
    "torch._C._set_torch_function_mode",
    "torch._C._push_on_torch",
    "torch.set_default_dtype",
    "torch.set_default_device",
    "torch.set_default_tensor_type",
    "torch.set_float32_matmul_precision",
    "torch.set_flush_denormal",
    "torch.use_deterministic_algorithms",
    "torch.set_num_threads",
    "torch.set_num_interop_threads",
    "torch.cuda.set_per_process",
    "torch.cuda.memory._set_allocator",
    "torch.cuda.memory.change_current_allocator",
    "torch.cuda.set_sync_debug",
    "torch._C._set",
    "unittest.mock",
    "mock.patch",
)
"""Calls that change torch's (or the process's) global behaviour for the reference too: global module hooks,
torch-function and dispatch modes, aten kernels registered over, default dtypes and devices, backend flags."""
BACKEND_SETTERS = ("enable_", "set_", "allow_", "flags", "sdp_kernel", "preferred_")
"""``torch.backends.*`` calls whose last name starts so: they switch a backend for the whole process."""

NETWORK_MODULES = (
    "socket",
    "ssl",
    "urllib",
    "http",
    "requests",
    "httpx",
    "aiohttp",
    "ftplib",
    "smtplib",
    "telnetlib",
    "urllib3",
    "websocket",
    "websockets",
    "paramiko",
    "xmlrpc",
    "grpc",
)
FILE_READS = {
    "os.listdir",
    "os.scandir",
    "os.walk",
    "os.read",
    "os.pread",
    "os.preadv",
    "os.readv",
    "os.sendfile",
    "os.fdopen",
    "os.readlink",
    "pickle.load",
    "torch.load",
    "torch.from_file",
    "numpy.load",
    "numpy.fromfile",
    "numpy.loadtxt",
    "numpy.genfromtxt",
    "numpy.memmap",
    "numpy.fromregex",
    "json.load",
    "io.FileIO",
    "io.open_code",
    "os.getenv",
    "os.environ.get",
    "tokenize.open",
    "codecs.open",
}
FILE_READ_MODULES = (
    "glob.",
    "shutil.",
    "linecache.",
    "fileinput.",
    "netrc.",
    "mmap.",
    "zipfile.",
    "tarfile.",
    "sqlite3.",
    "dbm.",
    "mailbox.",
    "filecmp.",
    "configparser.",
    "gzip.open",
    "bz2.open",
    "lzma.open",
    "plistlib.load",
    "tomllib.load",
    "wave.open",
    "mimetypes.read",
    "pathlib.Path.read",
)
FILE_READ_METHODS = ("read_text", "read_bytes", "from_file", "open_code")
"""Methods that read a file whatever they are called on (``Path.read_text``, ``torch.UntypedStorage.from_file``)."""
INTROSPECTION_MODULES = ("gc", "inspect", "ctypes", "builtins", "dis", "cudaforge", "__main__", "cudaforge_reference")
INTROSPECTION_NAMES = (
    "sys.modules",
    "sys._getframe",
    "sys.settrace",
    "sys.setprofile",
    "sys._current_frames",
    "sys.addaudithook",
)
INTROSPECTION_BUILTINS = {"globals", "locals", "vars", "breakpoint"}
INTROSPECTION_ATTRS = {
    "__globals__",
    "__code__",
    "__closure__",
    "__subclasses__",
    "__builtins__",
    "f_back",
    "f_globals",
    "f_locals",
    "f_code",
    "gi_frame",
    "tb_frame",
    "cr_frame",
}

DYNAMIC_BUILTINS = {"exec", "eval", "compile", "__import__"}
"""Builtins that run code made from strings or import a module by a computed name."""
LOOKUP_BUILTINS = ("getattr", "setattr", "delattr")
"""Builtins that reach attributes by a string: the guards read literal names through them, so rebinding them (but
by a module-level def of the candidate's own) is a finding."""
DYNAMIC_MODULES = (
    "importlib",
    "imp",
    "_imp",
    "runpy",
    "zipimport",
    "pkgutil",
    "site",
    "code",
    "codeop",
    "py_compile",
    "compileall",
    "_frozen_importlib",
    "_frozen_importlib_external",
    "marshal",
    "pickle",
    "_pickle",
    "cPickle",
    "dill",
    "cloudpickle",
    "shelve",
    "copyreg",
    "copy_reg",
    "pydoc",
    "timeit",
    "doctest",
    "trace",
    "profile",
    "cProfile",
    "pdb",
    "bdb",
)
"""Modules that import, unpickle, unmarshal or run code the candidate's text does not show (``timeit``, ``doctest``,
``profile``, ``pdb``: they run strings)."""
DYNAMIC_SUBMODULES = (
    "importlib",
    "marshal",
    "pickle",
    "_pickle",
    "cPickle",
    "dill",
    "cloudpickle",
    "shelve",
    "copyreg",
    "runpy",
    "zipimport",
    "pkgutil",
)
"""The same, when another module hands them out as an attribute (``torch.serialization.pickle``)."""
DYNAMIC_NAMES = (
    "types.ModuleType",
    "types.FunctionType",
    "types.LambdaType",
    "types.CodeType",
    "logging.config",
    "typing.get_type_hints",
    "typing.ForwardRef",
    "ctypes.CDLL",
    "ctypes.PyDLL",
    "ctypes.cdll",
    "ctypes.pydll",
    "ctypes.LibraryLoader",
    "ctypes.util",
    "numpy.ctypeslib",
    "torch.ops.load_library",
    "torch.classes.load_library",
    "torch.jit.load",
    "torch.jit._load",
    "torch.package",
    "torch.export.load",
    "torch.hub",
    "torch.serialization",
    "torch.fx",
    "torch.jit.CompilationUnit",
    "torch.jit.ScriptModule",
    "torch.jit.ScriptFunction",
    "torch.jit.frontend",
    "torch.jit._script",
    "torch.jit._serialization",
    "torch._C.CompilationUnit",
    "torch._C._jit",
)
"""Qualified names (at any depth: ``os.sys.path`` is ``sys.path``) that build modules, functions or code objects, or
load a library or a program from a file."""
IMPORT_SYSTEM = ("sys.path", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache", "sys.modules")
"""Where imports come from: changing any of them (or naming ``meta_path``/``path_hooks`` at all, or handing
``sys.path`` to a call) is dynamic code; reading ``sys.modules`` is the ``introspection`` guard's."""
MUTATORS = {
    "append",
    "insert",
    "extend",
    "remove",
    "pop",
    "popitem",
    "clear",
    "update",
    "setdefault",
    "__setitem__",
    "__delitem__",
    "__iadd__",
}
"""Methods that change a list or a dict in place."""
DYNAMIC_DUNDERS = {"__dict__", "__getattribute__", "__getattr__", "__setattr__"}
"""Attributes that look other attributes up by a string the guards cannot follow."""
INTERPRETER_INTERNALS = {
    "__func__",
    "__self__",
    "__globals__",
    "__builtins__",
    "__code__",
    "__closure__",
    "__subclasses__",
    "__mro__",
    "__bases__",
    "__base__",
    "__reduce__",
    "__reduce_ex__",
}
"""Attributes that lead from any object to the interpreter's internals (a function's globals and builtins, hence
``exec``; a class's subclasses): from there any code runs."""
INTERNAL_NAMES = (
    DYNAMIC_DUNDERS
    | INTERPRETER_INTERNALS
    | {
        "__class__",
        "__delattr__",
        "__import__",
        "__loader__",
        "__spec__",
        "__init_subclass__",
        "f_globals",
        "f_locals",
        "f_back",
        "f_builtins",
        "f_code",
        "gi_frame",
        "tb_frame",
        "cr_frame",
        "co_code",
    }
)
"""Names that, given as strings, let code made of strings (``torch.fx``'s ``call_method``, a lookup by name) reach the
interpreter's internals: a string literal equal to one is a ``dynamic_code`` finding."""
IMPORT_MACHINERY = {"__loader__", "__spec__"}
"""Module globals that hand the import machinery (a loader for any path) to the candidate."""
KNOWN_PACKAGES = ("torch", "triton", "numpy", "cupy", "cupyx", "cutlass", "cuda", "tilelang", "numba", "pycuda")
"""Packages a candidate may import besides the standard library and the kernel languages' own modules: torch, the
kernel languages' packages (``cuda`` is cuda-python, which CuTe DSL candidates import; ``numba`` and ``pycuda`` are
the other technologies the guards know kernels of)."""
KNOWN_MODULES = (
    frozenset(sys.stdlib_module_names)
    | set(KNOWN_PACKAGES)
    | set(languages.names())
    | {module.split(".")[0] for language in languages.languages() for module in language.modules}
)
"""Top-level names an ``import`` may use: anything else could only be a module the candidate wrote itself."""
LOADABLE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd", ".pth")
"""File names Python can import or load: a candidate may not write them (CUDA and C++ sources it may)."""
PATH_CALLS = (
    "os.path.join",
    "posixpath.join",
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "os.path.abspath",
    "os.path.realpath",
    "os.path.normpath",
    "os.path.expanduser",
    "os.fspath",
)
"""Calls whose result ends as their last argument does."""
TEMP_FILES = (
    "tempfile.NamedTemporaryFile",
    "tempfile.mkstemp",
    "tempfile.mktemp",
    "tempfile.TemporaryFile",
    "tempfile.SpooledTemporaryFile",
)
"""Calls that make a file named by their ``suffix``."""

MAX_LISTED = 6
"""At most this many places are listed in one finding's evidence."""

# --------------------------------------------------------------------------- torch_ops=strict: an allow-list

TENSOR_ATTRIBUTES = frozenset(
    """
H T __abs__ __add__ __and__ __array__ __array_priority__ __array_wrap__ __bool__ __class__ __complex__ __contains__
__cuda_array_interface__ __deepcopy__ __delattr__ __delitem__ __dir__ __div__ __dlpack__ __dlpack_c_exchange_api__
__dlpack_device__ __eq__ __float__ __floordiv__ __format__ __ge__ __getattribute__ __getitem__ __getstate__ __gt__
__hash__ __iadd__ __iand__ __idiv__ __ifloordiv__ __ilshift__ __imod__ __imul__ __index__ __init__ __init_subclass__
__int__ __invert__ __ior__ __ipow__ __irshift__ __isub__ __iter__ __itruediv__ __ixor__ __le__ __len__ __long__
__lshift__ __lt__ __matmul__ __mod__ __mul__ __ne__ __neg__ __new__ __nonzero__ __or__ __pos__ __pow__ __radd__
__rand__ __rdiv__ __reduce__ __reduce_ex__ __repr__ __reversed__ __rfloordiv__ __rlshift__ __rmatmul__ __rmod__
__rmul__ __ror__ __rpow__ __rrshift__ __rshift__ __rsub__ __rtruediv__ __rxor__ __setattr__ __setitem__ __setstate__
__sizeof__ __str__ __sub__ __subclasshook__ __torch_dispatch__ __torch_function__ __truediv__ __xor__
_addmm_activation _autocast_to_full_precision _autocast_to_reduced_precision _backward_hooks _base _cdata
_clear_non_serializable_cached_data _coalesced_ _conj _conj_physical _dimI _dimV _dtensor__new__ _fix_weakref _grad
_grad_fn _has_symbolic_sizes_strides _indices _is_all_true _is_any_true _is_view _is_zerotensor _lazy_clone
_make_subclass _make_wrapper_subclass _neg_view _nested_tensor_size _nested_tensor_storage_offsets
_nested_tensor_strides _nnz _philox_normal_ _philox_uniform_ _post_accumulate_grad_hooks _python_dispatch
_reduce_ex_internal _rev_view_func_unsafe _sparse_mask_projection _to_dense _to_sparse _to_sparse_bsc _to_sparse_bsr
_to_sparse_csc _to_sparse_csr _typed_storage _use_count _values _version _view_func _view_func_unsafe abs abs_
absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv addcdiv_ addcmul addcmul_ addmm addmm_
addmv addmv_ addr addr_ adjoint all allclose amax amin aminmax angle any apply_ arccos arccos_ arccosh arccosh_
arcsin arcsin_ arcsinh arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere
as_strided as_strided_ as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2 atan2_ atan_ atanh atanh_
backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount bitwise_and bitwise_and_ bitwise_left_shift
bitwise_left_shift_ bitwise_not bitwise_not_ bitwise_or bitwise_or_ bitwise_right_shift bitwise_right_shift_
bitwise_xor bitwise_xor_ bmm bool broadcast_to byte cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char
cholesky cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_ clip clip_
clone coalesce col_indices conj conj_physical conj_physical_ const_data_ptr contiguous copy_ copysign copysign_
corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu cross crow_indices cuda cummax cummin cumprod cumprod_ cumsum
cumsum_ data data_ptr deg2rad deg2rad_ dense_dim dequantize det detach detach_ device diag diag_embed diagflat
diagonal diagonal_scatter diff digamma digamma_ dim dim_order dist div div_ divide divide_ dot double dsplit dtype
eig element_size eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_ exp_ expand expand_as expm1 expm1_
exponential_ fill_ fill_diagonal_ fix fix_ flatten flip fliplr flipud float float_power float_power_ floor floor_
floor_divide floor_divide_ fmax fmin fmod fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger
get_device grad grad_dtype grad_fn greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink hash_tensor
heaviside heaviside_ histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_ igammac igammac_ imag index index_add
index_add_ index_copy index_copy_ index_fill index_fill_ index_put index_put_ index_reduce index_reduce_
index_select indices inner int int_repr inverse ipu is_coalesced is_complex is_conj is_contiguous is_cpu is_cuda
is_distributed is_floating_point is_inference is_ipu is_leaf is_maia is_meta is_mkldnn is_mps is_mtia is_neg
is_nested is_nonzero is_pinned is_quantized is_same_size is_set_to is_shared is_signed is_sparse is_sparse_csr
is_vulkan is_xla is_xpu isclose isfinite isinf isnan isneginf isposinf isreal istft item itemsize kron kthvalue
layout lcm lcm_ ldexp ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_ log log10 log10_
log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp logaddexp2 logcumsumexp logdet logical_and
logical_and_ logical_not logical_not_ logical_or logical_or_ logical_xor logical_xor_ logit logit_ logsumexp long
lstsq lt lt_ lu lu_solve mH mT map2_ map_ masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select
matmul matrix_exp matrix_power max maximum mean median min minimum mm mode module_load moveaxis movedim msort mtia
mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_ name nan_to_num nan_to_num_ nanmean nanmedian
nanquantile nansum narrow narrow_copy nbytes ndim ndimension ne ne_ neg neg_ negative negative_ nelement new
new_empty new_empty_strided new_full new_ones new_tensor new_zeros nextafter nextafter_ nonzero nonzero_static norm
normal_ not_equal not_equal_ numel numpy orgqr ormqr outer output_nr permute pin_memory pinverse polygamma
polygamma_ positive pow pow_ prelu prod put put_ q_per_channel_axis q_per_channel_scales q_per_channel_zero_points
q_scale q_zero_point qr qscheme quantile rad2deg rad2deg_ random_ ravel real reciprocal reciprocal_ record_stream
register_hook register_post_accumulate_grad_hook reinforce relu relu_ remainder remainder_ renorm renorm_ repeat
repeat_interleave requires_grad requires_grad_ reshape reshape_as resize resize_ resize_as resize_as_
resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad roll rot90 round round_ row_indices rsqrt rsqrt_
scatter scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select select_scatter set_ sgn sgn_ shape
share_memory_ short sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size slice_inverse
slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ split
split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_ sspaddmm std stft storage storage_offset storage_type
stride sub sub_ subtract subtract_ sum sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ symeig t t_ take
take_along_dim tan tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn to_padded_tensor to_sparse to_sparse_bsc
to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace transpose transpose_ triangular_solve tril
tril_ triu triu_ true_divide true_divide_ trunc trunc_ type type_as unbind unflatten unfold uniform_ unique
unique_consecutive unsafe_chunk unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values var
vdot view view_as volatile vsplit where xlogy xlogy_ xpu zero_
""".split()
)
"""Every attribute of ``torch.Tensor`` (torch 2.13; tests/test_guards.py checks the installed torch against the list).
Under ``torch_ops=strict`` a method of one of these names, on what may be a tensor, is PyTorch compute unless it is
one of ``TENSOR_LAYOUT_METHODS`` or ``TENSOR_SCALAR_METHODS``; a name not here is no tensor's (calling it on a tensor
fails), so it is some other object's method."""

TENSOR_LAYOUT_METHODS = frozenset(
    {
        "contiguous",
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "flatten",
        "unflatten",
        "ravel",
        "squeeze",
        "squeeze_",
        "unsqueeze",
        "unsqueeze_",
        "permute",
        "transpose",
        "transpose_",
        "t",
        "t_",
        "swapaxes",
        "swapaxes_",
        "swapdims",
        "swapdims_",
        "movedim",
        "moveaxis",
        "expand",
        "expand_as",
        "broadcast_to",
        "narrow",
        "select",
        "unbind",
        "split",
        "split_with_sizes",
        "chunk",
        "tensor_split",
        "hsplit",
        "vsplit",
        "dsplit",
        "unsafe_chunk",
        "unsafe_split",
        "unsafe_split_with_sizes",
        "as_strided",
        "unfold",
        "diagonal",
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "bfloat16",
        "double",
        "int",
        "long",
        "short",
        "bool",
        "byte",
        "char",
        "cfloat",
        "cdouble",
        "chalf",
        "type",
        "type_as",
        "clone",
        "detach",
        "detach_",
        "copy_",
        "zero_",
        "fill_",
        "new_empty",
        "new_empty_strided",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_tensor",
        "new",
        "requires_grad_",
        "pin_memory",
        "resize_",
        "resize_as_",
        "record_stream",
        "numpy",
        "__getitem__",
        "__setitem__",
        "__iter__",
        "__deepcopy__",
        "__array__",
        "__dlpack__",
    }
)
"""Tensor methods that allocate, view, reshape, cast, copy or fill: allowed under strict (their result is a tensor)."""

TENSOR_SCALAR_METHODS = frozenset(
    {
        "size",
        "stride",
        "numel",
        "nelement",
        "dim",
        "ndimension",
        "data_ptr",
        "const_data_ptr",
        "element_size",
        "item",
        "tolist",
        "is_contiguous",
        "get_device",
        "storage_offset",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "is_pinned",
        "is_shared",
        "is_set_to",
        "is_same_size",
        "is_inference",
        "is_conj",
        "is_neg",
        "dim_order",
        "untyped_storage",
        "storage",
        "storage_type",
        "sparse_dim",
        "dense_dim",
        "__len__",
        "__int__",
        "__float__",
        "__bool__",
        "__index__",
        "__complex__",
        "__long__",
        "__nonzero__",
        "__repr__",
        "__str__",
        "__format__",
        "__hash__",
        "__sizeof__",
        "__dlpack_device__",
        "__dir__",
        "is_coalesced",
    }
)
"""Tensor methods whose result is plain Python data (sizes, strides, pointers, flags): allowed under strict."""

TENSOR_SCALAR_ATTRIBUTES = frozenset(
    {
        "shape",
        "ndim",
        "dtype",
        "device",
        "layout",
        "is_cuda",
        "is_cpu",
        "is_leaf",
        "requires_grad",
        "itemsize",
        "nbytes",
        "names",
        "name",
        "is_sparse",
        "is_sparse_csr",
        "is_quantized",
        "is_meta",
        "is_mkldnn",
        "is_nested",
        "is_xpu",
        "is_mps",
        "is_ipu",
        "is_xla",
        "is_vulkan",
        "is_maia",
        "is_mtia",
        "grad_fn",
        "output_nr",
        "_version",
        "__cuda_array_interface__",
        "retains_grad",
        "volatile",
        "__array_priority__",
        "grad_dtype",
    }
)
"""Tensor properties that are plain data."""

TENSOR_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag", "_base"})
"""Tensor properties that are tensors (views)."""

TORCH_STRICT_NEUTRAL = (
    "cuda.current_stream",
    "cuda.default_stream",
    "cuda.current_device",
    "cuda.device",
    "cuda.device_count",
    "cuda.device_of",
    "cuda.get_device_properties",
    "cuda.get_device_capability",
    "cuda.get_device_name",
    "cuda.is_available",
    "cuda.is_initialized",
    "cuda.synchronize",
    "cuda.set_device",
    "cuda.Event",
    "cuda.nvtx",
    "cuda.memory_allocated",
    "cuda.max_memory_allocated",
    "cuda.memory_reserved",
    "cuda.max_memory_reserved",
    "cuda.reset_peak_memory_stats",
    "cuda.empty_cache",
    "cuda.amp.autocast",
    "cuda.get_arch_list",
    "cuda.Stream",
    "cuda.stream",
    "cuda.ExternalStream",
    "cuda.StreamContext",
    "cuda.manual_seed",
    "cuda.mem_get_info",
    "utils.cpp_extension",
    "utils.dlpack",
    "autograd.Function",
    "autograd.function",
    "library",
    "backends",
    "version",
    "__version__",
    "_assert",
    "amp",
    "autocast",
    "get_autocast",
    "is_autocast_enabled",
    "jit.is_scripting",
    "jit.is_tracing",
    "jit.annotations",
    "jit.unused",
    "jit.ignore",
    "compiler.is_compiling",
    "compiler.disable",
    "profiler.record_function",
    "nn.Parameter",
    "nn.parameter",
    "nn.Buffer",
    "nn.Module",
    "nn.ModuleList",
    "nn.ModuleDict",
    "nn.ParameterList",
    "nn.ParameterDict",
    "nn.Sequential",
    "types",
    "get_default_device",
    "is_inference_mode_enabled",
    "is_storage",
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "Stream",
    "Event",
)
"""``torch.<path>`` calls (a path, or a prefix ending at a dot) that are neither compute nor kernels: devices and
streams, the build path, autograd.Function, custom-op registration (``torch.library``: the Python functions
registered there are read as the candidate's own code), grad modes, autocast, module containers. Together with
``TORCH_LAYOUT`` they are everything of torch that code ModelNew runs may call under strict: any other
``torch.<path>`` (``torch._C...``, ``torch.nn.modules...``, ``torch.ops.aten...``) is compute."""

TORCH_SCALAR = {
    "numel",
    "is_tensor",
    "is_floating_point",
    "is_complex",
    "broadcast_shapes",
    "get_default_dtype",
    "result_type",
    "promote_types",
    "can_cast",
    "Size",
    "device",
    "dtype",
    "finfo",
    "iinfo",
    "is_grad_enabled",
    "Generator",
}
"""``torch.<name>`` calls whose result is plain data (sizes, dtypes, devices, flags)."""

TORCH_CONSTANT = re.compile(
    r"(u?int\d*|float\d*(_\w+)?|bfloat16|half|double|long|short|bool|cfloat|cdouble|chalf|complex\d*|q(?=\w*$)\w*int\d*\w*|"
    r"bits\w*|contiguous_format|channels_last(_3d)?|preserve_format|strided|sparse_\w+|_mkldnn|jagged|pi|e|inf|nan|"
    r"newaxis|__version__|version|__\w+__)$"
)
"""Last names of ``torch.`` attributes that are values, not functions (dtypes, memory formats, layouts, constants)."""

TORCH_MODULES = {
    "nn",
    "nn.functional",
    "nn.init",
    "nn.modules",
    "nn.parameter",
    "nn.utils",
    "cuda",
    "cuda.amp",
    "linalg",
    "fft",
    "special",
    "utils",
    "autograd",
    "library",
    "backends",
    "distributions",
    "jit",
    "ops",
    "testing",
    "profiler",
    "amp",
    "cpu",
    "mps",
    "sparse",
    "nested",
    "overrides",
    "types",
    "random",
    "hub",
    "onnx",
    "quantization",
    "ao",
    "futures",
    "distributed",
    "multiprocessing",
    "package",
    "fx",
    "export",
    "compiler",
    "_dynamo",
    "_inductor",
    "_C",
    "_ops",
    "masked",
    "signal",
    "func",
    "xpu",
    "mtia",
    "accelerator",
    "storage",
    "serialization",
    "functional",
}
"""``torch.`` submodules: taken as values they are modules, not compute functions (what is called on them is judged)."""

KERNEL_MODULE_ROOTS = (
    frozenset(languages.names())
    | {module.split(".")[0] for language in languages.languages() for module in language.modules}
    | {"numba", "cuda", "cupyx"}
)
"""Top-level modules whose decorators and host APIs are a kernel language's (triton, cutlass, tilelang, numba.cuda
...): only a decorator that resolves, through the candidate's imports, to one of them makes a kernel."""

KERNEL_LIBRARY_OPS = (
    "triton.ops",
    "triton.testing",
    "cutlass.op",
    "cupyx.scipy",
    "cupyx.linalg",
    "cupy.linalg",
    "cupy.fft",
    "cupy.cublas",
    "cupy.cuda.cublas",
    "cupy.cuda.cudnn",
    "cupy.cudnn",
    "cupyx.cusparse",
    "cupyx.cudnn",
)
"""Libraries of ready-made kernels shipped with kernel languages: under strict they are compute like torch's."""

ARRAY_MODULES = ("numpy", "cupy", "cupyx")
"""Array libraries: their functions compute when given what may be a tensor or an array."""
ARRAY_LAYOUT = {
    "asarray",
    "ascontiguousarray",
    "array",
    "empty",
    "empty_like",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "frombuffer",
    "from_dlpack",
    "fromDlpack",
    "dtype",
    "get_array_module",
    "ndarray",
    "uint64",
    "int64",
    "int32",
    "uint32",
    "intp",
    "uintp",
    "float32",
    "float16",
    "float64",
    "cuda",
}
"""Array-library calls that allocate or convert (allowed under strict)."""

PLAIN_BUILTINS = {
    "len",
    "isinstance",
    "issubclass",
    "hasattr",
    "callable",
    "id",
    "hash",
    "repr",
    "str",
    "format",
    "print",
    "int",
    "float",
    "bool",
    "complex",
    "chr",
    "ord",
    "bin",
    "hex",
    "oct",
    "range",
    "slice",
    "object",
    "ascii",
    "bytes",
    "bytearray",
    "memoryview",
    "property",
    "staticmethod",
    "classmethod",
    "NotImplemented",
    "Ellipsis",
    "input",
}
"""Builtins that are plain Python whatever they are given (``int(t)`` reads a one-element tensor)."""
ARITHMETIC_BUILTINS = {"abs", "pow", "round", "sum", "min", "max", "divmod", "sorted", "all", "any"}
"""Builtins that apply Python's operators: compute when what they are given may hold tensors."""
STDLIB_ARITHMETIC = ("statistics", "fractions", "decimal", "heapq", "bisect", "itertools.accumulate")
"""Standard-library modules and functions that apply Python's operators to what they are given."""
CONTAINER_READS = {"get", "pop", "popitem", "values", "keys", "items", "copy", "setdefault", "__getitem__", "index"}
"""Container methods whose result is (one of) the container's elements."""
OPERATOR_PLAIN = {
    "itemgetter",
    "attrgetter",
    "methodcaller",
    "index",
    "is_",
    "is_not",
    "not_",
    "truth",
    "getitem",
    "contains",
    "countOf",
    "indexOf",
    "length_hint",
}
"""``operator`` functions that are no arithmetic."""
NN_MODULE_METHODS = {
    "forward",
    "apply",
    "cuda",
    "cpu",
    "to",
    "type",
    "float",
    "half",
    "double",
    "bfloat16",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
    "train",
    "eval",
    "requires_grad_",
    "zero_grad",
    "state_dict",
    "load_state_dict",
    "add_module",
    "register_module",
    "get_submodule",
    "get_parameter",
    "get_buffer",
    "extra_repr",
    "register_buffer",
    "register_parameter",
}
"""Methods of an ``nn.Module``: on a torch layer, calling one runs the layer (or hands out its parts)."""
LAYER_DATA = re.compile(r"(weight|bias)(_\w+)?|\w+_(weight|bias)|running_\w+|num_batches_tracked|bias_[kv]")
"""Attributes of a torch layer that are its tensors (parameters and buffers)."""


# --------------------------------------------------------------------------- the candidate's module


REROOTS = {
    "torch",
    "os",
    "sys",
    "subprocess",
    "glob",
    "shutil",
    "io",
    "builtins",
    "importlib",
    "pickle",
    "ctypes",
    "socket",
    "threading",
    "multiprocessing",
    "pathlib",
    "tempfile",
    "signal",
    "marshal",
    "runpy",
    "inspect",
    "gc",
    "types",
    "_thread",
    "concurrent",
    "asyncio",
    "numpy",
    "triton",
}
"""Modules that other modules hold as attributes (``torch.library.torch``, ``torch.utils.cpp_extension.os``): a path
through one of them is the path from it."""


def _reroot(qual: str) -> str:
    """``qual`` named from the last module of :data:`REROOTS` it passes through after its first part (and torch's
    ``_C`` from torch): ``torch.library.torch.relu`` is ``torch.relu``, ``torch.autograd.function._C.x`` is
    ``torch._C.x``."""
    parts = qual.split(".")
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in REROOTS:
            return ".".join(parts[i:])
        if parts[i] == "_C" and parts[0] == "torch" and i > 1:
            return ".".join(["torch", *parts[i:]])
    return qual


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
                self.operator.update(
                    (a.asname or a.name, "operator") for a in node.names if a.name in ("operator", "_operator")
                )
            elif isinstance(node, ast.ImportFrom) and node.module in ("operator", "_operator") and not node.level:
                self.operator.update((a.asname or a.name, f"operator.{a.name}") for a in node.names)
            stack.extend(ast.iter_child_nodes(node))
        self.definitions = {
            node.name
            for node in _top_level(tree.body)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and self.bindings[node.name] == 1
        }
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
            if (
                isinstance(value, ast.Attribute)
                and value.attr == "__dict__"
                and isinstance(node.ctx, ast.Load)
                and _literal_name(node.slice)
            ):
                return self._attribute(value.value, node.slice.value, node)  # type: ignore[attr-defined]
            return node
        if not isinstance(node, ast.Call):
            return node
        func, args = node.func, node.args
        if (
            isinstance(func, ast.Name)
            and func.id == "getattr"
            and "getattr" not in self.definitions
            and 2 <= len(args) <= 3
            and not node.keywords
            and _literal_name(args[1])
        ):
            return self._attribute(args[0], args[1].value, node)  # type: ignore[attr-defined]
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "get"
            and isinstance(func.value, ast.Attribute)
            and func.value.attr == "__dict__"
            and 1 <= len(args) <= 2
            and not node.keywords
            and _literal_name(args[0])
        ):
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
    text = re.sub(r"/\*.*?(?:\*/|\Z)", " ", text, flags=re.S)  # an unclosed one runs to the end (linear, not n^2)
    return re.sub(r"//[^\n]*", " ", text)


def _looks_like_c(text: str) -> bool:
    return any(
        k in text
        for k in (
            "#include",
            "__global__",
            "torch::",
            'extern "C"',
            "<<<",
            "__device__",
            "#define",
            "#pragma",
            "std::",
            "PYBIND11_MODULE",
            "TORCH_LIBRARY",
            "__host__",
            "__shared__",
        )
    )


def _build_sources(m: _Module) -> set[int]:
    """ids of the string literals a kernel build is given, directly or through module-level names (``cpp_sources=
    CPP``, ``CUDA = HEADER + BODY``): C, C++ or CUDA sources, whatever they look like."""
    values: dict[str, list[ast.expr]] = {}
    for node in _top_level(m.tree.body):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    values.setdefault(target.id, []).append(node.value)
    queue: list[ast.AST] = [
        a
        for n in ast.walk(m.tree)
        if isinstance(n, ast.Call) and m.is_builder(n)
        for a in [*n.args, *(k.value for k in n.keywords)]
    ]
    found: set[int] = set()
    seen: set[str] = set()
    while queue:
        for sub in ast.walk(queue.pop()):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                found.add(id(sub))
            elif isinstance(sub, ast.Name) and sub.id in values and sub.id not in seen:
                seen.add(sub.id)
                queue += values[sub.id]
    return found


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
    kernel_defs: set[int] = field(default_factory=set)
    """ids of those functions' defs (a def of another name's body is read even if a kernel shares its name)."""
    _decorated: tuple | None = None
    """What finding the kernels needs, scanned once."""
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
        """The qualified name an expression stands for (``torch.nn.functional.relu``), or None; a path through a
        module that re-exports another (``torch.library.torch.relu``, ``cpp_extension.os.environ``) is named by the
        module it reaches (``torch.relu``, ``os.environ``)."""
        if isinstance(node, ast.Name):
            found = self.aliases.get(node.id)
            return _reroot(found) if found else None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "self":
                return self.self_aliases.get(node.attr)
            base = self.qual(node.value)
            return _reroot(f"{base}.{node.attr}") if base else None
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
        self._find_kernels()
        self._bind_values()
        if self._find_kernels():  # a decorator aliased by assignment (jit = triton.jit) resolves only now
            self._bind_values()

    def _bind_values(self) -> None:
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
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and self.builtin("setattr")
            and len(node.args) == 3
            and not node.keywords
            and _literal_name(node.args[1]) is not None
        )

    def _find_kernels(self) -> bool:
        """Find the defs a kernel language's own decorator makes kernels; True when some are new."""
        if self._decorated is None:
            self._decorated = self._scan_decorated()
        binds, imports, decorated = self._decorated
        before = len(self.kernel_defs)
        for node, chain in decorated:
            if any(self._is_kernel_decorator(d, chain, binds, imports) for d in node.decorator_list):
                self.kernels.add(node.name)
                self.kernel_defs.add(id(node))
        return len(self.kernel_defs) != before

    def _scan_decorated(self) -> tuple[dict[int, Counter[str]], dict[int, Counter[str]], list]:
        """(scope id -> how often it binds each name; the same for imports; decorated defs with their scopes)."""
        binds: dict[int, Counter[str]] = {}
        imports: dict[int, Counter[str]] = {}
        decorated = []
        stack: list[tuple[ast.AST, tuple[ast.AST, ...]]] = [(self.tree, (self.tree,))]
        while stack:
            node, chain = stack.pop()
            name = _binds(node)
            if name:
                binds.setdefault(id(chain[-1]), Counter())[name] += 1
                if isinstance(node, ast.alias):
                    imports.setdefault(id(chain[-1]), Counter())[name] += 1
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                binds.setdefault(id(self.tree), Counter()).update(node.names)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.decorator_list:
                decorated.append((node, chain))
            inner = (
                chain + (node,)
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
                else chain
            )
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        return binds, imports, decorated

    def _is_kernel_decorator(
        self,
        node: ast.expr,
        chain: tuple[ast.AST, ...],
        binds: dict[int, Counter[str]],
        imports: dict[int, Counter[str]],
    ) -> bool:
        """Whether a decorator is a kernel language's (``triton.jit``, ``cute.kernel``, ``T.prim_func``,
        ``numba.cuda.jit`` ...): its name must resolve, where the decorated def is, to that language's module through imports only
        (or one module-level assignment such as ``jit = triton.jit``). A decorator of the candidate's own named
        ``jit``, or a name it also binds to something else, makes no kernel: the function's body is then read."""
        target = node.func if isinstance(node, ast.Call) else node
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        scopes = list(reversed(chain))
        for depth, scope in enumerate(scopes):
            if isinstance(scope, ast.ClassDef) and depth > 0:
                continue  # a class's names are seen by its body, not by the functions in it
            count = binds.get(id(scope), Counter())[root.id]
            if count:
                break
        else:
            return False
        if imports.get(id(scope), Counter())[root.id] != count and (count != 1 or scope is not self.tree):
            return False
        parts = (self.qual(target) or "").split(".")
        if parts[-1] not in KERNEL_DECORATORS or parts[0] not in KERNEL_MODULE_ROOTS:
            return False
        return parts[0] != "numba" or "cuda" in parts

    def is_builder(self, call: ast.Call) -> bool:
        """A call that builds kernels from source (load_inline, torch.utils.cpp_extension.load, RawKernel ...)."""
        q = self.qual(call.func) or ""
        last = q.split(".")[-1] if q else (call.func.attr if isinstance(call.func, ast.Attribute) else "")
        return (
            last in KERNEL_BUILDERS
            or q == "torch.utils.cpp_extension.load"
            or (q.startswith("triton.") and last == "jit")
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
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "ModelNew" for t in node.targets
            ):
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
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id in self.classes
                ):
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
                    uses.append(f"{_text(node, 80)} ({_where(node)})")
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
            if id(node) in self.kernel_defs:
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
            what, rest = self._torch_call(q), q[len("torch.") :]
            function = q.split(".")[-1] in TENSOR_COMPUTE_METHODS or rest.startswith(
                ("nn.functional.", "special.", "linalg.", "fft.", "Tensor.", *TORCH_COMPILERS)
            )
            return f"{what} (taken as a value)" if what and function else None
        if isinstance(node, ast.Attribute) and node.attr in TENSOR_COMPUTE_METHODS and q is None:
            root = node.value
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if (
                isinstance(root, ast.Name)
                and root.id != "self"
                and not (root.id in self.kernels or root.id in self.extensions or root.id in self.aliases)
            ):
                return f".{node.attr} (a bound method taken as a value)"
        return None

    def _torch_call(self, q: str) -> str | None:
        rest = q[len("torch.") :]
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


N, T, U = "n", "t", "?"
"""Tokens of the strict analysis: plain Python data (ints, sizes, strings, None), what may be a tensor, unknown."""
KERNEL = ("k",)
"""A kernel, an extension built from the candidate's source, or an object of a kernel language (launches allowed)."""
EMPTY: frozenset = frozenset()
BUILTIN_NAMES = frozenset(dir(builtins))
CONTAINER_METHODS = {
    "append",
    "extend",
    "insert",
    "remove",
    "pop",
    "popitem",
    "clear",
    "update",
    "setdefault",
    "get",
    "keys",
    "values",
    "items",
    "copy",
    "index",
    "count",
    "sort",
    "reverse",
    "add",
    "discard",
    "union",
    "intersection",
    "difference",
    "join",
    "split",
    "format",
    "startswith",
    "endswith",
    "strip",
    "replace",
    "lower",
    "upper",
    "appendleft",
    "__getitem__",
    "__setitem__",
    "__len__",
    "__contains__",
    "__iter__",
    "most_common",
}
"""Methods of lists, dicts, sets and strings."""
OPERATOR_SYMBOLS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.MatMult: "@",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.USub: "-",
    ast.UAdd: "+",
    ast.Invert: "~",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
MODEL_ENTRIES = ("forward", "__call__", "_call_impl", "_wrapped_call_impl")
"""What calling a ModelNew may run: nn.Module's ``__call__`` runs ``_wrapped_call_impl``, ``_call_impl``, ``forward``."""
STATE_STORES = ("register_buffer", "register_parameter", "add_module", "register_module")
"""Module methods that bind ``self.<name>`` as an assignment does."""


def _may_tensor(tokens) -> bool:
    """Whether a value with these tokens may be a tensor (then Python's operators on it are PyTorch compute)."""
    return any(t in (T, U) or (type(t) is tuple and t[0] in ("k", "inst", "umeth")) for t in tokens)


def _text(node: ast.AST, limit: int = 60) -> str:
    """``node`` as source, on one line, at most ``limit`` characters."""
    try:
        text = " ".join(ast.unparse(node).split())
    except (RecursionError, ValueError, AttributeError):
        text = type(node).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _short(q: str) -> str:
    return q.replace("torch.nn.functional.", "F.")


class _BindTarget:
    """A step of an evaluation: bind a comprehension's target once its iterable is known."""

    __slots__ = ("comp",)

    def __init__(self, comp: ast.comprehension) -> None:
        self.comp = comp


@dataclass(eq=False)
class _Scope:
    """A module, function or lambda: the names it binds, and where names it does not bind are looked up."""

    node: ast.AST
    parent: _Scope | None
    cls: ast.ClassDef | None
    """The class a function is a method of (or a function nested in one is)."""
    bound: set[str] = field(default_factory=set)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)

    @property
    def key(self) -> int:
        return 0 if isinstance(self.node, ast.Module) else id(self.node)


@dataclass(eq=False)
class _Job:
    """One statement (its header, for compound ones) or one lambda's body, evaluated in ``scope``; ``cls`` when the
    statement is in that class's body (its assignments and defs are the class's attributes)."""

    scope: _Scope
    node: ast.AST
    cls: ast.ClassDef | None = None


class _Strict:
    """``torch_ops=strict`` as an allow-list over the code ModelNew runs.

    Every statement of the candidate (but its kernels' bodies and its ``__main__`` block) is interpreted over
    abstract values, flow-insensitively, to a fixed point: what each name, ``self.<attr>``, container element,
    parameter and return value may hold. A value is a set of tokens: ``N`` plain data (ints, sizes, strings, None),
    ``T`` maybe a tensor, ``U`` unknown, ``KERNEL``, and tuples: ``("own", def, offset)`` a function, lambda or
    class of the candidate (``offset`` parameters already bound), ``("inst", class)``, ``("torch", qual)``,
    ``("mod", qual)``, ``("layer", qual)`` a torch nn layer, ``("tobj", qual)`` another torch object,
    ``("tmeth", name)`` a tensor's bound method, ``("umeth", name)`` a method of something unknown, ``("pymeth",
    name, container)``, ``("seq", key)``/``("tup", key)`` a container, ``("builtin", name)``, ``("super", class)``.
    Calls of the candidate's own code bind its parameters and are followed; what forward reaches that way (lambdas
    and nested defs kept on ``self`` or in containers, ``functools.partial``, properties, grids, hooks and the
    Python implementations of its custom ops included) is then judged: a call there must be a kernel launch, a
    ``TORCH_LAYOUT``/``TORCH_STRICT_NEUTRAL`` call, a layout or size method of a tensor, plain Python or the
    candidate's own code; an operator may not apply to what may be a tensor. PyTorch functions taken as values
    anywhere ModelNew's construction or forward runs are compute too (they are called elsewhere)."""

    BUDGET = 40
    """Evaluations per statement before the fixed point is given up (what is known by then is judged)."""

    def __init__(self, m: _Module, cls: ast.ClassDef) -> None:
        self.m, self.cls = m, cls
        self.loc: dict[tuple, set] = {}
        self.readers: dict[tuple, set[int]] = {}
        self.jobs: list[_Job] = []
        self.unit_jobs: dict[int, list[int]] = {}
        self.units: dict[int, ast.AST] = {}
        self.edges: dict[int, set[ast.AST]] = {}
        self.seq_kind: dict[object, str] = {}
        self.callees: set[int] = set()
        self.prefixes: set[int] = set()
        self.subclasses: dict[int, list[ast.ClassDef]] = {}
        self.queue: deque[int] = deque()
        self.queued: set[int] = set()
        self.current: int | None = None
        self.job: _Job | None = None
        self.judging = False
        self.mode = ""
        self.flags: list[tuple[ast.AST, str, str]] = []
        self.launches: list[str] = []
        """The launches of the candidate's kernels in what ModelNew runs, as ``what (line N)``."""
        self.namespaces = self._own_namespaces()
        classes = [n for n in ast.walk(m.tree) if isinstance(n, ast.ClassDef)]
        for c in classes:
            for base in m.bases(c):
                self.subclasses.setdefault(id(base), []).append(c)
        self.module = _Scope(m.tree, None, None)
        self.units[0] = m.tree
        self.unit_jobs[0] = []
        self._index_body(m.tree.body, self.module, None)
        self.seeded: set[int] = set()
        for name, tokens in (("__init__", {N}), *((name, {T}) for name in MODEL_ENTRIES)):
            method = m.method(cls, name)
            if method is not None and id(method) in self.units:
                self._seed(method, 1, tokens)
        self._solve()
        for _ in range(3):  # forward bound some other way (ModelNew.forward = ..., forward = fn in the body)
            new = [t for t in self._starts() if id(t[1]) not in self.seeded]
            if not new:
                break
            for _, fn, offset in new:
                self._seed(fn, offset, {T})
            self._solve()

    # ---------------------------------------------------------------- index

    def _own_namespaces(self) -> set[str]:
        """``torch.ops`` namespaces the candidate defines (``TORCH_LIBRARY(ns, m)``, ``Library("ns", "DEF")``,
        ``custom_op("ns::op")``): their ops are its own."""
        found = set()
        for node in ast.walk(self.m.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if "TORCH_LIBRARY" in node.value:
                    found.update(re.findall(r"\bTORCH_LIBRARY(?:_FRAGMENT)?\s*\(\s*(\w+)", node.value))
                match = re.match(r"(\w+)::\w+", node.value)
                if match:
                    found.add(match.group(1))
            elif isinstance(node, ast.Call) and (self.m.qual(node.func) or "").startswith("torch.library.Library"):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    found.add(node.args[0].value)
        return found - ATEN_NAMESPACES - {"aten", "std", "at", "c10", "torch", "cute", "cutlass", "cuda"}

    def _index_body(self, body: list[ast.stmt], scope: _Scope, cls: ast.ClassDef | None) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._add_job(stmt, scope, cls)
                if id(stmt) not in self.m.kernel_defs:
                    inner = self._new_scope(stmt, scope, cls)
                    self._index_body(stmt.body, inner, None)
            elif isinstance(stmt, ast.ClassDef):
                self._add_job(stmt, scope, cls)
                self._index_body(stmt.body, scope, stmt)
            else:
                if not isinstance(stmt, (ast.Pass, ast.Break, ast.Continue)):
                    self._add_job(stmt, scope, cls)
                for block in ("body", "orelse", "finalbody"):
                    inner_body = getattr(stmt, block, None)
                    if isinstance(inner_body, list):
                        self._index_body(inner_body, scope, cls)
                for part in (getattr(stmt, "handlers", None) or []) + (getattr(stmt, "cases", None) or []):
                    self._index_body(part.body, scope, cls)

    def _new_scope(self, fn: ast.AST, parent: _Scope, cls: ast.ClassDef | None) -> _Scope:
        scope = _Scope(fn, parent, cls or (parent.cls if parent.node is not self.m.tree else None))
        self.units[id(fn)] = fn
        self.unit_jobs[id(fn)] = []
        args = fn.args  # type: ignore[attr-defined]
        params = [*args.posonlyargs, *args.args, *args.kwonlyargs, *(a for a in (args.vararg, args.kwarg) if a)]
        scope.bound.update(a.arg for a in params)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._write(("v", id(fn), a.arg), {("seq", id(a))})
        if not isinstance(fn, ast.Lambda):
            stack: list[ast.AST] = list(fn.body)  # type: ignore[attr-defined]
            while stack:
                node = stack.pop()
                if isinstance(node, ast.Global):
                    scope.globals.update(node.names)
                elif isinstance(node, ast.Nonlocal):
                    scope.nonlocals.update(node.names)
                if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                    stack.extend(ast.iter_child_nodes(node))
            self.module.bound.update(scope.globals)
            first = [*args.posonlyargs, *args.args][:1]
            decorators = {d.id for d in fn.decorator_list if isinstance(d, ast.Name)}  # type: ignore[attr-defined]
            if cls is not None and first and "staticmethod" not in decorators:
                family = self._family(cls)
                if "classmethod" in decorators:
                    self._write(("v", id(fn), first[0].arg), {("own", c, 0) for c in family})
                else:
                    self._write(("v", id(fn), first[0].arg), {("inst", c) for c in family})
        return scope

    def _family(self, cls: ast.ClassDef) -> list[ast.ClassDef]:
        """``cls`` and the candidate's classes that derive from it."""
        found, queue = [], [cls]
        while queue:
            c = queue.pop()
            if c not in found:
                found.append(c)
                queue += self.subclasses.get(id(c), [])
        return found

    def _add_job(self, node: ast.AST, scope: _Scope, cls: ast.ClassDef | None) -> None:
        index = len(self.jobs)
        self.jobs.append(_Job(scope, node, cls))
        self.unit_jobs[scope.key].append(index)
        roots: list[ast.AST] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots = [*node.decorator_list, *node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            if cls is None:
                self._bind_name(node.name, scope)
        elif isinstance(node, ast.ClassDef):
            roots = [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
            if cls is None:
                self._bind_name(node.name, scope)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    self._bind_name(_binds(alias), scope)  # type: ignore[arg-type]
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            roots = [h.type for h in node.handlers if h.type is not None]
            for h in node.handlers:
                if h.name:
                    self._bind_name(h.name, scope)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            roots = [node.iter, node.target]
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            roots = [x for item in node.items for x in (item.context_expr, item.optional_vars) if x is not None]
        elif isinstance(node, (ast.If, ast.While)):
            roots = [node.test]
        elif isinstance(node, ast.Match):
            roots = [node.subject]
        elif isinstance(node, ast.Assign):
            roots = [node.value, *node.targets]
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            roots = [x for x in (node.value, node.target) if x is not None]
        else:
            roots = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        if cls is not None and isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            direct = node.targets if isinstance(node, ast.Assign) else [node.target]
            roots = [r for r in roots if not (isinstance(r, ast.Name) and r in direct)]
        self._scan(roots, scope)

    def _bind_name(self, name: str, scope: _Scope) -> None:
        (self.module if name in scope.globals else scope).bound.add(name)

    def _scan(self, roots: list[ast.AST], scope: _Scope) -> None:
        """Bind the names ``roots`` store into ``scope``; make every lambda among them a unit with its own job."""
        stack = list(roots)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Lambda):
                inner = self._new_scope(node, scope, None)
                index = len(self.jobs)
                self.jobs.append(_Job(inner, node))
                self.unit_jobs[id(node)].append(index)
                self._scan([node.body], inner)
                stack.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                self._bind_name(node.id, scope)
            stack.extend(ast.iter_child_nodes(node))

    def _seed(self, fn: ast.AST, offset: int, tokens: set) -> None:
        """Give every parameter of ``fn`` after the first ``offset`` these tokens (what the evaluator passes)."""
        self.seeded.add(id(fn))
        args = fn.args  # type: ignore[attr-defined]
        for a in [*args.posonlyargs, *args.args][offset:] + args.kwonlyargs:
            self._write(("v", id(fn), a.arg), tokens)
        for a in (args.vararg, args.kwarg):
            if a is not None:
                self._write(("elems", id(a)), tokens)

    # ---------------------------------------------------------------- the fixed point

    def _read(self, key: tuple) -> set:
        if self.current is not None:
            self.readers.setdefault(key, set()).add(self.current)
        return self.loc.get(key, EMPTY)  # type: ignore[return-value]

    def _write(self, key: tuple, tokens) -> None:
        known = self.loc.get(key)
        if known is None:
            known = self.loc[key] = set()
        if tokens and not known.issuperset(tokens):
            known.update(tokens)
            for job in self.readers.get(key, ()):
                if job not in self.queued:
                    self.queued.add(job)
                    self.queue.append(job)

    def _solve(self) -> None:
        for index in range(len(self.jobs)):
            if index not in self.queued:
                self.queued.add(index)
                self.queue.append(index)
        budget = self.BUDGET * len(self.jobs) + 100
        while self.queue and budget > 0:
            budget -= 1
            index = self.queue.popleft()
            self.queued.discard(index)
            self.current = index
            self._run(self.jobs[index])
        self.current = None
        self.queue.clear()
        self.queued.clear()

    def _edge(self, fn: ast.AST) -> None:
        """The job being run calls (or hands on to be called) the candidate's ``fn``."""
        if self.job is not None and id(fn) in self.units:
            self.edges.setdefault(self.job.scope.key, set()).add(fn)

    # ---------------------------------------------------------------- statements

    def _run(self, job: _Job) -> None:
        self.job = job
        node = job.node
        if isinstance(node, ast.Lambda):
            self._write(("ret", id(node)), self._eval(node.body, job))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is not None:
                value = self._eval(node.value, job)
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    self._assign(target, value, job, top=True)
        elif isinstance(node, ast.AugAssign):
            current = self._eval(node.target, job)
            value = self._eval(node.value, job)
            self._assign(node.target, self._binop(node.op, current, value, node), job, top=True)
        elif isinstance(node, ast.Return):
            self._write(("ret", job.scope.key), self._eval(node.value, job) if node.value else {N})
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._assign(node.target, self._elements(self._eval(node.iter, job)), job)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self._eval(item.context_expr, job)
                if item.optional_vars is not None:
                    self._assign(item.optional_vars, value, job)
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self._write(("raised",), self._eval(node.exc, job))
            if node.cause is not None:
                self._eval(node.cause, job)
        elif isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            for h in node.handlers:
                if h.type is not None:
                    self._eval(h.type, job)
                if h.name:
                    self._write(self._store_key(h.name, job.scope), self._read(("raised",)) | {U})
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    continue
                if isinstance(node, ast.Import):
                    q = alias.name if alias.asname else alias.name.split(".")[0]
                else:
                    q = f"{'.' * node.level}{node.module or ''}.{alias.name}"
                if not getattr(node, "level", 0):
                    q = _reroot(q)
                root = q.split(".")[0]
                self._store(_binds(alias), {("torch" if root == "torch" else "mod", q)}, job)  # type: ignore[arg-type]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._define(node, job)
        elif isinstance(node, ast.ClassDef):
            for expr in [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]:
                self._eval(expr, job)
            self._store(node.name, {("own", node, 0)}, job)
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if not isinstance(target, ast.Name):
                    self._eval(target, job)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            pass
        else:  # Expr, If, While, Assert, Match: their expressions
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._eval(child, job)
                elif isinstance(node, ast.Match) and child is node.subject:
                    self._eval(child, job)

    def _define(self, fn: ast.FunctionDef | ast.AsyncFunctionDef, job: _Job) -> None:
        decorators = [self._eval(d, job) for d in fn.decorator_list]
        args = fn.args
        positional = [*args.posonlyargs, *args.args]
        for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
            self._write(("v", id(fn), param.arg), self._eval(default, job))
        for param, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self._write(("v", id(fn), param.arg), self._eval(default, job))
        if id(fn) in self.m.kernel_defs:
            tokens: set = {KERNEL}
        else:
            tokens = {("own", fn, 0)}
            for decorator in reversed(decorators):
                tokens = self._decorate(decorator, tokens, fn)
        self._store(fn.name, tokens, job)

    def _decorate(self, decorator: set, function: set, fn: ast.AST) -> set:
        """What a decorator makes of a function: the candidate's decorators are called; torch's compilers make torch's
        code; ``torch.library`` registers it (it is read as the candidate's op); the rest hand it through."""
        out: set = set()
        for d in decorator:
            kind = d[0] if isinstance(d, tuple) else d
            if kind == "own" and not isinstance(d[1], ast.ClassDef):
                out |= self._apply({d}, [(None, frozenset(function), False)], [], None)
            elif d == KERNEL:
                out.add(KERNEL)
            elif kind == "torch" and d[1][len("torch.") :].startswith(TORCH_COMPILERS):
                out.add(d)
            elif kind in ("torch", "tobj") and d[1].startswith("torch.library"):
                self._register(function)
                out |= function
            else:
                out |= function
        return out or set(function)

    def _register(self, tokens) -> None:
        """Functions registered as custom-op implementations: forward calling the op runs them."""
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                self._write(("registered",), {t})
                self._seed(t[1], t[2], {T})

    # ---------------------------------------------------------------- names and stores

    def _lookup(self, name: str, scope: _Scope) -> tuple | None:
        if name in scope.globals:
            return ("v", 0, name) if name in self.module.bound else None
        s: _Scope | None = scope
        while s is not None:
            if name in s.bound and name not in s.nonlocals:
                return ("v", s.key, name)
            s = s.parent
        return None

    def _store_key(self, name: str, scope: _Scope) -> tuple:
        if name in scope.globals:
            return ("v", 0, name)
        if name in scope.nonlocals and scope.parent is not None:
            return self._lookup(name, scope.parent) or ("v", scope.key, name)
        return ("v", scope.key, name)

    def _store(self, name: str, tokens, job: _Job, top: bool = True) -> None:
        if top and job.cls is not None:
            self._write(("cls", id(job.cls), name), tokens)
        else:
            self._write(self._store_key(name, job.scope), tokens)

    def _name(self, name: str, job: _Job) -> set:
        key = self._lookup(name, job.scope)
        if key is not None:
            return self._read(key)
        if name in BUILTIN_NAMES:
            return (
                {N}
                if name in ("None", "True", "False", "Ellipsis", "__debug__")
                or (name.startswith("__") and name not in ("__import__", "__build_class__"))
                else {("builtin", name)}
            )
        return {U}

    def _assign(self, target: ast.AST, tokens, job: _Job, top: bool = False) -> None:
        if isinstance(target, ast.Name):
            self._store(target.id, tokens, job, top)
        elif isinstance(target, ast.Attribute):
            self._store_attr(self._eval(target.value, job), target.attr, tokens)
        elif isinstance(target, ast.Subscript):
            base = self._eval(target.value, job)
            index = self._eval(target.slice, job)
            for b in base:
                if isinstance(b, tuple) and b[0] in ("seq", "tup"):
                    self._write(("elems", b[1]), tokens)
            self._tensor_index(base, index, target)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, element in enumerate(target.elts):
                if isinstance(element, ast.Starred):
                    self._write(("elems", id(element)), self._elements(tokens))
                    self._assign(element.value, {("seq", id(element))}, job)
                else:
                    self._assign(element, self._unpack(tokens, i), job)
        elif isinstance(target, ast.Starred):
            self._write(("elems", id(target)), self._elements(tokens))
            self._assign(target.value, {("seq", id(target))}, job)

    def _store_attr(self, base, attr: str, tokens) -> None:
        for b in base:
            if isinstance(b, tuple) and b[0] == "inst":
                self._write(("self", id(b[1]), attr), tokens)
            elif isinstance(b, tuple) and b[0] == "own" and isinstance(b[1], ast.ClassDef):
                self._write(("cls", id(b[1]), attr), tokens)
            else:
                self._write(("attr", attr), tokens)

    def _elements(self, tokens) -> frozenset:
        """What iterating (or indexing) a value with these tokens gives."""
        out: set = set()
        for t in tokens:
            if t in (N, T, U) or t == KERNEL:
                out.add(t)
            elif t[0] in ("seq", "tup"):
                out |= self._read(("elems", t[1]))
            elif t[0] == "layer":
                out.add(t)
            else:
                out.add(U)
        return frozenset(out)

    def _unpack(self, tokens, i: int) -> frozenset:
        out: set = set()
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "tup" and ("tup", t[1], i) in self.loc:
                out |= self._read(("tup", t[1], i))
            else:
                out |= self._elements({t})
        return frozenset(out)

    # ---------------------------------------------------------------- expressions

    def _eval(self, expr: ast.AST | None, job: _Job) -> frozenset:
        """The tokens of ``expr``, its parts evaluated first (iteratively: a deep expression costs no recursion)."""
        if expr is None:
            return frozenset({N})
        values: dict[int, frozenset] = {}
        stack: list[tuple[object, bool]] = [(expr, False)]
        while stack:
            node, done = stack.pop()
            if isinstance(node, _BindTarget):
                self._assign(node.comp.target, self._elements(values.get(id(node.comp.iter), EMPTY)), job)
                continue
            if not done:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(self._children(node)))  # type: ignore[arg-type]
            else:
                values[id(node)] = frozenset(self._value(node, values, job))  # type: ignore[arg-type]
        return values[id(expr)]

    def _children(self, node: ast.AST) -> list:
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            order: list = []
            for g in node.generators:
                order += [g.iter, _BindTarget(g), *g.ifs]
            return order + ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])
        if isinstance(node, ast.Lambda):
            return [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
        if isinstance(node, ast.NamedExpr):
            return [node.value]
        if isinstance(node, ast.Call):
            self.callees.add(id(node.func))
            return [node.func, *node.args, *(k.value for k in node.keywords)]
        if isinstance(node, ast.Attribute):
            self.prefixes.add(id(node.value))
            return [node.value]
        if isinstance(node, ast.Dict):
            return [*(k for k in node.keys if k is not None), *node.values]
        return [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]

    def _value(self, node: ast.AST, values: dict[int, frozenset], job: _Job) -> set:
        def v(child: ast.AST | None) -> frozenset:
            return values.get(id(child), EMPTY) if child is not None else EMPTY

        if isinstance(node, (ast.Constant, ast.JoinedStr, ast.FormattedValue, ast.Slice)):
            return {N}
        if isinstance(node, ast.Name):
            tokens = self._name(node.id, job)
            tokens = tokens or ({U} if self.judging else tokens)
            self._value_flag(node, tokens)
            return tokens
        if isinstance(node, ast.Attribute):
            base = v(node.value) or ({U} if self.judging else EMPTY)
            tokens = self._attr(base, node.attr)
            self._value_flag(node, tokens)
            return tokens
        if isinstance(node, ast.Subscript):
            return self._subscript(v(node.value), v(node.slice), node)
        if isinstance(node, ast.Call):
            return self._call(node, values, job)
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Mod) and isinstance(node.left, (ast.Constant, ast.JoinedStr)):
                return {N}  # "%d" % n: string formatting
            return self._binop(node.op, v(node.left), v(node.right), node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return {N}
            operand = v(node.operand)
            if _may_tensor(operand):
                symbol = OPERATOR_SYMBOLS[type(node.op)]
                self._flag(node, lambda: f"{_text(node)} applies PyTorch's unary {symbol}", "op")
                return {T}
            return set(operand) or {N}
        if isinstance(node, ast.Compare):
            parts = [v(node.left), *(v(c) for c in node.comparators)]
            if all(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops):
                return {N}
            if any(_may_tensor(p) for p in parts):
                symbol = next(
                    OPERATOR_SYMBOLS.get(type(op), "comparison")
                    for op in node.ops
                    if not isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn))
                )
                self._flag(node, lambda: f"{_text(node)} compares with PyTorch's {symbol} operator", "op")
                return {T}
            return {N}
        if isinstance(node, ast.BoolOp):
            return set().union(*(v(x) for x in node.values))
        if isinstance(node, ast.IfExp):
            return set(v(node.body) | v(node.orelse))
        if isinstance(node, ast.Tuple):
            key = id(node)
            for i, element in enumerate(node.elts):
                if isinstance(element, ast.Starred):
                    self._write(("elems", key), self._elements(v(element)))
                else:
                    self._write(("tup", key, i), v(element))
                    self._write(("elems", key), v(element))
            return {("tup", key)}
        if isinstance(node, (ast.List, ast.Set)):
            for element in node.elts:
                self._write(
                    ("elems", id(node)), self._elements(v(element)) if isinstance(element, ast.Starred) else v(element)
                )
            return {("seq", id(node))}
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                self._write(("elems", id(node)), v(value) | v(key) if key is not None else self._elements(v(value)))
            return {("seq", id(node))}
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            self._write(("elems", id(node)), v(node.elt))
            return {("seq", id(node))}
        if isinstance(node, ast.DictComp):
            self._write(("elems", id(node)), v(node.key) | v(node.value))
            return {("seq", id(node))}
        if isinstance(node, ast.Lambda):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            for param, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
                self._write(("v", id(node), param.arg), v(default))
            return {("own", node, 0)}
        if isinstance(node, ast.NamedExpr):
            self._assign(node.target, v(node.value), job)
            return set(v(node.value))
        if isinstance(node, (ast.Starred, ast.Await)):
            return set(v(node.value))
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            value = v(node.value) if node.value is not None else frozenset({N})
            self._write(("ret", job.scope.key), self._elements(value) if isinstance(node, ast.YieldFrom) else value)
            return {U}
        return {U}

    def _attr(self, base, attr: str) -> set:
        """The tokens of ``<base>.<attr>``."""
        out: set = set()
        for b in base:
            kind = b if isinstance(b, str) else b[0]
            if b == N:
                out.add(N)
            elif b in (T, U):
                if attr in TENSOR_SCALAR_ATTRIBUTES:
                    out.add(N)
                elif attr in TENSOR_VIEW_ATTRIBUTES:
                    out.add(T)
                elif attr == "__class__":
                    out.add(("torch", "torch.Tensor"))
                elif attr in TENSOR_ATTRIBUTES:
                    out.add(("tmeth", attr))
                else:
                    out.add(("umeth", attr))
                    out |= self._read(("attr", attr))
            elif kind in ("torch", "mod"):
                q = _reroot(f"{b[1]}.{attr}")  # torch.library.torch.relu is torch.relu
                out.add(("torch" if q.split(".")[0] == "torch" else "mod", q))
            elif kind == "inst":
                out |= self._inst_attr(b[1], attr)
            elif kind == "super":
                out |= self._inst_attr(b[1], attr, skip_first=True)
            elif kind == "own":
                if isinstance(b[1], ast.ClassDef):
                    out |= self._class_attr(b[1], attr)
                else:
                    out.add(N)  # a function's __name__, __doc__ ...
            elif kind == "layer":
                if attr in NN_MODULE_METHODS or attr.startswith("_"):
                    out.add(b)
                elif LAYER_DATA.fullmatch(attr):
                    out.add(T)
                else:
                    out.add(U)
            elif kind == "tobj":
                out.add(b)
            elif kind in ("seq", "tup"):
                if attr in CONTAINER_METHODS:
                    out.add(("pymeth", attr, b[1]))
                else:  # an attribute of a namespace-like object: what it was given
                    out |= self._read(("elems", b[1])) | self._read(("attr", attr))
            elif b == KERNEL:
                out.add(KERNEL)
                out |= self._read(("attr", attr))
            else:
                out.add(N)
        return out

    def _inst_attr(self, cls: ast.ClassDef, attr: str, skip_first: bool = False) -> set:
        """``self.<attr>`` on an instance of the candidate's ``cls`` (``super().<attr>`` with ``skip_first``)."""
        out: set = set()
        chain = self.m.bases(cls)[1 if skip_first else 0 :]
        for c in chain:
            for t in self._read(("cls", id(c), attr)):
                out |= self._bound(t)
            if not skip_first:
                out |= self._read(("self", id(c), attr))
        if out:
            return out
        if attr not in ("__getattr__", "__getattribute__"):  # a lookup that fails goes to the class's __getattr__
            for t in self._inst_attr(cls, "__getattr__") | self._inst_attr(cls, "__getattribute__"):
                if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._bind_args(t[1], t[2], [(None, frozenset({N}), False)], [])
                    self._edge(t[1])
                    out |= self._read(("ret", id(t[1])))
            if out:
                return out
        base = self._torch_base(cls)
        if base and (attr in NN_MODULE_METHODS or attr in ("__call__", "forward") or attr.startswith("_")):
            return {("layer", base)}
        if base and LAYER_DATA.fullmatch(attr):
            return {T}
        return {("umeth", attr)}

    def _bound(self, t) -> set:
        """A class attribute read through an instance: the candidate's functions become bound methods (properties
        are called)."""
        if not (isinstance(t, tuple) and t[0] == "own") or isinstance(t[1], ast.ClassDef):
            return {t}
        fn = t[1]
        names = {_text(d) for d in getattr(fn, "decorator_list", [])}
        if "staticmethod" in names:
            return {t}
        if names & {"property", "functools.cached_property", "cached_property"}:
            self._edge(fn)
            return set(self._read(("ret", id(fn))))
        return {("own", fn, t[2] + 1)}

    def _class_attr(self, cls: ast.ClassDef, attr: str) -> set:
        """``Class.<attr>``: ``Function.apply`` of an autograd.Function runs its ``forward`` with ``ctx`` bound."""
        out: set = set()
        for c in self.m.bases(cls):
            for t in self._read(("cls", id(c), attr)):
                decorators = (
                    {_text(d) for d in getattr(t[1], "decorator_list", [])}
                    if isinstance(t, tuple) and t[0] == "own"
                    else set()
                )
                out.add(("own", t[1], t[2] + 1) if "classmethod" in decorators else t)
        if not out and attr == "apply" and self._autograd_function(cls):
            for t in self._class_attr(cls, "forward"):
                out.add(("own", t[1], t[2] + 1) if isinstance(t, tuple) and t[0] == "own" else t)
        return out or {("umeth", attr)}

    def _autograd_function(self, cls: ast.ClassDef) -> bool:
        return any((self.m.qual(b) or "").startswith("torch.autograd") for c in self.m.bases(cls) for b in c.bases)

    def _torch_base(self, cls: ast.ClassDef) -> str | None:
        """The torch nn layer a candidate class derives from (``class ModelNew(nn.Linear)``), if any."""
        for c in self.m.bases(cls):
            for b in c.bases:
                q = self.m.qual(b) or ""
                last = q.split(".")[-1]
                if (
                    q.startswith("torch.nn.")
                    and last[:1].isupper()
                    and last not in ("Module", "ModuleList", "ModuleDict", "Sequential")
                ):
                    return q
        return None

    def _subscript(self, base, index, node: ast.Subscript) -> set:
        out: set = set()
        constant = node.slice.value if isinstance(node.slice, ast.Constant) else None
        for b in base:
            if b in (N, T, U):
                out.add(b)
            elif b[0] == "tup" and isinstance(constant, int) and ("tup", b[1], constant) in self.loc:
                out |= self._read(("tup", b[1], constant))
            elif b[0] in ("seq", "tup"):
                out |= self._read(("elems", b[1]))
            elif b == KERNEL:  # kernel[grid]: triton calls a grid function with its meta-parameters (plain data)
                out.add(KERNEL)
                for t in set(index) | set(self._elements(index)):
                    if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                        self._seed(t[1], t[2], {N})
                        self._edge(t[1])
            elif b[0] == "layer":
                out.add(b)
            else:
                out.add(U)
        self._tensor_index(base, index, node)
        return out

    def _tensor_index(self, base, index, node: ast.AST) -> None:
        if T in base and (T in index or T in self._elements(index)):
            self._flag(
                node, lambda: f"{_text(node)} indexes a tensor with a tensor (a PyTorch gather or scatter)", "op"
            )

    def _binop(self, op: ast.operator, left, right, node: ast.AST) -> set:
        symbol = OPERATOR_SYMBOLS.get(type(op), "?")
        if isinstance(op, ast.MatMult) or _may_tensor(left) or _may_tensor(right):
            augmented = "=" if isinstance(node, ast.AugAssign) else ""
            self._flag(node, lambda: f"{_text(node)} computes with PyTorch's {symbol}{augmented} operator", "op")
            return {T}
        containers = {t for t in set(left) | set(right) if isinstance(t, tuple) and t[0] in ("seq", "tup")}
        return containers or {N}

    # ---------------------------------------------------------------- calls

    def _call(self, node: ast.Call, values: dict[int, frozenset], job: _Job) -> set:
        callee = values.get(id(node.func), EMPTY) or ({U} if self.judging else EMPTY)
        args = [
            (a.value if isinstance(a, ast.Starred) else a, values.get(id(a), EMPTY), isinstance(a, ast.Starred))
            for a in node.args
        ]
        kwargs = [(k.arg, k.value, values.get(id(k.value), EMPTY)) for k in node.keywords]
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and len(args) >= 2
            and _literal_name(node.args[0])
            and func.attr in STATE_STORES
        ):
            name = node.args[0].value  # type: ignore[attr-defined]
            self._store_attr(values.get(id(func.value), EMPTY), name, args[1][1])
        if isinstance(func, ast.Attribute) and func.attr.startswith("register_") and "hook" in func.attr:
            for _, tokens, _ in args:
                for t in tokens:
                    if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                        self._write(("hooks",), {t})
                        self._seed(t[1], t[2], {U})
        return self._apply(callee, args, kwargs, node)

    def _apply(self, callee, args: list, kwargs: list, node: ast.Call | None) -> set:
        out: set = set()
        if KERNEL in callee:  # what a kernel call gave (tilelang's jit returns the kernel): not a tensor to call
            callee = set(callee) - {T}
        for tok in callee:
            out |= self._apply_one(tok, args, kwargs, node)
        return out

    def _callee_text(self, node: ast.Call | None) -> str:
        return _text(node.func) if node is not None else "a decorator"

    def _apply_one(self, tok, args: list, kwargs: list, node: ast.Call | None) -> set:
        kind = tok if isinstance(tok, str) else tok[0]
        if kind == "own":
            target, offset = tok[1], tok[2]
            if isinstance(target, ast.ClassDef):
                for init in self._inst_attr(target, "__init__"):
                    if isinstance(init, tuple) and init[0] == "own" and not isinstance(init[1], ast.ClassDef):
                        self._bind_args(init[1], init[2], args, kwargs)
                        self._edge(init[1])
                return {("inst", target)}
            self._bind_args(target, offset, args, kwargs)
            self._edge(target)
            return set(self._read(("ret", id(target))))
        if kind == "inst":
            called = {t for t in self._inst_attr(tok[1], "__call__") if t[0] in ("own", "layer")} or self._inst_attr(
                tok[1], "forward"
            )
            return self._apply(called, args, kwargs, node)
        if tok == KERNEL:
            if self.mode == "reach" and node is not None:
                self.launches.append(f"{_text(node.func)} ({_where(node)})")
            self._escape(args, kwargs, node)
            return {KERNEL, T}
        if kind == "torch":
            return self._torch_call(tok[1], args, kwargs, node)
        if kind == "mod":
            return self._module_call(tok[1], args, kwargs, node)
        if kind == "builtin":
            return self._builtin_call(tok[1], args, kwargs, node)
        if kind == "tmeth":
            return self._tensor_method(tok[1], args, kwargs, node, f"{self._callee_text(node)}()")
        if kind == "umeth":
            self._escape(args, kwargs, node, layers=False)
            return {U}
        if kind == "pymeth":
            return self._container_method(tok[1], tok[2], args, kwargs)
        if kind == "layer":
            self._flag(node, f"the nn layer {self._callee_text(node)} ({tok[1].replace('torch.nn.', 'nn.')})")
            return {T}
        if kind == "tobj":
            if tok[1].startswith("torch.library"):
                self._register({t for _, tokens, _ in args for t in tokens})
                return {t for _, tokens, _ in args for t in tokens if isinstance(t, tuple) and t[0] == "own"} | {tok}
            if self._neutral(tok[1][len("torch.") :]):
                return {N}
            self._flag(node, f"{self._callee_text(node)}(...) calls a PyTorch object ({tok[1]})")
            return {T}
        if kind == "seq" and self.seq_kind.get(tok[1]) == "sequential":
            out: set = set()
            for element in self._read(("elems", tok[1])):
                out |= self._apply_one(element, args, kwargs, node)
            return out
        if tok == N:
            return {N}
        self._flag(
            node,
            f"{self._callee_text(node)}(...) calls what the guards cannot resolve to your kernel, your "
            "own code or an allowed operation: call your kernels and functions by name",
        )
        return {U}

    def _bind_args(self, fn: ast.AST, offset: int, args: list, kwargs: list) -> None:
        """Bind a call's arguments to the parameters of the candidate's ``fn`` (``offset`` already bound)."""
        a = fn.args  # type: ignore[attr-defined]
        positional = [*a.posonlyargs, *a.args]
        i, spread = offset, False
        for _, tokens, starred in args:
            if starred or spread:
                spread = True
                elements = self._elements(tokens) if starred else tokens
                for p in positional[i:]:
                    self._write(("v", id(fn), p.arg), elements)
                if a.vararg is not None:
                    self._write(("elems", id(a.vararg)), elements)
                continue
            if i < len(positional):
                self._write(("v", id(fn), positional[i].arg), tokens)
            elif a.vararg is not None:
                self._write(("elems", id(a.vararg)), tokens)
            i += 1
        names = {p.arg for p in positional + a.kwonlyargs}
        for name, _, tokens in kwargs:
            if name is None:
                elements = self._elements(tokens)
                for p in positional[offset:] + a.kwonlyargs:
                    self._write(("v", id(fn), p.arg), elements)
                if a.kwarg is not None:
                    self._write(("elems", id(a.kwarg)), elements)
            elif name in names:
                self._write(("v", id(fn), name), tokens)
            elif a.kwarg is not None:
                self._write(("elems", id(a.kwarg)), tokens)

    def _escape(self, args: list, kwargs: list, node: ast.Call | None, layers: bool = True) -> None:
        """Arguments handed to code the guards do not read (a kernel, an extension, a library): the candidate's
        functions among them may be called back (they are followed, with unknown arguments); a torch layer or
        function handed there would run PyTorch."""
        for arg, tokens, _ in args + [(value, tokens, False) for _, value, tokens in kwargs]:
            for t in tokens:
                if not isinstance(t, tuple):
                    continue
                if t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._seed(t[1], t[2], {U})
                    self._edge(t[1])
                elif t[0] == "layer" and layers:
                    self._flag(
                        node,
                        f"{self._callee_text(node)}(...) is handed the nn layer {_text(arg)}, which "
                        "would run PyTorch when called",
                    )

    def _tensor_method(self, name: str, args: list, kwargs: list, node: ast.Call | None, what: str) -> set:
        if name in TENSOR_SCALAR_METHODS or (name == "type" and not args and not kwargs):
            return {N}
        if name in TENSOR_LAYOUT_METHODS:
            return {T}
        self._flag(node, f"{what} is a PyTorch tensor op")
        return {T}

    def _container_method(self, name: str, key, args: list, kwargs: list) -> set:
        if name in ("append", "add", "insert", "appendleft") and args:
            self._write(("elems", key), args[-1][1])
        elif name in ("extend", "update"):
            for _, tokens, _ in args:
                self._write(("elems", key), self._elements(tokens))
            for _, _, tokens in kwargs:
                self._write(("elems", key), tokens)
        elif name in ("setdefault", "__setitem__") and len(args) >= 2:
            self._write(("elems", key), args[1][1])
        if name in ("values", "keys", "items", "copy"):
            return {("seq", key)}
        if name in CONTAINER_READS:
            return set(self._read(("elems", key)))
        return {N}

    def _neutral(self, rest: str) -> bool:
        return any(rest == p or rest.startswith(p + ".") for p in TORCH_STRICT_NEUTRAL)

    def _torch_call(self, q: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        rest = q[len("torch.") :] if q.startswith("torch.") else ""
        parts = rest.split(".")
        last = parts[-1]
        if last in KERNEL_BUILDERS or q == "torch.utils.cpp_extension.load":
            return {KERNEL}
        if rest.startswith("ops."):
            if len(parts) > 2 and parts[1] in self.namespaces:  # the candidate's own op
                if self.mode == "reach" and node is not None:
                    self.launches.append(f"{q} ({_where(node)})")
                for t in self._read(("registered",)):
                    self._edge(t[1])
                self._escape(args, kwargs, node)
                return {KERNEL, T}
            self._flag(node, q)
            return {T}
        if rest.startswith(TORCH_COMPILERS):
            self._flag(node, f"{q} (its kernels are generated by torch, not written by you)")
            return {("torch", q)}
        if rest.startswith("Tensor."):
            return self._tensor_method(last, args[1:], kwargs, node, q)
        if rest.startswith("library"):
            self._register({t for _, tokens, _ in args for t in tokens})
            return {("tobj", q)}
        if rest in TORCH_SCALAR:
            return {N}
        if rest in TORCH_LAYOUT:
            return (
                {N}
                if last
                in (
                    "no_grad",
                    "enable_grad",
                    "inference_mode",
                    "set_grad_enabled",
                    "is_grad_enabled",
                    "manual_seed",
                    "is_tensor",
                    "is_floating_point",
                    "is_complex",
                )
                else {T}
            )
        if self._neutral(rest):
            if rest in ("nn.Parameter", "nn.parameter.Parameter", "nn.Buffer", "nn.parameter.Buffer"):
                return {T}
            if rest in ("nn.ModuleList", "nn.ModuleDict", "nn.ParameterList", "nn.ParameterDict", "nn.Sequential"):
                key = id(node)
                for _, tokens, _ in args:
                    self._write(("elems", key), tokens if rest == "nn.Sequential" else self._elements(tokens))
                if rest == "nn.Sequential":
                    self.seq_kind[key] = "sequential"
                return {("seq", key)}
            return {N}
        if rest.startswith("nn.") and last[:1].isupper():
            self._flag(node, f"{q.replace('torch.nn.', 'nn.')} built inside forward")
            return {("layer", q)}
        if last[:1].isupper():
            self._flag(node, f"{q} (a PyTorch object)")
            return {("tobj", q)}
        self._flag(node, _short(q))
        return {T}

    def _module_call(self, q: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        parts = q.split(".")
        root, last = parts[0], parts[-1]
        tokens = [t for _, t, _ in args] + [t for _, _, t in kwargs]
        if last in KERNEL_BUILDERS or (root == "triton" and last == "jit"):
            return {KERNEL}
        if _under(q, KERNEL_LIBRARY_OPS):
            self._flag(node, f"{q} (a library's kernel, not yours)")
            return {T}
        if root in ARRAY_MODULES:
            if last in ARRAY_LAYOUT or "cuda" in parts[1:-1]:
                return {T} if last in ARRAY_LAYOUT and last not in ("dtype", "get_array_module") else {N}
            if any(_may_tensor(t) for t in tokens):
                self._flag(node, f"{q}(...) computes with {root} on what may be a tensor")
                return {T}
            return {N}
        if root in KERNEL_MODULE_ROOTS:
            self._escape(args, kwargs, node)
            return {N} if last in ("cdiv", "next_power_of_2", "ceildiv") else {KERNEL}
        if root in ("operator", "_operator"):
            if last in OPERATOR_PLAIN:
                return set(self._elements(tokens[0])) if last == "getitem" and tokens else {N}
            if any(_may_tensor(t) for t in tokens):
                self._flag(node, f"{q}(...) applies Python's operators to what may be tensors")
                return {T}
            return {N}
        if root in ("math", "cmath"):
            if last in ("prod", "fsum", "sumprod") and any(_may_tensor(self._elements(t)) for t in tokens):
                self._flag(node, f"{q}(...) multiplies or adds what may be tensors")
                return {T}
            return {N}
        if q.startswith(STDLIB_ARITHMETIC) and any(_may_tensor(t | self._elements(t)) for t in tokens):
            self._flag(node, f"{q}(...) applies Python's operators to what may be tensors")
            return {T}
        if q in ("functools.partial", "functools.partialmethod") and args:
            out: set = set()
            for t in args[0][1]:
                if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef):
                    self._bind_args(t[1], t[2], args[1:], kwargs)
                    out.add(("own", t[1], t[2] + len(args) - 1))
                else:
                    out.add(t)
            return out
        if q == "functools.reduce" and len(args) >= 2:
            items = self._elements(args[1][1]) | (args[2][1] if len(args) > 2 else EMPTY)
            return self._apply(args[0][1], [(None, items, False), (None, items, False)], [], node)
        if root in ("functools", "contextlib", "abc", "enum", "typing", "dataclasses"):
            return {("mod", q)} if not args else {t for t in args[0][1]} | {("mod", q)}
        if root in ("itertools", "types", "collections", "weakref", "copy", "queue", "heapq", "bisect", "array"):
            key = id(node)
            for t in tokens:
                self._write(("elems", key), t | self._elements(t))
            if root == "copy":
                return set().union(*tokens) if tokens else {N}
            return {("seq", key)}
        if root in sys.stdlib_module_names:
            return {N}
        return {U}

    def _builtin_call(self, name: str, args: list, kwargs: list, node: ast.Call | None) -> set:
        tokens = [t for _, t, _ in args]
        key = id(node) if node is not None else id(args)
        if name in PLAIN_BUILTINS:
            return {N}
        if name == "type":
            if len(args) != 1:
                return {U}
            out: set = set()
            for t in tokens[0]:
                if isinstance(t, tuple) and t[0] == "inst":
                    out.add(("own", t[1], 0))
                elif t in (T, U):
                    out.add(("torch", "torch.Tensor"))
                else:
                    out.add(N)
            return out
        if name == "super":
            cls = self.job.scope.cls if self.job is not None else None
            return {("super", cls)} if cls is not None else {U}
        if name in ("setattr",) and len(args) == 3 and node is not None and _literal_name(node.args[1]):
            self._store_attr(tokens[0], node.args[1].value, tokens[2])  # type: ignore[attr-defined]
            return {N}
        if name in ARITHMETIC_BUILTINS:
            values = [self._elements(tokens[0])] if len(tokens) == 1 and name not in ("abs", "round") else tokens
            for k, _, t in kwargs:
                if k == "key":
                    self._apply(t, [(None, values[0] if values else EMPTY, False)], [], node)
                elif k in ("start", "default"):
                    values = values + [t]
            if any(_may_tensor(t) for t in values):
                self._flag(node, f"{self._callee_text(node)}(...) applies Python's operators to what may be tensors")
                return {T}
            if name in ("min", "max"):
                return set().union(*values) if values else {N}
            return {("seq", key)} if name == "sorted" else {N}
        if name in ("list", "tuple", "set", "frozenset", "reversed", "iter", "dict", "sorted"):
            for t in tokens:
                self._write(("elems", key), self._elements(t))
            for _, _, t in kwargs:
                self._write(("elems", key), t)
            return {("seq", key)}
        if name in ("enumerate", "zip"):
            columns = (
                [frozenset({N}), self._elements(tokens[0])]
                if name == "enumerate" and tokens
                else [self._elements(t) for t in tokens]
            )
            row = (key, "row")
            for i, column in enumerate(columns):
                self._write(("tup", row, i), column)
                self._write(("elems", row), column)
            self._write(("elems", key), {("tup", row)})
            return {("seq", key)}
        if name in ("map", "filter") and args:
            items = [(None, self._elements(t), False) for t in tokens[1:]]
            result = self._apply(tokens[0], items, [], node) if N not in tokens[0] or len(tokens[0]) > 1 else EMPTY
            self._write(("elems", key), result if name == "map" else (items[0][1] if items else EMPTY))
            return {("seq", key)}
        if name == "next" and tokens:
            return set(self._elements(tokens[0])) | (set(tokens[1]) if len(tokens) > 1 else set())
        if name[:1].isupper():  # exceptions and warnings keep what they are given
            for t in tokens:
                self._write(("elems", key), t)
            return {("seq", key)}
        return {U}

    # ---------------------------------------------------------------- judging

    def _flag(self, node: ast.AST | None, text, kind: str = "call") -> None:
        """Note PyTorch compute at ``node`` (``kind``: call, op for Python's operators, value for a function taken as a
        value, which counts in what ModelNew's construction runs too). ``text``: the words, or a function making them
        (made only for what the evidence keeps: an operator nested in another on its line is not shown)."""
        if node is not None and (self.mode == "reach" or (kind == "value" and self.mode == "kept")):
            self.flags.append((node, text, kind))

    def _value_flag(self, node: ast.AST, tokens) -> None:
        """A PyTorch compute function (or a tensor's compute method) taken as a value: it is called elsewhere."""
        if (
            not self.mode
            or id(node) in self.callees
            or id(node) in self.prefixes
            or not isinstance(getattr(node, "ctx", None), ast.Load)
        ):
            return
        for t in tokens:
            if isinstance(t, tuple) and t[0] == "torch" and self._torch_function(t[1]):
                self._flag(node, f"{_short(t[1])} (taken as a value)", kind="value")
            elif isinstance(t, tuple) and t[0] == "tmeth" and t[1] not in TENSOR_LAYOUT_METHODS | TENSOR_SCALAR_METHODS:
                self._flag(node, f"{_text(node)} (a tensor's PyTorch method taken as a value)", kind="value")

    def _torch_function(self, q: str) -> bool:
        """Whether ``torch.<...>`` named as a value is a compute function (not a module, class, dtype or constant)."""
        rest = q[len("torch.") :]
        last = rest.split(".")[-1]
        if not rest or rest in TORCH_MODULES or TORCH_CONSTANT.match(last) or last[:1].isupper():
            return False
        if rest.startswith("ops."):
            parts = rest.split(".")
            return len(parts) >= 3 and parts[1] not in self.namespaces
        if rest.startswith(TORCH_COMPILERS):
            return True
        if rest.startswith("Tensor."):
            return (
                last in TENSOR_ATTRIBUTES
                and last
                not in TENSOR_LAYOUT_METHODS | TENSOR_SCALAR_METHODS | TENSOR_SCALAR_ATTRIBUTES | TENSOR_VIEW_ATTRIBUTES
            )
        return not (rest in TORCH_LAYOUT or rest in TORCH_SCALAR or self._neutral(rest))

    def _starts(self) -> list[tuple]:
        """What runs when ModelNew is called: its ``forward`` (or ``__call__``) however bound, and its hooks."""
        self.judging, self.current = True, None
        tokens = self._read(("hooks",)).union(*(self._inst_attr(self.cls, name) for name in MODEL_ENTRIES))
        self.judging = False
        return [t for t in tokens if isinstance(t, tuple) and t[0] == "own" and not isinstance(t[1], ast.ClassDef)]

    def findings(self) -> list[str]:
        """``line N: what`` for each place the code ModelNew runs computes with PyTorch (one per line, the outermost
        expression first)."""
        starts = self._starts()
        own_forward = set().union(*(self._inst_attr(self.cls, name) for name in MODEL_ENTRIES))
        reach: list[ast.AST] = [t[1] for t in starts]
        if not reach and not any(isinstance(t, tuple) and t[0] == "layer" for t in own_forward):
            reach = [fn for fn in self.m.methods(self.cls) if fn.name != "__init__" and id(fn) in self.units]
        seen = {id(fn) for fn in reach}
        for fn in reach:  # grows while it is walked
            for callee in self.edges.get(id(fn), ()):
                if id(callee) not in seen:
                    seen.add(id(callee))
                    reach.append(callee)
        self.judging, self.flags = True, []
        for t in own_forward:
            if isinstance(t, tuple) and t[0] == "layer":
                self.flags.append((self.cls, f"ModelNew's forward is {t[1].replace('torch.nn.', 'nn.')}'s", "call"))
        self.mode = "reach"
        for fn in reach:
            for index in self.unit_jobs.get(id(fn), []):
                self._run(self.jobs[index])
        self.mode = "kept"
        kept = [0] + [
            key for key, unit in self.units.items() if getattr(unit, "name", "") == "__init__" and key not in seen
        ]
        for key in kept:
            for index in self.unit_jobs.get(key, []):
                self._run(self.jobs[index])
        self.mode, self.judging = "", False
        return self._evidence()

    def _evidence(self) -> list[str]:
        by_line: dict[int, list[tuple[ast.AST, object, str]]] = {}
        for node, text, kind in self.flags:
            by_line.setdefault(getattr(node, "lineno", 0), []).append((node, text, kind))
        lines = []
        for line in sorted(by_line):
            kept: list[tuple[ast.AST, str, str]] = []
            for node, text, kind in sorted(by_line[line], key=lambda f: -self._span(f[0])):
                if kind == "op" and any(k[2] == "op" and self._inside(node, k[0]) for k in kept):
                    continue
                words = text() if callable(text) else text
                if words not in [k[1] for k in kept]:
                    kept.append((node, words, kind))  # type: ignore[arg-type]
            lines += [f"line {line}: {words}" for _, words, _ in kept]
        return lines

    @staticmethod
    def _span(node: ast.AST) -> int:
        start, end = getattr(node, "col_offset", 0), getattr(node, "end_col_offset", 0) or 0
        lines = (getattr(node, "end_lineno", 0) or 0) - (getattr(node, "lineno", 0) or 0)
        return lines * 10_000 + end - start

    @staticmethod
    def _inside(inner: ast.AST, outer: ast.AST) -> bool:
        a = (getattr(inner, "lineno", 0), getattr(inner, "col_offset", 0))
        b = (getattr(inner, "end_lineno", 0), getattr(inner, "end_col_offset", 0))
        return (getattr(outer, "lineno", 0), getattr(outer, "col_offset", 0)) <= a and b <= (
            getattr(outer, "end_lineno", 0),
            getattr(outer, "end_col_offset", 0),
        )


def _strict_compute(m: _Module, cls: ast.ClassDef | None, launches: list[str] | None = None) -> list[str]:
    """torch_ops=strict: every place the code ModelNew runs computes with PyTorch (``line N: what``), star imports
    from torch, and a ModelNew the guards cannot find. ``launches`` gets the kernel launches found on the way."""
    found = [
        f"line {n.lineno}: from {n.module} import * puts PyTorch's functions under bare names the guards cannot "
        "tell from yours; import the module and name what you use"
        for n in _top_level(m.tree.body)
        if isinstance(n, ast.ImportFrom)
        and not n.level
        and (n.module or "").split(".")[0] == "torch"
        and any(a.name == "*" for a in n.names)
    ]
    if cls is None:
        return found + [
            "ModelNew is not a class the candidate's text defines (class ModelNew(nn.Module): ...), so "
            "what its forward runs cannot be read"
        ]
    strict = _Strict(m, cls)
    found += strict.findings()
    if launches is not None:
        launches += strict.launches
    return found


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
        found.append(
            p.found(
                "reference",
                f"`ModelNew = Model` ({_where(assigned)}): ModelNew is the reference itself. "
                "Define a ModelNew class whose forward launches your own kernels.",
            )
        )
    if cls is not None:
        chain = m.bases(cls)
        for c in chain:
            for base in c.bases:
                if isinstance(base, ast.Name) and base.id == "Model":
                    found.append(
                        p.found(
                            "reference",
                            f"class {c.name} inherits from Model ({_where(base)}), the "
                            "reference: subclass nn.Module and implement forward yourself.",
                        )
                    )
        reach = m.reachable(cls)
        wraps = [
            f"{_where(n)}"
            for fn in reach + [m.method(cls, "__init__")]
            if fn is not None
            for n in ast.walk(fn)
            if isinstance(n, ast.Name) and n.id == "Model"
        ]
        if wraps:
            found.append(
                p.found(
                    "reference",
                    f"ModelNew uses the reference's Model ({_listed(wraps)}): it wraps "
                    "the reference instead of computing the result itself.",
                )
            )
        forward = m.method(cls, "forward")
        if forward is not None and _is_empty(forward):
            found.append(
                p.found(
                    "empty_body",
                    f"ModelNew.forward ({_where(forward)}) has an empty body (pass, ... "
                    "or a docstring): it computes nothing and returns None.",
                )
            )
        runs = [fn for fn in reach if fn.name != "__init__"]
        launches: list[str] = []
        if p.strict:  # an allow-list over everything forward reaches
            compute = _strict_compute(m, cls, launches)
        else:  # a report of the PyTorch compute the guards name
            compute = m.torch_compute(runs) + m.torch_compute(m.kept_values(runs), calls=False)
        uses = m.uses_kernel(reach)
        if not uses and m.defines_kernels():  # reached another way (a lambda or functools.partial kept on self ...)
            if not p.strict:
                _strict_compute(m, cls, launches)
            uses = launches
    else:  # ModelNew is made some other way: only what the whole module defines can be judged
        uses, compute = [], (_strict_compute(m, None) if p.strict else [])
    defined = m.defines_kernels()
    if not defined:
        anywhere = compute or m.torch_compute([m.tree])
        tail = f" It computes with PyTorch: {_listed(anywhere)}." if anywhere else ""
        found.append(
            p.found(
                "no_custom_kernel",
                "the candidate defines no kernel of its own (no load_inline/load "
                "CUDA extension, @triton.jit function or CuPy RawKernel)."
                + tail
                + " Write the computation as a CUDA or Triton kernel and launch it from forward.",
            )
        )
    elif cls is not None and not uses:
        found.append(
            p.found(
                "no_custom_kernel",
                f"kernels are defined ({_listed(defined)}) but nothing ModelNew."
                "forward runs refers to them: forward never launches them.",
            )
        )
    forward = m.method(cls, "forward") if cls is not None else None
    reference_body = _reference_forward(reference_source)
    if forward is not None and reference_body is not None and _body_dump(forward) == reference_body:
        found.append(
            p.found(
                "reference",
                f"ModelNew.forward ({_where(forward)}) is the reference's forward, "
                "statement for statement: it runs PyTorch, not a kernel of yours.",
            )
        )
    if compute:
        if p.strict:
            shown = "; ".join(compute[:MAX_LISTED]) + (
                f" (and {len(compute) - MAX_LISTED} more such places)" if len(compute) > MAX_LISTED else ""
            )
            evidence = (
                f"ModelNew.forward runs PyTorch compute: {shown}. eval.torch_ops=strict allows only your own "
                "kernels, allocation, views, reshapes, casts and copies, and plain Python on sizes (ints, "
                "shapes, grids): write the rest in your kernels."
            )
        else:
            evidence = (
                f"ModelNew.forward runs PyTorch compute: {_listed(compute)} (allowed: torch_ops=lenient; "
                "on a GPU their share of the time is measured)."
            )
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
                    found.append(
                        p.found(
                            "fallback",
                            f"the except branch at {_where(handler)} runs {what}: when the "
                            "kernel fails, PyTorch silently computes the result. Let the error surface.",
                        )
                    )
                elif body_kernel and not reraises:
                    found.append(
                        p.found(
                            "fallback",
                            f"the try at {_where(node)} wraps your kernel ({body_kernel[0]}) "
                            f"and the except branch at {_where(handler)} swallows its failure: let the "
                            "error surface instead.",
                        )
                    )
        elif isinstance(node, ast.With):
            for item in node.items:
                q = m.qual(item.context_expr.func) if isinstance(item.context_expr, ast.Call) else None
                if q == "contextlib.suppress" and m.uses_kernel(
                    m.closure([ast.Module(body=node.body, type_ignores=[])])
                ):
                    found.append(
                        p.found(
                            "fallback",
                            f"contextlib.suppress at {_where(node)} swallows your kernel's "
                            "failure: let the error surface instead.",
                        )
                    )
    return found


def _side_effects(m: _Module, p: Policies) -> list[dict[str, str]]:
    """concurrency, monkey_patch, io, introspection."""
    hits: dict[str, list[str]] = {"concurrency": [], "monkey_patch": [], "io": [], "introspection": []}
    env_writes: list[str] = []
    handled: set[int] = set()
    build_sources = _build_sources(m)

    prefixes = {id(n.value) for n in ast.walk(m.tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(m.tree):
        where = _where(node)
        reached = _reexported_module(m, node, prefixes)  # ``ce.subprocess``: as good as importing subprocess
        if (
            reached
            and _import_guard(reached) in ("concurrency", "introspection", "io")
            or reached in ("os", "glob", "shutil", "pathlib", "io", "tempfile")
        ):
            guard = _import_guard(reached) or "io"
            hits[guard].append(f"{_text(node, 60)} reaches {reached} through another module ({where})")
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
                    text = _text(target, 80)
                    hits["monkey_patch"].append(f"{text} = ... ({where})")
                    handled.update(id(n) for n in ast.walk(target))
        elif isinstance(node, ast.Call):
            q = m.qual(node.func) or ""
            func = node.func
            if q.startswith(CONCURRENCY_NAMES) and "current_stream" in _text(node, 1 << 20):
                handled.update(id(n) for n in ast.walk(func))  # torch's current stream, wrapped: not a new one
            elif _import_system_call(m, node):  # the dynamic_code guard's
                handled.update(id(n) for n in ast.walk(func))
            elif (
                isinstance(func, ast.Name)
                and func.id in ("setattr", "delattr")
                and node.args
                and _module_rooted(m, node.args[0])
            ):
                hits["monkey_patch"].append(f"{func.id}({_text(node.args[0], 80)}, ...) ({where})")
            elif (
                isinstance(func, ast.Name)
                and func.id == "getattr"
                and len(node.args) >= 2
                and _module_rooted(m, node.args[0])
                and not isinstance(node.args[1], ast.Constant)
            ):
                hits["introspection"].append(f"getattr({_text(node.args[0], 80)}, <computed name>) ({where})")
            elif isinstance(func, ast.Name) and func.id in INTROSPECTION_BUILTINS and m.builtin(func.id):
                hits["introspection"].append(f"{func.id}() ({where})")
            elif (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in (
                "io.open",
                "codecs.open",
                "os.open",
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
            elif (
                q in FILE_READS
                or q.startswith(FILE_READ_MODULES)
                or (isinstance(func, ast.Attribute) and func.attr in FILE_READ_METHODS)
            ):
                hits["io"].append(f"{q or func.attr}() ({where})")  # type: ignore[union-attr]
            elif isinstance(func, ast.Attribute) and not q and func.attr == "open" and _opens_for_reading(node, 0):
                hits["io"].append(f".open(...) for reading ({where})")
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
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and (id(node) in build_sources or _looks_like_c(node.value))
        ):
            code = _strip_c_comments(node.value)
            for match in CUDA_CONCURRENCY.finditer(code):
                hits["concurrency"].append(f"{match.group(0)} in the CUDA source ({where})")
            for match in CUDA_PATCH.finditer(code):
                what = (
                    "defines code in ATen's namespace"
                    if match.group(0).startswith("namespace")
                    else "re-registers aten ops"
                )
                hits["monkey_patch"].append(f"{match.group(0)} in the CUDA source ({where}): {what}")
            for match in CUDA_IO.finditer(code):
                hits["io"].append(f"{match.group(0).rstrip('( ')} in the CUDA source ({where})")

    advice = {
        "concurrency": "work must run on the calling thread and torch's current stream, where the timing sees it; "
        "no threads, processes, signal handlers, new streams, CUDA graphs or profiler controls",
        "monkey_patch": "a candidate may not change torch, the clocks or other modules the evaluator and the "
        "reference use",
        "io": "a kernel has no reason to read files, the environment or the network",
        "introspection": "these reach into the evaluator (the reference, its outputs, the clocks); a kernel "
        "needs none of them",
    }
    found = [p.found(guard, f"{_listed(items)}: {advice[guard]}.") for guard, items in hits.items() if items]
    if env_writes:
        found.append(
            p.found("io", f"sets environment variables ({_listed(env_writes)}); allowed, noted.", verdict=REPORT)
        )
    return found


def _opens_for_reading(call: ast.Call, mode_index: int = 1) -> bool:
    mode = (
        call.args[mode_index]
        if len(call.args) > mode_index
        else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
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


def _reexported_module(m: _Module, node: ast.AST, prefixes: set[int]) -> str | None:
    """The module an attribute chain reaches through another module that holds it (``ce.subprocess``,
    ``torch.library.torch``), as an import of it would name it; None for a chain that stays in the module it starts
    from, or a part of a longer chain (``prefixes``: the ids of such parts)."""
    if not isinstance(node, ast.Attribute) or id(node) in prefixes:
        return None
    q = m.qual(node)
    first = node
    while isinstance(first, ast.Attribute):
        first = first.value
    start = m.qual(first) if isinstance(first, ast.Name) else None
    if not q or not start:
        return None
    reached = next((i for i, part in enumerate(q.split(".")) if part), 0)
    module = q.split(".")[reached]
    return module if module != start.split(".")[0] else None


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
        what = f"{_text(func, 60)}(...)"
        path = args[0] if args else next((k.value for k in call.keywords if k.arg == "file"), None)
        if (isinstance(func, ast.Name) and func.id == "open" and m.builtin("open")) or q in ("io.open", "codecs.open"):
            return [(what, path, False)] if path is not None and _opens_for_writing(call, 1) else []
        if q in TEMP_FILES:
            suffix = next((k.value for k in call.keywords if k.arg == "suffix"), None)
            return [(what, suffix, True)] if suffix is not None else []
        if (
            q
            in (
                "os.rename",
                "os.replace",
                "os.renames",
                "os.link",
                "os.symlink",
                "shutil.copy",
                "shutil.copy2",
                "shutil.copyfile",
                "shutil.move",
            )
            and len(args) >= 2
        ):
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
                return {None} if PERCENT_FORMAT_AT_END.search(left.value[-256:]) else {left.value}
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
        defaults = dict(zip(positional[len(positional) - len(fn.args.defaults) :], fn.args.defaults))
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
    mode = (
        call.args[mode_index]
        if len(call.args) > mode_index
        else next((k.value for k in call.keywords if k.arg == "mode"), None)
    )
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


DYNAMIC_ADVICE = "write that code in the candidate itself"
"""What every ``dynamic_code`` finding about code kept elsewhere tells the Coder."""


def _lookup(what: str) -> str:
    """The evidence for an attribute lookup the guards cannot follow."""
    return (
        f"{what} looks an attribute up by a name the guards cannot read, so they cannot tell what it reaches; "
        "name the attribute in the code (index an nn.ModuleList or a list by number)"
    )


def _dynamic_imports(node: ast.Import | ast.ImportFrom, built: set[str]) -> list[str]:
    """What an import loads that the guards cannot see: a module that imports, unpickles or runs code; a relative
    import; a module neither the evaluator provides nor the candidate builds (``built``: its extensions' names)."""
    found = []
    for name in _imported(node):
        root = name.split(".")[0]
        if _import_guard(name) == "dynamic_code":
            found.append(
                f"import {name} loads or rebuilds code the guards cannot see (modules, pickles, code "
                f"objects); {DYNAMIC_ADVICE}"
            )
        elif not root:
            found.append(
                f"from {name} import ...: the candidate is a single file with nothing beside it to import; "
                f"{DYNAMIC_ADVICE}"
            )
        elif _import_guard(name) is None and root not in KNOWN_MODULES and root not in built:
            found.append(
                f"import {name}: {root} is neither a package the evaluator provides (the standard library, "
                "torch, triton, numpy, cupy, cutlass, tilelang ...) nor built by the candidate, so only a "
                f"module the candidate wrote could answer; {DYNAMIC_ADVICE}"
            )
    return found


def _own_prefixed(obj: ast.expr, name: ast.expr) -> bool:
    """``getattr(self, f"scale_{i}")``: the model's own attribute under a name with a literal start (buffers and
    layers registered in a loop), common in honest code. It is not dynamic code: under ``torch_ops=strict`` what it
    returns is unknown to the analysis, and a call of an unknown is judged as compute there."""
    return (
        isinstance(obj, ast.Name)
        and obj.id == "self"
        and isinstance(name, ast.JoinedStr)
        and bool(name.values)
        and isinstance(name.values[0], ast.Constant)
        and str(name.values[0].value).isidentifier()
        and not str(name.values[0].value).startswith("_")
    )


def _dynamic_call(m: _Module, call: ast.Call, paths: _Paths) -> list[str]:
    """What a call does that the guards cannot follow: change where imports come from, look an attribute up by a
    computed name, keep a ``methodcaller``/``attrgetter`` for later, write a file Python could load."""
    func, args = call.func, call.args
    found = []
    changed = _import_system_call(m, call) or next(
        ("sys.path" for a in args if _import_system_object(m, a) == "sys.path"), None
    )
    if changed:
        found.append(
            f"{_text(func, 60)}(...) can change {changed}, where imports come from; import only the "
            "standard library and the kernel languages' packages"
        )
    elif (
        isinstance(func, ast.Name)
        and func.id in LOOKUP_BUILTINS
        and m.builtin(func.id)
        and len(args) >= 2
        and not _literal_name(args[1])
        and not _module_rooted(m, args[0])
        and not _own_prefixed(args[0], args[1])
    ):
        found.append(_lookup(f"{func.id}({_text(args[0], 40)}, {_text(args[1], 40)})"))
    elif _under(
        m.qual(func) or "",
        ("operator.methodcaller", "operator.attrgetter", "_operator.methodcaller", "_operator.attrgetter"),
        exact=True,
    ):
        found.append(
            f"{_text(call, 60)} is kept or passed instead of applied at once (or its name is "
            "computed), so the guards cannot tell what it calls; call the method itself"
        )
    for what, expr, is_suffix in paths.writes(call):
        tails = paths.tails(expr)
        loadable = sorted(t for t in tails if t is not None and t.lower().endswith(LOADABLE_SUFFIXES))
        if loadable:
            written = f"a file ending in {loadable[0]!r}" if is_suffix else repr(loadable[0][-60:])
            found.append(
                f"{what} writes {written}, which Python can import or load; the candidate is one file: {DYNAMIC_ADVICE}"
            )
        elif None in tails:
            found.append(
                f"{what} writes a file whose name the guards cannot work out (it may be a module the "
                "candidate then loads); write only CUDA/C++ sources, under a name that ends in a literal "
                ".cu, .cpp, .h or .cuh"
            )
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
        return [_lookup(_text(node, 60))]
    if isinstance(node, ast.Attribute) and (
        node.attr in INTERPRETER_INTERNALS
        or (
            isinstance(node.value, ast.Attribute)
            and node.value.attr == "__class__"
            and node.attr.startswith("__")
            and node.attr not in ("__name__", "__qualname__", "__module__", "__doc__")
        )
    ):
        return [
            f"{_text(node)} reaches the interpreter's internals (a function's globals and builtins, a class's "
            f"subclasses), from which any code runs; {DYNAMIC_ADVICE}"
        ]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in INTERNAL_NAMES:
        return [
            f"the string {node.value!r} names an interpreter internal: code that looks names up from strings "
            f"(torch.fx's call_method, a lookup by name) reaches anything through it; {DYNAMIC_ADVICE}"
        ]
    if not isinstance(node, (ast.Name, ast.Attribute)) or id(node) in prefixes:
        return []
    q = m.qual(node) or ""
    if _under(q, DYNAMIC_NAMES) or any(part in DYNAMIC_SUBMODULES for part in q.split(".")[1:]):
        return [
            f"{q} builds or loads code, a module or a library the guards cannot see; build kernels from source "
            "in the candidate (load_inline, @triton.jit)"
        ]
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
    built = {
        name
        for n in nodes
        if isinstance(n, ast.Call) and m.is_builder(n)
        for name in map(_literal_name, [*n.args[:1], *(k.value for k in n.keywords if k.arg == "name")])
        if name
    }
    items: list[tuple[ast.AST, str]] = []
    for node in nodes:
        found = _dynamic_name(m, node, called, prefixes)
        reached = _reexported_module(m, node, prefixes)
        if reached and _import_guard(reached) == "dynamic_code":
            found.append(
                f"{_text(node, 60)} reaches {reached} through another module; import only the standard "
                "library and the kernel languages' packages, and load nothing at run time"
            )
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += _dynamic_imports(node, built)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            found += [
                f"{_text(t, 60)} = ... changes where imports come from; import only the standard "
                "library and the kernel languages' packages"
                for t in targets
                if _import_system(m, t)
            ]
        elif isinstance(node, ast.Call):
            found += _dynamic_call(m, node, paths)
        items += [(node, text) for text in found]
    first: dict[str, str] = {}
    for node, text in sorted(items, key=lambda item: getattr(item[0], "lineno", 0)):
        first.setdefault(_where(node), f"{_where(node)}: {text}")
    lines = list(first.values())
    if len(lines) > MAX_LISTED:
        lines = lines[: MAX_LISTED - 1] + [f"{lines[MAX_LISTED - 1]} (and {len(lines) - MAX_LISTED} more such places)"]
    return [p.found("dynamic_code", line + ".") for line in lines]


def _module_rooted(m: _Module, node: ast.AST) -> str | None:
    """The module an expression is reached from (``torch`` for ``torch.nn.functional``), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return m.aliases.get(node.id) if isinstance(node, ast.Name) else None


def static_findings(
    source: str, policies: Policies | None = None, reference_source: str | None = None
) -> list[dict[str, str]]:
    """Every static guard's findings for a candidate that parses and defines ``ModelNew``.

    ``reference_source`` (the task's source) lets the ``reference`` guard see a copied forward.
    """
    p = policies or Policies()
    module = _Module.parse(source)
    return _side_effects(module, p) + _dynamic_code(module, p) + _structure(module, p, reference_source)
