//! Fields an engine declares host-resident. vLLM's multimodal processors say which of a
//! model's inputs stay in host memory when batched (`image_grid_thw=
//! MultiModalFieldConfig.batched("image", keep_on_cpu=True)`, also `fields[key] = ...` in a
//! loop over literal names): the model's code reads them as
//! host tensors (`grid_thw = kwargs.pop("image_grid_thw")`, `image_input["image_grid_thw"]`,
//! `image_input.image_grid_thw`), though the input schemas annotate them `torch.Tensor`.
//!
//! The processor that declares a field is often in another module than the code that reads it
//! (a shared field factory, a model's `common/` processor and its `nvidia/` layers): the
//! project keeps the names every declaration keeps on the host, and drops a name that some
//! other processor declares without `keep_on_cpu` (there the field is a device tensor).

use super::model::SemanticModel;
use super::types::Ty;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};
use rustc_hash::FxHashSet;

/// The fields a module declares: those kept on the host, and those declared by the same
/// configuration classes without `keep_on_cpu` (device tensors).
#[derive(Debug, Default)]
pub(crate) struct FieldDeclarations<'a> {
    pub(crate) kept: FxHashSet<&'a str>,
    pub(crate) on_device: FxHashSet<&'a str>,
}

/// The fields a module declares: the keywords, dict keys or subscript keys that calls with
/// `keep_on_cpu=True` are given to, and those that calls on the same configuration class
/// (`MultiModalFieldConfig.batched("audio")`) are given to without it.
pub(crate) fn field_declarations(module: &ast::ModModule) -> FieldDeclarations<'_> {
    let mut collector = Collector::default();
    collector.visit_body(&module.body);
    let configs: FxHashSet<&str> = collector
        .declared
        .iter()
        .filter(|(_, _, kept)| *kept)
        .filter_map(|(_, class, _)| *class)
        .collect();
    let mut declarations = FieldDeclarations::default();
    for (field, class, kept) in collector.declared {
        if kept {
            declarations.kept.insert(field);
        } else if class
            .is_some_and(|class| configs.contains(class) || class.ends_with("FieldConfig"))
        {
            declarations.on_device.insert(field);
        }
    }
    declarations
}

#[derive(Default)]
struct Collector<'a> {
    /// Field, the class whose method configures it (`MultiModalFieldConfig`), and whether it is
    /// kept on the host.
    declared: Vec<(&'a str, Option<&'a str>, bool)>,
}

/// For a configuration call `Class.method(...)`: the class, and whether it keeps the field on
/// the host.
fn configuration(value: &Expr) -> Option<(Option<&str>, bool)> {
    let Expr::Call(call) = value else {
        return None;
    };
    let class = match &*call.func {
        Expr::Attribute(attribute) => match &*attribute.value {
            Expr::Name(name) => Some(name.id.as_str()),
            _ => None,
        },
        _ => None,
    };
    let kept = super::syntax::keyword_true(call, "keep_on_cpu");
    (kept || class.is_some()).then_some((class, kept))
}

impl<'a> Visitor<'a> for Collector<'a> {
    fn visit_stmt(&mut self, stmt: &'a ast::Stmt) {
        // `for key in ("frame_counts", "audio_counts"): fields[key] = ...`: each name.
        if let ast::Stmt::For(for_stmt) = stmt {
            self.loop_declarations(for_stmt);
        }
        // `fields["seg_lens"] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)`.
        if let ast::Stmt::Assign(assign) = stmt {
            if let Some((class, kept)) = configuration(&assign.value) {
                for target in &assign.targets {
                    if let Expr::Subscript(subscript) = target {
                        if let Expr::StringLiteral(key) = &*subscript.slice {
                            self.declared.push((key.value.to_str(), class, kept));
                        }
                    }
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                for keyword in &call.arguments.keywords {
                    if let (Some(arg), Some((class, kept))) =
                        (&keyword.arg, configuration(&keyword.value))
                    {
                        self.declared.push((arg.id.as_str(), class, kept));
                    }
                }
            }
            Expr::Dict(dict) => {
                for item in &dict.items {
                    if let (Some(Expr::StringLiteral(key)), Some((class, kept))) =
                        (&item.key, configuration(&item.value))
                    {
                        self.declared.push((key.value.to_str(), class, kept));
                    }
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

impl<'a> Collector<'a> {
    /// The fields a loop over literal names declares, each configured by the loop's body
    /// (`fields[key] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)`).
    fn loop_declarations(&mut self, for_stmt: &'a ast::StmtFor) {
        let (
            Expr::Name(variable),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
        ) = (&*for_stmt.target, &*for_stmt.iter)
        else {
            return;
        };
        let names: Vec<&'a str> = elts
            .iter()
            .filter_map(|elt| match elt {
                Expr::StringLiteral(name) => Some(name.value.to_str()),
                _ => None,
            })
            .collect();
        for stmt in &for_stmt.body {
            let ast::Stmt::Assign(assign) = stmt else {
                continue;
            };
            let Some((class, kept)) = configuration(&assign.value) else {
                continue;
            };
            let keyed = assign.targets.iter().any(|target| {
                matches!(target, Expr::Subscript(subscript)
                    if matches!(&*subscript.slice, Expr::Name(key) if key.id == variable.id))
            });
            if keyed {
                for name in &names {
                    self.declared.push((name, class, kept));
                }
            }
        }
    }
}

impl<'a> SemanticModel<'a> {
    /// Whether the module, or the project, declares a field of this name host-resident.
    pub(super) fn is_host_field(&self, name: &str) -> bool {
        (!self.host_fields.is_empty() && self.host_fields.contains(name))
            || self
                .types
                .facts
                .host_fields
                .is_some_and(|fields| fields.contains(name))
    }

    /// A record built from host-resident fields carries them under its own names:
    /// `Molmo2ImageInputs(num_pooled_patches=kwargs.pop("image_num_pooled_patches"))` makes
    /// `num_pooled_patches` a host field of the module, read later as
    /// `image_input["num_pooled_patches"]`; so does a record a model's method builds from host
    /// tensors it makes. Only where the module or the project declares such fields, and only for
    /// classes (capitalised callees).
    pub fn learn_record_fields(&mut self, call: &'a ast::ExprCall) {
        if !self.declares_host_fields() {
            return;
        }
        let class = match &*call.func {
            Expr::Name(name) => name.id.as_str(),
            Expr::Attribute(attribute) => attribute.attr.as_str(),
            _ => return,
        };
        if !class.starts_with(|c: char| c.is_ascii_uppercase()) {
            return;
        }
        // A model's own method runs after the step's inputs were moved to the device: a tensor
        // it makes in host memory stays there (`num_slices=torch.tensor(sizes)` in
        // `_parse_and_validate_image_input`). Elsewhere (a processor) a fresh host tensor may
        // still be moved with the batch.
        let in_model = self
            .self_class()
            .and_then(|(class, _)| self.classes.get(class))
            .is_some_and(|info| info.module);
        for keyword in &call.arguments.keywords {
            let Some(name) = &keyword.arg else {
                continue;
            };
            // A host mirror of unknown origin (a field read, a `*_cpu` name), or a fresh host
            // tensor a model's method makes.
            let host = match self.ty(&keyword.value) {
                Ty::CpuTensor => true,
                ty => in_model && ty.is_host_tensor(),
            };
            if !self.is_host_field(name.as_str()) && host {
                self.invalidate();
                self.host_fields.insert(name.as_str());
            }
        }
    }

    /// A read of a host-resident field by key: `kwargs.pop("image_grid_thw")`,
    /// `kwargs.get(...)`, `inputs["image_grid_thw"]`.
    pub(super) fn reads_host_field(&self, expr: &Expr) -> bool {
        if !self.declares_host_fields() {
            return false;
        }
        let key = match expr {
            Expr::Subscript(subscript) => &*subscript.slice,
            Expr::Call(call) => match (&*call.func, call.arguments.args.first()) {
                (Expr::Attribute(attribute), Some(key))
                    if matches!(attribute.attr.id.as_str(), "pop" | "get") =>
                {
                    key
                }
                _ => return false,
            },
            _ => return false,
        };
        match key {
            Expr::StringLiteral(key) => self.is_host_field(key.value.to_str()),
            // `mm_kwargs[f"{modality}_grid_thw"]`, or through a local bound to the f-string.
            Expr::FString(_) => {
                key_pattern(key).is_some_and(|(pre, post)| self.every_field_host(&pre, &post))
            }
            Expr::Name(name) => self
                .key_pattern_of(name.id.as_str())
                .is_some_and(|(pre, post)| self.every_field_host(pre, post)),
            _ => false,
        }
    }

    /// Whether the module or the project declares any host field: without one, no field read
    /// is a host read.
    pub(super) fn declares_host_fields(&self) -> bool {
        !self.host_fields.is_empty() || self.types.facts.host_fields.is_some()
    }

    /// Whether the fields a key pattern can name are host fields: at least one host field
    /// matches, and no field the module declares on the device does.
    fn every_field_host(&self, prefix: &str, suffix: &str) -> bool {
        if prefix.is_empty() && suffix.is_empty() {
            return false;
        }
        let matches = |field: &&str| {
            field.len() > prefix.len() + suffix.len()
                && field.starts_with(prefix)
                && field.ends_with(suffix)
        };
        let project = self.types.facts.host_fields;
        (self.host_fields.iter().any(matches)
            || project.is_some_and(|fields| fields.iter().any(|f| matches(&f.as_str()))))
            && !self.device_fields.iter().any(matches)
    }
}

/// The literal text of an f-string before its first and after its last interpolation
/// (`f"{modality}_grid_thw"`: `""` and `"_grid_thw"`), when it interpolates something.
pub(super) fn key_pattern(expr: &Expr) -> Option<(String, String)> {
    let Expr::FString(fstring) = expr else {
        return None;
    };
    let mut prefix = String::new();
    let mut suffix = String::new();
    let mut interpolated = false;
    for element in fstring.value.elements() {
        match element {
            ast::InterpolatedStringElement::Literal(literal) => {
                if interpolated {
                    suffix.push_str(&literal.value);
                } else {
                    prefix.push_str(&literal.value);
                }
            }
            ast::InterpolatedStringElement::Interpolation(_) => {
                interpolated = true;
                suffix.clear();
            }
        }
    }
    interpolated.then_some((prefix, suffix))
}
