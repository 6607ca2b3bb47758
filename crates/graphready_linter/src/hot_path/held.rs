//! Functions passed around as values: what a call of a function-returning function hands
//! back (`fn = make_fn(); fn(x)`, also inside tuples), what module globals hold
//! (`_unpad_fn = _lazy_imports(...)` under `global`), and the functions passed to a parameter
//! that the callee calls (`_upad_input(q, k, unpad_fn)` calling `unpad_input_func(...)`).
//! Positions inside returned tuples are kept (`(pad, unpad), name = load_kernels()` gives
//! `unpad` only what `load_kernels` returns at `[0, 1]`).

use super::args::{bound, param_of};
use super::index::{Definition, NodeId, ProjectIndex, MAX_DEPTH};
use crate::summary::{CallTarget, Ref};

impl ProjectIndex<'_> {
    /// The functions a module global named by `reference` holds, when it is not a definition
    /// (`_unpad_fn(...)`).
    pub(super) fn global_targets(&self, module: usize, reference: &Ref) -> Vec<NodeId> {
        let mut out = Vec::new();
        self.global_held(module, reference, &[], MAX_DEPTH, &mut out);
        out
    }

    /// The functions a module global named by `reference` holds at `path` inside its value,
    /// when it is not a definition.
    fn global_held(
        &self,
        module: usize,
        reference: &Ref,
        path: &[u8],
        depth: u8,
        out: &mut Vec<NodeId>,
    ) {
        let (module, name) = match reference {
            Ref::Local(name) => (module, name.as_str()),
            Ref::Qualified(qualified) => {
                let Some((owner, name)) = qualified.rsplit_once('.') else {
                    return;
                };
                let Some(owner) = self.module_named(owner) else {
                    return;
                };
                (owner, name)
            }
        };
        for target in self.modules()[module]
            .global_functions
            .get(name)
            .into_iter()
            .flatten()
        {
            self.held_at(module, target, path, depth, out);
        }
    }

    /// The functions calling what `reference` returns, at `path` inside the returned tuples,
    /// may run.
    pub(super) fn returned_by(
        &self,
        module: usize,
        reference: &Ref,
        path: &[u8],
        depth: u8,
    ) -> Vec<NodeId> {
        let mut out = Vec::new();
        if depth == 0 {
            return out;
        }
        if let Some(Definition::Function(node)) = self.lookup(module, reference) {
            for (at, target) in &self.function(node).returned_functions {
                if let Some(rest) = path.strip_prefix(&at[..]) {
                    self.held_at(node.module, target, rest, depth - 1, &mut out);
                }
            }
        }
        out
    }

    /// The functions a function returns (as a whole, not inside a tuple).
    pub(super) fn functions_returned(&self, node: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        for (at, target) in &self.function(node).returned_functions {
            if at.is_empty() {
                self.held_at(node.module, target, &[], MAX_DEPTH - 1, &mut out);
            }
        }
        out
    }

    /// What a target holds at `path` inside it: itself when the path is empty, else an element
    /// of what a call returns or a module global holds.
    fn held_at(
        &self,
        module: usize,
        target: &CallTarget,
        path: &[u8],
        depth: u8,
        out: &mut Vec<NodeId>,
    ) {
        if path.is_empty() {
            self.held_into(module, target, depth, out);
            return;
        }
        match target {
            CallTarget::Returned { .. } => {
                if let Some(element) = target.element(path) {
                    self.held_into(module, &element, depth, out);
                }
            }
            CallTarget::Function(reference @ Ref::Local(_))
                if depth > 0 && self.lookup(module, reference).is_none() =>
            {
                self.global_held(module, reference, path, depth - 1, out);
            }
            _ => {}
        }
    }

    fn held_into(&self, module: usize, target: &CallTarget, depth: u8, out: &mut Vec<NodeId>) {
        let found = match target {
            CallTarget::Function(reference) => match self.lookup(module, reference) {
                Some(Definition::Function(node)) => vec![node],
                Some(Definition::Class(..)) => Vec::new(),
                None if depth > 0 => {
                    self.global_held(module, reference, &[], depth - 1, out);
                    Vec::new()
                }
                None => Vec::new(),
            },
            CallTarget::Returned { function, path } => {
                self.returned_by(module, function, path, depth)
            }
            _ => Vec::new(),
        };
        for node in found {
            if !out.contains(&node) {
                out.push(node);
            }
        }
    }

    /// The functions a function's calls hand to parameters their callees call.
    pub(super) fn passed_functions(&self, node: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let function = self.function(node);
        for (site, targets) in function.calls.iter().zip(self.resolved_sites(node)) {
            if site.function_args.is_empty() || site.opaque() {
                continue;
            }
            for &callee in targets.iter() {
                let callee_summary = self.function(callee);
                if callee_summary.called_params.is_empty() {
                    continue;
                }
                for (arg, held) in site.function_args.iter() {
                    let Some(param) = param_of(callee_summary, bound(&site.target), arg) else {
                        continue;
                    };
                    if !callee_summary.called_params.contains(&param.name) {
                        continue;
                    }
                    for target in held.iter() {
                        self.held_into(node.module, target, MAX_DEPTH, &mut out);
                    }
                }
            }
        }
        out
    }
}
