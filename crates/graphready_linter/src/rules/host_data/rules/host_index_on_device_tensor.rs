use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::device_tensor;
use crate::semantic::Ty;
use crate::violation::{Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for a device tensor indexed with a Python list
    /// (`x[[0, 2, 5]]`, `x[:, idx_list]` with a list literal) or with an index tensor known to
    /// live in host memory (`x[idx_cpu]`).
    ///
    /// ## Why is this bad?
    /// PyTorch turns the host index into a tensor and copies it to the device on every call: a
    /// host→device copy from pageable memory that a CUDA graph cannot record, so capture fails.
    ///
    /// ## Example
    /// ```python
    /// picked = hidden[:, [0, 2, 5]]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # once, at init: self.pick = torch.tensor([0, 2, 5], device="cuda")
    /// picked = hidden.index_select(1, self.pick)
    /// ```
    pub struct HostIndexOnDeviceTensor {
        index: &'static str,
    }
}

impl Violation for HostIndexOnDeviceTensor {
    const CODE: &'static str = "GR302";
    const NAME: &'static str = "host-index-on-device-tensor";
    const CAPTURED_ONLY: bool = true;

    fn message(&self) -> String {
        format!(
            "indexing a device tensor with {} copies the index to the device on every call",
            self.index
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some("Make the index a device tensor once, outside the step, and index with it".to_string())
    }
}

impl Check for HostIndexOnDeviceTensor {
    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::Subscript(subscript) = expr {
            host_index(checker, subscript);
        }
    }
}

fn host_index_kind(checker: &Checker, index: &Expr) -> Option<&'static str> {
    match index {
        Expr::List(list) if !list.elts.is_empty() => Some("a Python list"),
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .find_map(|elt| host_index_kind(checker, elt)),
        Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)
            if checker.ty(index) == Ty::CpuTensor =>
        {
            Some("a host index tensor")
        }
        _ => None,
    }
}

/// GR302
fn host_index(checker: &mut Checker, subscript: &ast::ExprSubscript) {
    if !device_tensor(checker, &subscript.value) {
        return;
    }
    if let Some(index) = host_index_kind(checker, &subscript.slice) {
        checker.report(HostIndexOnDeviceTensor { index }, subscript.range());
    }
}
