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
//! A caller handing on its own parameter gives it where its own captured calls do (a few callers
//! deep); the calls made inside a capture region are captured calls. One refinement pass: the
//! captured search runs again without the fallbacks' calls; what the second search no longer
//! reaches does not reopen a fallback the first one closed.

use super::args::{bound, param_of};
use super::index::{NodeId, ProjectIndex};
use crate::summary::{ArgKey, CallSite, Const, FunctionSummary, ParamTest};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters every captured call of a function gives, by function, for the functions
/// that test one against `None`.
pub(super) type Given<'s> = FxHashMap<NodeId, Vec<&'s str>>;

/// The captured functions' parameters that every captured call gives. The calls made inside
/// a capture region count as captured calls (the graph runner's `with torch.cuda.graph(...)`
/// body); entry points of other kinds (`open`) are called from outside the project too: theirs
/// stay open.
pub(super) fn find<'s>(
    index: &ProjectIndex<'s>,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    open: &FxHashSet<NodeId>,
) -> Given<'s> {
    let candidates: Vec<(NodeId, Vec<&'s str>)> = captured
        .keys()
        .filter(|node| !open.contains(node))
        .filter_map(|&node| {
            let params = fallback_params(index.function(node));
            (!params.is_empty()).then_some((node, params))
        })
        .collect();
    if candidates.is_empty() {
        return Given::default();
    }
    // The captured calls of every function: (caller, site), by callee.
    let callers: Vec<NodeId> = captured.keys().copied().collect();
    let mut calls: FxHashMap<NodeId, Vec<Call<'s>>> = FxHashMap::default();
    let found: Vec<(NodeId, Call<'s>)> = callers
        .par_iter()
        .with_min_len(64)
        .flat_map_iter(|&caller| {
            let function = index.function(caller);
            function
                .calls
                .iter()
                .zip(index.resolved_sites(caller))
                .enumerate()
                .filter(move |(i, (site, _))| !site.prefill && !index.is_dead_site(caller, *i))
                .flat_map(move |(_, (site, targets))| {
                    targets.iter().map(move |target| {
                        (
                            *target,
                            Call {
                                caller,
                                site,
                                captured: true,
                            },
                        )
                    })
                })
        })
        .collect();
    for (callee, call) in found {
        calls.entry(callee).or_default().push(call);
    }
    for caller in index.nodes() {
        for site in &index.function(caller).captured_calls {
            for target in index.resolve(caller.module, &site.target) {
                calls.entry(target).or_default().push(Call {
                    caller,
                    site,
                    captured: false,
                });
            }
        }
    }
    let mut search = Search {
        index,
        calls: &calls,
        open,
        memo: FxHashMap::default(),
    };
    let mut given = Given::default();
    for (node, params) in candidates {
        for param in params {
            if search.given(node, param, 0) {
                given.entry(node).or_default().push(param);
            }
        }
    }
    given
}

/// A captured call: made by a captured function, or inside a capture region of `caller`.
#[derive(Clone, Copy)]
struct Call<'s> {
    caller: NodeId,
    site: &'s CallSite,
    captured: bool,
}

/// How deep a parameter is followed through the callers that hand on their own.
const MAX_DEPTH: u8 = 4;

struct Search<'a, 's> {
    index: &'a ProjectIndex<'s>,
    calls: &'a FxHashMap<NodeId, Vec<Call<'s>>>,
    open: &'a FxHashSet<NodeId>,
    memo: FxHashMap<(NodeId, &'s str), bool>,
}

impl<'s> Search<'_, 's> {
    /// Whether every captured call of `node` gives `param` an argument that is not `None`.
    fn given(&mut self, node: NodeId, param: &'s str, depth: u8) -> bool {
        if let Some(known) = self.memo.get(&(node, param)) {
            return *known;
        }
        // Open while it is decided: a cycle of callers handing the parameter on gives nothing.
        self.memo.insert((node, param), false);
        let answer = !self.open.contains(&node) && self.all_give(node, param, depth);
        self.memo.insert((node, param), answer);
        answer
    }

    fn all_give(&mut self, node: NodeId, param: &'s str, depth: u8) -> bool {
        let all: &FxHashMap<NodeId, Vec<Call<'s>>> = self.calls;
        let Some(calls) = all.get(&node) else {
            return false;
        };
        let callee = self.index.function(node);
        calls.iter().all(|call| {
            let caller = self.index.function(call.caller);
            match gives(caller, call.site, callee, param) {
                Gives::Yes => true,
                Gives::No => false,
                // The caller's own parameter, handed on: given where the caller's captured
                // calls all give it.
                Gives::Own(own) => {
                    call.captured && depth < MAX_DEPTH && self.given(call.caller, own, depth + 1)
                }
            }
        })
    }
}

/// What a call gives a parameter.
enum Gives<'s> {
    Yes,
    No,
    /// The caller's own parameter, which defaults to `None`.
    Own(&'s str),
}

/// The parameters defaulting to `None` whose every `None` branch computes a value in their
/// place (`if metadata is None: metadata = ...`): a `None` that means "off" (`if alpha is
/// None: return ...`) is a setting, which a caller passes on from its configuration.
pub(super) fn fallback_params(function: &FunctionSummary) -> Vec<&str> {
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

/// Whether a call gives `param` an argument that is not `None`: not the literal, nor (unless
/// its own callers give it) a parameter of the caller's own that defaults to `None`. A splat
/// may or may not hold it.
fn gives<'s>(
    caller: &'s FunctionSummary,
    site: &'s CallSite,
    callee: &FunctionSummary,
    param: &str,
) -> Gives<'s> {
    let bound = bound(&site.target);
    let Some(key) = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key))
        .find(|key| param_of(callee, bound, key).is_some_and(|p| p.name == param))
    else {
        return Gives::No;
    };
    if site
        .const_args()
        .iter()
        .any(|(k, value)| k == key && *value == Const::None)
    {
        return Gives::No;
    }
    match own_optional(caller, site, key) {
        Some(own) => Gives::Own(own),
        None => Gives::Yes,
    }
}

/// The caller's own parameter defaulting to `None` that a call passes as the argument `key`, as
/// received: it may be `None`.
pub(super) fn own_optional<'s>(
    caller: &'s FunctionSummary,
    site: &CallSite,
    key: &ArgKey,
) -> Option<&'s str> {
    site.param_args.iter().find_map(|(k, name)| {
        (k == key)
            .then(|| {
                caller
                    .params
                    .iter()
                    .find(|p| *p.name == **name && p.default == Some(Const::None))
            })
            .flatten()
            .map(|p| p.name.as_str())
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
