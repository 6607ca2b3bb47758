//! Types in the summary: what an annotation names, and the type paths of expressions
//! (parameters, locals, `self` attributes, calls), for the index to resolve across modules.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use crate::summary::{Param, PathRoot, PathStep, Ref, TypePath, TypeRef};
use ruff_python_ast::{self as ast, Expr};

/// Containers whose subscript names their elements' type.
const CONTAINERS: &[&str] = &[
    "list",
    "tuple",
    "set",
    "frozenset",
    "typing.List",
    "typing.Tuple",
    "typing.Set",
    "typing.FrozenSet",
    "typing.Sequence",
    "typing.MutableSequence",
    "typing.Iterable",
    "typing.Iterator",
    "collections.abc.Sequence",
    "collections.abc.Iterable",
    "collections.abc.Iterator",
];

/// Mappings whose subscript's last argument names their values' type.
const MAPPINGS: &[&str] = &[
    "dict",
    "typing.Dict",
    "typing.Mapping",
    "typing.MutableMapping",
    "collections.abc.Mapping",
];

/// Wrappers that add nothing a call graph needs: `Optional[X]`, `Union[X, Y]`, `Final[X]`.
const TRANSPARENT: &[&str] = &[
    "typing.Optional",
    "typing.Union",
    "typing.Final",
    "typing.ClassVar",
    "typing.Annotated",
    "typing_extensions.Annotated",
];

/// Annotations of class objects: `type[X]`, `Type[X]`.
const CLASS_OBJECTS: &[&str] = &["type", "builtins.type", "typing.Type"];

/// What an annotation says besides its classes.
#[derive(Default)]
struct Flags {
    /// A container of instances.
    elements: bool,
    /// Class objects, not instances.
    class_object: bool,
}

/// Roots whose names are never project classes.
fn is_foreign(qualified: &str) -> bool {
    let root = qualified.split('.').next().unwrap_or(qualified);
    matches!(
        root,
        "typing" | "typing_extensions" | "collections" | "builtins" | "numpy" | "abc" | "enum"
    ) || matches!(
        qualified,
        "int" | "float" | "str" | "bool" | "bytes" | "object" | "None" | "dict" | "list"
    )
}

impl<'a> SummaryBuilder<'a> {
    /// The class types an annotation names: `ForwardBatch`, `"ForwardBatch"`,
    /// `Optional[AttentionBackend]`, `A | None`, `list[Layer]`. `None` for anything else
    /// (tensors, numbers, unknown generics).
    pub(super) fn annotation_type(
        &self,
        model: &SemanticModel,
        annotation: &Expr,
    ) -> Option<TypeRef> {
        let mut classes = Vec::new();
        let mut flags = Flags::default();
        self.annotation_classes(model, annotation, &mut classes, &mut flags, 0);
        (!classes.is_empty()).then_some(TypeRef {
            classes,
            elements: flags.elements,
            class_object: flags.class_object,
        })
    }

    fn annotation_classes(
        &self,
        model: &SemanticModel,
        annotation: &Expr,
        out: &mut Vec<Ref>,
        flags: &mut Flags,
        depth: u8,
    ) {
        if depth > 4 {
            return;
        }
        match annotation {
            Expr::StringLiteral(literal) => {
                // A forward reference: parse the string as an expression.
                let text = literal.value.to_str();
                if text.len() > 200 {
                    return;
                }
                if let Ok(parsed) = ruff_python_parser::parse_expression(text) {
                    let expr = parsed.into_syntax().body;
                    self.annotation_classes(model, &expr, out, flags, depth + 1);
                    // The parsed nodes are freed here: their memoised answers go with them.
                    model.forget_answers();
                }
            }
            Expr::BinOp(binop) if matches!(binop.op, ast::Operator::BitOr) => {
                self.annotation_classes(model, &binop.left, out, flags, depth + 1);
                self.annotation_classes(model, &binop.right, out, flags, depth + 1);
            }
            Expr::Subscript(subscript) => {
                let container = model
                    .qualified_name(&subscript.value)
                    .map(|q| q.to_string())
                    .or_else(|| match &*subscript.value {
                        Expr::Name(name) => Some(name.id.to_string()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let arguments: Vec<&Expr> = match &*subscript.slice {
                    Expr::Tuple(tuple) => tuple.elts.iter().collect(),
                    other => vec![other],
                };
                if TRANSPARENT.contains(&container.as_str()) {
                    for argument in arguments {
                        self.annotation_classes(model, argument, out, flags, depth + 1);
                    }
                } else if CLASS_OBJECTS.contains(&container.as_str()) {
                    let before = out.len();
                    for argument in arguments {
                        self.annotation_classes(model, argument, out, flags, depth + 1);
                    }
                    flags.class_object |= out.len() > before;
                } else if CONTAINERS.contains(&container.as_str()) {
                    let before = out.len();
                    for argument in arguments {
                        self.annotation_classes(model, argument, out, flags, depth + 1);
                    }
                    flags.elements |= out.len() > before;
                } else if MAPPINGS.contains(&container.as_str()) {
                    if let Some(value) = arguments.last() {
                        let before = out.len();
                        self.annotation_classes(model, value, out, flags, depth + 1);
                        flags.elements |= out.len() > before;
                    }
                }
            }
            Expr::Name(_) | Expr::Attribute(_) => {
                if let Some(reference) = self.reference(model, annotation) {
                    let foreign = match &reference {
                        Ref::Qualified(q) => is_foreign(q),
                        Ref::Local(_) => false,
                    };
                    if !foreign && !out.contains(&reference) {
                        out.push(reference);
                    }
                }
            }
            _ => {}
        }
    }

    /// The parameters of a function, with the classes their annotations name.
    pub(super) fn params(
        &self,
        model: &SemanticModel,
        function: &ast::StmtFunctionDef,
    ) -> Vec<Param> {
        let positional = function.parameters.posonlyargs.len() + function.parameters.args.len();
        function
            .parameters
            .iter_non_variadic_params()
            .enumerate()
            .map(|(i, parameter)| {
                let annotation = parameter.parameter.annotation();
                let ty = annotation.map_or(crate::semantic::Ty::Unknown, |annotation| {
                    model.annotation_ty(annotation)
                });
                // `is_multimodal: torch.Tensor | None` is a tensor where it is passed one.
                let present = annotation.map_or(crate::semantic::Ty::Unknown, |annotation| {
                    model.present_annotation_ty(annotation)
                });
                Param {
                    name: parameter.parameter.name.id.to_string(),
                    annotation: annotation
                        .and_then(|annotation| self.annotation_type(model, annotation)),
                    tensor: present == crate::semantic::Ty::Tensor,
                    host: ty.is_host(),
                    default: parameter.default().and_then(crate::summary::Const::of),
                    required: parameter.default().is_none(),
                    keyword_only: i >= positional,
                }
            })
            .collect()
    }

    /// The type path of an expression, when its type follows from types the index knows: an
    /// annotated parameter or local, `self`, a call of a class or function, and attribute,
    /// method and item steps from those.
    pub(super) fn type_path(&self, model: &SemanticModel, expr: &Expr) -> Option<TypePath> {
        self.type_path_depth(model, expr, 0)
    }

    fn type_path_depth(&self, model: &SemanticModel, expr: &Expr, depth: u8) -> Option<TypePath> {
        if depth > 8 {
            return None;
        }
        match expr {
            Expr::Name(name) => self.local_type(name.id.as_str()).or_else(|| {
                self.class_table_type(model, name.id.as_str())
                    .map(TypePath::of_type)
            }),
            Expr::Attribute(attribute) => {
                if model.qualified_name(expr).is_some() {
                    return None;
                }
                if let (Expr::Name(receiver), Some((class, self_name))) =
                    (&*attribute.value, self.self_context())
                {
                    if receiver.id.as_str() == self_name {
                        return Some(TypePath {
                            root: PathRoot::SelfOf(class.to_string()),
                            steps: vec![PathStep::Attr(attribute.attr.id.to_string())],
                        });
                    }
                }
                let base = self.type_path_depth(model, &attribute.value, depth + 1)?;
                Some(base.then(PathStep::Attr(attribute.attr.id.to_string())))
            }
            Expr::Call(call) => {
                // `impl_cls(...)` of a local holding a class object (or anything else: the
                // index decides).
                if let Expr::Name(name) = &*call.func {
                    if let Some(local) = self.local_type(name.id.as_str()) {
                        return Some(local.then(PathStep::Construct));
                    }
                }
                if let Expr::Attribute(attribute) = &*call.func {
                    if model.qualified_name(&call.func).is_none() {
                        let method = attribute.attr.id.to_string();
                        if let (Expr::Name(receiver), Some((class, self_name))) =
                            (&*attribute.value, self.self_context())
                        {
                            if receiver.id.as_str() == self_name {
                                return Some(TypePath {
                                    root: PathRoot::SelfOf(class.to_string()),
                                    steps: vec![PathStep::Call(method)],
                                });
                            }
                        }
                        if let Some(base) = self.type_path_depth(model, &attribute.value, depth + 1)
                        {
                            return Some(base.then(PathStep::Call(method)));
                        }
                    }
                }
                // `ATTENTION[kind](...)`: an instance of what the table's item is.
                if let Expr::Subscript(_) = &*call.func {
                    return Some(
                        self.type_path_depth(model, &call.func, depth + 1)?
                            .then(PathStep::Construct),
                    );
                }
                let reference = self.reference(model, &call.func)?;
                if matches!(&reference, Ref::Qualified(q) if is_foreign(q)) {
                    return None;
                }
                Some(TypePath {
                    root: PathRoot::Called(reference),
                    steps: Vec::new(),
                })
            }
            Expr::Subscript(subscript) => Some(
                self.type_path_depth(model, &subscript.value, depth + 1)?
                    .then(PathStep::Item),
            ),
            // `x or Default()`, `a if c else b`: the first alternative with a type.
            Expr::BoolOp(bool_op) => bool_op
                .values
                .iter()
                .find_map(|value| self.type_path_depth(model, value, depth + 1)),
            Expr::If(if_expr) => self
                .type_path_depth(model, &if_expr.body, depth + 1)
                .or_else(|| self.type_path_depth(model, &if_expr.orelse, depth + 1))
                .or_else(|| self.class_choice(model, expr)),
            Expr::Named(named) => self.type_path_depth(model, &named.value, depth + 1),
            Expr::ListComp(ast::ExprListComp {
                elt, generators, ..
            })
            | Expr::SetComp(ast::ExprSetComp {
                elt, generators, ..
            })
            | Expr::Generator(ast::ExprGenerator {
                elt, generators, ..
            }) => self.comprehension_path(model, elt, generators, depth),
            Expr::DictComp(ast::ExprDictComp {
                value, generators, ..
            }) => self.comprehension_path(model, value, generators, depth),
            _ => None,
        }
    }

    /// A name that may stand for a class, as a class object (`return DraftState` from a hook
    /// that says which state class to build; the index decides whether it names one). Only
    /// for what a function returns: elsewhere `Base.method(self)` names one class's method.
    pub(super) fn class_object_path(&self, model: &SemanticModel, expr: &Expr) -> Option<TypePath> {
        if !matches!(expr, Expr::Name(_)) {
            return None;
        }
        let reference = self.reference(model, expr)?;
        if matches!(&reference, Ref::Qualified(q) if is_foreign(q)) {
            return None;
        }
        Some(TypePath::of_type(TypeRef {
            classes: vec![reference],
            elements: false,
            class_object: true,
        }))
    }

    /// A choice between classes by name (`Fp8Mlp if fp8 else GatedMlp`, also nested), as the
    /// class objects it may be: calling it constructs one of them. The index decides which
    /// names are classes.
    fn class_choice(&self, model: &SemanticModel, expr: &Expr) -> Option<TypePath> {
        let mut classes = Vec::new();
        let mut pending = vec![expr];
        while let Some(expr) = pending.pop() {
            match expr {
                Expr::If(if_expr) => {
                    pending.push(&if_expr.orelse);
                    pending.push(&if_expr.body);
                }
                Expr::Name(name) if self.local_type(name.id.as_str()).is_some() => return None,
                other if super::lookups::names_a_class(other) => {
                    let reference = self.reference(model, other)?;
                    if matches!(&reference, Ref::Qualified(q) if is_foreign(q)) {
                        return None;
                    }
                    if !classes.contains(&reference) {
                        classes.push(reference);
                    }
                }
                _ => return None,
            }
        }
        Some(TypePath::of_type(TypeRef {
            classes,
            elements: false,
            class_object: true,
        }))
    }

    /// What a comprehension builds: a container of its element, which may be the loop variable
    /// itself or an instance made from it (`{P: P(self) for P in penalizer_classes}`).
    fn comprehension_path(
        &self,
        model: &SemanticModel,
        element: &Expr,
        generators: &[ast::Comprehension],
        depth: u8,
    ) -> Option<TypePath> {
        let [generator] = generators else {
            return None;
        };
        let target = match &generator.target {
            Expr::Name(name) => Some(name.id.as_str()),
            _ => None,
        };
        let is_target =
            |expr: &Expr| matches!(expr, Expr::Name(name) if Some(name.id.as_str()) == target);
        let item = || {
            self.type_path_depth(model, &generator.iter, depth + 1)
                .map(|path| path.then(PathStep::Item))
        };
        let path = match element {
            expr if is_target(expr) => item()?,
            Expr::Call(call) if is_target(&call.func) => item()?.then(PathStep::Construct),
            // Anything else made from the loop variable is not followed (it is not a local, and a
            // local of the same name outside would be the wrong one).
            other
                if target.is_some_and(|target| {
                    ruff_python_ast::helpers::any_over_expr(
                        other,
                        |expr| matches!(expr, Expr::Name(name) if name.id.as_str() == target),
                    )
                }) =>
            {
                return None;
            }
            other => self.type_path_depth(model, other, depth + 1)?,
        };
        Some(path.then(PathStep::Elements))
    }

    pub(super) fn local_type(&self, name: &str) -> Option<TypePath> {
        self.locals
            .last()
            .and_then(|scope| scope.get(name))
            .cloned()
    }

    /// Binds a local name to a type path (or forgets it).
    pub(super) fn bind_local(&mut self, name: &'a str, path: Option<TypePath>) {
        let Some(scope) = self.locals.last_mut() else {
            return;
        };
        match path {
            Some(path) => {
                scope.insert(name, path);
            }
            None => {
                if !scope.is_empty() {
                    scope.remove(name);
                }
            }
        }
    }
}
