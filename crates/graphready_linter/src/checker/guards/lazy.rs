//! Memoised initialisation: guards whose body runs once, in the warm-up (a cache filled in on
//! the first call, on `self` or in a module global), and guards that converge (their body makes
//! their own test false).

use crate::semantic::SemanticModel;
use ruff_python_ast::comparable::ComparableExpr;
use ruff_python_ast::{self as ast, Expr};

/// A memoised initialisation, which runs once (per key), in the warm-up that precedes any
/// capture: `if key not in CACHE: CACHE[key] = ...` and `if t is None: t = ...; CACHE[key] = t`
/// with `CACHE` a module global, `t = self.t` then `if t is None: t = ...; self.t = t`, and
/// `if self.t is None: self.t = ...` where the class never
/// sets `self.t` back to `None` outside `__init__`, and `if layer._t is None: layer._t = ...`
/// with a private attribute of an object the function is handed. A local or parameter filled in
/// without being stored (`if out is None: out = torch.empty(...)`), a per-step cache that is
/// reset, a public cache on some other object (a batch) and one on a dataclass's own instance (a record, made
/// again as data flows; but a field its constructor does not take, `field(init=False)`, is the
/// instance's own state) are made again and stay checked. Also `if not hasattr(self, "t"):`
/// whose body sets `self.t` (an assignment, `register_buffer("t", ...)` or `setattr`). The
/// per-key forms also hold for a dict on `self` (`t = self.cache.get(key)`, `if key not in
/// self.cache:`, and an `or` of such tests whose body fills in every cache), also where the
/// body calls a method that stores under the key (`if bs not in self.metadata:
/// self._build(bs)` with `self.metadata[bs] = ...` in `_build`).
pub fn is_lazy_init(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
) -> bool {
    if is_lazy_attribute(model, if_stmt) {
        return true;
    }
    // `if key not in self.kv or key not in self.rope:` whose body fills in both: once per key.
    if let Expr::BoolOp(ast::ExprBoolOp {
        op: ast::BoolOp::Or,
        values,
        ..
    }) = &*if_stmt.test
    {
        return values.iter().all(|value| match value {
            Expr::Compare(compare) => match (&*compare.ops, &*compare.comparators) {
                ([ast::CmpOp::NotIn], [cache]) => {
                    is_lasting_cache(model, cache)
                        && stores_key(&if_stmt.body, cache, &compare.left)
                }
                _ => false,
            },
            _ => false,
        });
    }
    let Expr::Compare(compare) = &*if_stmt.test else {
        return false;
    };
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return false;
    };
    let missing = match (op, right) {
        (ast::CmpOp::Is, Expr::NoneLiteral(_)) => {
            let lasting = match &*compare.left {
                Expr::Name(name) => {
                    stored_in_global(model, &if_stmt.body, name.id.as_str())
                        || cached_on_self(model, if_stmt, previous, name.id.as_str())
                }
                Expr::Attribute(attribute) => match &*attribute.value {
                    Expr::Name(receiver) => {
                        let (receiver, name) = (receiver.id.as_str(), attribute.attr.as_str());
                        model.is_lasting_self_attribute(receiver, name)
                            || handed_private(model, receiver, name)
                    }
                    _ => false,
                },
                _ => false,
            };
            if !lasting {
                return false;
            }
            ComparableExpr::from(&*compare.left)
        }
        (ast::CmpOp::NotIn, cache) if is_lasting_cache(model, cache) => {
            return stores_key(&if_stmt.body, cache, &compare.left)
                || builds_key(model, &if_stmt.body, cache, &compare.left);
        }
        _ => return false,
    };
    assigned_targets(&if_stmt.body).any(|target| ComparableExpr::from(target) == missing)
}

/// A guard that converges: its body brings the tested attribute of `self` to where the test no
/// longer holds, so after the first calls (the warm-up) it stops running.
/// - Grow-only: `if n > self.max_size: self.max_size = n; ...` (any of `<`, `<=`, `>`, `>=`,
///   `self.<x>` or an element of it on either side, or an `or` of such tests of one bound; the
///   body setting `self.<x>`, and no other method setting it outside `__init__`): the body runs
///   only for a size never seen before.
/// - Self-healing: `if self.bands.dtype != torch.float32: self.reset_bands()` (or `.device`),
///   the body setting `self.<x>` again, directly, through `register_buffer`, or through a method
///   of the class that sets it.
///
/// On a class that lasts (not a record, not reset to `None` every step).
pub fn is_converging<'s>(model: &SemanticModel, if_stmt: &'s ast::StmtIf) -> bool {
    let Some(self_name) = model.self_name() else {
        return false;
    };
    let self_attribute = |expr: &'s Expr| attribute_of(expr, self_name);
    // A bound: `self.max_size`, or one of its elements (`self.max_size[0]`).
    let bound = |expr: &'s Expr| match expr {
        Expr::Subscript(subscript) => self_attribute(&subscript.value),
        other => self_attribute(other),
    };
    let placement = |expr: &'s Expr| match expr {
        Expr::Attribute(attribute) if matches!(attribute.attr.as_str(), "dtype" | "device") => {
            self_attribute(&attribute.value)
        }
        _ => None,
    };
    // The attribute a comparison tests, and whether it is a bound (`<`, `>`, ...) rather than a
    // placement (`!=` of `.dtype` or `.device`).
    let tested = |compare: &'s ast::ExprCompare| -> Option<(bool, &'s str)> {
        let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
            return None;
        };
        let left = &*compare.left;
        match op {
            ast::CmpOp::Lt | ast::CmpOp::LtE | ast::CmpOp::Gt | ast::CmpOp::GtE => {
                bound(left).or_else(|| bound(right)).map(|a| (true, a))
            }
            ast::CmpOp::NotEq => placement(left)
                .or_else(|| placement(right))
                .map(|a| (false, a)),
            _ => None,
        }
    };
    let found = match &*if_stmt.test {
        Expr::Compare(compare) => tested(compare),
        // `if h > self.max_size[0] or w > self.max_size[1]:`, every operand the same bound.
        Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::Or) => {
            let mut operands = bool_op.values.iter().map(|value| match value {
                Expr::Compare(compare) => tested(compare).filter(|&(grows, _)| grows),
                _ => None,
            });
            let first = operands.next().flatten();
            first.filter(|found| operands.all(|other| other == Some(*found)))
        }
        _ => None,
    };
    let Some((grows, attribute)) = found else {
        return false;
    };
    if !model.is_lasting_self_attribute(self_name, attribute) {
        return false;
    }
    if grows {
        // Grow-only: nothing else sets the bound (dynamic RoPE's reset to the original length
        // lowers it again, and the growth then runs again).
        let here = assigned_targets(&if_stmt.body)
            .filter(|target| self_attribute(target) == Some(attribute))
            .count();
        if model.self_setter_count(attribute) > here {
            return false;
        }
    }
    if_stmt.body.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign
            .targets
            .iter()
            .any(|target| self_attribute(target) == Some(attribute)),
        ast::Stmt::AugAssign(assign) => self_attribute(&assign.target) == Some(attribute),
        ast::Stmt::Expr(ast::StmtExpr { value, .. }) => match &**value {
            Expr::Call(call) => match self_attribute(&call.func) {
                Some("register_buffer") => matches!(call.arguments.args.first(),
                    Some(Expr::StringLiteral(key)) if key.value.to_str() == attribute),
                Some(method) => model.self_method_sets(method, attribute),
                None => false,
            },
            _ => false,
        },
        _ => false,
    })
}

/// A memoised initialisation written as an early return: `if self.t is not None: return ...`
/// (or `if hasattr(self, "t"): return ...`, or the cache read into a local just before: `t =
/// self.t` then `if t is not None: return t`) followed by code that sets `self.t`, on a class
/// that lasts, or `if _CACHE is not None: return _CACHE` (an `or` with a failure flag too)
/// followed by code that sets the module global `_CACHE`, or `if key in self._done: return`
/// followed by code that records the key (`self._done.add(key)`) in a container that lasts, or
/// `t = self.memo.get(key)` then `if t is not None: return t` followed by code that stores
/// `self.memo[key]`. The rest may set the attribute with `setattr(self, "t", ...)` or
/// `object.__setattr__(self, "t", ...)`, also inside a `with` block. A private attribute of
/// an object the function is handed counts as `self`'s (`if layer._t is not None: return`, the
/// rest setting `layer._t`). The cache may be read with `getattr(self, "t",
/// None)`, and may remember its key (`if t is not None and t[0] == key: return t[1]`, the rest
/// setting `self.t`). The code after it runs once (per key), in the warm-up.
pub fn is_lazy_early_return(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
    rest: &[ast::Stmt],
) -> bool {
    if !if_stmt.elif_else_clauses.is_empty()
        || !matches!(if_stmt.body.last(), Some(ast::Stmt::Return(_)))
    {
        return false;
    }
    // `if _CACHE is not None [or _FAILED]: return _CACHE`, then the rest sets `_CACHE`: a module
    // global filled in on the first call.
    let tests: &[Expr] = match &*if_stmt.test {
        Expr::BoolOp(ast::ExprBoolOp {
            op: ast::BoolOp::Or,
            values,
            ..
        }) => values,
        single => std::slice::from_ref(single),
    };
    if tests.iter().any(|test| match test {
        Expr::Compare(compare)
            if matches!(&*compare.ops, [ast::CmpOp::IsNot])
                && matches!(&compare.comparators[0], Expr::NoneLiteral(_)) =>
        {
            matches!(&*compare.left, Expr::Name(global)
                if model.is_module_global(global.id.as_str())
                    && sets_global(rest, global.id.as_str()))
        }
        _ => false,
    }) {
        return true;
    }
    // `if key in self._done: return`, then the rest records the key (`self._done.add(key)`,
    // `CACHE[key] = ...`): once per key.
    if let Expr::Compare(compare) = &*if_stmt.test {
        if let ([ast::CmpOp::In], [cache]) = (&*compare.ops, &*compare.comparators) {
            if is_lasting_cache(model, cache) && records_key(rest, cache, &compare.left) {
                return true;
            }
        }
    }
    // `if cached is not None and cached[0] == key: return cached[1]`: a one-entry cache that
    // remembers its key; the rest runs again only when the key changes.
    let test = match &*if_stmt.test {
        Expr::BoolOp(ast::ExprBoolOp {
            op: ast::BoolOp::And,
            values,
            ..
        }) => &values[0],
        single => single,
    };
    let (receiver, name) = match test {
        Expr::Compare(compare)
            if matches!(&*compare.ops, [ast::CmpOp::IsNot])
                && matches!(&compare.comparators[0], Expr::NoneLiteral(_)) =>
        {
            let tested = match &*compare.left {
                // The local the statement just before read the cache into.
                Expr::Name(local) => match read_just_before(previous, local.id.as_str()) {
                    Some(value) => value,
                    None => return false,
                },
                other => other,
            };
            match tested {
                Expr::Attribute(attribute) => match &*attribute.value {
                    Expr::Name(receiver) => (receiver.id.as_str(), attribute.attr.as_str()),
                    _ => return false,
                },
                // `cached = getattr(self, "_memo", None)`.
                Expr::Call(call) => match (&*call.func, &*call.arguments.args) {
                    (
                        Expr::Name(function),
                        [Expr::Name(receiver), Expr::StringLiteral(name), Expr::NoneLiteral(_)],
                    ) if function.id.as_str() == "getattr" => {
                        (receiver.id.as_str(), name.value.to_str())
                    }
                    // `plan = self.plans.get(key)`, then the rest stores `self.plans[key]`.
                    (Expr::Attribute(get), [key])
                        if get.attr.as_str() == "get" && call.arguments.keywords.is_empty() =>
                    {
                        return is_lasting_cache(model, &get.value)
                            && stores_key(rest, &get.value, key);
                    }
                    _ => return false,
                },
                _ => return false,
            }
        }
        Expr::Call(call) => match (&*call.func, &*call.arguments.args) {
            (Expr::Name(function), [Expr::Name(receiver), Expr::StringLiteral(name)])
                if function.id.as_str() == "hasattr" =>
            {
                (receiver.id.as_str(), name.value.to_str())
            }
            _ => return false,
        },
        _ => return false,
    };
    let on_self =
        model.self_name() == Some(receiver) && model.is_lasting_self_attribute(receiver, name);
    if !on_self && !handed_private(model, receiver, name) {
        return false;
    }
    sets_attribute(rest, receiver, name)
}

/// Whether `receiver.name` is a private attribute attached to an object the function is handed
/// (`layer._t`): a cache on an object that lasts (a layer), where a public one may be a field of
/// a record made again every step.
fn handed_private(model: &SemanticModel, receiver: &str, name: &str) -> bool {
    name.starts_with('_') && model.self_name() != Some(receiver) && model.is_parameter(receiver)
}

/// `if not hasattr(self, "t"): self.register_buffer("t", make())` on a class that lasts, or
/// `if not hasattr(layer, "_t"): ...; layer._t = ...` on an object the function is handed (see
/// [`handed_private`]).
fn is_lazy_attribute(model: &SemanticModel, if_stmt: &ast::StmtIf) -> bool {
    let Expr::UnaryOp(ast::ExprUnaryOp {
        op: ast::UnaryOp::Not,
        operand,
        ..
    }) = &*if_stmt.test
    else {
        return false;
    };
    let Expr::Call(call) = &**operand else {
        return false;
    };
    let (Expr::Name(function), [Expr::Name(receiver), Expr::StringLiteral(name)]) =
        (&*call.func, &*call.arguments.args)
    else {
        return false;
    };
    let name = name.value.to_str();
    let lasting = model.is_lasting_self_attribute(receiver.id.as_str(), name)
        || handed_private(model, receiver.id.as_str(), name);
    if function.id.as_str() != "hasattr" || !lasting {
        return false;
    }
    let sets = |stmt: &ast::Stmt| match stmt {
        ast::Stmt::Assign(assign) => assign.targets.iter().any(|target| {
            matches!(target, Expr::Attribute(attribute)
                if attribute.attr.as_str() == name
                    && matches!(&*attribute.value, Expr::Name(r) if r.id == receiver.id))
        }),
        ast::Stmt::Expr(ast::StmtExpr { value, .. }) => match &**value {
            Expr::Call(call) => {
                let by_method = matches!(&*call.func, Expr::Attribute(attribute)
                    if attribute.attr.as_str() == "register_buffer"
                        && matches!(&*attribute.value, Expr::Name(r) if r.id == receiver.id));
                let by_setattr = matches!(&*call.func, Expr::Name(f) if f.id.as_str() == "setattr");
                let key = if by_setattr {
                    call.arguments.args.get(1)
                } else {
                    call.arguments.args.first()
                };
                (by_method || by_setattr)
                    && matches!(key, Some(Expr::StringLiteral(key)) if key.value.to_str() == name)
            }
            _ => false,
        },
        _ => false,
    };
    if_stmt.body.iter().any(sets)
}

/// `t = self.t` just before `if t is None:`, whose body stores into `self.t` again, on a class
/// that lasts: the cache read into a local and filled in once. Also a memo per key:
/// `t = self.cache.get(key)` then `if t is None: ...; self.cache[key] = t`.
fn cached_on_self(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
    local: &str,
) -> bool {
    match read_just_before(previous, local) {
        Some(read @ Expr::Attribute(attribute)) => {
            let Expr::Name(receiver) = &*attribute.value else {
                return false;
            };
            is_lasting_cache(model, read)
                && sets_attribute(&if_stmt.body, receiver.id.as_str(), attribute.attr.as_str())
        }
        Some(Expr::Call(call)) => {
            let Expr::Attribute(get) = &*call.func else {
                return false;
            };
            let [key] = &*call.arguments.args else {
                return false;
            };
            get.attr.as_str() == "get"
                && is_lasting_cache(model, &get.value)
                && stores_key(&if_stmt.body, &get.value, key)
        }
        _ => false,
    }
}

/// Whether a statement directly in a block records `key` in `cache`: `cache.add(key)` or
/// `cache[key] = ...`.
fn records_key(body: &[ast::Stmt], cache: &Expr, key: &Expr) -> bool {
    let (cache_form, key_form) = (ComparableExpr::from(cache), ComparableExpr::from(key));
    stores_key(body, cache, key)
        || body.iter().any(|stmt| {
            matches!(stmt, ast::Stmt::Expr(ast::StmtExpr { value, .. })
                if matches!(&**value, Expr::Call(call)
                    if matches!(&*call.func, Expr::Attribute(add)
                        if add.attr.as_str() == "add" && ComparableExpr::from(&*add.value) == cache_form)
                        && matches!(&*call.arguments.args, [added] if ComparableExpr::from(added) == key_form)))
        })
}

/// Whether an assignment directly in a block stores into `cache[key]`.
fn stores_key(body: &[ast::Stmt], cache: &Expr, key: &Expr) -> bool {
    let (cache, key) = (ComparableExpr::from(cache), ComparableExpr::from(key));
    assigned_targets(body).any(|target| {
        matches!(target, Expr::Subscript(subscript)
            if ComparableExpr::from(&*subscript.value) == cache
                && ComparableExpr::from(&*subscript.slice) == key)
    })
}

/// Whether a statement directly in a block calls a method of `self` that stores into `cache`
/// (an attribute of `self`) under the parameter it is passed `key` for: `if bs not in
/// self.metadata: self._build(bs, ...)` with `_build` storing `self.metadata[bs] = ...`.
fn builds_key(model: &SemanticModel, body: &[ast::Stmt], cache: &Expr, key: &Expr) -> bool {
    let (Expr::Attribute(cache), Some(self_name)) = (cache, model.self_name()) else {
        return false;
    };
    if !matches!(&*cache.value, Expr::Name(receiver) if receiver.id.as_str() == self_name) {
        return false;
    }
    let key = ComparableExpr::from(key);
    body.iter().any(|stmt| {
        let call = match stmt {
            ast::Stmt::Expr(ast::StmtExpr { value, .. }) => value,
            ast::Stmt::Assign(assign) => &assign.value,
            _ => return false,
        };
        let Expr::Call(call) = &**call else {
            return false;
        };
        let Expr::Attribute(method) = &*call.func else {
            return false;
        };
        matches!(&*method.value, Expr::Name(receiver) if receiver.id.as_str() == self_name)
            && call
                .arguments
                .args
                .iter()
                .enumerate()
                .any(|(position, arg)| {
                    ComparableExpr::from(arg) == key
                        && model.self_method_stores_key(
                            method.attr.as_str(),
                            cache.attr.as_str(),
                            position,
                        )
                })
    })
}

/// A container that outlives the call: a module global, an attribute of `self` on a class
/// that lasts, or a cache an object the function is handed carries (`context.mask_cache`, a
/// model's cache passed down in a context object): its name says it outlives the call.
fn is_lasting_cache(model: &SemanticModel, cache: &Expr) -> bool {
    match cache {
        Expr::Name(name) => model.is_module_global(name.id.as_str()),
        Expr::Attribute(attribute) => match &*attribute.value {
            Expr::Name(receiver) if model.self_name() == Some(receiver.id.as_str()) => {
                model.is_lasting_self_attribute(receiver.id.as_str(), attribute.attr.as_str())
            }
            Expr::Name(_) => names_cache(attribute.attr.as_str()),
            _ => false,
        },
        _ => false,
    }
}

/// An attribute named as a cache: `mask_cache`, `_plan_cache`, `cache`.
fn names_cache(attribute: &str) -> bool {
    attribute
        .trim_start_matches('_')
        .split('_')
        .any(|word| word == "cache" || word == "memo")
}

/// Whether a block assigns a name (a module global it declares `global`), anywhere in it
/// outside nested definitions.
fn sets_global(body: &[ast::Stmt], name: &str) -> bool {
    body.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign
            .targets
            .iter()
            .any(|target| matches!(target, Expr::Name(n) if n.id.as_str() == name)),
        ast::Stmt::If(if_stmt) => {
            sets_global(&if_stmt.body, name)
                || if_stmt
                    .elif_else_clauses
                    .iter()
                    .any(|clause| sets_global(&clause.body, name))
        }
        ast::Stmt::Try(try_stmt) => {
            sets_global(&try_stmt.body, name)
                || sets_global(&try_stmt.orelse, name)
                || try_stmt.handlers.iter().any(|handler| {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    sets_global(&handler.body, name)
                })
        }
        ast::Stmt::With(with) => sets_global(&with.body, name),
        ast::Stmt::For(for_stmt) => sets_global(&for_stmt.body, name),
        _ => false,
    })
}

/// Whether a block stores a local into a module-global container: `CACHE[key] = t`.
fn stored_in_global(model: &SemanticModel, body: &[ast::Stmt], local: &str) -> bool {
    body.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => {
            matches!(&*assign.value, Expr::Name(value) if value.id.as_str() == local)
                && assign.targets.iter().any(|target| {
                    matches!(target, Expr::Subscript(subscript)
                        if matches!(&*subscript.value, Expr::Name(cache)
                            if model.is_module_global(cache.id.as_str())))
                })
        }
        _ => false,
    })
}

/// What the statement just before read into `local` (`t = self.t`), when it did only that.
fn read_just_before<'p>(previous: Option<&'p ast::Stmt>, local: &str) -> Option<&'p Expr> {
    match previous {
        Some(ast::Stmt::Assign(assign))
            if matches!(assign.targets.as_slice(),
                [Expr::Name(target)] if target.id.as_str() == local) =>
        {
            Some(&*assign.value)
        }
        _ => None,
    }
}

/// The attribute `receiver.<attribute>` names, when the expression is one.
fn attribute_of<'e>(expr: &'e Expr, receiver: &str) -> Option<&'e str> {
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    matches!(&*attribute.value, Expr::Name(r) if r.id.as_str() == receiver)
        .then(|| attribute.attr.as_str())
}

/// Whether an assignment in a block (directly, or in a `with` block in it) sets
/// `receiver.<name>`.
fn sets_attribute(body: &[ast::Stmt], receiver: &str, name: &str) -> bool {
    assigned_targets(body).any(|target| attribute_of(target, receiver) == Some(name))
        || body.iter().any(|stmt| match stmt {
            // `with torch.inference_mode(False): layer._t = ...`: the block always runs.
            ast::Stmt::With(with) => sets_attribute(&with.body, receiver, name),
            stmt => sets_by_call(stmt, receiver, name),
        })
}

/// `setattr(receiver, "name", ...)` or `object.__setattr__(receiver, "name", ...)` (past an
/// `nn.Module`'s own `__setattr__`), as a statement.
fn sets_by_call(stmt: &ast::Stmt, receiver: &str, name: &str) -> bool {
    let ast::Stmt::Expr(ast::StmtExpr { value, .. }) = stmt else {
        return false;
    };
    let Expr::Call(call) = &**value else {
        return false;
    };
    let setter = match &*call.func {
        Expr::Name(function) => function.id.as_str() == "setattr",
        Expr::Attribute(method) => {
            method.attr.as_str() == "__setattr__"
                && matches!(&*method.value, Expr::Name(object) if object.id.as_str() == "object")
        }
        _ => false,
    };
    setter
        && matches!(&*call.arguments.args, [Expr::Name(target), Expr::StringLiteral(key), _]
            if target.id.as_str() == receiver && key.value.to_str() == name)
}

/// The targets of the assignments directly in a block.
fn assigned_targets(body: &[ast::Stmt]) -> impl Iterator<Item = &Expr> {
    body.iter().flat_map(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign.targets.iter().collect::<Vec<_>>(),
        ast::Stmt::AnnAssign(assign) => vec![&*assign.target],
        _ => Vec::new(),
    })
}
