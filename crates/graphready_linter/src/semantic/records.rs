//! Media items whose attributes a media processor filled in. An engine's per-request media item
//! declares a few fields and serves whatever else the processor produced as attributes, from a
//! dictionary (SGLang's `MultimodalDataItem.__getattr__` returns
//! `self.model_specific_data[name]`): a grid, a mask, a size list made by the processor on the
//! host. A model reads them as `item.image_grid_thw`, most often in a comprehension over the
//! items it is handed (`torch.concat([item.image_grid_thw for item in items])`) and hands the
//! result to its vision tower: those are host tensors, and the tower's reads of them wait for
//! nothing.
//!
//! The project's record classes are found before any file is checked (see
//! [`record_declarations`]); a parameter annotated with one (`item: MediaItem`, `items:
//! List[MediaItem]`, `Optional[...]`), and a loop or comprehension variable drawn from a
//! parameter annotated as a sequence of them, hold instances. A declared field or method of the
//! class (`item.feature`, which the engine may move to the device) is not served by
//! `__getattr__` and says nothing; a read of the serving dictionary itself by key
//! (`item.model_specific_data.get("grid_thws")`) is host data as well.

use super::model::SemanticModel;
use super::types::Ty;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};

/// The record classes a module declares: for each, its name, `Class:dictionary` for the field
/// `__getattr__` serves from, then `Class.name` for each of its declared fields, class
/// attributes, methods and attributes its methods set on `self`.
pub(crate) fn record_declarations(module: &ast::ModModule) -> Vec<String> {
    let mut collector = Collector::default();
    collector.visit_body(&module.body);
    collector.out
}

#[derive(Default)]
struct Collector {
    out: Vec<String>,
}

impl<'a> Visitor<'a> for Collector {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::ClassDef(class) = stmt {
            if let Some(dictionary) = serves_from_dictionary(class) {
                let name = class.name.as_str();
                self.out.push(name.to_string());
                self.out.push(format!("{name}:{dictionary}"));
                for declared in declared_names(class) {
                    self.out.push(format!("{name}.{declared}"));
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }
}

/// The dictionary a class's `__getattr__(self, name)` serves from: `self.<dictionary>[name]`.
fn serves_from_dictionary(class: &ast::StmtClassDef) -> Option<&str> {
    class.body.iter().find_map(|stmt| {
        let Stmt::FunctionDef(function) = stmt else {
            return None;
        };
        let params = &function.parameters.args;
        if function.name.as_str() != "__getattr__" || params.len() != 2 {
            return None;
        }
        let (receiver, key) = (
            params[0].parameter.name.as_str(),
            params[1].parameter.name.as_str(),
        );
        let mut found = ReturnsEntry {
            receiver,
            key,
            found: None,
        };
        found.visit_body(&function.body);
        found.found
    })
}

struct ReturnsEntry<'n, 'a> {
    receiver: &'n str,
    key: &'n str,
    found: Option<&'a str>,
}

impl<'a> Visitor<'a> for ReturnsEntry<'_, 'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        if let Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) = stmt
        {
            if let Expr::Subscript(subscript) = &**value {
                let keyed =
                    matches!(&*subscript.slice, Expr::Name(key) if key.id.as_str() == self.key);
                if let Expr::Attribute(attribute) = &*subscript.value {
                    let on_self = matches!(&*attribute.value, Expr::Name(receiver) if receiver.id.as_str() == self.receiver);
                    if keyed && on_self && self.found.is_none() {
                        self.found = Some(attribute.attr.as_str());
                    }
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }
}

/// The names a class declares: annotated and assigned class attributes, methods, and the
/// attributes its methods set on `self`.
fn declared_names(class: &ast::StmtClassDef) -> Vec<&str> {
    let mut names = Vec::new();
    for stmt in &class.body {
        match stmt {
            Stmt::AnnAssign(assign) => {
                if let Expr::Name(name) = &*assign.target {
                    names.push(name.id.as_str());
                }
            }
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Name(name) = target {
                        names.push(name.id.as_str());
                    }
                }
            }
            Stmt::FunctionDef(function) => {
                names.push(function.name.as_str());
                let Some(receiver) = function.parameters.args.first() else {
                    continue;
                };
                let mut sets = SelfSets {
                    receiver: receiver.parameter.name.as_str(),
                    names: &mut names,
                };
                sets.visit_body(&function.body);
            }
            _ => {}
        }
    }
    names
}

struct SelfSets<'n, 'a> {
    receiver: &'n str,
    names: &'n mut Vec<&'a str>,
}

impl<'a> Visitor<'a> for SelfSets<'_, 'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Attribute(attribute) = expr {
            if attribute.ctx.is_store()
                && matches!(&*attribute.value, Expr::Name(receiver) if receiver.id.as_str() == self.receiver)
            {
                self.names.push(attribute.attr.as_str());
            }
        }
        visitor::walk_expr(self, expr);
    }
}

impl<'a> SemanticModel<'a> {
    /// The record class an annotation names, and whether it annotates a sequence of them:
    /// `MediaItem`, `"MediaItem"`, `Optional[MediaItem]`, `MediaItem | None`; `List[MediaItem]`,
    /// `list[...]`, `Sequence[...]`, `Iterable[...]`.
    pub(super) fn record_annotation(&self, annotation: &'a Expr) -> Option<(&'a str, bool)> {
        let records = self.types.facts.records?;
        let class = |expr: &'a Expr| -> Option<&'a str> {
            let name = match expr {
                Expr::Name(name) => name.id.as_str(),
                Expr::Attribute(attribute) => attribute.attr.as_str(),
                Expr::StringLiteral(literal) => literal.value.to_str(),
                _ => return None,
            };
            records.contains(name).then_some(name)
        };
        match annotation {
            Expr::BinOp(binop) => self.record_annotation(super::syntax::or_none(binop)?),
            Expr::Subscript(subscript) => {
                let container = match &*subscript.value {
                    Expr::Name(name) => name.id.as_str(),
                    Expr::Attribute(attribute) => attribute.attr.as_str(),
                    _ => return None,
                };
                match container {
                    "Optional" => self.record_annotation(&subscript.slice),
                    "List" | "list" | "Sequence" | "Iterable" => {
                        class(&subscript.slice).map(|class| (class, true))
                    }
                    _ => None,
                }
            }
            other => class(other).map(|class| (class, false)),
        }
    }

    /// The record class a name holds an instance of (`false`) or a sequence of (`true`).
    pub(super) fn record_of(&self, name: &str) -> Option<(&'a str, bool)> {
        self.types.facts.records?;
        self.visible_scopes()
            .find(|scope| scope.bindings.contains_key(name))
            .and_then(|scope| scope.records.get(name).copied())
    }

    /// After a loop or comprehension binds `target` to an element of `iter`: an element of a
    /// sequence of records is a record.
    pub(super) fn learn_record_element(&mut self, target: &'a Expr, iter: &Expr) {
        let (Expr::Name(target), Expr::Name(iter)) = (target, iter) else {
            return;
        };
        if let Some((class, true)) = self.record_of(iter.id.as_str()) {
            self.current()
                .records
                .insert(target.id.as_str(), (class, false));
            self.invalidate();
        }
    }

    /// What `receiver.attr` holds when `receiver` is a record and `attr` is not one of its
    /// declared names: a host value the processor made.
    pub(super) fn record_attribute(&self, class: &str, attr: &str) -> Option<Ty> {
        let records = self.types.facts.records?;
        (!records.contains(&format!("{class}.{attr}"))).then_some(Ty::CpuTensor)
    }

    /// `item.attr` with `item` a record: see [`Self::record_attribute`].
    pub(super) fn record_read(&self, attribute: &ast::ExprAttribute) -> Option<Ty> {
        let Expr::Name(receiver) = &*attribute.value else {
            return None;
        };
        match self.record_of(receiver.id.as_str())? {
            (class, false) => self.record_attribute(class, attribute.attr.as_str()),
            (_, true) => None,
        }
    }

    /// A read of a record's serving dictionary by key: `item.model_specific_data.get("grid")`,
    /// `item.model_specific_data["grid"]`: what the processor put there, host data.
    pub(super) fn reads_record_dictionary(&self, expr: &Expr) -> bool {
        let Some(records) = self.types.facts.records else {
            return false;
        };
        let dictionary = match expr {
            Expr::Subscript(subscript) => &*subscript.value,
            Expr::Call(call) => match &*call.func {
                Expr::Attribute(get) if get.attr.as_str() == "get" => &*get.value,
                _ => return false,
            },
            _ => return false,
        };
        let Expr::Attribute(dictionary) = dictionary else {
            return false;
        };
        let Expr::Name(receiver) = &*dictionary.value else {
            return false;
        };
        match self.record_of(receiver.id.as_str()) {
            Some((class, false)) => {
                records.contains(&format!("{class}:{}", dictionary.attr.as_str()))
            }
            _ => false,
        }
    }

    /// `[item.attr for item in items]` with `items` a sequence of records: the element
    /// [`Self::record_attribute`] says, read where the comprehension's own scope is gone.
    pub(super) fn record_comprehension_element(
        &self,
        elt: &Expr,
        generator: &ast::Comprehension,
    ) -> Option<Ty> {
        let (Expr::Attribute(attribute), Expr::Name(target), Expr::Name(iter)) =
            (elt, &generator.target, &generator.iter)
        else {
            return None;
        };
        if !matches!(&*attribute.value, Expr::Name(receiver) if receiver.id == target.id) {
            return None;
        }
        match self.record_of(iter.id.as_str())? {
            (class, true) => self.record_attribute(class, attribute.attr.as_str()),
            (_, false) => None,
        }
    }
}
