//! The hot path: which functions run inside a captured region (or every step outside it), and
//! the shortest call chain that gets them there.
//!
//! Input: every module's [`ModuleSummary`]. Steps: index modules, classes and functions; resolve
//! each call site (imports and re-exports, `self.method()`, `super()`, instances held by
//! attributes and `nn.ModuleList`s, inherited methods; unresolvable calls are not followed);
//! find entry points; breadth-first search from explicit entries first, then from default module
//! forwards, then from per-step entries; attach reach and chain to each diagnostic.

mod args;
mod derived;
mod guesses;
mod held;
mod index;
mod invocations;
mod properties;
mod steps;
mod types;

use crate::semantic::{AttributeType, PropertyRead, Ty};
use crate::summary::{CallTarget, EntryReason, Marker, ModuleSummary, Ref};
use graphready_diagnostics::{ChainLink, Diagnostic, Reach};
pub use index::{NodeId, ProjectIndex};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// Whether a function, by its qualified name inside its module, is set-up that runs once rather
/// than every step: constructors and what they nest, loading, warm-up, capture, profiling
/// (`__init__`, `Runner.load_weights`, `_dummy_run`, `capture_model`).
pub fn runs_once(qualname: &str) -> bool {
    steps::is_set_up(qualname)
}

/// Hot-path options, resolved from configuration.
#[derive(Debug, Clone)]
pub struct HotPathSettings {
    /// `pkg.module:Class.method` (or a bare qualified name, matched in every module).
    pub entry_points: Vec<String>,
    pub step_entry_points: Vec<String>,
    pub eager: Vec<String>,
    /// Every `forward` of an `nn.Module` subclass is an entry.
    pub module_forwards: bool,
}

impl Default for HotPathSettings {
    fn default() -> Self {
        HotPathSettings {
            entry_points: Vec::new(),
            step_entry_points: Vec::new(),
            eager: Vec::new(),
            module_forwards: true,
        }
    }
}

/// An entry point and why.
#[derive(Debug, Clone)]
pub struct Entry {
    pub node: NodeId,
    pub reason: EntryReason,
    /// The function that made this one an entry (the per-step code it calls, the loop that
    /// calls it).
    pub via: Option<NodeId>,
}

/// The result of the analysis.
pub struct HotPath<'s> {
    pub index: ProjectIndex<'s>,
    pub capture_entries: Vec<Entry>,
    pub step_entries: Vec<Entry>,
    pub eager: Vec<NodeId>,
    /// Parent on the shortest chain (`None` for an entry), per reached node.
    captured: FxHashMap<NodeId, Option<NodeId>>,
    stalled: FxHashMap<NodeId, Option<NodeId>>,
    /// Functions whose loop bodies drive the steps (only those lines run every step).
    drivers: FxHashSet<NodeId>,
    /// The driver whose loop calls a per-step entry, for the front of its chains.
    driven_by: FxHashMap<NodeId, NodeId>,
    /// Parameters that receive a device tensor at some reached call site (or from a
    /// `ProbeTarget`'s inputs), by function: an annotation is a claim, a call site is evidence.
    param_types: FxHashMap<NodeId, Vec<(String, Ty)>>,
    /// Configured names that matched no function.
    pub unmatched: Vec<String>,
    /// No entry point of its own: the public functions were taken as entries (a library).
    pub library: bool,
    /// The property reads that wait for the device, per function with one.
    property_reads: FxHashMap<NodeId, Vec<PropertyRead>>,
    /// The host-data fields of each function's class-typed parameters.
    attribute_types: FxHashMap<NodeId, Vec<AttributeType>>,
}

impl<'s> HotPath<'s> {
    pub fn analyze(modules: &'s [ModuleSummary], settings: &HotPathSettings) -> Self {
        let index = ProjectIndex::new(modules);
        let mut unmatched = Vec::new();
        let mut eager: FxHashSet<NodeId> = FxHashSet::default();
        let mut explicit = Vec::new();
        let mut defaults = Vec::new();
        let mut steps = Vec::new();
        for node in index.nodes() {
            let function = index.function(node);
            for marker in &function.markers {
                match marker {
                    Marker::Captured => explicit.push(Entry {
                        node,
                        reason: EntryReason::Marker,
                        via: None,
                    }),
                    Marker::Compiled => explicit.push(Entry {
                        node,
                        reason: EntryReason::Compiled,
                        via: None,
                    }),
                    Marker::Step => steps.push(Entry {
                        node,
                        reason: EntryReason::StepMarker,
                        via: None,
                    }),
                    Marker::Eager => {
                        eager.insert(node);
                    }
                }
            }
            for site in &function.captured_calls {
                for target in index.resolve(node.module, &site.target) {
                    explicit.push(Entry {
                        node: target,
                        reason: EntryReason::CaptureSite,
                        via: None,
                    });
                }
            }
        }
        for (module, summary) in modules.iter().enumerate() {
            for entry in &summary.callable_entries {
                for target in index.resolve(module, &entry.target) {
                    explicit.push(Entry {
                        node: target,
                        reason: entry.reason,
                        via: None,
                    });
                }
            }
            for class in &summary.classes {
                if let Some(forward) = index.method_of(module, &class.name, "forward") {
                    if class.compiled {
                        explicit.push(Entry {
                            node: forward,
                            reason: EntryReason::Compiled,
                            via: None,
                        });
                    } else if settings.module_forwards
                        && index.is_module_class(module, &class.name)
                        && forward.module == module
                    {
                        defaults.push(Entry {
                            node: forward,
                            reason: EntryReason::ModuleForward,
                            via: None,
                        });
                    }
                }
            }
        }
        for (names, reason, out) in [
            (
                &settings.entry_points,
                EntryReason::Configured,
                &mut explicit,
            ),
            (
                &settings.step_entry_points,
                EntryReason::StepConfigured,
                &mut steps,
            ),
        ] {
            for name in names {
                let found = index.find_named(name);
                if found.is_empty() {
                    unmatched.push(name.clone());
                }
                out.extend(found.into_iter().map(|node| Entry {
                    node,
                    reason,
                    via: None,
                }));
            }
        }
        for name in &settings.eager {
            let found = index.find_named(name);
            if found.is_empty() {
                unmatched.push(name.clone());
            }
            eager.extend(found);
        }
        // A library (no capture site, no compiled or graphed callable, no module forward, no
        // configured entry): its public functions are what downstream code captures.
        let library = explicit.is_empty() && defaults.is_empty();
        if library {
            explicit.extend(
                index
                    .nodes()
                    .filter(|node| index.is_public_api(*node))
                    .map(|node| Entry {
                        node,
                        reason: EntryReason::PublicApi,
                        via: None,
                    }),
            );
        }
        // Module forwards that no other function calls go first, so that a chain starts at the
        // outermost model rather than at the layer that holds the finding.
        let called = index.called_through("forward");
        // Invoked only where the author declared the code eager (`with gpu_sync_allowed():`):
        // called, so no outermost model, and no entry of the host path either.
        let guarded = index.invoked_guarded();
        defaults.retain(|entry| called.contains(&entry.node) || !guarded.contains(&entry.node));
        let (inner, roots): (Vec<Entry>, Vec<Entry>) = defaults
            .iter()
            .cloned()
            .partition(|entry| called.contains(&entry.node));
        let mut captured = FxHashMap::default();
        // What the step search and the parameter stage need besides the captured set, on the
        // other core meanwhile.
        let ((), (by_name, once, property_reads, attribute_types)) = rayon::join(
            || {
                let none = FxHashMap::default();
                search(&index, &explicit, &eager, &mut captured, &none, true);
                search(&index, &roots, &eager, &mut captured, &none, true);
            },
            || {
                let by_name = steps::sites_by_name(&index);
                let once: Vec<NodeId> = index
                    .nodes()
                    .filter(|node| index.runs_once(*node))
                    .collect();
                let property_reads = properties::property_reads(&index);
                let attribute_types = properties::attribute_types(&index);
                (by_name, once, property_reads, attribute_types)
            },
        );
        // A module forward that other functions call is captured when a captured function
        // calls it. One that no captured function reaches (a vision tower its model runs per
        // request, through a callback table; a sampler the runner calls after the graph) runs
        // on the host path: eagerly, per step or per request.
        let uncaptured: Vec<Entry> = inner
            .into_iter()
            .filter(|entry| !captured.contains_key(&entry.node))
            .collect();
        // The per-step host path the code shows: drivers that run the model or replay a graph,
        // their callers, and the loops that call them.
        let found = steps::find(&index, &captured, &by_name);
        drop(by_name);
        let driven_by: FxHashMap<NodeId, NodeId> = found
            .entries
            .iter()
            .filter(|entry| entry.reason == EntryReason::StepLoop)
            .filter_map(|entry| Some((entry.node, entry.via?)))
            .collect();
        steps.extend(found.entries);
        steps.extend(uncaptured);
        // Set-up and measuring harnesses run once, even when per-step code calls them.
        let mut breaks = eager.clone();
        breaks.extend(once);
        let mut stalled = FxHashMap::default();
        search(&index, &steps, &breaks, &mut stalled, &captured, false);
        let drivers: FxHashSet<NodeId> = found
            .drivers
            .into_iter()
            .filter(|node| !captured.contains_key(node) && !stalled.contains_key(node))
            .collect();
        let mut capture_entries = explicit;
        capture_entries.extend(defaults);
        dedup_entries(&mut capture_entries);
        dedup_entries(&mut steps);
        let param_types = args::param_types(&index, &captured, &stalled, &drivers);
        let mut eager: Vec<NodeId> = eager.into_iter().collect();
        eager.sort();
        HotPath {
            index,
            capture_entries,
            step_entries: steps,
            eager,
            captured,
            stalled,
            param_types,
            property_reads,
            attribute_types,
            drivers,
            driven_by,
            unmatched,
            library,
        }
    }

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

    /// Whether any entry point at all was found.
    pub fn has_entries(&self) -> bool {
        !self.capture_entries.is_empty() || !self.step_entries.is_empty()
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

    /// Every reached function, with its reach (a driver counts: its loops run every step).
    pub fn reached(&self) -> impl Iterator<Item = (NodeId, Reach)> + '_ {
        self.captured
            .keys()
            .map(|node| (*node, Reach::Capture))
            .chain(self.stalled.keys().map(|node| (*node, Reach::Stall)))
            .chain(self.drivers.iter().map(|node| (*node, Reach::Stall)))
    }

    /// Class-hierarchy dispatch among the call sites resolved so far.
    pub fn dispatch(&self) -> crate::project::scope::Dispatch {
        use std::sync::atomic::Ordering::Relaxed;
        crate::project::scope::Dispatch {
            call_sites: self.index.fanouts.load(Relaxed),
            largest: self.index.largest_fanout.load(Relaxed),
            capped: self.index.capped_fanouts.load(Relaxed),
            bound: types::MAX_FANOUT,
        }
    }

    pub fn captured_count(&self) -> usize {
        self.captured.len()
    }

    pub fn stalled_count(&self) -> usize {
        self.stalled.len() + self.drivers.len()
    }

    fn chain(&self, node: NodeId, parents: &FxHashMap<NodeId, Option<NodeId>>) -> Vec<ChainLink> {
        let mut chain = Vec::new();
        let mut current = Some(node);
        let mut top = node;
        while let Some(n) = current {
            chain.push(self.index.link(n));
            top = n;
            current = parents.get(&n).copied().flatten();
            if chain.len() > 64 {
                break;
            }
        }
        // A per-step entry called by a driver's loop: the chain starts at the driver.
        if let Some(driver) = self.driven_by.get(&top) {
            chain.push(self.index.link(*driver));
        }
        chain.reverse();
        chain
    }

    /// Sets `reach` and `chain` on a diagnostic.
    pub fn annotate(&self, diagnostic: &mut Diagnostic) {
        let Some(function) = diagnostic.function.as_deref() else {
            return;
        };
        let Some(node) = self.index.node_at(&diagnostic.path, function) else {
            return;
        };
        let line = diagnostic.span.start.line;
        let summary = self.index.function(node);
        if summary
            .capture_blocks
            .iter()
            .any(|(start, end)| (*start..=*end).contains(&line))
        {
            diagnostic.reach = Reach::Capture;
            diagnostic.chain = vec![self.index.link(node)];
            return;
        }
        if self.captured.contains_key(&node) {
            diagnostic.reach = Reach::Capture;
            diagnostic.chain = self.chain(node, &self.captured);
        } else if self.stalled.contains_key(&node) {
            diagnostic.reach = Reach::Stall;
            diagnostic.chain = self.chain(node, &self.stalled);
        } else if self.drivers.contains(&node)
            && summary
                .loops
                .iter()
                .any(|(start, end)| (*start..=*end).contains(&line))
        {
            diagnostic.reach = Reach::Stall;
            diagnostic.chain = vec![self.index.link(node)];
        }
    }
}

fn dedup_entries(entries: &mut Vec<Entry>) {
    let mut seen = FxHashSet::default();
    entries.retain(|entry| seen.insert(entry.node));
}

/// Multi-source breadth-first search; `skip` holds nodes another search already owns; the
/// search does not descend into eager breaks, nor into set-up and harness code (which an entry
/// may still be, when named explicitly). An `exact` search (the captured ones) follows no call
/// resolved by a guess by name (see [`guesses`]).
fn search(
    index: &ProjectIndex,
    entries: &[Entry],
    eager: &FxHashSet<NodeId>,
    reached: &mut FxHashMap<NodeId, Option<NodeId>>,
    skip: &FxHashMap<NodeId, Option<NodeId>>,
    exact: bool,
) {
    let admits = |node: &NodeId, reached: &FxHashMap<NodeId, Option<NodeId>>| {
        !eager.contains(node) && !reached.contains_key(node) && !skip.contains_key(node)
    };
    let mut frontier = Vec::new();
    for entry in entries {
        if admits(&entry.node, reached) {
            reached.insert(entry.node, None);
            frontier.push(entry.node);
        }
    }
    // Breadth first, one level at a time: the level's call sites are resolved in parallel and
    // merged in order, so that reach and parents are those of a first-in, first-out search.
    while !frontier.is_empty() {
        let callees: Vec<Vec<NodeId>> = frontier
            .par_iter()
            .with_max_len(8)
            .map(|node| {
                if exact {
                    index.exact_callees(*node)
                } else {
                    index.callees(*node)
                }
            })
            .collect();
        let mut next = Vec::new();
        for (node, callees) in frontier.iter().zip(callees) {
            for callee in callees {
                if admits(&callee, reached) && !index.runs_once(callee) {
                    reached.insert(callee, Some(*node));
                    next.push(callee);
                }
            }
        }
        frontier = next;
    }
}
