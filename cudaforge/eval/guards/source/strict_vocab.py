"""The vocabularies of ``torch_ops=strict``: the allow-lists of tensor attributes, layout and scalar methods,
plain builtins and torch modules that the strict reading lets through, and the tokens its abstract values are made
of."""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from typing import Any

from cudaforge import languages

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


# --------------------------------------------------------------------------- the strict reading's tokens

N, T, U = "n", "t", "?"
"""Tokens of the strict analysis: plain Python data (ints, sizes, strings, None), what may be a tensor, unknown."""
KERNEL = ("k",)
"""A kernel, an extension built from the candidate's source, or an object of a kernel language (launches allowed)."""
EMPTY: frozenset[Any] = frozenset()
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


def may_tensor(tokens: Iterable[Any]) -> bool:
    """Whether a value with these tokens may be a tensor (then Python's operators on it are PyTorch compute)."""
    return any(t in (T, U) or (type(t) is tuple and t[0] in ("k", "inst", "umeth")) for t in tokens)


def short_torch_name(q: str) -> str:
    return q.replace("torch.nn.functional.", "F.")
