//! Capture blocks: `with torch.cuda.graph(...)` bodies, whose calls are capture sites.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

impl SummaryBuilder<'_> {
    /// Whether a `with` item opens a CUDA graph capture.
    pub(crate) fn is_capture_context(model: &SemanticModel, item: &ast::WithItem) -> bool {
        let Expr::Call(call) = &item.context_expr else {
            return false;
        };
        if let Some(qualified) = model.qualified_name(&call.func) {
            return matches!(&*qualified, "torch.cuda.graph" | "torch.cuda.graphs.graph");
        }
        // `self.device_module.graph(g, pool=...)`: engines reach `torch.cuda` indirectly.
        matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "graph")
            && !call.arguments.args.is_empty()
    }

    /// The body of a `with torch.cuda.graph(...)` is about to be visited.
    pub(crate) fn enter_capture(&mut self, body: &[Stmt]) {
        self.capture_depth += 1;
        self.record_capture_block(body);
    }

    pub(crate) fn exit_capture(&mut self) {
        self.capture_depth -= 1;
    }

    fn record_capture_block(&mut self, body: &[Stmt]) {
        let (Some(first), Some(last)) = (body.first(), body.last()) else {
            return;
        };
        let range = (
            self.line_of(first.range().start()),
            self.line_of(last.range().end()),
        );
        if let Some(function) = self.building.last_mut() {
            function.capture_blocks.push(range);
        }
    }
}
