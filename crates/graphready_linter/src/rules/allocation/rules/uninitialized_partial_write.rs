use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::allocation::buffers;
use crate::violation::{Check, Violation};
use ruff_python_ast::Stmt;

declare_violation! {
    /// ## What it does
    /// Checks for a buffer from `torch.empty`, `torch.empty_like`, `x.new_empty` (or from a
    /// project function that returns one unwritten, such as a `create_*_scale` helper) that is
    /// written only in part and then used whole.
    ///
    /// - Written through a slice (`buf[:n] = ...`) and then returned or passed to a call that is
    ///   not told the same bound.
    /// - Handed to a kernel together with a per-expert row count (`masked_m`,
    ///   `expert_num_tokens`, `tokens_per_expert`, `num_tokens_post_padded`), or filled per
    ///   expert in a loop up to each expert's count (`scale[e, :n] = ...`), and then passed to a
    ///   call without the count — or, for a scale-factor buffer, returned.
    ///
    /// A scale-factor buffer is one named like it (`*scale*`, `*_sf`) whose dtype is, or may be,
    /// fp32 (`dtype=torch.int32 if packed else torch.float32` may be).
    ///
    /// ## Why is this bad?
    /// `torch.empty` memory holds whatever was there before. The rows nobody wrote are garbage,
    /// and a consumer that reads the whole buffer reads them. A masked GEMM never reads the
    /// padding rows of its data operand, but scale buffers are different: layout transforms and
    /// UE8M0 checks read every row. A real case (SGLang PR #32386): an fp32 UE8M0 scale buffer
    /// allocated with `torch.empty` was written by a Triton kernel only below `masked_m` and
    /// returned to the caller, which handed it to DeepGEMM; its scale-layout transform
    /// (`smxx_layout.cuh`) asserts on the device that every value, padding rows included, is a
    /// power of two, hit garbage in the padding, and the device assert poisoned the CUDA context
    /// (error 719) during decode graph capture. Whether it happens depends on what the allocator
    /// hands out, so it comes and goes.
    ///
    /// ## Example
    /// ```python
    /// def silu_mul_quant(gateup, masked_m, E: int, N: int, G: int, dev):
    ///     out = torch.empty((E, N, G * 128), device=dev, dtype=torch.float8_e4m3fn)
    ///     out_scale = torch.empty((E, N, G), device=dev, dtype=torch.float32)
    ///     silu_and_mul_masked_post_quant(gateup, out, out_scale, 128, masked_m)
    ///     return out, out_scale
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def silu_mul_quant(gateup, masked_m, E: int, N: int, G: int, dev):
    ///     out = torch.empty((E, N, G * 128), device=dev, dtype=torch.float8_e4m3fn)
    ///     out_scale = torch.zeros((E, N, G), device=dev, dtype=torch.float32)  # padding: 0.0
    ///     silu_and_mul_masked_post_quant(gateup, out, out_scale, 128, masked_m)
    ///     return out, out_scale
    /// ```
    ///
    /// The data buffer `out` may stay `torch.empty`: the masked GEMM reads only its real rows.
    ///
    /// ## Known problems
    /// Writes inside a loop, two or more partial writes, and writes through a tensor index are
    /// taken to cover the whole buffer, except a scale buffer filled per expert up to a count. A
    /// call that receives the buffer without a row bound is taken to write all of it. A data
    /// buffer written by a masked kernel and returned is not reported: the caller holds the same
    /// bound. Allocation helpers are recognised when they return the allocation unwritten (or a
    /// view or slice of it) on every path. A scale buffer whose fp32 case never reaches a UE8M0
    /// check (fp32 exactly when UE8M0 scales are off, say) is reported all the same: graphready
    /// does not relate the dtype's condition to the consumer's flags.
    pub struct UninitializedPartialWrite {
        buffer: String,
        factory: String,
        returned: bool,
    }
}

impl Violation for UninitializedPartialWrite {
    const CODE: &'static str = "GR404";
    const NAME: &'static str = "uninitialized-partial-write";

    fn message(&self) -> String {
        if self.returned {
            format!(
                "scale buffer `{}` from `{}` is written only up to its row counts and returned \
                 whole: the other rows are uninitialised memory that scale consumers read",
                self.buffer, self.factory
            )
        } else {
            format!(
                "`{}` from `{}` is written only in part and then used whole: the rest is \
                 uninitialised memory",
                self.buffer, self.factory
            )
        }
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

    fn function_exit(checker: &mut Checker) {
        if checker.rule_state.allocation.returns_fresh == Some(true) {
            if let Some(function) = checker.function().map(str::to_string) {
                checker.model.learn_uninitialized_buffer(&function);
            }
        }
    }
}

/// GR404: reports the buffers the dataflow finds written in part and then used whole, and
/// remembers whether the function hands out fresh allocations.
fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    if let Stmt::Return(ret) = stmt {
        let fresh = ret
            .value
            .as_deref()
            .is_some_and(|value| buffers::returns_fresh(checker, value));
        let returns = &mut checker.rule_state.allocation.returns_fresh;
        *returns = Some(returns.unwrap_or(true) && fresh);
    }
    for leak in buffers::follow(checker, stmt) {
        checker.report(
            UninitializedPartialWrite {
                buffer: leak.name.to_string(),
                factory: leak.factory.to_string(),
                returned: leak.returned,
            },
            leak.allocation,
        );
    }
}
