//! Binding names and attributes as assignments, loops and tests go: what each target holds
//! after `x = ...`, `for a, b in zip(xs, ys)`, `isinstance(x, torch.Tensor)` or a test that
//! proves a value lives on the host.

use super::attributes::attribute_path;
use super::model::{Binding, SemanticModel};
use super::syntax::host_named;
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

impl<'a> SemanticModel<'a> {
    /// Binds a loop's target to what it draws from `iter`: `for i, x in enumerate(xs)` binds `x`
    /// to an element of `xs` (and `i` to an integer), `for a, b in zip(xs, ys)` each name to an
    /// element of its own sequence; any other loop binds its target to an element of `iter`.
    pub fn bind_loop_target(&mut self, target: &'a Expr, iter: &Expr) {
        if let (Expr::Tuple(tuple), Expr::Call(call)) = (target, iter) {
            let args = &call.arguments.args;
            let plain = !args.iter().any(Expr::is_starred_expr);
            match &*call.func {
                Expr::Name(name)
                    if name.id.as_str() == "enumerate"
                        && plain
                        && args.len() == 1
                        && tuple.elts.len() == 2 =>
                {
                    let element = self.ty(&args[0]).element();
                    self.bind_target(&tuple.elts[0], Ty::Host);
                    self.bind_target(&tuple.elts[1], element);
                    self.learn_record_element(&tuple.elts[1], &args[0]);
                    return;
                }
                Expr::Name(name)
                    if name.id.as_str() == "zip" && plain && args.len() == tuple.elts.len() =>
                {
                    let elements: Vec<Ty> = args.iter().map(|arg| self.ty(arg).element()).collect();
                    for (elt, element) in tuple.elts.iter().zip(elements) {
                        self.bind_target(elt, element);
                    }
                    return;
                }
                _ => {}
            }
        }
        let element = self.ty(iter).element();
        self.bind_target(target, element);
        self.learn_record_element(target, iter);
    }

    /// Where a local of the innermost function was unpacked from: a call's offset and the
    /// local's position in the tuple it returns.
    pub fn unpacked_from(&self, name: &str) -> Option<(u32, u8)> {
        self.scopes.last()?.unpacked.get(name).copied()
    }

    /// The type a name is bound to here, if it is bound to a value.
    pub fn value_ty(&self, name: &str) -> Option<Ty> {
        match self.lookup(name)? {
            Binding::Value(ty) => Some(*ty),
            Binding::Import(_) => None,
        }
    }

    /// After `if x is None: x = torch.ones(n)`, `x` holds what it held or the fallback: a
    /// tensor that may live on the device (`mask` passed in) joined with a host one stays a
    /// tensor that may live on the device, and a fallback that may live on the device
    /// (`maxlen = lengths.max()`) is read where the code reads `x`.
    pub fn join_fallback(&mut self, name: &'a str, before: Ty) {
        if let Some(after) = self.value_ty(name) {
            if after != before && after != Ty::Tensor {
                self.bind(name, before.join(after));
            }
        }
    }

    /// Binds the names of an assignment target to the type of the assigned value.
    pub fn bind_target(&mut self, target: &'a Expr, ty: Ty) {
        match target {
            Expr::Name(name) => self.bind(name.id.as_str(), ty),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                // Unpacking host data gives host data (`for t, h, w in grid_cpu:`); a host
                // container (`Ty::Host`) may hold anything.
                let element = match ty {
                    Ty::TensorSeq => Ty::Tensor,
                    ty if ty.is_host_tensor() => ty,
                    Ty::HostLists => Ty::HostList,
                    Ty::HostList => Ty::Host,
                    Ty::Array => Ty::Array,
                    _ => Ty::Unknown,
                };
                for elt in elts {
                    self.bind_target(elt, element);
                }
            }
            Expr::Starred(starred) => self.bind_target(&starred.value, Ty::Unknown),
            _ => {}
        }
    }

    /// What a device test says of a tensor name, when it holds and when it fails: `x.is_cpu`
    /// makes `x` a host tensor, or a device tensor where the test failed (`else`); `x.is_cuda`
    /// a device tensor where it held; `x.device.type == "cpu"` (or `x.device == "cpu"`) a host
    /// tensor where it held, nothing where it failed (another device may be meant); a
    /// tensor-class test (`torch.is_tensor(x)`, `isinstance(x, torch.Tensor)`) nothing where it
    /// held, no tensor where it failed; `not` and `!=` swap the two.
    pub fn device_narrowing(&self, test: &'a Expr) -> Option<(&'a str, Option<Ty>, Option<Ty>)> {
        match test {
            Expr::Compare(compare) => {
                let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
                    return None;
                };
                let device = match &*compare.left {
                    Expr::Attribute(kind) if kind.attr.as_str() == "type" => &*kind.value,
                    other => other,
                };
                let Expr::Attribute(device) = device else {
                    return None;
                };
                let Expr::Name(subject) = &*device.value else {
                    return None;
                };
                if device.attr.as_str() != "device" || !super::is_cpu_device(right) {
                    return None;
                }
                let host = self.as_host_tensor(&device.value);
                match op {
                    ast::CmpOp::Eq | ast::CmpOp::Is => {
                        Some((subject.id.as_str(), Some(host), None))
                    }
                    ast::CmpOp::NotEq | ast::CmpOp::IsNot => {
                        Some((subject.id.as_str(), None, Some(host)))
                    }
                    _ => None,
                }
            }
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                operand,
                ..
            }) => {
                let (name, held, failed) = self.device_narrowing(operand)?;
                Some((name, failed, held))
            }
            Expr::Attribute(attribute) => {
                let Expr::Name(subject) = &*attribute.value else {
                    return None;
                };
                match attribute.attr.as_str() {
                    "is_cpu" => Some((
                        subject.id.as_str(),
                        Some(self.as_host_tensor(&attribute.value)),
                        Some(Ty::Tensor),
                    )),
                    "is_cuda" => Some((subject.id.as_str(), Some(Ty::Tensor), None)),
                    _ => None,
                }
            }
            // Only a name taken for one tensor loses anything: a host value, or a sequence of
            // tensors, stays what it was.
            Expr::Call(call) => {
                let subject = self.tensor_class_test(call)?;
                (self.ty(&call.arguments.args[0]) == Ty::Tensor).then_some((
                    subject,
                    None,
                    Some(Ty::Unknown),
                ))
            }
            _ => None,
        }
    }

    /// Whether an expression names the tensor class or its parameter subclass: `torch.Tensor`,
    /// `torch.nn.Parameter`.
    pub fn is_tensor_class(&self, class: &Expr) -> bool {
        matches!(
            self.qualified_name(class).as_deref(),
            Some("torch.Tensor" | "torch.nn.Parameter" | "torch.nn.parameter.Parameter")
        )
    }

    /// The name a tensor-class test asks about: `torch.is_tensor(x)`, or `isinstance(x, T)`
    /// where `T` (or one type of a tuple) is `torch.Tensor` or `torch.nn.Parameter`. Where the
    /// test failed, `x` is no tensor, whatever its callers were taken to pass.
    fn tensor_class_test(&self, call: &'a ast::ExprCall) -> Option<&'a str> {
        if !call.arguments.keywords.is_empty() {
            return None;
        }
        match (&*call.func, &*call.arguments.args) {
            (Expr::Name(function), [Expr::Name(subject), types])
                if function.id.as_str() == "isinstance" =>
            {
                let tested = match types {
                    Expr::Tuple(tuple) => tuple.elts.iter().any(|ty| self.is_tensor_class(ty)),
                    single => self.is_tensor_class(single),
                };
                tested.then_some(subject.id.as_str())
            }
            (function, [Expr::Name(subject)]) if self.is(function, "torch.is_tensor") => {
                Some(subject.id.as_str())
            }
            _ => None,
        }
    }

    /// The type of a tensor known to be in host memory: what the model knows of its memory, or
    /// a host tensor of unknown pinning.
    fn as_host_tensor(&self, tensor: &Expr) -> Ty {
        match self.ty(tensor) {
            ty if ty.is_host_tensor() => ty,
            _ => Ty::CpuTensor,
        }
    }

    /// What an `isinstance` test that passed says of a name: `isinstance(x, (int, float))`
    /// makes `x` a host value (a number, a string, a container: `int`, `float`, `bool`, `str`,
    /// `bytes`, `list`, `tuple`, `dict`, `set`, `numbers.Number` and its kinds),
    /// `isinstance(x, np.ndarray)` a NumPy array. Anything else (a tensor class among the
    /// types) says nothing, nor does a test of a name already known to hold host data.
    pub fn isinstance_narrowing(&self, test: &'a Expr) -> Option<(&'a str, Ty)> {
        let Expr::Call(call) = test else {
            return None;
        };
        let (Expr::Name(function), [Expr::Name(subject), types]) =
            (&*call.func, &*call.arguments.args)
        else {
            return None;
        };
        if function.id.as_str() != "isinstance" || !call.arguments.keywords.is_empty() {
            return None;
        }
        let types: &[Expr] = match types {
            Expr::Tuple(tuple) => &tuple.elts,
            single => std::slice::from_ref(single),
        };
        let kind = |ty: &Expr| -> Option<Ty> {
            if let Some(qualified) = self.qualified_name(ty) {
                return match &*qualified {
                    "numpy.ndarray" | "numpy.generic" | "numpy.number" | "numpy.integer" => {
                        Some(Ty::Array)
                    }
                    "numbers.Number" | "numbers.Integral" | "numbers.Real" | "numbers.Complex" => {
                        Some(Ty::Host)
                    }
                    _ => None,
                };
            }
            match ty {
                Expr::Name(name) => matches!(
                    name.id.as_str(),
                    "int" | "float" | "bool" | "str" | "bytes" | "list" | "tuple" | "dict" | "set"
                )
                .then_some(Ty::Host),
                _ => None,
            }
        };
        let mut narrowed: Option<Ty> = None;
        for ty in types {
            let ty = kind(ty)?;
            narrowed = Some(match narrowed {
                None => ty,
                Some(previous) if previous == ty => ty,
                Some(_) => return None,
            });
        }
        // A host type the name already has says more (a list of host lists).
        if self.ty(&call.arguments.args[0]).is_host() {
            return None;
        }
        Some((subject.id.as_str(), narrowed?))
    }

    /// What an assertion that passed says of the data: `assert x.is_cpu`,
    /// `assert x.device.type == "cpu"` and `assert not x.is_cuda` leave `x` (a name or an
    /// attribute path) a host tensor from here on; `and` asserts each operand.
    pub fn assume_host(&mut self, test: &'a Expr) {
        let subject = match test {
            Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::And) => {
                for value in &bool_op.values {
                    self.assume_host(value);
                }
                return;
            }
            Expr::Attribute(attribute) if attribute.attr.as_str() == "is_cpu" => &*attribute.value,
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::Not,
                operand,
                ..
            }) => match &**operand {
                Expr::Attribute(attribute) if attribute.attr.as_str() == "is_cuda" => {
                    &*attribute.value
                }
                _ => return,
            },
            Expr::Compare(compare)
                if matches!(&*compare.ops, [ast::CmpOp::Eq])
                    && matches!(&compare.comparators[0], Expr::StringLiteral(s) if s.value.to_str() == "cpu") =>
            {
                match &*compare.left {
                    Expr::Attribute(kind) if kind.attr.as_str() == "type" => match &*kind.value {
                        Expr::Attribute(device) if device.attr.as_str() == "device" => {
                            &*device.value
                        }
                        _ => return,
                    },
                    _ => return,
                }
            }
            _ => return,
        };
        match subject {
            Expr::Name(name) if !self.ty(subject).is_host_tensor() => {
                self.bind(name.id.as_str(), Ty::CpuTensor);
            }
            Expr::Attribute(_) => {
                if let Some(path) = attribute_path(subject) {
                    self.assume_attribute(path, Ty::CpuTensor);
                }
            }
            _ => {}
        }
    }

    /// Records that an attribute path (`input_batch.num_scheduled_tokens`) holds host data of
    /// this type in the function being visited.
    pub fn assume_attribute(&mut self, path: String, ty: Ty) {
        self.invalidate();
        self.current().host_attributes.insert(path, ty);
    }

    /// What an assertion or the receiver's class says this attribute path holds.
    pub(super) fn known_attribute(&self, attribute: &ast::ExprAttribute) -> Option<Ty> {
        let mut scopes = self
            .visible_scopes()
            .filter(|s| !s.host_attributes.is_empty())
            .peekable();
        scopes.peek()?;
        let mut path = attribute_path(&attribute.value)?;
        path.push('.');
        path.push_str(attribute.attr.as_str());
        scopes.find_map(|s| s.host_attributes.get(&path).copied())
    }

    /// Binds tuple targets element-wise when the value is a literal tuple of the same length.
    pub fn bind_assignment(&mut self, target: &'a Expr, value: &Expr) {
        if let (Expr::Tuple(targets), Expr::Tuple(values)) = (target, value) {
            if targets.elts.len() == values.elts.len() {
                for (target, value) in targets.elts.iter().zip(&values.elts) {
                    let ty = self.ty(value);
                    self.bind_target(target, ty);
                }
                return;
            }
        }
        // `embeds, mask = self._gather(n)` of a function of this module returning such pairs.
        if let (Expr::Tuple(targets), Expr::Call(call)) = (target, value) {
            let elements = self
                .local_tuple_return(call)
                .or_else(|| self.external_tuple_return(call).map(<[Ty]>::to_vec))
                .or_else(|| match self.call_return(call) {
                    Some(super::CallReturn::Tuple(elements)) => Some(elements.to_vec()),
                    _ => None,
                });
            if let Some(elements) = elements {
                if elements.len() == targets.elts.len() {
                    for (target, ty) in targets.elts.iter().zip(elements) {
                        self.bind_target(target, ty);
                    }
                    return;
                }
            }
            // What another module's method returns is known to the project's index: remember
            // where each name came from, for the arguments it is passed as.
            let ty = self.ty(value);
            self.bind_target(target, ty);
            let offset = ruff_text_size::Ranged::start(call).to_u32();
            for (position, element) in targets.elts.iter().enumerate() {
                if let (Expr::Name(name), Ok(position)) = (element, u8::try_from(position)) {
                    self.current()
                        .unpacked
                        .insert(name.id.as_str(), (offset, position));
                }
            }
            return;
        }
        // `mask = None` in one branch of `if`/`else` marks the absence of the value another
        // branch binds: the binding is read in source order, so `None` would otherwise erase what
        // the name holds wherever it is a value (`masks_cpu = x >= 0; if n == 0: masks_cpu =
        // None`, then `masks_cpu[...]` further down).
        if let (Expr::Name(name), Expr::NoneLiteral(_)) = (target, value) {
            if matches!(self.lookup(name.id.as_str()), Some(Binding::Value(ty)) if *ty != Ty::Unknown)
            {
                return;
            }
        }
        let mut ty = self.ty(value);
        // `query_start_loc_cpu = slice_query_start_locs(...)`: a call that does not say where
        // its result lives (a helper, whose tensor follows its inputs) leaves the name's word.
        if let (Expr::Name(name), Expr::Call(call), Ty::Tensor) = (target, value, ty) {
            if host_named(name.id.as_str()) && !super::syntax::places_result(call) {
                ty = Ty::CpuTensor;
            }
        }
        // `host_layer = layer_id - self.start_layer`: arithmetic on a Python number, named for
        // the host, is a number on the host, not the host tensor the name alone would suggest.
        if let (Expr::Name(name), Expr::BinOp(binop), Ty::Unknown) = (target, value, ty) {
            if host_named(name.id.as_str())
                && (self.ty(&binop.left) == Ty::Host || self.ty(&binop.right) == Ty::Host)
            {
                ty = Ty::Host;
            }
        }
        self.bind_target(target, ty);
        if let Expr::Attribute(attribute) = target {
            self.learn_self_attribute(attribute, ty);
        }
        if let Expr::Name(name) = target {
            if matches!(ty, Ty::Tensor | Ty::Unknown) && self.is_bool_tensor(value) {
                self.current().bool_tensors.insert(name.id.as_str());
            }
            if self.is_host_device(value) {
                self.current().host_devices.insert(name.id.as_str());
            }
            // `check = ps > 1 and self.debug_mode`: off as shipped, like the switch itself.
            if self.off_by_default(value, &|_| false) {
                self.current().off_flags.insert(name.id.as_str());
            }
            if let Some(param) = self.parameter_viewed(value) {
                self.current().param_views.insert(name.id.as_str(), param);
            }
            self.note_list_literal(name.id.as_str(), value);
            // Only where some field is declared host-resident: the pattern serves field reads.
            let pattern = if self.declares_host_fields() {
                super::fields::key_pattern(value)
            } else {
                None
            };
            if let Some(pattern) = pattern {
                self.current()
                    .key_patterns
                    .insert(name.id.as_str(), pattern);
            }
        }
    }

    /// Binds an annotated assignment's target (`xs: list = []`): to the value's type, or to the
    /// annotation's where the value says nothing.
    pub fn bind_annotated(&mut self, target: &'a Expr, annotation: &Expr, value: Option<&Expr>) {
        let ty = match value.map(|value| self.ty(value)) {
            Some(Ty::Unknown) | None => self.annotation_ty(annotation),
            Some(ty) => ty,
        };
        self.bind_target(target, ty);
        if let (Expr::Name(name), Some(value)) = (target, value) {
            self.note_list_literal(name.id.as_str(), value);
        }
    }

    /// Notes a name bound to a list literal: empty (see [`Self::learn_append`]), or holding a
    /// tensor made in host memory (`parts = [torch.tensor([0])]`), which every tensor a join of
    /// the list takes must share.
    fn note_list_literal(&mut self, name: &'a str, value: &Expr) {
        let Expr::List(list) = value else {
            return;
        };
        if list.elts.is_empty() {
            self.current().empty_lists.insert(name);
        } else if list.elts.iter().any(|elt| self.ty(elt).is_made_on_host()) {
            self.invalidate();
            self.current().host_parts.insert(name);
        }
    }

    /// Whether a name holds a list bound with a tensor made in host memory among its elements.
    pub(super) fn has_host_part(&self, name: &str) -> bool {
        self.scopes
            .last()
            .is_some_and(|scope| !scope.host_parts.is_empty() && scope.host_parts.contains(name))
    }

    /// `xs.append(t)` on a list this function bound empty (`xs = []`): a list of host tensors
    /// while every element appended is one (`torch.cat(xs)` is then a host tensor), a list of
    /// tensors once a device tensor is appended. Appending anything else to a list of host
    /// tensors makes it a list of unknown elements again.
    pub fn learn_append(&mut self, call: &ast::ExprCall) {
        let Expr::Attribute(attribute) = &*call.func else {
            return;
        };
        let (Expr::Name(list), [element]) = (&*attribute.value, &*call.arguments.args) else {
            return;
        };
        if attribute.attr.as_str() != "append" || !call.arguments.keywords.is_empty() {
            return;
        }
        let scope = self
            .scopes
            .last()
            .expect("the module scope is never popped");
        let Some((&name, Binding::Value(now))) = scope.bindings.get_key_value(list.id.as_str())
        else {
            return;
        };
        let (now, empty) = (*now, scope.empty_lists.contains(name));
        let element = self.ty(element);
        let next = match (now, element) {
            (_, Ty::Tensor) if empty || now == Ty::HostTensorSeq => Ty::TensorSeq,
            (_, element) if element.is_host_tensor() && (empty || now == Ty::HostTensorSeq) => {
                Ty::HostTensorSeq
            }
            (Ty::HostTensorSeq, _) => Ty::Host,
            _ => {
                self.current().empty_lists.remove(name);
                return;
            }
        };
        if next != now {
            self.bind(name, next);
        }
        self.current().empty_lists.remove(name);
    }
}
