//! Optional arguments every captured call gives. A function that computes what its caller may
//! leave out (`def forward(self, x, metadata=None): if metadata is None: metadata =
//! self.prepare(...)`) is often captured by a caller that prepares the argument outside the
//! graph and passes it in: a vision encoder's graph runner, attention metadata built before
//! replay. When every captured call of such a function gives the argument (an argument that is
//! not the `None` literal, nor the caller's own parameter defaulting to `None`), the fallback
//! never runs in the graph; it runs for the callers that leave the argument out, eagerly. The
//! captured search does not follow the calls made there, the functions they call are per-step
//! entries instead, and the findings there are stalls with the chain that captures the
//! function, as in prefill branches (see `prefill`).
//!
//! One refinement pass: the captured search runs again without those calls; what the second
//! search no longer reaches does not reopen a fallback the first one closed.

use super::args::{bound, param_of};
use super::index::{NodeId, ProjectIndex};
use crate::summary::{CallSite, Const, FunctionSummary, ParamTest};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters every captured call of a function gives, by function, for the functions
/// that test one against `None`.
pub(super) type Given<'s> = FxHashMap<NodeId, Vec<&'s str>>;

/// The captured functions' parameters that every captured call gives. Entry points are called
/// from outside the project too: theirs stay open.
pub(super) fn find<'s>(
    index: &ProjectIndex<'s>,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    entries: &FxHashSet<NodeId>,
) -> Given<'s> {
    let candidates: FxHashMap<NodeId, Vec<&'s str>> = captured
        .keys()
        .filter(|node| !entries.contains(node))
        .filter_map(|&node| {
            let params = fallback_params(index.function(node));
            (!params.is_empty()).then_some((node, params))
        })
        .collect();
    if candidates.is_empty() {
        return Given::default();
    }
    // What each captured call of a candidate gives: (callee, parameter) → given by all so far.
    let callers: Vec<NodeId> = captured.keys().copied().collect();
    let seen: Vec<((NodeId, &'s str), bool)> = callers
        .par_iter()
        .with_min_len(64)
        .flat_map_iter(|&caller| {
            let function = index.function(caller);
            let mut out = Vec::new();
            for (i, (site, targets)) in function
                .calls
                .iter()
                .zip(index.resolved_sites(caller))
                .enumerate()
            {
                if site.prefill || index.is_dead_site(caller, i) {
                    continue;
                }
                for target in targets.iter() {
                    let Some(params) = candidates.get(target) else {
                        continue;
                    };
                    let callee = index.function(*target);
                    for &param in params {
                        out.push(((*target, param), gives(function, site, callee, param)));
                    }
                }
            }
            out
        })
        .collect();
    let mut all: FxHashMap<(NodeId, &'s str), bool> = FxHashMap::default();
    for (key, given) in seen {
        *all.entry(key).or_insert(true) &= given;
    }
    let mut given = Given::default();
    for ((node, param), always) in all {
        if always {
            given.entry(node).or_default().push(param);
        }
    }
    for params in given.values_mut() {
        params.sort_unstable();
        params.dedup();
    }
    given
}

/// The parameters defaulting to `None` whose every `None` branch computes a value in their
/// place (`if metadata is None: metadata = ...`): a `None` that means "off" (`if alpha is
/// None: return ...`) is a setting, which a caller passes on from its configuration.
fn fallback_params(function: &FunctionSummary) -> Vec<&str> {
    let none_blocks = || {
        function
            .param_blocks
            .iter()
            .filter(|block| block.test == ParamTest::IsNone)
    };
    let mut params: Vec<&str> = none_blocks()
        .filter(|block| block.fallback)
        .map(|block| &*block.param)
        .filter(|param| {
            function
                .params
                .iter()
                .any(|p| p.name == *param && p.default == Some(Const::None))
        })
        .filter(|param| none_blocks().all(|b| &*b.param != *param || b.fallback))
        .collect();
    params.sort_unstable();
    params.dedup();
    params
}

/// Whether a call gives `param` an argument that is not `None`: not the literal, not a
/// parameter of the caller's own that defaults to `None`. A splat may or may not hold it.
fn gives(caller: &FunctionSummary, site: &CallSite, callee: &FunctionSummary, param: &str) -> bool {
    let bound = bound(&site.target);
    let Some(key) = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key))
        .find(|key| param_of(callee, bound, key).is_some_and(|p| p.name == param))
    else {
        return false;
    };
    if site
        .const_args()
        .iter()
        .any(|(k, value)| k == key && *value == Const::None)
    {
        return false;
    }
    !site.param_args.iter().any(|(k, name)| {
        k == key
            && caller
                .params
                .iter()
                .any(|p| *p.name == **name && p.default == Some(Const::None))
    })
}

/// The call sites (function, position among its calls) made where a given parameter is `None`:
/// the captured search does not follow them.
pub(super) fn fallback_sites(index: &ProjectIndex, given: &Given) -> FxHashSet<(NodeId, usize)> {
    let mut sites = FxHashSet::default();
    for (node, params) in given {
        for (i, site) in index.function(*node).calls.iter().enumerate() {
            if site
                .requires()
                .iter()
                .any(|(p, test)| *test == ParamTest::IsNone && params.contains(&&**p))
            {
                sites.insert((*node, i));
            }
        }
    }
    sites
}

impl ProjectIndex<'_> {
    /// Whether a function's call site (by its position) is made in a fallback every captured
    /// call of the function skips (see [`find`]).
    pub(super) fn is_fallback_site(&self, node: NodeId, site: usize) -> bool {
        self.fallback_sites
            .get()
            .is_some_and(|sites| !sites.is_empty() && sites.contains(&(node, site)))
    }
}

impl super::HotPath<'_> {
    /// Whether a line of a captured function is in a fallback every captured call skips.
    pub(super) fn in_fallback_block(&self, node: NodeId, line: u32, column: u32) -> bool {
        let Some(params) = self.given.get(&node) else {
            return false;
        };
        self.index.function(node).param_blocks.iter().any(|block| {
            block.test == ParamTest::IsNone
                && params.contains(&&*block.param)
                && block.contains(line, column)
        })
    }
}
