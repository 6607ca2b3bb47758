//! Small syntactic helpers shared by the checker, the guards and the summary builder.

use ruff_python_ast::Expr;

/// The last name of a callee or decorator: `no_graph` in `@x.no_graph` and `@no_graph()`.
/// Whether a function is read as an attribute: `@property`, `@cached_property`,
/// `@functools.cached_property`.
pub(crate) fn is_property(function: &ruff_python_ast::StmtFunctionDef) -> bool {
    function.decorator_list.iter().any(|decorator| {
        last_segment(&decorator.expression)
            .is_some_and(|name| matches!(name, "property" | "cached_property"))
    })
}

pub(crate) fn last_segment(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::Attribute(attribute) => Some(attribute.attr.id.as_str()),
        Expr::Call(call) => last_segment(&call.func),
        _ => None,
    }
}

/// Devices without CUDA graphs, as platform tests, device types and module names call them
/// (`is_xpu()`, `x.device.type == "mps"`, `hardware_backend/npu`); each use adds its own (the
/// host `cpu`, the `meta` device, `neuron` platforms, `mlx` and `ascend` packages).
pub(crate) const NO_CUDA_GRAPH_DEVICES: [&str; 5] = ["npu", "xpu", "tpu", "hpu", "mps"];
