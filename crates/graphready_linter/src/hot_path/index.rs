//! The project index: modules by name, functions and classes by qualified name, and call-target
//! resolution across modules.

use crate::summary::{CallTarget, ClassSummary, FunctionSummary, ModuleSummary, Ref};
use graphready_diagnostics::ChainLink;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// A function: its module and its index in that module's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    pub module: usize,
    pub function: usize,
}

/// What each call site of one function resolves to.
type ResolvedSites = Box<[Box<[NodeId]>]>;

/// A class: its module and its index in that module's summary.
pub type ClassId = (usize, usize);

#[derive(Clone, Copy)]
pub(super) enum Definition {
    Function(NodeId),
    Class(usize, usize),
}

/// How deep re-exports and base classes are followed.
pub(super) const MAX_DEPTH: u8 = 8;

pub struct ProjectIndex<'s> {
    modules: &'s [ModuleSummary],
    by_name: FxHashMap<&'s str, usize>,
    by_path: FxHashMap<&'s str, usize>,
    functions: Vec<FxHashMap<&'s str, usize>>,
    /// Methods by (class, method), so that a lookup allocates nothing.
    methods: Vec<FxHashMap<(&'s str, &'s str), usize>>,
    classes: Vec<FxHashMap<&'s str, usize>>,
    /// Whether each module is a measuring harness (see [`super::steps::is_harness_module`]).
    harness: Vec<bool>,
    /// Direct subclasses of each class that has any.
    pub(super) subclasses: FxHashMap<ClassId, Vec<ClassId>>,
    /// The bases classes take from values (`class Builder(base):` in a function, `base` a class
    /// object): see [`ClassSummary::typed_bases`].
    pub(super) typed_bases: FxHashMap<ClassId, Vec<ClassId>>,
    /// The classes whose instances are put into instances of a container class (see
    /// [`ModuleSummary::container_appends`]).
    pub(super) container_elements: FxHashMap<ClassId, Vec<ClassId>>,
    /// Where each module's classes start in a flat numbering, for per-class memos.
    class_offsets: Vec<usize>,
    /// Every class below each class, transitively, computed when first asked.
    all_subclasses: Vec<std::sync::OnceLock<Box<[ClassId]>>>,
    /// Where each module's functions start in a flat numbering.
    function_offsets: Vec<usize>,
    /// What each call site of each function resolves to, computed when first asked.
    resolved_sites: Vec<std::sync::OnceLock<ResolvedSites>>,
    /// Call sites resolved to several functions through the class hierarchy, the largest
    /// fan-out, and the sites cut at the bound.
    pub(super) fanouts: std::sync::atomic::AtomicUsize,
    pub(super) largest_fanout: std::sync::atomic::AtomicUsize,
    pub(super) capped_fanouts: std::sync::atomic::AtomicUsize,
    /// The classes defining each method name, built when first asked.
    definers: std::sync::OnceLock<FxHashMap<&'s str, Vec<ClassId>>>,
    /// Answers of [`Self::unique_hierarchy`].
    pub(super) hierarchy_memo: std::sync::Mutex<FxHashMap<String, Option<ClassId>>>,
    /// What each method returns in the module classes defining it (a call on a module of
    /// unknown class).
    pub(super) any_module_memo: std::sync::Mutex<FxHashMap<String, super::types::TypeVal>>,
    /// Call sites the constant parameters rule out (see `super::constants`), set once.
    pub(super) dead_sites: std::sync::OnceLock<FxHashSet<(NodeId, usize)>>,
    /// The call sites made in fallbacks every captured call skips (see `given`).
    pub(super) fallback_sites: std::sync::OnceLock<FxHashSet<(NodeId, usize)>>,
    /// The project's custom operators, built when first asked (see `super::custom_ops`).
    pub(super) custom_ops: std::sync::OnceLock<super::custom_ops::CustomOps>,
}

impl<'s> ProjectIndex<'s> {
    pub fn new(modules: &'s [ModuleSummary]) -> Self {
        let mut index = ProjectIndex {
            modules,
            by_name: FxHashMap::default(),
            by_path: FxHashMap::default(),
            functions: Vec::with_capacity(modules.len()),
            methods: Vec::with_capacity(modules.len()),
            classes: Vec::with_capacity(modules.len()),
            harness: Vec::with_capacity(modules.len()),
            subclasses: FxHashMap::default(),
            typed_bases: FxHashMap::default(),
            container_elements: FxHashMap::default(),
            class_offsets: Vec::with_capacity(modules.len()),
            all_subclasses: Vec::new(),
            function_offsets: Vec::with_capacity(modules.len()),
            resolved_sites: Vec::new(),
            fanouts: std::sync::atomic::AtomicUsize::new(0),
            largest_fanout: std::sync::atomic::AtomicUsize::new(0),
            capped_fanouts: std::sync::atomic::AtomicUsize::new(0),
            definers: std::sync::OnceLock::new(),
            hierarchy_memo: std::sync::Mutex::new(FxHashMap::default()),
            any_module_memo: std::sync::Mutex::new(FxHashMap::default()),
            dead_sites: std::sync::OnceLock::new(),
            fallback_sites: std::sync::OnceLock::new(),
            custom_ops: std::sync::OnceLock::new(),
        };
        for (i, module) in modules.iter().enumerate() {
            if let Some(name) = &module.module {
                index.by_name.entry(name.as_str()).or_insert(i);
            }
            index.by_path.insert(module.path.as_str(), i);
        }
        // The per-module tables, built in parallel.
        let tables: Vec<_> = modules
            .par_iter()
            .map(|module| {
                let functions: FxHashMap<&str, usize> = module
                    .functions
                    .iter()
                    .enumerate()
                    .map(|(j, f)| (f.qualname.as_str(), j))
                    .collect();
                let methods: FxHashMap<(&str, &str), usize> = module
                    .functions
                    .iter()
                    .enumerate()
                    .filter_map(|(j, f)| {
                        let (class, method) = f.qualname.rsplit_once('.')?;
                        Some(((class, method), j))
                    })
                    .collect();
                let classes: FxHashMap<&str, usize> = module
                    .classes
                    .iter()
                    .enumerate()
                    .map(|(j, c)| (c.name.as_str(), j))
                    .collect();
                let harness = super::steps::is_harness_summary(module);
                (functions, methods, classes, harness)
            })
            .collect();
        for (functions, methods, classes, harness) in tables {
            index.functions.push(functions);
            index.methods.push(methods);
            index.classes.push(classes);
            index.harness.push(harness);
        }
        let edges: Vec<(ClassId, ClassId)> = modules
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                let index = &index;
                summary
                    .classes
                    .iter()
                    .enumerate()
                    .flat_map(move |(class, _)| {
                        index
                            .bases_of((module, class))
                            .into_iter()
                            .map(move |base| (base, (module, class)))
                    })
            })
            .collect();
        for (base, sub) in edges {
            index.subclasses.entry(base).or_default().push(sub);
        }
        let mut total = 0;
        for summary in modules {
            index.class_offsets.push(total);
            total += summary.classes.len();
        }
        index.all_subclasses = std::iter::repeat_with(std::sync::OnceLock::new)
            .take(total)
            .collect();
        let mut functions = 0;
        for summary in modules {
            index.function_offsets.push(functions);
            functions += summary.functions.len();
        }
        index.resolved_sites = std::iter::repeat_with(std::sync::OnceLock::new)
            .take(functions)
            .collect();
        index.add_typed_bases();
        index.add_container_elements();
        index
    }

    /// Drops what the memos learned (on a hierarchy that has grown since).
    pub(super) fn clear_memos(&mut self) {
        for slot in &mut self.all_subclasses {
            *slot = std::sync::OnceLock::new();
        }
        for slot in &mut self.resolved_sites {
            *slot = std::sync::OnceLock::new();
        }
        self.definers = std::sync::OnceLock::new();
        if let Ok(memo) = self.hierarchy_memo.get_mut() {
            memo.clear();
        }
        if let Ok(memo) = self.any_module_memo.get_mut() {
            memo.clear();
        }
        use std::sync::atomic::Ordering::Relaxed;
        for counter in [&self.fanouts, &self.largest_fanout, &self.capped_fanouts] {
            counter.store(0, Relaxed);
        }
    }

    /// Whether a module is a measuring harness: tests, benchmarks, examples.
    pub(super) fn is_harness(&self, module: usize) -> bool {
        self.harness[module]
    }

    /// What each call site of a function resolves to (in the order of its `calls`).
    pub fn resolved_sites(&self, node: NodeId) -> &[Box<[NodeId]>] {
        let slot = &self.resolved_sites[self.function_offsets[node.module] + node.function];
        slot.get_or_init(|| {
            self.function(node)
                .calls
                .iter()
                .map(|site| {
                    let mut targets = self.resolve(node.module, &site.target);
                    super::args::keep_accepting(self, site, &mut targets);
                    if targets.len() > 1 {
                        use std::sync::atomic::Ordering::Relaxed;
                        self.fanouts.fetch_add(1, Relaxed);
                        self.largest_fanout.fetch_max(targets.len(), Relaxed);
                        if targets.len() >= super::types::MAX_FANOUT {
                            self.capped_fanouts.fetch_add(1, Relaxed);
                        }
                    }
                    targets.into_boxed_slice()
                })
                .collect()
        })
    }

    pub(super) fn modules(&self) -> &'s [ModuleSummary] {
        self.modules
    }

    /// A class's name, qualified inside its module.
    pub fn class_name(&self, class: ClassId) -> &'s str {
        &self.class_summary(class).name
    }

    pub(super) fn class_summary(&self, class: ClassId) -> &'s ClassSummary {
        &self.modules[class.0].classes[class.1]
    }

    /// The project classes a class derives from directly.
    pub(super) fn bases_of(&self, class: ClassId) -> Vec<ClassId> {
        self.class_summary(class)
            .bases
            .iter()
            .filter_map(|base| match self.lookup(class.0, base)? {
                Definition::Class(m, c) if (m, c) != class => Some((m, c)),
                _ => None,
            })
            .chain(self.typed_bases.get(&class).into_iter().flatten().copied())
            .collect()
    }

    /// Every class deriving from `class`, transitively, nearest first.
    pub(super) fn subclasses_of(&self, class: ClassId) -> &[ClassId] {
        let slot = &self.all_subclasses[self.class_offsets[class.0] + class.1];
        slot.get_or_init(|| {
            if !self.subclasses.contains_key(&class) {
                return Box::new([]);
            }
            let mut out = Vec::new();
            let mut seen = FxHashSet::default();
            let mut queue = std::collections::VecDeque::from([class]);
            while let Some(current) = queue.pop_front() {
                for &sub in self.subclasses.get(&current).into_iter().flatten() {
                    if seen.insert(sub) {
                        out.push(sub);
                        queue.push_back(sub);
                    }
                }
            }
            out.into_boxed_slice()
        })
    }

    /// The classes that define a method of this name themselves, a harness's stand-ins aside.
    pub(super) fn definers_of(&self, method: &str) -> &[ClassId] {
        let definers = self.definers.get_or_init(|| {
            let mut definers: FxHashMap<&str, Vec<ClassId>> = FxHashMap::default();
            let modules = self.modules.iter().enumerate();
            for (module, summary) in modules.filter(|(m, _)| !self.is_harness(*m)) {
                for (index, class) in summary.classes.iter().enumerate() {
                    for name in &class.methods {
                        definers
                            .entry(name.as_str())
                            .or_default()
                            .push((module, index));
                    }
                }
            }
            definers
        });
        definers.get(method).map_or(&[], Vec::as_slice)
    }

    /// The functions defined inside a function, at any depth.
    fn nested_in(&self, outer: NodeId) -> Vec<NodeId> {
        let summary = self.module(outer.module);
        let prefix = &summary.functions[outer.function].qualname;
        summary
            .functions
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                f.qualname.len() > prefix.len() + 1
                    && f.qualname.starts_with(prefix.as_str())
                    && f.qualname.as_bytes()[prefix.len()] == b'.'
            })
            .map(|(function, _)| NodeId {
                module: outer.module,
                function,
            })
            .collect()
    }

    /// A method defined in the class itself.
    pub(super) fn own_method(&self, module: usize, class: &str, method: &str) -> Option<usize> {
        self.methods[module].get(&(class, method)).copied()
    }

    /// A class of a module by its qualified name inside the module.
    pub(super) fn class_named(&self, module: usize, class: &str) -> Option<ClassId> {
        self.classes[module]
            .get(class)
            .map(|&index| (module, index))
    }

    /// The class a method is defined in.
    pub(super) fn method_class(&self, node: NodeId) -> Option<ClassId> {
        self.class_named(node.module, self.function(node).class.as_deref()?)
    }

    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.modules
            .iter()
            .enumerate()
            .flat_map(|(module, summary)| {
                (0..summary.functions.len()).map(move |function| NodeId { module, function })
            })
    }

    pub fn function(&self, node: NodeId) -> &'s FunctionSummary {
        &self.modules[node.module].functions[node.function]
    }

    pub fn module(&self, module: usize) -> &'s ModuleSummary {
        &self.modules[module]
    }

    /// The functions a function's calls may run, sorted. Resolved when asked: a search expands
    /// each reached function once, and most of a project is never reached.
    pub fn callees(&self, node: NodeId) -> Vec<NodeId> {
        let function = self.function(node);
        let mut targets: Vec<NodeId> = self
            .resolved_sites(node)
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.is_dead_site(node, *i))
            .flat_map(|(_, targets)| targets.iter().copied())
            .collect();
        // Functions handed to a parameter the callee calls.
        targets.extend(self.passed_functions(node));
        // A decorated function runs its decorator's wrapper: every function nested in the
        // decorator (`@dynamic_rope_update` → `dynamic_rope_update.wrapper`).
        for decorator in &function.decorators {
            if let Some(Definition::Function(decorator)) = self.lookup(node.module, decorator) {
                targets.extend(self.nested_in(decorator));
            }
        }
        targets.sort_unstable();
        targets.dedup();
        targets
    }

    pub fn link(&self, node: NodeId) -> ChainLink {
        let function = self.function(node);
        ChainLink {
            function: function.qualname.clone(),
            path: self.modules[node.module].path.clone(),
            line: function.line,
        }
    }

    pub fn node_at(&self, path: &str, qualname: &str) -> Option<NodeId> {
        let module = *self.by_path.get(path)?;
        let function = *self.functions[module].get(qualname)?;
        Some(NodeId { module, function })
    }

    pub(super) fn class(&self, module: usize, name: &str) -> Option<&'s ClassSummary> {
        let index = *self.classes[module].get(name)?;
        Some(&self.modules[module].classes[index])
    }

    /// `pkg.mod:Class.method`, or a qualified name inside any module.
    pub fn find_named(&self, name: &str) -> Vec<NodeId> {
        match name.split_once(':') {
            Some((module, qualname)) => self
                .modules
                .iter()
                .enumerate()
                .filter(|(_, summary)| {
                    summary
                        .module
                        .as_deref()
                        .is_some_and(|m| m == module || m.ends_with(&format!(".{module}")))
                })
                .filter_map(|(i, _)| {
                    self.functions[i].get(qualname).map(|&function| NodeId {
                        module: i,
                        function,
                    })
                })
                .collect(),
            None => self
                .nodes()
                .filter(|node| self.function(*node).qualname == name)
                .collect(),
        }
    }

    fn lookup_local(&self, module: usize, qualname: &str) -> Option<Definition> {
        if let Some(&function) = self.functions[module].get(qualname) {
            return Some(Definition::Function(NodeId { module, function }));
        }
        self.classes[module]
            .get(qualname)
            .map(|&class| Definition::Class(module, class))
    }

    /// A member of a module: a definition, or an import followed to where it is defined.
    fn lookup_member(&self, module: usize, member: &str, depth: u8) -> Option<Definition> {
        if let Some(found) = self.lookup_local(module, member) {
            return Some(found);
        }
        if depth == 0 {
            return None;
        }
        let (head, rest) = member
            .split_once('.')
            .map_or((member, None), |(h, r)| (h, Some(r)));
        let imported = self.modules[module].imports.get(head)?;
        let qualified = match rest {
            Some(rest) => format!("{imported}.{rest}"),
            None => imported.clone(),
        };
        self.lookup_qualified(&qualified, depth - 1)
    }

    fn lookup_qualified(&self, qualified: &str, depth: u8) -> Option<Definition> {
        if qualified.starts_with("torch.ops.") {
            return self.custom_op(qualified);
        }
        let mut split = qualified.len();
        while let Some(dot) = qualified[..split].rfind('.') {
            if let Some(&module) = self.by_name.get(&qualified[..dot]) {
                return self.lookup_member(module, &qualified[dot + 1..], depth);
            }
            split = dot;
        }
        None
    }

    /// A module of the project by its dotted name.
    pub(super) fn module_named(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub(super) fn lookup(&self, module: usize, reference: &Ref) -> Option<Definition> {
        match reference {
            Ref::Local(qualname) => self
                .lookup_local(module, qualname)
                .or_else(|| self.lookup_member(module, qualname, MAX_DEPTH)),
            Ref::Qualified(qualified) => self.lookup_qualified(qualified, MAX_DEPTH),
        }
    }

    /// A method of a class, searched through its bases.
    pub fn method_of(&self, module: usize, class: &str, method: &str) -> Option<NodeId> {
        self.method_in(module, class, method, MAX_DEPTH)
    }

    fn method_in(&self, module: usize, class: &str, method: &str, depth: u8) -> Option<NodeId> {
        if let Some(&function) = self.methods[module].get(&(class, method)) {
            return Some(NodeId { module, function });
        }
        if depth == 0 {
            return None;
        }
        let summary = self.class(module, class)?;
        summary
            .bases
            .iter()
            .find_map(|base| match self.lookup(module, base)? {
                Definition::Class(m, c) => {
                    let name = &self.modules[m].classes[c].name;
                    self.method_in(m, name, method, depth - 1)
                }
                Definition::Function(_) => None,
            })
            .or_else(|| {
                self.typed_bases_of(module, class)
                    .iter()
                    .find_map(|&(m, c)| {
                        self.method_in(m, &self.modules[m].classes[c].name, method, depth - 1)
                    })
            })
    }

    /// The functions a call target may run.
    pub fn resolve(&self, module: usize, target: &CallTarget) -> Vec<NodeId> {
        match target {
            CallTarget::Function(reference) => match self.lookup(module, reference) {
                Some(Definition::Function(node)) => vec![node],
                Some(Definition::Class(..)) => Vec::new(),
                // A module global holding functions (`_unpad_fn(...)`).
                None => self.global_targets(module, reference),
            },
            CallTarget::Returned { function, path } => {
                self.returned_by(module, function, path, MAX_DEPTH)
            }
            CallTarget::SelfMethod { class, method } => {
                // The method the class has or inherits, and every override below it: `self` may
                // be an instance of a subclass (template methods, backends).
                let out: Vec<NodeId> = match self.classes[module].get(class.as_str()) {
                    Some(&index) => {
                        let mut out = Vec::new();
                        self.dispatch((module, index), method, &mut out);
                        out
                    }
                    None => self.method_of(module, class, method).into_iter().collect(),
                };
                if !out.is_empty() {
                    return out;
                }
                // No such method: a field called (see `invoke_self_field`).
                self.invoke_self_field(module, class, method)
            }
            CallTarget::Method { receiver, method } => {
                self.resolve_method(module, receiver, method)
            }
            CallTarget::Invoke { receiver } => self.resolve_invoke(module, receiver),
            CallTarget::Super { class, method } => {
                let Some(summary) = self.class(module, class) else {
                    return Vec::new();
                };
                summary
                    .bases
                    .iter()
                    .find_map(|base| match self.lookup(module, base)? {
                        Definition::Class(m, c) => {
                            self.method_of(m, &self.modules[m].classes[c].name, method)
                        }
                        Definition::Function(_) => None,
                    })
                    .or_else(|| {
                        self.typed_bases_of(module, class)
                            .iter()
                            .find_map(|&(m, c)| {
                                self.method_of(m, &self.modules[m].classes[c].name, method)
                            })
                    })
                    .into_iter()
                    .collect()
            }
            CallTarget::InstanceMethod { class, method } => match self.lookup(module, class) {
                Some(Definition::Class(m, c)) => {
                    let mut out = Vec::new();
                    self.instance_method((m, c), method, &mut out);
                    if out.is_empty() && method == "forward" {
                        self.instance_method((m, c), "__call__", &mut out);
                    }
                    if out.is_empty() {
                        self.held_module_calls((m, c), method, &mut out);
                    }
                    out
                }
                // `x = Factory.create(...)`: an instance of what the factory returns, as a
                // receiver of that type (one nothing says is of one hierarchy's, by name).
                Some(Definition::Function(_)) => self.resolve_method(
                    module,
                    &crate::summary::TypePath {
                        root: crate::summary::PathRoot::Called(class.clone()),
                        steps: Vec::new(),
                    },
                    method,
                ),
                None => Vec::new(),
            },
        }
    }
}
