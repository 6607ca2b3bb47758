//! The hot path: which functions run inside a captured region (or every step outside it), and
//! the shortest call chain that gets them there.
//!
//! Input: every module's [`ModuleSummary`]. Steps: index modules, classes and functions; resolve
//! each call site (imports and re-exports, `self.method()`, `super()`, instances held by
//! attributes and `nn.ModuleList`s, inherited methods; unresolvable calls are not followed);
//! find entry points; breadth-first search from explicit entries first, then from default module
//! forwards, then from per-step entries; attach reach and chain to each diagnostic.

mod args;
mod capture_hooks;
mod constants;
mod custom_ops;
mod derived;
mod dispatched;
mod encoders;
mod generated;
mod given;
mod guesses;
mod held;
mod hierarchy;
mod host_copies;
mod host_devices;
mod index;
mod invocations;
mod invoke;
mod names;
mod param_classes;
mod platforms;
mod prefill;
mod processors;
mod properties;
mod queries;
mod returns;
mod search;
mod speculative;
mod steps;
mod types;

use crate::semantic::{AttributeType, CallReturn, PropertyRead, Ty};
use crate::summary::{EntryReason, Marker, ModuleSummary};
use graphready_diagnostics::{ChainLink, Diagnostic, Reach};
pub use index::{NodeId, ProjectIndex};
pub use names::runs_once;
use rustc_hash::{FxHashMap, FxHashSet};
use search::search;

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
    /// Classes only code for devices without CUDA graphs builds (see [`platforms`]), in module
    /// and class order: not followed.
    pub platform_only: Vec<index::ClassId>,
    /// Parent on the shortest chain (`None` for an entry), per reached node.
    captured: FxHashMap<NodeId, Option<NodeId>>,
    stalled: FxHashMap<NodeId, Option<NodeId>>,
    /// Functions whose loop bodies drive the steps (only those lines run every step).
    drivers: FxHashSet<NodeId>,
    /// The driver whose loop calls a per-step entry, for the front of its chains.
    driven_by: FxHashMap<NodeId, NodeId>,
    /// Per-step entries captured code calls and runs eagerly (from a prefill branch, or a
    /// method of a class the engine cannot capture): the captured caller.
    called_from_capture: FxHashMap<NodeId, NodeId>,
    /// The parameters the project's calls leave at one literal (see [`constants`]).
    constants: constants::Constants<'s>,
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
    /// What reached method calls return when it is host data (see [`returns`]), by caller.
    call_returns: FxHashMap<NodeId, Vec<(u32, CallReturn)>>,
    /// The parameters every captured call gives, for the functions with a fallback for them.
    given: given::Given<'s>,
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
                        // A model made for training (`BertForPreTraining`, a `*Loss`, a
                        // module of a `losses` package) or a harness's is never what an
                        // inference step runs.
                        && !steps::is_training_name(&class.name)
                        && !index.is_harness(module)
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
        // configured or marked entry of either kind): its public functions are what downstream
        // code captures.
        let library = explicit.is_empty() && defaults.is_empty() && steps.is_empty();
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
        // A module only processors build runs on the host as they prepare a request's inputs.
        let default_classes: FxHashSet<_> = defaults
            .iter()
            .filter_map(|entry| index.method_class(entry.node))
            .collect();
        let training = |function: &crate::summary::FunctionSummary| {
            steps::is_training_qualname(&function.qualname)
        };
        // Independent questions about the whole project, answered on both cores.
        let (
            (processor_built, platform_only, uncapturable),
            ([called, trained], guarded, held, copies),
        ) = rayon::join(
            || {
                (
                    processors::processor_built(&index, &default_classes),
                    // A class only a device without CUDA graphs has instances of: no call runs
                    // its methods.
                    platforms::platform_only(&index),
                    capture_hooks::uncapturable(&index),
                )
            },
            || {
                (
                    index.called_through("forward", training),
                    index.invoked_guarded(),
                    encoders::held_classes(&index),
                    host_copies::host_copies(&index),
                )
            },
        );
        // Forwards a decorator's dispatcher runs only when a setting selects them.
        let dispatched = dispatched::dispatched_forwards(&index);
        defaults.retain(|entry| {
            !dispatched.contains(&entry.node)
                && !index.method_class(entry.node).is_some_and(|class| {
                    processor_built.contains(&class) || platform_only.contains(&class)
                })
        });
        let mut blocked = eager.clone();
        blocked.extend(platforms::methods(&index, &platform_only));
        blocked.extend(dispatched);
        // Classes that implement none of their base's capture hooks run eagerly.
        let uncapturable = platforms::methods(&index, &uncapturable);
        let mut capture_blocked = blocked.clone();
        capture_blocked.extend(uncapturable.iter().copied());
        let uncapturable: FxHashSet<NodeId> = uncapturable.into_iter().collect();
        let mut platform_only: Vec<index::ClassId> = platform_only.into_iter().collect();
        platform_only.sort_unstable();
        // Module forwards that no other function calls go first, so that a chain starts at the
        // outermost model rather than at the layer that holds the finding.
        // Calls made by training code (a loss running its matcher) are not inference's: a
        // module only training code runs is no entry at all.
        defaults.retain(|entry| called.contains(&entry.node) || !trained.contains(&entry.node));
        // Invoked only where the author declared the code eager (`with gpu_sync_allowed():`):
        // called, so no outermost model, and no entry of the host path either.
        defaults.retain(|entry| called.contains(&entry.node) || !guarded.contains(&entry.node));
        // A model a library's generation loop never decodes is no entry (see [`generated`]).
        let generated = generated::generated_classes(&index);
        let is_encoder = |node| encoders::is_encoder_method(&index, node);
        defaults.retain(|entry| {
            is_encoder(entry.node)
                || !generated::never_decoded(generated.as_ref(), &index, entry.node)
        });
        // An encoder no project function is seen to call runs per request on the host path
        // (engines capture the decoder's step and run encoders and VAEs eagerly), as does a
        // model a library's generation loop does not capture.
        let (mut inner, roots): (Vec<Entry>, Vec<Entry>) =
            defaults.iter().cloned().partition(|entry| {
                called.contains(&entry.node)
                    || is_encoder(entry.node)
                    || generated
                        .as_ref()
                        .is_some_and(|g| g.uncaptured(&index, &held, entry.node))
            });
        // A pipeline component its loader builds on its own (a diffusion pipeline's text
        // encoder, its VAE) runs once per request, not every step.
        inner.retain(|entry| !encoders::is_standalone_component(&index, &held, entry.node));
        // Parameters the project's calls decide; entry points are called from outside too.
        let entry_nodes: FxHashSet<NodeId> = explicit
            .iter()
            .chain(&roots)
            .chain(&steps)
            .map(|entry| entry.node)
            .collect();
        let constants = constants::find(&index, &entry_nodes);
        // The calls a capture region makes are the project's own: what they pass is known.
        let open_entries: FxHashSet<NodeId> = explicit
            .iter()
            .filter(|entry| entry.reason != EntryReason::CaptureSite)
            .chain(&roots)
            .chain(&steps)
            .map(|entry| entry.node)
            .collect();
        let _ = index
            .dead_sites
            .set(constants::dead_sites(&index, &constants));
        let mut captured = FxHashMap::default();
        let mut eager_hits = Vec::new();
        // What the step search and the parameter stage need besides the captured set, on the
        // other core meanwhile.
        let (given, (by_name, once, property_reads, attribute_types)) = rayon::join(
            || {
                let none = FxHashMap::default();
                // Roots outside speculative decoding first: chains show the default path.
                let (main_roots, speculative_roots) = speculative::partition(&index, roots.clone());
                let capture = |captured: &mut FxHashMap<_, _>, hits: &mut Vec<_>| {
                    let mut deferred = Some((&uncapturable, hits));
                    for entries in [&explicit, &main_roots, &speculative_roots] {
                        search(
                            &index,
                            entries,
                            &capture_blocked,
                            captured,
                            &none,
                            true,
                            deferred.as_mut().map(|(set, hits)| (*set, &mut **hits)),
                        );
                    }
                };
                capture(&mut captured, &mut eager_hits);
                // Again without the fallbacks every captured call skips.
                let given = given::find(&index, &captured, &open_entries);
                if !given.is_empty() {
                    let _ = index
                        .fallback_sites
                        .set(given::fallback_sites(&index, &given));
                    captured.clear();
                    eager_hits.clear();
                    capture(&mut captured, &mut eager_hits);
                }
                given
            },
            || {
                let by_name = steps::sites_by_name(&index);
                let once: Vec<NodeId> = index
                    .nodes()
                    .filter(|node| index.runs_once_always(*node))
                    .collect();
                let property_reads = properties::property_reads(&index);
                let attribute_types = properties::attribute_types(&index, &copies);
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
        let uncaptured_nodes: FxHashSet<NodeId> = uncaptured.iter().map(|e| e.node).collect();
        // The per-step host path the code shows: drivers that run the model or replay a graph,
        // their callers, and the loops that call them.
        let found = steps::find(&index, &captured, &by_name);
        drop(by_name);
        let driven_by = steps::driven_by(&index, &found.entries);
        steps.extend(found.entries.into_iter().map(|mut entry| {
            if entry.reason == EntryReason::StepLoop {
                entry.via = driven_by.get(&entry.node).copied();
            }
            entry
        }));
        steps.extend(uncaptured);
        // Called by captured code, yet run outside the graph: prefill work, and the methods of
        // classes the engine cannot capture.
        let mut eager_callees = prefill::entries(&index, &captured);
        eager_callees.extend(capture_hooks::entries(eager_hits, &captured));
        let mut called_from_capture: FxHashMap<NodeId, NodeId> = FxHashMap::default();
        for entry in &eager_callees {
            if let Some(via) = entry.via {
                called_from_capture.entry(entry.node).or_insert(via);
            }
        }
        steps.extend(eager_callees);
        // Set-up and measuring harnesses run once, even when per-step code calls them.
        let mut breaks = blocked;
        breaks.extend(once);
        let mut stalled = FxHashMap::default();
        let (main_steps, speculative_steps) = speculative::partition(&index, steps.clone());
        for entries in [&main_steps, &speculative_steps] {
            search(
                &index,
                entries,
                &breaks,
                &mut stalled,
                &captured,
                false,
                None,
            );
        }
        let drivers: FxHashSet<NodeId> = found
            .drivers
            .into_iter()
            .filter(|node| !captured.contains_key(node) && !stalled.contains_key(node))
            .collect();
        let mut capture_entries = explicit;
        capture_entries.extend(defaults);
        dedup_entries(&mut capture_entries);
        dedup_entries(&mut steps);
        let mut param_types =
            args::param_types(&index, &captured, &stalled, &drivers, &uncaptured_nodes);
        host_devices::add_params(&index, (&captured, &stalled, &drivers), &mut param_types);
        // Unannotated parameters typed by what the reached call sites pass.
        let reached = captured
            .keys()
            .chain(stalled.keys())
            .chain(&drivers)
            .copied();
        let mut attribute_types = attribute_types;
        param_classes::add_attribute_types(&index, reached, &copies, &mut attribute_types);
        let call_returns = returns::call_returns(&index, captured.keys().chain(stalled.keys()));
        let mut eager: Vec<NodeId> = eager.into_iter().collect();
        eager.sort();
        HotPath {
            index,
            capture_entries,
            step_entries: steps,
            eager,
            platform_only,
            captured,
            stalled,
            param_types,
            property_reads,
            attribute_types,
            call_returns,
            given,
            drivers,
            driven_by,
            called_from_capture,
            constants,
            unmatched,
            library,
        }
    }

    /// Whether any entry point at all was found.
    pub fn has_entries(&self) -> bool {
        !self.capture_entries.is_empty() || !self.step_entries.is_empty()
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
        // One called from captured code that runs it eagerly (a prefill branch, a class the
        // engine cannot capture): the chain that captures the caller.
        if let Some(caller) = self.called_from_capture.get(&top) {
            let mut head = self.chain(*caller, &self.captured);
            head.extend(chain);
            return head;
        }
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
        let column = diagnostic.span.start.column;
        let summary = self.index.function(node);
        // A branch the constant parameters rule out never runs.
        if let Some(params) = self.constants.get(&node) {
            let tests = summary
                .param_blocks
                .iter()
                .filter(|block| block.contains(line, column));
            if constants::rules_out(params, tests.map(|b| (&*b.param, b.test))) {
                return;
            }
        }
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
            // Prefill work, and fallbacks every captured call skips, run outside the graph.
            diagnostic.reach = if self.in_prefill_block(node, line)
                || self.in_fallback_block(node, line, column)
            {
                Reach::Stall
            } else {
                Reach::Capture
            };
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
