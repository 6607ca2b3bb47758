//! Calls in the summary: what each call may invoke, the arguments it passes that are device
//! tensors, the names a function judges on the host, whether it runs a model, and the entry
//! points named at a call (`make_graphed_callables`, `torch.compile`, `ProbeTarget`).

use super::arg_types::ArgTypes;
use super::model_runs::names_a_model;
use super::{is_external, SummaryBuilder};
use crate::semantic::{SemanticModel, Ty};
use crate::summary::{
    ArgKey, CallSite, CallTarget, CallableEntry, EntryReason, ModelRun, ParamTest, Ref,
    SiteConstants, TypePath,
};
use ruff_python_ast::{self as ast, Expr};

impl SummaryBuilder<'_> {
    /// An expression whose truth or value the host takes: notes the parameters it reads.
    pub(crate) fn judged(&mut self, expr: &Expr) {
        if self.returns_only {
            return;
        }
        let Some(function) = self.building.last_mut() else {
            return;
        };
        let mut names = Vec::new();
        names_in(expr, &mut names, 0);
        for name in names {
            if function.params.iter().any(|p| p.name == name)
                && !function.judged_params.iter().any(|n| n == name)
            {
                function.judged_params.push(name.to_string());
            }
        }
    }

    /// What a call expression may invoke, as far as this module can tell: what the callee
    /// resolves to, and the project's functions a local callee may hold.
    fn call_targets(&mut self, model: &SemanticModel, func: &Expr) -> Vec<CallTarget> {
        let mut targets = self.callee_targets(model, func);
        if let Expr::Name(name) = func {
            let held = self
                .function_aliases
                .last()
                .and_then(|scope| scope.get(name.id.as_str()));
            for target in held.into_iter().flatten() {
                if !targets.contains(target) {
                    targets.push(target.clone());
                }
            }
            // A parameter called as a function: the functions its callers pass run.
            if targets.is_empty() && model.is_parameter(name.id.as_str()) {
                if let Some(function) = self.building.last_mut() {
                    let name = name.id.as_str();
                    if !function.called_params.iter().any(|p| p == name) {
                        function.called_params.push(name.to_string());
                    }
                }
            }
        }
        targets
    }

    /// The arguments of a call that are the project's functions, or locals holding them.
    fn function_args(
        &self,
        model: &SemanticModel,
        call: &ast::ExprCall,
    ) -> Box<[(ArgKey, Box<[CallTarget]>)]> {
        let positional = call
            .arguments
            .args
            .iter()
            .enumerate()
            .map(|(i, arg)| (ArgKey::Position(i), arg));
        let keywords = call.arguments.keywords.iter().filter_map(|keyword| {
            let name = keyword.arg.as_ref()?;
            Some((ArgKey::Keyword(name.id.as_str().into()), &keyword.value))
        });
        positional
            .chain(keywords)
            .filter(|(_, arg)| matches!(arg, Expr::Name(_) | Expr::Attribute(_)))
            .filter_map(|(key, arg)| {
                let held = self.held_targets(model, arg);
                (!held.is_empty()).then(|| (key, held.into_boxed_slice()))
            })
            .collect()
    }

    fn callee_targets(&self, model: &SemanticModel, func: &Expr) -> Vec<CallTarget> {
        // A method of `self` looked up by name: `getattr(self, "m")(...)`, or a local bound to
        // such a lookup (`decoding_method = getattr(type(self), MODES[mode])`).
        let looked_up = match func {
            Expr::Name(name) => self
                .method_aliases
                .last()
                .and_then(|scope| scope.get(name.id.as_str()).cloned()),
            other => self.self_methods_named(other),
        };
        if let (Some(methods), Some((class, _))) = (looked_up, self.self_context()) {
            return methods
                .into_iter()
                .map(|method| CallTarget::SelfMethod {
                    class: class.to_string(),
                    method,
                })
                .collect();
        }
        let mut targets = self.invocations_of(func);
        if !targets.is_empty() {
            // A field also assigned what a call returns (`self.sampler, self.verifier =
            // state.custom_sampler(...)`) holds more than the instances constructed for it.
            if self.computed_field(func) {
                targets.extend(
                    self.type_path(model, func)
                        .map(|receiver| CallTarget::Invoke { receiver }),
                );
            }
            return targets;
        }
        if let Some(reference) = self.reference(model, func) {
            return vec![CallTarget::Function(reference)];
        }
        let Expr::Attribute(attribute) = func else {
            // `runner(x)` with `runner: Runner`: the instance's `forward` or `__call__`.
            return self
                .type_path(model, func)
                .map(|receiver| CallTarget::Invoke { receiver })
                .into_iter()
                .collect();
        };
        let method = attribute.attr.id.to_string();
        let receiver = &*attribute.value;
        match receiver {
            Expr::Name(name) => {
                if let Some((class, self_name)) = self.self_context() {
                    if name.id.as_str() == self_name {
                        return vec![CallTarget::SelfMethod {
                            class: class.to_string(),
                            method,
                        }];
                    }
                }
            }
            Expr::Call(inner) if matches!(&*inner.func, Expr::Name(n) if n.id.as_str() == "super") =>
            {
                return match self.self_context() {
                    Some((class, _)) => vec![CallTarget::Super {
                        class: class.to_string(),
                        method,
                    }],
                    None => Vec::new(),
                };
            }
            _ => {}
        }
        let targets: Vec<CallTarget> = self
            .instances_of(receiver)
            .into_iter()
            .map(|class| CallTarget::InstanceMethod {
                class,
                method: method.clone(),
            })
            .collect();
        if !targets.is_empty() {
            return targets;
        }
        self.typed_method(model, receiver, method)
    }

    /// `receiver.method(...)` on a receiver whose type the index can compute.
    fn typed_method(
        &self,
        model: &SemanticModel,
        receiver: &Expr,
        method: String,
    ) -> Vec<CallTarget> {
        self.type_path(model, receiver)
            .map(|receiver| CallTarget::Method { receiver, method })
            .into_iter()
            .collect()
    }

    /// Records a call made by the current function.
    pub(crate) fn call(
        &mut self,
        model: &SemanticModel,
        call: &ast::ExprCall,
        in_captured_code: bool,
    ) {
        if let Some(host_only) = self.host_only.last_mut() {
            if *host_only && !model.keeps_data_on_host(call) {
                *host_only = false;
            }
        }
        if self.returns_only {
            return;
        }
        self.record_module_level_entries(model, call);
        if self.building.is_empty() {
            return;
        }
        self.container_append(model, call);
        if let Expr::Attribute(attribute) = &*call.func {
            if attribute.attr.id.as_str() == "replay" && call.arguments.is_empty() {
                if let Some(function) = self.building.last_mut() {
                    function.replays_graph = true;
                }
            }
        }
        if !in_captured_code {
            self.guarded_invocation(call);
            self.guarded_construction(model, call);
            return;
        }
        if let Expr::Name(name) = &*call.func {
            if matches!(
                name.id.as_str(),
                "int" | "float" | "bool" | "complex" | "str" | "repr" | "print" | "range" | "len"
            ) {
                for argument in &call.arguments.args {
                    self.judged(argument);
                }
            }
        }
        let model_run = (self.capture_depth == 0 && self.runs_model(call)).then(|| {
            if self.while_depths.last().is_some_and(|depth| *depth > 0) {
                ModelRun::UntilDone
            } else if self.loop_depths.last().is_some_and(|depth| *depth > 0) {
                ModelRun::InLoop
            } else {
                ModelRun::Once
            }
        });
        // Calls into PyTorch and the standard library never lead back into the project.
        if let Some(qualified) = model.qualified_name(&call.func) {
            if is_external(&qualified) {
                self.unresolved_model_run(model_run, call);
                return;
            }
            self.summary.imported_callees.insert(qualified.to_string());
        }
        let targets = self.call_targets(model, &call.func);
        if targets.is_empty() {
            self.unresolved_model_run(model_run, call);
            return;
        }
        let capturing = self.capture_depth > 0;
        let in_loop = self.loop_depths.last().is_some_and(|depth| *depth > 0);
        let prefill = self.prefill_depths.last().is_some_and(|depth| *depth > 0);
        let requires: Box<[(Box<str>, ParamTest)]> = self
            .param_conditions
            .last()
            .map(|conditions| conditions.iter().cloned().collect())
            .unwrap_or_default();
        let splatted = match call.arguments.args.iter().find(|arg| arg.is_starred_expr()) {
            Some(Expr::Starred(starred)) => match &*starred.value {
                Expr::Name(name) => self
                    .tuple_locals
                    .last()
                    .and_then(|scope| scope.get(name.id.as_str())),
                _ => None,
            },
            _ => None,
        };
        let args = ArgTypes::of(
            model,
            call,
            splatted.map(Vec::as_slice),
            self.dict_locals.last(),
        );
        let constants = (!requires.is_empty() || !args.consts.is_empty()).then(|| {
            Box::new(SiteConstants {
                args: args.consts.clone().into_boxed_slice(),
                requires,
            })
        });
        let function_args = self.function_args(model, call);
        let typed_args = self.typed_args(model, call, &args);
        if let Some(function) = self.building.last_mut() {
            for target in targets {
                // A function named for prefill work (`topk_prefill`, `_forward_prefill`) does
                // it, wherever it is called.
                let prefill = prefill || names_prefill(target.method_name());
                let site = CallSite {
                    target,
                    offset: ruff_text_size::Ranged::start(call).to_u32(),
                    in_loop,
                    model_run,
                    prefill,
                    constants: constants.clone(),
                    tensor_args: args.tensor.clone(),
                    other_args: args.other.clone().into_boxed_slice(),
                    splat: args.splat,
                    function_args: function_args.clone(),
                    param_args: args.params.clone().into_boxed_slice(),
                    typed_args: typed_args.clone(),
                    unpacked_args: args.unpacked.clone().into_boxed_slice(),
                };
                if capturing {
                    function.captured_calls.push(site);
                } else {
                    function.calls.push(site);
                }
            }
        }
    }

    /// A call that looks like a run of a model and resolves to nothing of the project: the
    /// function runs a model (see [`crate::summary::FunctionSummary::runs_model`]), if what
    /// it calls is named for one (see [`names_a_model`]).
    fn unresolved_model_run(&mut self, run: Option<ModelRun>, call: &ast::ExprCall) {
        let (Some(run), Some(function)) = (run, self.building.last_mut()) else {
            return;
        };
        if !names_a_model(call) {
            return;
        }
        let (once, in_loop, until_done) = run.flags();
        function.runs_model |= once;
        function.runs_model_in_loop |= in_loop;
        function.runs_model_until_done |= until_done;
    }

    /// The arguments of unknown type written as a name or an attribute whose type path the
    /// index can compute, by where they land (positions up to the first `*args`, keywords).
    fn typed_args(
        &self,
        model: &SemanticModel,
        call: &ast::ExprCall,
        args: &ArgTypes,
    ) -> Box<[(ArgKey, TypePath)]> {
        let unknown = |key: &ArgKey| {
            args.other
                .iter()
                .any(|(other, ty)| other == key && *ty == Ty::Unknown)
        };
        let positional = call
            .arguments
            .args
            .iter()
            .take_while(|arg| !arg.is_starred_expr())
            .enumerate()
            .map(|(i, arg)| (ArgKey::Position(i), arg));
        let keywords = call.arguments.keywords.iter().filter_map(|keyword| {
            let name = keyword.arg.as_ref()?;
            Some((ArgKey::Keyword(name.as_str().into()), &keyword.value))
        });
        positional
            .chain(keywords)
            .filter(|(_, value)| matches!(value, Expr::Name(_) | Expr::Attribute(_)))
            .filter(|(key, _)| unknown(key))
            .filter_map(|(key, value)| Some((key, self.type_path(model, value)?)))
            .collect()
    }

    /// A module invoked in guarded code (`self.encoder(x)` under `with gpu_sync_allowed():`):
    /// see [`crate::summary::FunctionSummary::guarded_invocations`].
    fn guarded_invocation(&mut self, call: &ast::ExprCall) {
        if !matches!(&*call.func, Expr::Attribute(_)) {
            return;
        }
        let targets = self.invocations_of(&call.func);
        if let Some(function) = self.building.last_mut() {
            function.guarded_invocations.extend(targets);
        }
    }

    /// A class constructed in guarded code: see
    /// [`crate::summary::FunctionSummary::guarded_constructions`].
    fn guarded_construction(&mut self, model: &SemanticModel, call: &ast::ExprCall) {
        let capitalised = crate::util::last_segment(&call.func)
            .is_some_and(|name| name.starts_with(|c: char| c.is_ascii_uppercase()));
        if !capitalised {
            return;
        }
        let Some(reference) = self.reference(model, &call.func) else {
            return;
        };
        let platform = self.other_platform || self.platform_depth > 0;
        if let Some(function) = self.building.last_mut() {
            if platform {
                function.platform_constructions.push(reference);
            } else {
                function.guarded_constructions.push(reference);
            }
        }
    }

    /// The checker enters (`on`) a branch for a device without CUDA graphs, or another one.
    pub(crate) fn enter_platform(&mut self, on: bool) {
        self.platform_depth += u32::from(on);
    }

    /// The checker leaves the branch [`Self::enter_platform`] entered.
    pub(crate) fn exit_platform(&mut self, on: bool) {
        self.platform_depth -= u32::from(on);
    }

    /// Calling the instances an expression holds (`self.mlp(x)`) runs their `forward`.
    fn invocations_of(&self, func: &Expr) -> Vec<CallTarget> {
        self.instances_of(func)
            .into_iter()
            .map(|class| CallTarget::InstanceMethod {
                class,
                method: "forward".to_string(),
            })
            .collect()
    }

    /// `x.append(C(...))`, `x.insert(i, C(...))` with `C` a project class and `x` a value whose
    /// type the index computes (a `list` subclass): see
    /// [`crate::summary::ModuleSummary::container_appends`].
    fn container_append(&mut self, model: &SemanticModel, call: &ast::ExprCall) {
        let Expr::Attribute(attribute) = &*call.func else {
            return;
        };
        let value = match (attribute.attr.id.as_str(), &*call.arguments.args) {
            ("append", [value]) | ("insert", [_, value]) => value,
            _ => return,
        };
        let Expr::Call(constructed) = value else {
            return;
        };
        let Some(class) = self.reference(model, &constructed.func) else {
            return;
        };
        if matches!(&class, Ref::Qualified(q) if is_external(q)) {
            return;
        }
        let Some(receiver) = self.type_path(model, &attribute.value) else {
            return;
        };
        self.summary.container_appends.push((receiver, class));
    }

    /// `torch.cuda.make_graphed_callables(f, ...)`, `torch.compile(f, mode=...)` and
    /// `graphready.ProbeTarget(step=f, ...)` (the probe captures its step).
    fn record_module_level_entries(&mut self, model: &SemanticModel, call: &ast::ExprCall) {
        let (reason, first) = if model.is(&call.func, "torch.cuda.make_graphed_callables")
            || model.is(&call.func, "torch.cuda.graphs.make_graphed_callables")
        {
            (EntryReason::GraphedCallable, call.arguments.args.first())
        } else if Self::compiles_with_graphs(model, call) {
            (EntryReason::Compiled, call.arguments.args.first())
        } else if model.is(&call.func, "graphready.ProbeTarget")
            || model.is(&call.func, "graphready.target.ProbeTarget")
        {
            (
                EntryReason::ProbeStep,
                crate::rules::argument(call, 0, "step"),
            )
        } else {
            return;
        };
        let Some(first) = first else {
            return;
        };
        let callables: Vec<&Expr> = match first {
            Expr::Tuple(tuple) => tuple.elts.iter().collect(),
            Expr::List(list) => list.elts.iter().collect(),
            other => vec![other],
        };
        // The probe calls its step with the inputs, in order.
        let tensor_args: Vec<ArgKey> = match (reason, crate::rules::argument(call, 1, "inputs")) {
            (
                EntryReason::ProbeStep,
                Some(
                    Expr::List(ast::ExprList { elts, .. })
                    | Expr::Tuple(ast::ExprTuple { elts, .. }),
                ),
            ) => elts
                .iter()
                .enumerate()
                .filter(|(_, input)| model.ty(input) == Ty::Tensor)
                .map(|(i, _)| ArgKey::Position(i))
                .collect(),
            _ => Vec::new(),
        };
        for callable in callables {
            for target in self.call_targets(model, callable) {
                self.summary.callable_entries.push(CallableEntry {
                    target,
                    reason,
                    tensor_args: tensor_args.clone(),
                });
            }
        }
    }
}

/// Whether a function's name has the word `prefill` (`topk_prefill`, `_forward_prefill`), or
/// the word `extend` beside others (SGLang's and vLLM's name for prefill work on a cached
/// prefix: `forward_extend`, `all_gather_kv_cache_for_mha_extend`; a list's `extend` alone is
/// no such name). A draft model's extend is not (`forward_draft_extend`): engines capture it
/// with speculative decoding.
fn names_prefill(name: &str) -> bool {
    let (mut count, mut extend, mut draft) = (0, false, false);
    let prefill = name.split('_').filter(|word| !word.is_empty()).any(|word| {
        count += 1;
        extend |= word.eq_ignore_ascii_case("extend");
        draft |= word.eq_ignore_ascii_case("draft");
        word.eq_ignore_ascii_case("prefill")
    });
    prefill || (extend && !draft && count > 1)
}

/// The names an expression reads, outside nested scopes (a few levels deep).
fn names_in<'e>(expr: &'e Expr, out: &mut Vec<&'e str>, depth: u8) {
    if depth > 6 {
        return;
    }
    match expr {
        Expr::Name(name) => out.push(name.id.as_str()),
        Expr::BoolOp(bool_op) => bool_op
            .values
            .iter()
            .for_each(|value| names_in(value, out, depth + 1)),
        Expr::UnaryOp(unary) => names_in(&unary.operand, out, depth + 1),
        Expr::BinOp(binop) => {
            names_in(&binop.left, out, depth + 1);
            names_in(&binop.right, out, depth + 1);
        }
        Expr::Compare(compare) => {
            names_in(&compare.left, out, depth + 1);
            compare
                .comparators
                .iter()
                .for_each(|value| names_in(value, out, depth + 1));
        }
        Expr::Call(call) => call
            .arguments
            .args
            .iter()
            .for_each(|value| names_in(value, out, depth + 1)),
        Expr::Attribute(attribute) => names_in(&attribute.value, out, depth + 1),
        Expr::Subscript(subscript) => names_in(&subscript.value, out, depth + 1),
        _ => {}
    }
}
