//! The semantic model of one module: scopes and bindings, imports resolved to qualified names,
//! the classes defined here and the method being visited. What the bindings hold (types) is
//! [`super::types`]' business.

use super::cache::NodeCache;
use super::facts::ProjectFacts;
pub(super) use super::scope::{Binding, Scope};
use super::types::{Ty, TypeState};
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::rc::Rc;

/// What is known about a class defined in this module.
#[derive(Debug, Default)]
pub struct ClassInfo<'a> {
    pub bases: Vec<&'a Expr>,
    pub attributes: FxHashMap<&'a str, Ty>,
    /// Attributes holding an instance of a class, by the class's name as the constructor call
    /// spells it (`self.mapping = VocabMapping(...)`); `""` where assignments disagree.
    pub instances: FxHashMap<&'a str, &'a str>,
    /// Methods read as attributes (`@property`, `@cached_property`).
    pub properties: Vec<&'a str>,
    /// A subclass of `torch.nn.Module` (directly, or through classes of this module): calling
    /// an instance runs its `forward`.
    pub module: bool,
    /// Attributes set back to `None` outside `__init__` (a cache reset every step).
    pub resets: Vec<&'a str>,
    /// `(method, attribute)` for each assignment to an attribute in a method other than
    /// `__init__`.
    pub setters: Vec<(&'a str, &'a str)>,
    /// A `@dataclass`: a record, made anew as data flows (a batch, a step's metadata), so that
    /// a cache on one of its instances is made again for every record.
    pub record: bool,
    /// A record's fields the constructor does not take (`field(init=False, ...)`): the
    /// instance's own state, which lasts as long as it does (a plan cache).
    pub state_fields: Vec<&'a str>,
    /// Attributes every method sets from an environment flag declared off by default
    /// (`self.trace = envs.SGLANG_TRACE.get()`): a switch kept on the instance.
    pub off_flags: Vec<&'a str>,
    /// How many assignments to each attribute the class's methods make.
    pub assignments: FxHashMap<&'a str, u32>,
    /// `(method, attribute, position)` for each method that stores into `self.<attribute>`
    /// under the parameter at `position` (after `self`): `self.metadata[bs] = ...` in
    /// `_build(self, bs, ...)`.
    pub key_stores: Vec<(&'a str, &'a str, usize)>,
}

/// The values bindings replaced, in order, whether the name was bound to the host device then,
/// and whether it was the function's parameter as received: undone to leave a clause of an `if`
/// statement.
pub(super) type UndoLog<'a> = Vec<(&'a str, Option<Binding>, bool, bool)>;

/// The semantic model, updated as the checker walks the module in source order.
pub struct SemanticModel<'a> {
    pub(super) scopes: Vec<Scope<'a>>,
    /// Emptied scopes, kept for reuse.
    spare_scopes: Vec<Scope<'a>>,
    /// The clauses of `if` statements being visited, innermost last: the scope depth where each
    /// began, and the values its bindings replaced (to undo before the next clause).
    pub(super) branches: Vec<(usize, UndoLog<'a>)>,
    /// Names an `isinstance` test narrowed in the clause being visited: (how many clauses were
    /// open, the name, its narrowed type).
    pub(super) narrowed: Vec<(usize, &'a str, Ty)>,
    /// Per `if` statement being visited, what its finished clauses bound, in order, and whether
    /// to the host device.
    pub(super) clause_results: Vec<Vec<(&'a str, Binding, bool)>>,
    /// Every name any import bound: a name outside this set never roots a qualified name, which
    /// answers most `qualified_name` questions with one lookup.
    import_names: FxHashSet<&'a str>,
    /// Fields the module declares host-resident (see `fields.rs`).
    pub(super) host_fields: FxHashSet<&'a str>,
    /// The fields the module declares by a configuration call without `keep_on_cpu`.
    pub(super) device_fields: FxHashSet<&'a str>,
    /// Whether the module imports NumPy anywhere (array methods are then ambiguous).
    pub(super) imports_numpy: bool,
    /// Qualified names per expression node. A node is asked about many times at one program
    /// point (once per rule), and an import is almost never shadowed between those questions.
    qualified_cache: RefCell<NodeCache<Option<Rc<str>>>>,
    /// Bumped whenever a binding changes; memoised answers of older generations are stale.
    pub(super) generation: std::cell::Cell<u32>,
    /// The dotted name of this module's package, for relative imports (`None`: unknown).
    package: Option<String>,
    pub(super) classes: FxHashMap<&'a str, ClassInfo<'a>>,
    /// The class whose method is being visited, and that method's `self` parameter name.
    method_context: Vec<(Option<&'a str>, Option<&'a str>)>,
    /// What the type inference knows and remembers.
    pub(super) types: TypeState<'a>,
    /// The module's source (see [`SemanticModel::set_source`]).
    pub(super) source: &'a str,
}

impl<'a> SemanticModel<'a> {
    pub fn new(module: Option<&str>, is_package: bool, returns: ProjectFacts<'a>) -> Self {
        let package = module.map(|module| {
            if is_package {
                module.to_string()
            } else {
                module
                    .rsplit_once('.')
                    .map_or("", |(parent, _)| parent)
                    .to_string()
            }
        });
        SemanticModel {
            scopes: vec![Scope::default()],
            spare_scopes: Vec::new(),
            branches: Vec::new(),
            narrowed: Vec::new(),
            clause_results: Vec::new(),
            import_names: FxHashSet::default(),
            host_fields: FxHashSet::default(),
            device_fields: FxHashSet::default(),
            imports_numpy: false,
            qualified_cache: RefCell::new(NodeCache::new()),
            generation: std::cell::Cell::new(0),
            package,
            classes: FxHashMap::default(),
            method_context: Vec::new(),
            types: TypeState::new(returns),
            source: "",
        }
    }

    /// The module's source, for the comments that annotate its declarations.
    pub fn set_source(&mut self, source: &'a str) {
        self.source = source;
    }

    /// Forgets memoised answers: a binding changed.
    pub(super) fn invalidate(&mut self) {
        self.forget_answers();
    }

    /// Forgets memoised answers without a binding change: the memos are keyed by node address,
    /// so an expression parsed for a moment (a string annotation) must not leave answers that a
    /// later one, allocated at the same address, would read as its own.
    pub fn forget_answers(&self) {
        self.generation.set(self.generation.get().wrapping_add(1));
    }

    pub fn push_scope(&mut self, is_class: bool) {
        self.invalidate();
        // A scope left earlier lends its tables: no allocation, no growing, per function.
        let mut scope = self.spare_scopes.pop().unwrap_or_default();
        scope.is_class = is_class;
        self.scopes.push(scope);
    }

    pub fn pop_scope(&mut self) {
        self.invalidate();
        if self.scopes.len() > 1 {
            if let Some(mut scope) = self.scopes.pop() {
                scope.clear();
                self.spare_scopes.push(scope);
            }
        }
    }

    pub fn enter_function(&mut self, class: Option<&'a str>, self_name: Option<&'a str>) {
        self.method_context.push((class, self_name));
        self.push_scope(false);
    }

    pub fn exit_function(&mut self) {
        self.method_context.pop();
        self.pop_scope();
    }

    pub(super) fn current(&mut self) -> &mut Scope<'a> {
        self.scopes
            .last_mut()
            .expect("the module scope is never popped")
    }

    /// Module-level names bound by imports, with their qualified names.
    pub fn module_imports(&self) -> impl Iterator<Item = (&str, &str)> {
        self.scopes[0]
            .bindings
            .iter()
            .filter_map(|(name, binding)| match binding {
                Binding::Import(qualified) => Some((*name, qualified.as_str())),
                Binding::Value(_) => None,
            })
    }

    pub fn bind(&mut self, name: &'a str, ty: Ty) {
        if ty == Ty::HostDevice {
            self.bind(name, Ty::Host);
            self.current().host_devices.insert(name);
            self.invalidate();
            return;
        }
        self.invalidate();
        let depth = self.scopes.len();
        let scope = self
            .scopes
            .last_mut()
            .expect("the module scope is never popped");
        let replaced = scope.bindings.insert(name, Binding::Value(ty));
        let host_device = scope.host_devices.contains(name);
        let parameter = scope.parameters.contains(name);
        if let Some((branch_depth, undo)) = self.branches.last_mut() {
            if *branch_depth == depth {
                undo.push((name, replaced, host_device, parameter));
            }
        }
        let scope = self.current();
        if !scope.bool_tensors.is_empty() {
            scope.bool_tensors.remove(name);
        }
        if !scope.host_devices.is_empty() {
            scope.host_devices.remove(name);
        }
        if !scope.key_patterns.is_empty() {
            scope.key_patterns.remove(name);
        }
        if !scope.parameters.is_empty() {
            scope.parameters.remove(name);
        }
        if scope.kwargs == Some(name) {
            scope.kwargs = None;
        }
        if !scope.off_flags.is_empty() {
            scope.off_flags.remove(name);
        }
        if !scope.capture_false.is_empty() {
            scope.capture_false.remove(name);
        }
        if !scope.capture_only.is_empty() {
            scope.capture_only.remove(name);
        }
        if !scope.records.is_empty() {
            scope.records.remove(name);
        }
        if !scope.param_views.is_empty() {
            scope.param_views.remove(name);
        }
        if !scope.unpacked.is_empty() {
            scope.unpacked.remove(name);
        }
        if !scope.host_parts.is_empty() {
            scope.host_parts.remove(name);
        }
        if !scope.empty_lists.is_empty() {
            scope.empty_lists.remove(name);
        }
    }

    /// The scopes visible from here, innermost first: class bodies are not visible from the
    /// functions nested in them.
    pub(super) fn visible_scopes(&self) -> impl Iterator<Item = &Scope<'a>> {
        let innermost = self.scopes.len() - 1;
        self.scopes
            .iter()
            .enumerate()
            .rev()
            .filter(move |(index, scope)| *index == innermost || !scope.is_class)
            .map(|(_, scope)| scope)
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.visible_scopes()
            .find_map(|scope| scope.bindings.get(name))
    }

    /// The innermost scope visible from here that binds `name`.
    pub(super) fn lookup_scope(&self, name: &str) -> Option<&Scope<'a>> {
        self.visible_scopes()
            .find(|scope| scope.bindings.contains_key(name))
    }

    /// Records `import ...` / `from ... import ...`.
    pub fn bind_import(&mut self, stmt: &'a Stmt) {
        self.invalidate();
        let numpy = match stmt {
            Stmt::Import(import) => import
                .names
                .iter()
                .any(|alias| alias.name.id.as_str().split('.').next() == Some("numpy")),
            Stmt::ImportFrom(import) => import
                .module
                .as_ref()
                .is_some_and(|m| m.id.as_str().split('.').next() == Some("numpy")),
            _ => false,
        };
        self.imports_numpy |= numpy;
        for (bound, qualified) in self.import_bindings(stmt) {
            self.import_names.insert(bound);
            self.current()
                .bindings
                .insert(bound, Binding::Import(qualified));
        }
    }

    /// The names an `import ...` / `from ... import ...` binds, with what each stands for
    /// (`import torch.cuda` binds `torch`), without binding them.
    pub fn import_bindings<'s>(&self, stmt: &'s Stmt) -> Vec<(&'s str, String)> {
        let mut out = Vec::new();
        match stmt {
            Stmt::Import(ast::StmtImport { names, .. }) => {
                for alias in names {
                    let qualified = alias.name.id.as_str();
                    match &alias.asname {
                        Some(asname) => out.push((asname.id.as_str(), qualified.to_string())),
                        None => {
                            let head = qualified.split('.').next().unwrap_or(qualified);
                            out.push((&alias.name.id.as_str()[..head.len()], head.to_string()));
                        }
                    }
                }
            }
            Stmt::ImportFrom(ast::StmtImportFrom {
                module,
                names,
                level,
                ..
            }) => {
                let base = self.resolve_module(module.as_ref().map(|m| m.id.as_str()), *level);
                for alias in names {
                    if alias.name.id.as_str() == "*" {
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.as_str();
                    let qualified = match &base {
                        Some(base) if !base.is_empty() => format!("{base}.{}", alias.name.id),
                        _ => alias.name.id.to_string(),
                    };
                    out.push((bound, qualified));
                }
            }
            _ => {}
        }
        out
    }

    /// The absolute module of `from <dots><module> import`, or a dotted best effort when the
    /// package is unknown.
    fn resolve_module(&self, module: Option<&str>, level: u32) -> Option<String> {
        if level == 0 {
            return module.map(str::to_string);
        }
        let package = self.package.as_deref()?;
        let mut parts: Vec<&str> = if package.is_empty() {
            Vec::new()
        } else {
            package.split('.').collect()
        };
        for _ in 1..level {
            parts.pop()?;
        }
        if let Some(module) = module {
            parts.push(module);
        }
        Some(parts.join("."))
    }

    /// The qualified name an expression refers to through imports: `T.cuda.synchronize` with
    /// `import torch as T` is `torch.cuda.synchronize`. `None` for anything not rooted in an import.
    pub fn qualified_name(&self, expr: &Expr) -> Option<Rc<str>> {
        if !matches!(expr, Expr::Name(_) | Expr::Attribute(_)) {
            return None;
        }
        let key = std::ptr::from_ref(expr) as usize;
        // Answers hold until a binding changes: a node can be asked about before a later import
        // binds its root (a class scan reads method bodies ahead of their local imports).
        if let Some(known) = self
            .qualified_cache
            .borrow()
            .get(key, self.generation.get())
        {
            return known.clone();
        }
        let mut root = expr;
        while let Expr::Attribute(attribute) = root {
            root = &attribute.value;
        }
        let answer = match root {
            Expr::Name(name) if self.import_names.contains(name.id.as_str()) => {
                self.compute_qualified_name(expr).map(Rc::from)
            }
            _ => None,
        };
        self.qualified_cache
            .borrow_mut()
            .insert(key, self.generation.get(), answer.clone());
        answer
    }

    fn compute_qualified_name(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => match self.lookup(name.id.as_str())? {
                Binding::Import(qualified) => Some(qualified.clone()),
                Binding::Value(_) => None,
            },
            Expr::Attribute(attribute) => {
                let base = self.qualified_name(&attribute.value)?;
                let mut qualified = String::with_capacity(base.len() + 1 + attribute.attr.len());
                qualified.push_str(&base);
                qualified.push('.');
                qualified.push_str(attribute.attr.id.as_str());
                Some(qualified)
            }
            _ => None,
        }
    }

    /// Whether `expr` names a qualified name exactly.
    pub fn is(&self, expr: &Expr, qualified: &str) -> bool {
        self.qualified_name(expr).as_deref() == Some(qualified)
    }

    /// The f-string pattern a local of the innermost function is bound to (see
    /// [`Scope::key_patterns`]).
    pub(super) fn key_pattern_of(&self, name: &str) -> Option<&(String, String)> {
        self.scopes.last()?.key_patterns.get(name)
    }

    /// Reads the fields the module declares host-resident, before its functions are walked.
    pub fn learn_host_fields(&mut self, module: &'a ruff_python_ast::ModModule) {
        let declarations = super::fields::field_declarations(module);
        self.host_fields = declarations.kept;
        self.device_fields = declarations.on_device;
    }

    pub fn define_class(&mut self, name: &'a str, info: ClassInfo<'a>) {
        self.invalidate();
        self.classes.insert(name, info);
    }

    /// `self.x = value` in a method of a class defined in this module, `value` typed `ty` where
    /// the method's locals are known: the attribute's only assignment makes it a host tensor
    /// (or array) when the class scan, which sees the method's parameters but not its locals,
    /// could not tell (`table = torch.tensor(rows)`, then `self.table = table.unsqueeze(0)`).
    pub fn learn_self_attribute(&mut self, target: &ast::ExprAttribute, ty: Ty) {
        if !(ty.is_host_tensor() || ty == Ty::Array) {
            return;
        }
        let Some((class, self_name)) = self.self_class() else {
            return;
        };
        if !matches!(&*target.value, Expr::Name(name) if name.id.as_str() == self_name) {
            return;
        }
        let Some(info) = self.classes.get_mut(class) else {
            return;
        };
        let attr = target.attr.id.as_str();
        if info.assignments.get(attr) != Some(&1) {
            return;
        }
        if let Some(known) = info.attributes.get_mut(attr) {
            if matches!(*known, Ty::Unknown | Ty::Tensor) {
                *known = ty;
                self.invalidate();
            }
        }
    }

    /// The attributes of a class defined in this module that its methods bind to host tensors
    /// or arrays (`self.room = torch.zeros(n, device=device)` with `device = "cpu"`), sorted.
    pub fn host_attributes_of(&self, class: &str) -> Vec<(&'a str, Ty)> {
        let mut host: Vec<(&'a str, Ty)> = self.classes.get(class).map_or_else(Vec::new, |info| {
            info.attributes
                .iter()
                .filter(|(_, ty)| ty.is_host_tensor() || **ty == Ty::Array)
                .map(|(name, ty)| (*name, *ty))
                .collect()
        });
        host.sort_unstable_by_key(|(name, _)| *name);
        host
    }

    pub(super) fn class_attribute(&self, class: &str, attribute: &str, depth: u8) -> Option<Ty> {
        let info = self.classes.get(class)?;
        if let Some(ty) = info.attributes.get(attribute) {
            return Some(*ty);
        }
        if info.properties.contains(&attribute) {
            return self.local_return(&format!("{class}.{attribute}"));
        }
        if depth == 0 {
            return None;
        }
        info.bases.iter().find_map(|base| match base {
            Expr::Name(name) => self.class_attribute(name.id.as_str(), attribute, depth - 1),
            _ => None,
        })
    }

    /// The class defined in this module that an attribute of a class holds an instance of
    /// (its own or a base's).
    fn class_instance(&self, class: &str, attribute: &str, depth: u8) -> Option<&'a str> {
        let info = self.classes.get(class)?;
        if let Some(held) = info.instances.get(attribute) {
            return self.classes.contains_key(held).then_some(*held);
        }
        if depth == 0 {
            return None;
        }
        info.bases.iter().find_map(|base| match base {
            Expr::Name(name) => self.class_instance(name.id.as_str(), attribute, depth - 1),
            _ => None,
        })
    }

    /// The class defined in this module whose instance `expr` is: `self` in a method, and
    /// attributes holding instances, to any depth (`self.model.vocabulary_mapping`).
    pub(super) fn instance_class(&self, expr: &Expr) -> Option<&'a str> {
        match expr {
            Expr::Name(name) => {
                let (class, self_name) = self.self_class()?;
                (name.id.as_str() == self_name).then_some(class)
            }
            Expr::Attribute(attribute) => {
                let owner = self.instance_class(&attribute.value)?;
                self.class_instance(owner, attribute.attr.id.as_str(), 4)
            }
            _ => None,
        }
    }

    /// Whether `name` is bound at module level and nowhere nearer (a module-global cache).
    pub fn is_module_global(&self, name: &str) -> bool {
        self.lookup_scope(name)
            .is_some_and(|scope| std::ptr::eq(scope, &self.scopes[0]))
    }

    /// Whether `self.<attribute>` in the method being visited is a cache that lasts: its class
    /// is not a record (a dataclass), or the attribute is a record's own state (see
    /// [`ClassInfo::state_fields`]), and never sets it back to `None` outside `__init__`.
    pub fn is_lasting_self_attribute(&self, receiver: &str, attribute: &str) -> bool {
        self.self_class().is_some_and(|(class, self_name)| {
            self_name == receiver
                && self.classes.get(class).is_some_and(|info| {
                    (!info.record || info.state_fields.contains(&attribute))
                        && !info.resets.contains(&attribute)
                })
        })
    }

    /// The class of the method being visited and the name its `self` parameter has.
    pub(super) fn self_class(&self) -> Option<(&'a str, &'a str)> {
        match self.method_context.last() {
            Some((Some(class), Some(self_name))) => Some((class, self_name)),
            _ => None,
        }
    }

    /// Whether a method of the class being visited stores into `self.<attribute>` under the
    /// parameter at `position` (see [`ClassInfo::key_stores`]).
    pub fn self_method_stores_key(&self, method: &str, attribute: &str, position: usize) -> bool {
        self.self_class().is_some_and(|(class, _)| {
            self.classes
                .get(class)
                .is_some_and(|info| info.key_stores.contains(&(method, attribute, position)))
        })
    }

    /// Whether the method `method` of the class being visited (not its `__init__`) sets
    /// `self.<attribute>`.
    pub fn self_method_sets(&self, method: &str, attribute: &str) -> bool {
        self.self_class().is_some_and(|(class, _)| {
            self.classes.get(class).is_some_and(|info| {
                info.setters
                    .iter()
                    .any(|&(m, a)| m == method && a == attribute)
            })
        })
    }

    /// How many assignments to `self.<attribute>` the methods of the class being visited make
    /// outside `__init__` (`register_buffer` included).
    pub fn self_setter_count(&self, attribute: &str) -> usize {
        self.self_class()
            .and_then(|(class, _)| self.classes.get(class))
            .map_or(0, |info| {
                info.setters
                    .iter()
                    .filter(|&&(_, a)| a == attribute)
                    .count()
            })
    }

    /// The `self` parameter's name when a method of a class is being visited.
    pub fn self_name(&self) -> Option<&'a str> {
        self.self_class().map(|(_, self_name)| self_name)
    }
}
