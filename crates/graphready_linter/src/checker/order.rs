//! The order in which a module's deferred function bodies are visited: its own callees before
//! their callers, so that a caller already knows what they return.

use super::Deferred;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::Expr;
use rustc_hash::FxHashMap;

/// Orders deferred function bodies so that the module's own callees come before their callers
/// (a depth-first post-order over `f()` and `self.m()` calls; cycles are cut where found).
pub(super) fn callees_first(deferred: Vec<Deferred<'_>>) -> Vec<Deferred<'_>> {
    let index: FxHashMap<&str, usize> = deferred
        .iter()
        .enumerate()
        .map(|(i, d)| (d.qualname.as_str(), i))
        .collect();
    let methods: FxHashMap<(&str, &str), usize> = deferred
        .iter()
        .enumerate()
        .filter_map(|(i, d)| Some(((d.class?, d.function.name.id.as_str()), i)))
        .collect();
    let edges: Vec<Vec<usize>> = deferred
        .iter()
        .map(|d| {
            let mut calls = LocalCalls {
                index: &index,
                methods: &methods,
                class: d.class,
                self_name: d
                    .function
                    .parameters
                    .iter_non_variadic_params()
                    .next()
                    .map(|p| p.parameter.name.id.as_str()),
                callees: Vec::new(),
            };
            calls.visit_body(&d.function.body);
            calls.callees
        })
        .collect();
    let mut order = Vec::with_capacity(deferred.len());
    let mut state = vec![0u8; deferred.len()]; // 0 new, 1 on the stack, 2 done
    for start in 0..deferred.len() {
        let mut stack = vec![(start, 0usize)];
        while let Some((node, next)) = stack.pop() {
            if next == 0 {
                if state[node] != 0 {
                    continue;
                }
                state[node] = 1;
            }
            if let Some(&callee) = edges[node].get(next) {
                stack.push((node, next + 1));
                if state[callee] == 0 {
                    stack.push((callee, 0));
                }
            } else {
                state[node] = 2;
                order.push(node);
            }
        }
    }
    let mut slots: Vec<Option<Deferred<'_>>> = deferred.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The module-local callees of a function body: `helper(...)` and `self.method(...)`.
struct LocalCalls<'i, 'a> {
    index: &'i FxHashMap<&'i str, usize>,
    methods: &'i FxHashMap<(&'i str, &'i str), usize>,
    class: Option<&'a str>,
    self_name: Option<&'a str>,
    callees: Vec<usize>,
}

impl<'a> Visitor<'a> for LocalCalls<'_, 'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            let callee = match &*call.func {
                Expr::Name(name) => self.index.get(name.id.as_str()).copied(),
                Expr::Attribute(attribute) => match (&*attribute.value, self.class, self.self_name)
                {
                    (Expr::Name(receiver), Some(class), Some(self_name))
                        if receiver.id.as_str() == self_name =>
                    {
                        self.methods
                            .get(&(class, attribute.attr.id.as_str()))
                            .copied()
                    }
                    _ => None,
                },
                _ => None,
            };
            self.callees.extend(callee);
        }
        visitor::walk_expr(self, expr);
    }
}
