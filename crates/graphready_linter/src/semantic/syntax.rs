//! Syntactic facts the inference and the rules read off expressions: keyword arguments, device
//! names, and the names engines give their host mirrors.

use ruff_python_ast::{self as ast, Expr};

/// Whether a name says its value lives on the host (`positions_np`, `seq_lens_cpu`,
/// `cpu_tokens`, `host_buf`, `host`): engines name their NumPy and pinned mirrors this way.
pub fn host_named(name: &str) -> bool {
    // Without allocating: this runs for every name the inference looks at.
    fn has(haystack: &[u8], needle: &[u8]) -> bool {
        haystack
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
    }
    fn starts(haystack: &[u8], prefix: &[u8]) -> bool {
        haystack.len() >= prefix.len() && haystack[..prefix.len()].eq_ignore_ascii_case(prefix)
    }
    fn ends(haystack: &[u8], suffix: &[u8]) -> bool {
        haystack.len() >= suffix.len()
            && haystack[haystack.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    }
    let name = name.as_bytes();
    // Every marker holds a `p` (`np`, `numpy`, `cpu`) or an `h` (`host`): a name with neither
    // is answered without the substring searches.
    if !name.iter().any(|b| matches!(b | 0x20, b'p' | b'h')) {
        return false;
    }
    name.eq_ignore_ascii_case(b"host")
        || ends(name, b"_np")
        || starts(name, b"np_")
        || has(name, b"numpy")
        || ends(name, b"_cpu")
        || starts(name, b"cpu_")
        || has(name, b"_cpu_")
        || ends(name, b"_host")
        || starts(name, b"host_")
        || has(name, b"_host_")
}

/// An attribute named `np` or `cpu` read as data, not called: the host halves of a buffer kept
/// on both sides (vLLM's `CpuGpuBuffer`: `self.query_start_loc.np[i]`, `self.input_ids.cpu[:n]`).
/// Read as data, `x.cpu` cannot be the tensor method, which is only ever called.
pub fn is_host_half(attribute: &str) -> bool {
    matches!(attribute, "np" | "cpu")
}

/// Whether an expression's name says it lives on the host: a name, an attribute, or a subscript
/// of one (`seq_lens_cpu`, `self.positions_np`, `batch.seq_lens_cpu[:n]`), and the host halves
/// of a buffer pair (`buf.np`, `buf.cpu`: see [`is_host_half`]).
pub fn expr_host_named(expr: &Expr) -> bool {
    match expr {
        Expr::Name(name) => host_named(name.id.as_str()),
        Expr::Attribute(attribute) => {
            host_named(attribute.attr.id.as_str()) || is_host_half(attribute.attr.id.as_str())
        }
        Expr::Subscript(subscript) => expr_host_named(&subscript.value),
        _ => false,
    }
}

/// Whether a call passes `name=True`.
pub fn keyword_true(call: &ast::ExprCall, name: &str) -> bool {
    keyword(call, name).is_some_and(|value| matches!(value, Expr::BooleanLiteral(b) if b.value))
}

/// A keyword argument by name.
pub fn keyword<'e>(call: &'e ast::ExprCall, name: &str) -> Option<&'e Expr> {
    call.arguments
        .keywords
        .iter()
        .find(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|arg| arg.id.as_str() == name)
        })
        .map(|keyword| &keyword.value)
}

/// Whether a device expression names the host: `"cpu"`, `"cpu:0"`, `torch.device("cpu")`.
pub fn is_cpu_device(expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(literal) => {
            let text = literal.value.to_str();
            text == "cpu" || text.starts_with("cpu:")
        }
        Expr::Call(call) => {
            matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "device")
                && call.arguments.args.first().is_some_and(is_cpu_device)
        }
        _ => false,
    }
}

/// `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`.
pub fn is_cpu_move(call: &ast::ExprCall) -> bool {
    call.arguments.args.first().is_some_and(is_cpu_device)
        || keyword(call, "device").is_some_and(is_cpu_device)
}

/// Whether a call says where its result lives: a move (`.cuda()`, `.to(...)`, `.gpu()`), or a
/// `device=` keyword. A call that says neither (a helper's return, `torch.abs(x)`) gives a tensor
/// whose device follows its inputs, which a host-mirror name describes better.
pub fn places_result(call: &ast::ExprCall) -> bool {
    let moves = matches!(&*call.func, Expr::Attribute(attribute)
        if matches!(attribute.attr.as_str(), "cuda" | "to" | "gpu" | "type_as" | "pin_memory"));
    moves || keyword(call, "device").is_some()
}

/// A test of a name against `None`: `x is None` gives `(x, true)`, `x is not None` `(x, false)`.
pub fn none_comparison(test: &Expr) -> Option<(&str, bool)> {
    let Expr::Compare(compare) = test else {
        return None;
    };
    let ([op], [Expr::NoneLiteral(_)], Expr::Name(name)) =
        (&*compare.ops, &*compare.comparators, &*compare.left)
    else {
        return None;
    };
    match op {
        ast::CmpOp::Is => Some((name.id.as_str(), true)),
        ast::CmpOp::IsNot => Some((name.id.as_str(), false)),
        _ => None,
    }
}

/// The type an optional annotation holds when a value is present: `X` of `X | None` (or
/// `None | X`).
pub(super) fn or_none(binop: &ast::ExprBinOp) -> Option<&Expr> {
    if !matches!(binop.op, ast::Operator::BitOr) {
        return None;
    }
    match (
        binop.left.is_none_literal_expr(),
        binop.right.is_none_literal_expr(),
    ) {
        (true, false) => Some(&binop.right),
        (false, true) => Some(&binop.left),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::host_named;

    #[test]
    fn host_mirror_names() {
        for name in [
            "positions_np",
            "np_positions",
            "__np",
            "np_",
            "seq_lens_cpu",
            "cpu_tokens",
            "a_cpu_b",
            "_cpu",
            "host_buf",
            "buf_host",
            "a_HOST_b",
            "to_numpy_array",
            "NumPy",
            "a__np",
            "host",
            "Host",
        ] {
            assert!(host_named(name), "{name}");
        }
        for name in [
            "np",
            "cpu",
            "x_np_y",
            "xcpu_y",
            "x_cpux",
            "hidden_states",
            "input_ids",
            "hostname",
            "cpus",
            "npu_buf",
            "",
        ] {
            assert!(!host_named(name), "{name}");
        }
    }
}
