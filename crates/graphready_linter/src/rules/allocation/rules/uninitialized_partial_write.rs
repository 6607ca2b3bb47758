use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::allocation::buffers;
use crate::violation::{Check, Violation};
use ruff_python_ast::Stmt;

declare_violation! {
    /// ## What it does
    /// Checks for a buffer from `torch.empty`, `torch.empty_like` or `x.new_empty` that is
    /// written only in part and then used whole: written through a slice (`buf[:n] = ...`) or
    /// handed to a masked kernel together with a row bound (`masked_m`), and afterwards
    /// returned or passed to a call that does not receive the same bound.
    ///
    /// ## Why is this bad?
    /// `torch.empty` memory holds whatever was there before. The rows nobody wrote are garbage,
    /// and a consumer that reads the whole buffer reads them. A real case: an fp32 UE8M0 scale
    /// buffer allocated with `torch.empty` was written by a masked kernel only below
    /// `masked_m`; DeepGEMM's scale-layout transform (`smxx_layout.cuh`) asserts on the device
    /// that every value, padding rows included, is a power of two, hit garbage in the padding,
    /// and the device assert poisoned the CUDA context (error 719) during decode graph
    /// capture. Whether it happens depends on what the allocator hands out, so it comes and goes.
    ///
    /// ## Example
    /// ```python
    /// scale = torch.empty((E, N, G), device=dev, dtype=torch.float32)
    /// silu_and_mul_masked_post_quant(gateup, out, scale, group_size, masked_m)
    /// return out, scale
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scale = torch.zeros((E, N, G), device=dev, dtype=torch.float32)  # padding is a valid 0.0
    /// silu_and_mul_masked_post_quant(gateup, out, scale, group_size, masked_m)
    /// return out, scale
    /// ```
    ///
    /// ## Known problems
    /// Writes inside a loop, two or more partial writes, and writes through a tensor index are
    /// taken to cover the whole buffer. A call that receives the buffer without a row bound is
    /// taken to write all of it. A masked kernel's output that is returned is not reported: the
    /// caller holds the same bound.
    pub struct UninitializedPartialWrite {
        buffer: String,
        factory: &'static str,
    }
}

impl Violation for UninitializedPartialWrite {
    const CODE: &'static str = "GR404";
    const NAME: &'static str = "uninitialized-partial-write";

    fn message(&self) -> String {
        format!(
            "`{}` from `{}` is written only in part and then used whole: the rest is \
             uninitialised memory",
            self.buffer, self.factory
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Allocate with `torch.zeros` (or `zeros_like` / `new_zeros`), or bound the consumer \
             by the same row count"
                .to_string(),
        )
    }
}

impl Check for UninitializedPartialWrite {
    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        self::statement(checker, stmt);
    }
}

/// GR404: reports the buffers the dataflow finds written in part and then used whole.
fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    for leak in buffers::follow(checker, stmt) {
        checker.report(
            UninitializedPartialWrite {
                buffer: leak.name.to_string(),
                factory: leak.factory,
            },
            leak.allocation,
        );
    }
}
