"""The static guards' vocabularies: the torch, Python and system names each guard knows, for its default policy."""

from __future__ import annotations

import re
import sys

from cudaforge import languages

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
