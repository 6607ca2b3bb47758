//! What PyTorch's API returns, as far as the tensor inference needs to know.
//!
//! The lists err towards "unknown": a name missing here makes graphready silent, never noisy.

/// `torch.<name>` functions that return something other than a tensor (host values, objects,
/// context managers). Names starting with `is_`, `get_`, `set_`, `use_`, `are_`, `can_`, `has_`
/// or `_` are treated the same way without being listed.
const TORCH_NON_TENSOR: &[&str] = &[
    "allclose",
    "autocast",
    "broadcast_shapes",
    "compile",
    "device",
    "dtype",
    "enable_grad",
    "equal",
    "finfo",
    "Generator",
    "iinfo",
    "inference_mode",
    "load",
    "manual_seed",
    "no_grad",
    "numel",
    "promote_types",
    "result_type",
    "save",
    "seed",
    "Size",
    "typename",
    "initial_seed",
    "empty_cache",
    "Stream",
    "Event",
    "layout",
    "memory_format",
];

/// `torch.<name>` functions that return a tuple or list of tensors.
const TORCH_TENSOR_SEQ: &[&str] = &[
    "split",
    "chunk",
    "unbind",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "meshgrid",
    "broadcast_tensors",
    "topk",
    "sort",
    "split_with_sizes",
    "aminmax",
    "frexp",
    "histogram",
    "lu",
    "qr",
    "svd",
    "slogdet",
    "kthvalue",
    "mode",
    "var_mean",
    "std_mean",
    "cummax",
    "cummin",
    "geqrf",
    "lstsq",
    "triangular_solve",
];

/// Reductions that return a `(values, indices)` tuple when given a dimension and a tensor without.
const DIM_TUPLE_REDUCTIONS: &[&str] = &["max", "min", "median", "nanmedian"];

/// Tensor methods that return a tensor.
const TENSOR_METHODS: &[&str] = &[
    "abs",
    "abs_",
    "acos",
    "add",
    "add_",
    "addcmul",
    "addcmul_",
    "addcdiv",
    "addmm",
    "all",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "asin",
    "atan",
    "baddbmm",
    "bernoulli",
    "bfloat16",
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "bmm",
    "bool",
    "byte",
    "ceil",
    "char",
    "clamp",
    "clamp_",
    "clamp_max",
    "clamp_min",
    "clip",
    "clone",
    "contiguous",
    "copy_",
    "cos",
    "count_nonzero",
    "cpu",
    "cuda",
    "cumprod",
    "cumsum",
    "detach",
    "detach_",
    "diag",
    "diagonal",
    "div",
    "div_",
    "double",
    "eq",
    "erf",
    "exp",
    "exp_",
    "expand",
    "expand_as",
    "fill_",
    "flatten",
    "flip",
    "float",
    "floor",
    "floor_divide",
    "fmod",
    "gather",
    "ge",
    "gt",
    "half",
    "index_add_",
    "index_copy_",
    "index_fill_",
    "index_select",
    "int",
    "isfinite",
    "isinf",
    "isnan",
    "le",
    "lerp",
    "log",
    "log_",
    "log1p",
    "log2",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "long",
    "lt",
    "masked_fill",
    "masked_fill_",
    "masked_scatter_",
    "matmul",
    "maximum",
    "mean",
    "minimum",
    "mm",
    "mul",
    "mul_",
    "nan_to_num",
    "narrow",
    "ne",
    "neg",
    "new_empty",
    "new_full",
    "new_ones",
    "new_tensor",
    "new_zeros",
    "norm",
    "normal_",
    "permute",
    "pow",
    "prod",
    "reciprocal",
    "relu",
    "remainder",
    "repeat",
    "repeat_interleave",
    "reshape",
    "reshape_as",
    "round",
    "rsqrt",
    "scatter",
    "scatter_",
    "scatter_add",
    "scatter_add_",
    "scatter_reduce",
    "select",
    "short",
    "sigmoid",
    "sign",
    "sin",
    "softmax",
    "sqrt",
    "square",
    "squeeze",
    "squeeze_",
    "std",
    "sub",
    "sub_",
    "sum",
    "t",
    "tanh",
    "to",
    "transpose",
    "tril",
    "triu",
    "trunc",
    "type_as",
    "uniform_",
    "unsqueeze",
    "unsqueeze_",
    "var",
    "view",
    "view_as",
    "where",
    "zero_",
    "nonzero",
    "masked_select",
    "unique",
    "flatten",
    "unflatten",
    "roll",
    "sort_values",
    "float_power",
    "signbit",
    "sgn",
    "exp2",
    "expm1",
    "logit",
    "pin_memory",
    "requires_grad_",
    "mT",
    "mH",
    "cumulative_trapezoid",
    "bincount",
    "argwhere",
    "index_put",
    "index_put_",
    "put_",
    "random_",
    "exponential_",
    "cauchy_",
    "geometric_",
    "log_normal_",
    "fmax",
    "fmin",
    "hypot",
    "outer",
    "dot",
    "cross",
    "kron",
    "inverse",
    "det",
    "trace",
    "sum_to_size",
    "nansum",
    "nanmean",
    "frac",
    "heaviside",
    "isclose",
    "isreal",
    "isneginf",
    "isposinf",
    "logaddexp",
    "movedim",
    "moveaxis",
    "swapaxes",
    "swapdims",
    "unfold",
    "as_strided",
    "tile",
    "take",
    "take_along_dim",
    "rot90",
    "diff",
    "float8_e4m3fn",
    "max",
    "min",
    "median",
    "nanmedian",
    "tan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "atan2",
    "deg2rad",
    "rad2deg",
    "log10",
    "erfc",
    "erfinv",
    "lgamma",
    "digamma",
    "sqrt_",
    "rsqrt_",
    "sigmoid_",
    "tanh_",
    "relu_",
    "neg_",
    "reciprocal_",
    "round_",
    "floor_",
    "ceil_",
    "trunc_",
    "sign_",
    "clamp_min_",
    "clamp_max_",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "logical_and_",
    "logical_or_",
    "logical_not_",
    "cumsum_",
    "square_",
    "pow_",
];

/// Methods so specific to tensors that their result is a tensor even when the receiver's type is
/// unknown (NumPy arrays and Python containers have no method of that name).
const TENSOR_ONLY_METHODS: &[&str] = &[
    "bfloat16",
    "contiguous",
    "cuda",
    "detach",
    "expand",
    "expand_as",
    "half",
    "index_select",
    "masked_fill",
    "masked_fill_",
    "new_empty",
    "new_full",
    "new_ones",
    "new_zeros",
    "permute",
    "scatter_add_",
    "scatter_",
    "unsqueeze",
    "view_as",
    "float",
    "long",
    "int",
    "bool",
    "type_as",
    "clamp",
    "clamp_",
    "index_add_",
    "index_copy_",
    "index_fill_",
    "masked_scatter_",
    "narrow",
    "gather",
];

/// Tensor methods returning a tuple of tensors.
const TENSOR_SEQ_METHODS: &[&str] = &[
    "split",
    "chunk",
    "unbind",
    "tensor_split",
    "topk",
    "sort",
    "split_with_sizes",
    "aminmax",
    "kthvalue",
    "mode",
    "cummax",
    "cummin",
];

/// Tensor attributes that are tensors.
const TENSOR_ATTRIBUTES: &[&str] = &["T", "mT", "H", "mH", "data", "grad", "real", "imag"];

/// `torch.nn.functional` functions that do not return a tensor.
const FUNCTIONAL_NON_TENSOR: &[&str] = &["scaled_dot_product_attention_math"];

fn host_prefixed(name: &str) -> bool {
    ["is_", "get_", "set_", "use_", "are_", "can_", "has_", "_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// The namespaces under `torch.` whose members are functions of tensors, like `torch.*` itself.
pub const FUNCTION_NAMESPACES: [&str; 4] = ["nn.functional.", "linalg.", "fft.", "special."];

/// What a call to a `torch` function with this qualified name returns.
pub fn torch_function_result(qualified: &str, has_dim_argument: bool) -> Option<Returns> {
    if let Some(name) = qualified.strip_prefix("torch.") {
        if !name.contains('.') {
            if host_prefixed(name) || TORCH_NON_TENSOR.contains(&name) {
                return Some(Returns::Host);
            }
            if name.chars().next().is_some_and(char::is_uppercase) {
                // Classes (`torch.Tensor(...)` aside) are not tensors.
                return (name == "Tensor").then_some(Returns::Tensor);
            }
            if TORCH_TENSOR_SEQ.contains(&name)
                || (DIM_TUPLE_REDUCTIONS.contains(&name) && has_dim_argument)
            {
                return Some(Returns::TensorSeq);
            }
            return Some(Returns::Tensor);
        }
        for namespace in FUNCTION_NAMESPACES {
            if let Some(function) = name.strip_prefix(namespace) {
                if function.contains('.') || host_prefixed(function) {
                    return None;
                }
                if FUNCTIONAL_NON_TENSOR.contains(&function) {
                    return Some(Returns::Host);
                }
                return Some(Returns::Tensor);
            }
        }
        if let Some(class) = name.strip_prefix("nn.") {
            if class == "Parameter" || class == "Buffer" {
                return Some(Returns::Tensor);
            }
            if !class.contains('.') && class.chars().next().is_some_and(char::is_uppercase) {
                return Some(Returns::Module);
            }
        }
        return match name {
            "cuda.Stream"
            | "cuda.current_stream"
            | "cuda.default_stream"
            | "cuda.ExternalStream"
            | "Stream" => Some(Returns::Stream),
            "cuda.Event" | "Event" => Some(Returns::Event),
            _ => None,
        };
    }
    if qualified.starts_with("numpy.") || qualified == "numpy" {
        return Some(Returns::Array);
    }
    if qualified.starts_with("math.") {
        return Some(Returns::Host);
    }
    None
}

/// A coarse classification of call results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returns {
    Tensor,
    TensorSeq,
    Host,
    /// A Python list of host values (`tolist()`).
    HostList,
    /// NumPy arrays and scalars.
    Array,
    Module,
    Stream,
    Event,
}

/// What `tensor.<method>(...)` returns.
pub fn tensor_method_result(
    method: &str,
    has_dim_argument: bool,
    arg_count: usize,
) -> Option<Returns> {
    match method {
        "tolist" => return Some(Returns::HostList),
        "item" | "size" | "dim" | "numel" | "stride" | "data_ptr" | "element_size" | "nelement"
        | "ndimension" | "get_device" | "numpy" | "equal" | "allclose" | "storage_offset"
        | "untyped_storage" | "storage" | "__len__" => return Some(Returns::Host),
        "type" if arg_count == 0 => return Some(Returns::Host),
        _ => {}
    }
    if method.starts_with("is_") {
        return Some(Returns::Host);
    }
    if TENSOR_SEQ_METHODS.contains(&method)
        || (DIM_TUPLE_REDUCTIONS.contains(&method) && has_dim_argument)
    {
        return Some(Returns::TensorSeq);
    }
    TENSOR_METHODS.contains(&method).then_some(Returns::Tensor)
}

/// Tensor methods whose names other common objects share (`re.Pattern.sub`, `set.add`, a
/// routing policy's `select(metadata)`): on a receiver of unknown type they say nothing, but
/// `select` with the tensor method's two arguments (`dim`, `index`).
pub fn is_shared_method(method: &str, arg_count: usize) -> bool {
    match method {
        "sub" | "add" => true,
        "select" => arg_count != 2,
        _ => false,
    }
}

/// Whether `<unknown>.<method>(...)` certainly returns a tensor.
pub fn is_tensor_only_method(method: &str) -> bool {
    TENSOR_ONLY_METHODS.contains(&method)
}

/// What `tensor.<attribute>` is.
pub fn tensor_attribute(attribute: &str) -> Option<Returns> {
    if TENSOR_ATTRIBUTES.contains(&attribute) {
        return Some(Returns::Tensor);
    }
    match attribute {
        "shape" | "dtype" | "device" | "ndim" | "layout" | "requires_grad" | "itemsize"
        | "nbytes" | "names" => Some(Returns::Host),
        _ if attribute.starts_with("is_") => Some(Returns::Host),
        _ => None,
    }
}

/// Factories that make a host tensor unless given `device=`.
const HOST_FACTORIES: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "rand",
    "randn",
    "randint",
    "linspace",
    "logspace",
    "eye",
    "randperm",
    "empty_strided",
    "frombuffer",
];

/// Whether `torch.<name>` without `device=` makes a host tensor.
pub fn is_host_factory(qualified: &str) -> bool {
    qualified
        .strip_prefix("torch.")
        .is_some_and(|name| HOST_FACTORIES.contains(&name))
}
