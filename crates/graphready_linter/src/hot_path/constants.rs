//! Parameters the project's calls decide: a parameter with a literal default (`check=False`,
//! `out=None`) that every call of its function in the project leaves at the default, or passes
//! the same literal, holds that value; the branches its tests rule out never run (`if check:`
//! around a validation helper, `if in_capture:` that only capture-time set-up passes `True`).
//! The calls made there are not followed, and the findings there are not reached.
//!
//! Only calls from code that runs every step count: set-up and measuring harnesses run once
//! (they may turn a check on while capturing). A function that is an entry point is called from
//! outside the project too, so its parameters stay open; so does one no call in the project
//! reaches directly, and one a call passes arguments to by splat (`**kwargs`).

use super::args::{bound, param_of};
use super::index::{NodeId, ProjectIndex};
use crate::summary::{CallSite, Const, FunctionSummary};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters each function's calls leave at one literal, for the functions that test one.
pub(super) type Constants<'s> = FxHashMap<NodeId, Vec<(&'s str, Const)>>;

/// How many calls of one name are resolved to decide its functions' parameters.
const MAX_SITES: usize = 32;

/// What the calls seen so far pass to a parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Passed {
    Always(Const),
    Varies,
}

pub(super) fn find<'s>(index: &ProjectIndex<'s>, entries: &FxHashSet<NodeId>) -> Constants<'s> {
    // The functions whose branches or calls test a parameter with a default, by their name.
    let mut tested: FxHashMap<NodeId, Vec<&'s str>> = FxHashMap::default();
    let mut by_name: FxHashSet<&'s str> = FxHashSet::default();
    for node in index.nodes() {
        // Set-up is never followed nor reported; a module's `forward` runs through the many
        // invocations of its instances, whose arguments vary (and searching them all would cost
        // more than the rest of the analysis).
        // (A call made under a test of a parameter is in that test's block.)
        let function = index.function(node);
        if function.param_blocks.is_empty()
            || function.qualname.ends_with(".forward")
            || function.qualname.ends_with(".__call__")
            || entries.contains(&node)
            || index.runs_once(node)
        {
            continue;
        }
        let mut params: Vec<&'s str> = function
            .param_blocks
            .iter()
            .map(|block| &*block.param)
            .collect();
        params.sort_unstable();
        params.dedup();
        let name = function
            .qualname
            .rsplit_once('.')
            .map_or(function.qualname.as_str(), |(_, last)| last);
        by_name.insert(name);
        tested.insert(node, params);
    }
    if tested.is_empty() {
        return Constants::default();
    }
    // The calls of those names, from code that runs every step.
    let nodes: Vec<NodeId> = index.nodes().collect();
    let sites: Vec<(NodeId, &CallSite)> = nodes
        .par_iter()
        .with_min_len(256)
        .flat_map_iter(|&caller| {
            index
                .function(caller)
                .calls
                .iter()
                .filter(|site| by_name.contains(site.target.method_name()))
                .map(move |site| (caller, site))
        })
        .collect();
    // A name called from many places (`get`, `run`) is left open: deciding it would mean
    // resolving every one of those calls, and the arguments of so many calls seldom agree.
    let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
    for (_, site) in &sites {
        *counts.entry(site.target.method_name()).or_default() += 1;
    }
    let passes: Vec<((NodeId, &'s str), Passed)> = sites
        .par_iter()
        .filter(|(_, site)| counts[site.target.method_name()] <= MAX_SITES)
        .filter(|(caller, _)| !index.runs_once(*caller))
        .flat_map_iter(|&(caller, site)| {
            let mut out = Vec::new();
            for callee in index.resolve(caller.module, &site.target) {
                if let Some(params) = tested.get(&callee) {
                    let function = index.function(callee);
                    for &param in params {
                        out.push(((callee, param), passes(function, site, param)));
                    }
                }
            }
            out
        })
        .collect();
    let mut passed: FxHashMap<(NodeId, &'s str), Passed> = FxHashMap::default();
    for (key, value) in passes {
        passed
            .entry(key)
            .and_modify(|before| {
                if *before != value {
                    *before = Passed::Varies;
                }
            })
            .or_insert(value);
    }
    let mut constants = Constants::default();
    for ((node, param), value) in passed {
        if let Passed::Always(value) = value {
            constants.entry(node).or_default().push((param, value));
        }
    }
    for params in constants.values_mut() {
        params.sort_unstable_by_key(|(param, _)| *param);
    }
    constants
}

/// What one call passes to a parameter of the function it calls: the literal it gives, the
/// default when it gives nothing, anything else (a splat among them) varies.
fn passes(function: &FunctionSummary, site: &CallSite, param: &str) -> Passed {
    if site.opaque {
        return Passed::Varies;
    }
    let bound = bound(&site.target);
    let given = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key))
        .find(|key| param_of(function, bound, key).is_some_and(|p| p.name == param));
    match given {
        Some(key) => site
            .const_args()
            .iter()
            .find(|(k, _)| k == key)
            .map_or(Passed::Varies, |(_, c)| Passed::Always(*c)),
        None => function
            .params
            .iter()
            .find(|p| p.name == param)
            .and_then(|p| p.default)
            .map_or(Passed::Varies, Passed::Always),
    }
}

impl ProjectIndex<'_> {
    /// Whether the constant parameters rule out a function's call site (by its position among
    /// the function's calls).
    pub(super) fn is_dead_site(&self, node: NodeId, site: usize) -> bool {
        self.dead_sites
            .get()
            .is_some_and(|dead| !dead.is_empty() && dead.contains(&(node, site)))
    }
}

/// The call sites (function, position among its calls) that constants rule out.
pub(super) fn dead_sites(
    index: &ProjectIndex,
    constants: &Constants,
) -> FxHashSet<(NodeId, usize)> {
    let mut dead = FxHashSet::default();
    for (node, params) in constants {
        for (i, site) in index.function(*node).calls.iter().enumerate() {
            if rules_out(params, site.requires().iter().map(|(p, t)| (&**p, *t))) {
                dead.insert((*node, i));
            }
        }
    }
    dead
}

/// Whether one of the tests fails for the constant parameters.
pub(super) fn rules_out<'t>(
    params: &[(&str, Const)],
    mut tests: impl Iterator<Item = (&'t str, crate::summary::ParamTest)>,
) -> bool {
    tests.any(|(param, test)| {
        params
            .iter()
            .any(|(name, value)| *name == param && !test.holds(*value))
    })
}
