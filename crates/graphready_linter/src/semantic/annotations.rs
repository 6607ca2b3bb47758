//! Annotations: what a parameter, a field or a variable annotated `torch.Tensor`, `list[int]`,
//! `np.ndarray` or `torch.cuda.Stream` holds, and the parameters bound from them.

use super::model::{Binding, SemanticModel};
use super::syntax::host_named;
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr, Parameters};
use ruff_text_size::Ranged;

impl<'a> SemanticModel<'a> {
    /// The type of a parameter's annotation.
    pub fn annotation_ty(&self, annotation: &Expr) -> Ty {
        match annotation {
            Expr::StringLiteral(literal) => {
                let text = literal.value.to_str();
                match text {
                    "torch.Tensor" | "Tensor" | "torch.nn.Parameter" | "nn.Parameter" => Ty::Tensor,
                    legacy if is_legacy_tensor_class(legacy) => Ty::Tensor,
                    _ => Ty::Unknown,
                }
            }
            Expr::Subscript(subscript) => {
                let container = self.qualified_name(&subscript.value);
                let container = container.as_deref().unwrap_or("");
                let holds_tensors = match &*subscript.slice {
                    Expr::Tuple(tuple) => tuple
                        .elts
                        .iter()
                        .any(|element| self.annotation_ty(element) == Ty::Tensor),
                    element => self.annotation_ty(element) == Ty::Tensor,
                };
                let sequence = matches!(
                    container,
                    "typing.List" | "typing.Tuple" | "typing.Sequence" | "list" | "tuple"
                ) || matches!(&*subscript.value, Expr::Name(n) if matches!(n.id.as_str(), "list" | "tuple"));
                let list = matches!(container, "typing.List" | "list")
                    || matches!(&*subscript.value, Expr::Name(n) if n.id.as_str() == "list");
                let holds_ints =
                    matches!(&*subscript.slice, Expr::Name(n) if n.id.as_str() == "int");
                if sequence && holds_tensors {
                    Ty::TensorSeq
                } else if list && holds_ints {
                    Ty::HostList
                } else if list && self.is_int_sequence(&subscript.slice) {
                    Ty::HostLists
                } else {
                    Ty::Unknown
                }
            }
            Expr::Name(name) if matches!(name.id.as_str(), "int" | "float" | "bool" | "str") => {
                Ty::Host
            }
            Expr::Name(name) if name.id.as_str() == "list" => Ty::HostList,
            _ => match self.qualified_name(annotation).as_deref() {
                Some("torch.Tensor" | "torch.nn.Parameter" | "torch.nn.parameter.Parameter") => {
                    Ty::Tensor
                }
                Some(legacy) if is_legacy_tensor_class(legacy) => Ty::Tensor,
                Some("typing.List") => Ty::HostList,
                Some("torch.cuda.Stream" | "torch.Stream") => Ty::Stream,
                Some("torch.cuda.Event" | "torch.Event") => Ty::Event,
                Some(numpy) if numpy.starts_with("numpy.") => Ty::Array,
                _ => Ty::Unknown,
            },
        }
    }

    /// Whether an annotation is a sequence of integers: `list[int]`, `Sequence[int]`,
    /// `Iterable[int]`, `tuple[int, ...]`.
    fn is_int_sequence(&self, annotation: &Expr) -> bool {
        let Expr::Subscript(subscript) = annotation else {
            return false;
        };
        let builtin =
            matches!(&*subscript.value, Expr::Name(n) if matches!(n.id.as_str(), "list" | "tuple"));
        let container = builtin
            || self.qualified_name(&subscript.value).is_some_and(|q| {
                matches!(
                    &*q,
                    "typing.List"
                        | "typing.Tuple"
                        | "typing.Sequence"
                        | "typing.Iterable"
                        | "collections.abc.Sequence"
                        | "collections.abc.Iterable"
                )
            });
        let is_int = |expr: &Expr| matches!(expr, Expr::Name(n) if n.id.as_str() == "int");
        let ints = match &*subscript.slice {
            Expr::Tuple(tuple) => {
                !tuple.elts.is_empty()
                    && tuple
                        .elts
                        .iter()
                        .all(|elt| is_int(elt) || matches!(elt, Expr::EllipsisLiteral(_)))
            }
            element => is_int(element),
        };
        container && ints
    }

    /// [`Self::annotation_ty`] of what an optional annotation holds when a value is present:
    /// `torch.Tensor | None` and `Optional[torch.Tensor]` are tensors there.
    pub fn present_annotation_ty(&self, annotation: &Expr) -> Ty {
        match annotation {
            Expr::BinOp(binop) => match super::syntax::or_none(binop) {
                Some(present) => self.annotation_ty(present),
                None => self.annotation_ty(annotation),
            },
            Expr::Subscript(subscript)
                if self.qualified_name(&subscript.value).as_deref() == Some("typing.Optional") =>
            {
                self.annotation_ty(&subscript.slice)
            }
            other => self.annotation_ty(other),
        }
    }

    /// Binds a function's parameters from their annotations.
    pub fn bind_parameters(&mut self, parameters: &'a Parameters) {
        for parameter in parameters.iter_non_variadic_params() {
            let name = parameter.parameter.name.id.as_str();
            let ty = match parameter
                .parameter
                .annotation()
                .map_or(Ty::Unknown, |annotation| self.annotation_ty(annotation))
            {
                // `seq_lens_cpu: torch.Tensor` is a host mirror; so is `lens: torch.Tensor,  #
                // CPU tensor`.
                Ty::Tensor
                    if host_named(name)
                        || parameter
                            .parameter
                            .annotation()
                            .is_some_and(|annotation| self.commented_host(annotation.end())) =>
                {
                    Ty::CpuTensor
                }
                ty => ty,
            };
            self.bind(name, ty);
        }
        if let Some(vararg) = &parameters.vararg {
            self.bind(vararg.name.id.as_str(), Ty::Unknown);
        }
        if let Some(kwarg) = &parameters.kwarg {
            self.bind(kwarg.name.id.as_str(), Ty::Host);
            self.current().kwargs = Some(kwarg.name.id.as_str());
        }
        // After `bind`, which forgets a rebound parameter.
        let names = parameters
            .iter_non_variadic_params()
            .map(|parameter| parameter.parameter.name.id.as_str());
        self.current().parameters.extend(names);
        // Media records (see `super::records`), once the names are bound.
        if self.types.facts.records.is_some() {
            for parameter in parameters.iter_non_variadic_params() {
                let record = parameter
                    .parameter
                    .annotation()
                    .and_then(|annotation| self.record_annotation(annotation));
                if let Some(record) = record {
                    let name = parameter.parameter.name.id.as_str();
                    self.current().records.insert(name, record);
                }
            }
        }
    }

    /// Whether `name` is a parameter of the innermost function, not rebound since.
    pub fn is_parameter(&self, name: &str) -> bool {
        self.scopes
            .last()
            .is_some_and(|scope| scope.parameters.contains(name))
            && matches!(self.lookup(name), Some(Binding::Value(_)))
    }

    /// The parameter of the innermost function whose memory an expression is: the parameter
    /// itself, a slice, reshape or dtype conversion of it (`qo_lens[:split]`, `lens.int()`,
    /// `lens.to(torch.int32)`), or a local bound to one (`decode_lens = qo_lens[:split]`) and
    /// not bound again since. What the function's callers pass decides where such a value lives.
    pub fn parameter_viewed(&self, expr: &Expr) -> Option<&'a str> {
        match expr {
            Expr::Name(name) => {
                let name = name.id.as_str();
                let scope = self.scopes.last()?;
                if self.is_parameter(name) {
                    return scope.parameters.get(name).copied();
                }
                scope.param_views.get(name).copied()
            }
            Expr::Subscript(subscript) => self.parameter_viewed(&subscript.value),
            Expr::Call(call) => {
                let Expr::Attribute(attribute) = &*call.func else {
                    return None;
                };
                let keeps_memory = match attribute.attr.as_str() {
                    "view" | "reshape" | "contiguous" | "flatten" | "squeeze" | "unsqueeze"
                    | "narrow" | "int" | "long" | "float" | "half" | "bool" | "clone"
                    | "detach" | "t" | "transpose" | "permute" | "expand" | "unflatten" => true,
                    // A dtype conversion (`.to(torch.int32)`), not a move.
                    "to" => self.is_dtype_conversion(call),
                    _ => false,
                };
                if keeps_memory {
                    self.parameter_viewed(&attribute.value)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// Whether a name is the variadic keyword parameter (`**kwargs`) of the function being
    /// visited, as received.
    pub fn is_kwargs_parameter(&self, name: &str) -> bool {
        self.scopes
            .last()
            .is_some_and(|scope| scope.kwargs == Some(name))
    }
}

/// The legacy typed-tensor classes (`torch.FloatTensor`, `torch.LongTensor`, their
/// `torch.cuda.*` twins): as annotations they mean a tensor of that dtype on any device
/// (transformers annotates its tensors so).
fn is_legacy_tensor_class(qualified: &str) -> bool {
    let name = qualified
        .strip_prefix("torch.cuda.")
        .or_else(|| qualified.strip_prefix("torch."));
    matches!(
        name,
        Some(
            "FloatTensor"
                | "DoubleTensor"
                | "HalfTensor"
                | "BFloat16Tensor"
                | "ByteTensor"
                | "CharTensor"
                | "ShortTensor"
                | "IntTensor"
                | "LongTensor"
                | "BoolTensor"
        )
    )
}

impl<'a> SemanticModel<'a> {
    /// Whether the comment that ends the line of a declaration, after `end` (an annotation's
    /// end), says the value lives on the host: `prompt_lens: torch.Tensor  # CPU tensor`,
    /// `lens: torch.Tensor,  # on CPU`. Only a comma, a closing parenthesis, a default or the
    /// `def` line's colon may stand between: a comment after another declaration on the line
    /// is that one's.
    pub fn commented_host(&self, end: ruff_text_size::TextSize) -> bool {
        let Some(rest) = self.source.get(end.to_usize()..) else {
            return false;
        };
        let line = rest.split(['\n', '\r']).next().unwrap_or("");
        let Some((between, comment)) = line.split_once('#') else {
            return false;
        };
        // The colon that ends a `def` line is no other declaration's.
        let between = between.trim_end().trim_end_matches(':');
        if between.contains(':') {
            return false;
        }
        let words: Vec<String> = comment
            .split_whitespace()
            .take(3)
            .map(|word| {
                word.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_ascii_lowercase()
            })
            .collect();
        match words.as_slice() {
            [first, ..] if first == "cpu" || first == "host" => true,
            [on, place, ..] if on == "on" || on == "in" => place == "cpu" || place == "host",
            [on, the, place] if (on == "on" || on == "in") && the == "the" => {
                place == "cpu" || place == "host"
            }
            _ => false,
        }
    }

    /// The parameters of a function that its docstring says live on the host: a line that names
    /// the parameter and says `on CPU`, `on the host`, `in host memory` or `CPU tensor`
    /// (`spatial_shapes: (num_tiles, 2) on CPU`, "The model runner builds ``is_multimodal`` on
    /// CPU"), and names no device (`on CPU or GPU` says nothing). Binds them as host tensors
    /// where nothing says more than a tensor.
    pub fn bind_documented_host(&mut self, function: &'a ast::StmtFunctionDef) {
        let Some(ast::Stmt::Expr(first)) = function.body.first() else {
            return;
        };
        let Expr::StringLiteral(docstring) = &*first.value else {
            return;
        };
        let text = docstring.value.to_str();
        if !text.contains("CPU") && !text.contains("cpu") && !text.contains("host") {
            return;
        }
        for parameter in function.parameters.iter_non_variadic_params() {
            let name = parameter.parameter.name.id.as_str();
            if text.lines().any(|line| documents_host(line, name))
                && matches!(self.value_ty(name), Some(Ty::Tensor | Ty::Unknown))
            {
                self.bind(name, Ty::CpuTensor);
            }
        }
    }
}

/// Whether a docstring line names `param` as a word and says it lives on the host, naming no
/// device besides.
fn documents_host(line: &str, param: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    // Matched without case, as the line is (`maxLen`, a parameter named in camel case).
    let param = param.to_ascii_lowercase();
    let param = param.as_str();
    let names = lower.match_indices(param).any(|(at, _)| {
        let before = lower[..at].chars().next_back();
        let after = lower[at + param.len()..].chars().next();
        let word = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        word(before) && word(after)
    });
    if !names || ["gpu", "cuda", "device"].iter().any(|d| lower.contains(d)) {
        return false;
    }
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|pair| match pair {
        [on, place] if matches!(*on, "on" | "in") => matches!(*place, "cpu" | "host"),
        [place, "tensor" | "tensors" | "memory"] => matches!(*place, "cpu" | "host"),
        _ => false,
    }) || words
        .windows(3)
        .any(|w| matches!(w[0], "on" | "in") && w[1] == "the" && matches!(w[2], "cpu" | "host"))
}
