//! What phase 3 asks of the hot path: which modules to check again, which of their functions
//! can report, and the facts the reached call sites give each module's functions.

use super::index::NodeId;
use super::HotPath;
use crate::semantic::{AttributeType, CallReturn, PropertyRead, Ty};
use crate::summary::{CallTarget, Ref};
use rustc_hash::{FxHashMap, FxHashSet};

impl HotPath<'_> {
    /// The project's `nn.Module` subclasses defined at module level, by qualified name
    /// (`pkg.layers.LogitsProcessor`), and under the names other modules import them as.
    pub fn module_classes(&self) -> FxHashSet<String> {
        let modules = self.index.modules();
        let mut names = FxHashSet::default();
        for (i, summary) in modules.iter().enumerate() {
            let Some(module) = &summary.module else {
                continue;
            };
            for class in &summary.classes {
                if !class.name.contains('.') && self.index.derives_from_module(i, &class.name) {
                    names.insert(format!("{module}.{}", class.name));
                }
            }
        }
        let aliases: Vec<String> = crate::summary::import_aliases(modules)
            .filter(|import| names.contains(import.qualified))
            .map(|import| import.alias())
            .collect();
        names.extend(aliases);
        names
    }

    /// The modules where a function reached from an entry point calls a function `known` says
    /// (qualified names through imports), or an instance of a class it says (`self.head(x)`
    /// with `self.head = LogitsHead()` built by the constructor, which nothing reaches).
    pub fn modules_calling(&self, known: impl Fn(&str) -> bool) -> Vec<usize> {
        let mut modules: Vec<usize> = self
            .captured
            .keys()
            .chain(self.stalled.keys())
            .filter(|node| {
                self.index
                    .function(**node)
                    .calls
                    .iter()
                    .any(|site| match &site.target {
                        CallTarget::Function(Ref::Qualified(q))
                        | CallTarget::InstanceMethod {
                            class: Ref::Qualified(q),
                            ..
                        } => known(q),
                        _ => false,
                    })
            })
            .map(|node| node.module)
            .collect();
        modules.sort_unstable();
        modules.dedup();
        modules
    }

    /// The functions of a module whose findings can be reported under `--scope hot`: those
    /// reached from an entry point and those holding a capture block, with the functions they
    /// are nested in (qualified names inside the module).
    pub fn reportable_functions(&self, module: usize) -> FxHashSet<String> {
        let mut names = FxHashSet::default();
        let functions = &self.index.module(module).functions;
        // Drivers too: their loop bodies run every step.
        let reached = self
            .captured
            .keys()
            .chain(self.stalled.keys())
            .chain(self.drivers.iter())
            .filter(|node| node.module == module)
            .map(|node| &functions[node.function]);
        let capturing = functions.iter().filter(|f| !f.capture_blocks.is_empty());
        for function in reached.chain(capturing) {
            let mut qualname = function.qualname.as_str();
            names.insert(qualname.to_string());
            while let Some((outer, _)) = qualname.rsplit_once('.') {
                names.insert(outer.to_string());
                qualname = outer;
            }
        }
        names
    }

    /// The parameters of a module's functions that receive device tensors, by the functions'
    /// qualified names inside the module.
    pub fn param_types_in(&self, module: usize) -> FxHashMap<String, Vec<(String, Ty)>> {
        self.facts_in(&self.param_types, module)
    }

    /// The property reads that wait for the device in a module's functions, by the functions'
    /// qualified names inside the module.
    pub fn property_reads_in(&self, module: usize) -> FxHashMap<String, Vec<PropertyRead>> {
        self.facts_in(&self.property_reads, module)
    }

    /// The host-data fields of the class-typed parameters of a module's functions, by the
    /// functions' qualified names inside the module.
    pub fn attribute_types_in(&self, module: usize) -> FxHashMap<String, Vec<AttributeType>> {
        self.facts_in(&self.attribute_types, module)
    }

    /// The modules holding a reached function whose class-typed parameters carry host-data
    /// fields.
    pub fn modules_with_attribute_types(&self) -> Vec<usize> {
        self.modules_with(&self.attribute_types, true)
    }

    /// The modules holding a function that may read a property that waits for the device (with
    /// `reached`, only a reached function).
    pub fn modules_with_property_reads(&self, reached: bool) -> Vec<usize> {
        self.modules_with(&self.property_reads, reached)
    }

    /// What a module's reached method calls return when it is host data, by the call's offset.
    pub fn call_returns_in(&self, module: usize) -> FxHashMap<u32, CallReturn> {
        self.call_returns
            .iter()
            .filter(|(node, _)| node.module == module)
            .flat_map(|(_, calls)| calls.iter().cloned())
            .collect()
    }

    /// The modules holding a reached method call that returns host data.
    pub fn modules_with_call_returns(&self) -> Vec<usize> {
        self.modules_with(&self.call_returns, false)
    }

    /// The modules holding a function whose parameters receive device tensors.
    pub fn modules_with_param_types(&self) -> Vec<usize> {
        self.modules_with(&self.param_types, false)
    }

    /// What a per-function table says of one module's functions, by their qualified names
    /// inside the module.
    fn facts_in<T: Clone>(
        &self,
        table: &FxHashMap<NodeId, Vec<T>>,
        module: usize,
    ) -> FxHashMap<String, Vec<T>> {
        table
            .iter()
            .filter(|(node, _)| node.module == module)
            .map(|(node, facts)| (self.index.function(*node).qualname.clone(), facts.clone()))
            .collect()
    }

    /// The modules holding a function of a per-function table (with `reached`, only a reached
    /// function), sorted.
    fn modules_with<T>(&self, table: &FxHashMap<NodeId, T>, reached: bool) -> Vec<usize> {
        let mut modules: Vec<usize> = table
            .keys()
            .filter(|node| {
                !reached
                    || self.captured.contains_key(node)
                    || self.stalled.contains_key(node)
                    || self.drivers.contains(node)
            })
            .map(|node| node.module)
            .collect();
        modules.sort_unstable();
        modules.dedup();
        modules
    }
}
