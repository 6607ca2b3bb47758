use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{device_tensor, host_named};
use crate::semantic::Ty;
use crate::violation::{Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for a device tensor indexed, read or written, with host data: a Python list
    /// (`x[[0, 2, 5]]`, `x[:, ids]` with `ids = [...]`, `logits[:, self.suppress_ids]` with a
    /// list stored on `self`, a `list[int]` parameter, `sorted(...)`), a tuple inside a tuple
    /// index, a NumPy array (`canvas[slots_np]`), or an index tensor known to live in host memory
    /// (`x[idx_cpu]`).
    ///
    /// ## Why is this bad?
    /// PyTorch turns the host index into a tensor in pageable memory and copies it to the device
    /// on every call. Inside a CUDA graph capture the copy fails ("Cannot copy between CPU and
    /// CUDA tensors during CUDA graph capture unless the CPU tensor is pinned"); outside it, the
    /// blocking copy waits for the stream on every step.
    ///
    /// ## Example
    /// ```python
    /// def pick(hidden: torch.Tensor):
    ///     return hidden[:, [0, 2, 5]]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def pick(hidden: torch.Tensor, pick_idx: torch.Tensor):
    ///     # pick_idx = torch.tensor([0, 2, 5], device="cuda"), made once at init
    ///     return hidden.index_select(1, pick_idx)
    /// ```
    ///
    /// ## Known problems
    /// A tuple used as the whole index is ordinary multi-dimensional indexing and is not
    /// reported. A NumPy index is recognised when it is named like one (`*_np`).
    pub struct HostIndexOnDeviceTensor {
        index: &'static str,
    }
}

impl Violation for HostIndexOnDeviceTensor {
    const CODE: &'static str = "GR302";
    const NAME: &'static str = "host-index-on-device-tensor";

    fn message(&self) -> String {
        format!(
            "indexing a device tensor with {} copies the index to the device on every call",
            self.index
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Make the index a device tensor once, outside the step, and index with it \
             (`index_select`, `index_fill_`, `index_copy_`)"
                .to_string(),
        )
    }
}

impl Check for HostIndexOnDeviceTensor {
    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::Subscript(subscript) = expr {
            host_index(checker, subscript);
        }
    }
}

/// What kind of host index `index` is, if it is one. `nested` is true inside a tuple index,
/// where a tuple is an index sequence rather than one index per dimension.
fn host_index_kind(checker: &Checker, index: &Expr, nested: bool) -> Option<&'static str> {
    match index {
        Expr::List(list) if !list.elts.is_empty() => Some("a Python list"),
        Expr::ListComp(_) => Some("a Python list"),
        Expr::Tuple(tuple) if nested && !tuple.elts.is_empty() => Some("a Python tuple"),
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .find_map(|elt| host_index_kind(checker, elt, true)),
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) | Expr::Call(_) => {
            match checker.ty(index) {
                Ty::HostList | Ty::HostLists => Some("a Python list"),
                ty if ty.is_host_tensor() => Some("a host index tensor"),
                Ty::Array if !matches!(index, Expr::Subscript(_)) && host_named(index) => {
                    Some("a NumPy array")
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// GR302
fn host_index(checker: &mut Checker, subscript: &ast::ExprSubscript) {
    if !device_tensor(checker, &subscript.value) {
        return;
    }
    if let Some(index) = host_index_kind(checker, &subscript.slice, false) {
        checker.report(HostIndexOnDeviceTensor { index }, subscript.range());
    }
}
