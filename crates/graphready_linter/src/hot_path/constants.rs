//! Parameters the project's calls decide: a parameter with a literal default (`check=False`,
//! `out=None`) that every call of its function in the project leaves at the default, or passes
//! the same literal, holds that value; the branches its tests rule out never run (`if check:`
//! around a validation helper, `if in_capture:` that only capture-time set-up passes `True`,
//! `if kv_block_num > 0:` with `kv_block_num=-1`, `if mode == "prefill":` with `mode="auto"`).
//! The calls made there are not followed, and the findings there are not reached.
//!
//! A parameter defaulting to `None` that a fallback computes in its place (`if cu_seqlens is
//! None: cu_seqlens = torch.tensor(...)`), and that every such call gives a value (an expression
//! that is not the `None` literal, nor the caller's own parameter defaulting to `None` unless
//! the caller's own calls all give that one), is never `None` there: the fallback never runs.
//! Callers that build the argument once per step and hand it on are how engines avoid that
//! work. A `None` that selects a path instead (`if
//! alpha is not None: ... return`) stays open: it comes from a setting.
//!
//! A flag named for capture (`in_capture`) is `False` per step by its name, unless a call from
//! per-step code passes `True`: its calls need not agree, nor be few.
//!
//! Only calls from code that runs every step count: set-up and measuring harnesses run once
//! (they may turn a check on while capturing). A function that is an entry point is called from
//! outside the project too, so its parameters stay open; so does one no call in the project
//! reaches directly, and one a call passes arguments to by splat (`*args`, a mapping), but for
//! a caller passing on its own `**kwargs`: those hold what the caller's callers name, so a
//! parameter none of them names keeps its default there.

use super::args::{bound, param_of};
use super::given::{fallback_params, own_optional};
use super::index::{NodeId, ProjectIndex};
use crate::summary::{ArgKey, CallSite, Const, FunctionSummary, ParamTest, Splat};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters each function's calls leave at one literal, or never leave `None`, for the
/// functions that test one.
pub(super) type Constants<'s> = FxHashMap<NodeId, Vec<(&'s str, Held)>>;

/// What a parameter the project's calls decide holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Held {
    /// One literal.
    Is(Const),
    /// Some value, never `None`.
    NotNone,
}

impl Held {
    /// Whether a test may pass for a parameter holding this: of a value known only not to be
    /// `None`, only `is None` fails.
    fn may_hold(self, test: ParamTest) -> bool {
        match self {
            Held::Is(value) => test.holds(value),
            Held::NotNone => test != ParamTest::IsNone,
        }
    }
}

/// How many calls of one name are resolved to decide its functions' parameters.
const MAX_SITES: usize = 32;

/// What the calls seen so far pass to a parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Passed {
    Always(Const),
    /// A value that is not `None`, not one literal.
    Given,
    Varies,
    /// The call passes its caller's own `**kwargs` on, which may hold the parameter: what the
    /// caller's callers name decides.
    Forwarded,
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
        by_name.insert(last_name(&function.qualname));
        tested.insert(node, params);
    }
    if tested.is_empty() {
        let mut passed = FxHashMap::default();
        capture_flags(index, &FxHashSet::default(), &mut passed);
        return constants_of(index, passed);
    }
    // Functions that may pass their `**kwargs` on to those: their calls are searched too.
    let mut names = by_name.clone();
    for node in index.nodes() {
        let function = index.function(node);
        if function.calls.iter().any(|site| {
            site.splat == Splat::OwnKwargs && by_name.contains(site.target.method_name())
        }) {
            names.insert(last_name(&function.qualname));
        }
    }
    // The calls of those names, from code that runs every step; a name called from many
    // places (`get`, `run`) is left open.
    let sites = calls_of(index, &names);
    type Found<'s> = ((NodeId, &'s str), Passed, NodeId, Option<&'s str>);
    let found: Vec<Found<'s>> = sites
        .par_iter()
        .filter(|(_, site)| by_name.contains(site.target.method_name()))
        .flat_map_iter(|&(caller, site)| {
            let mut out = Vec::new();
            for callee in index.resolve(caller.module, &site.target) {
                if let Some(params) = tested.get(&callee) {
                    let function = index.function(callee);
                    let own = index.function(caller);
                    for &param in params {
                        let passed = passes(own, function, site, param);
                        let handed = (passed == Passed::Varies)
                            .then(|| handed_on(own, function, site, param))
                            .flatten();
                        out.push(((callee, param), passed, caller, handed));
                    }
                }
            }
            out
        })
        .collect();
    let mut passes = Vec::with_capacity(found.len());
    let mut forwarded = Vec::new();
    let mut handed = Vec::new();
    for (key, passed, caller, own) in found {
        match (passed, own) {
            (_, Some(own)) => handed.push((key, caller, own)),
            (Passed::Forwarded, None) => forwarded.push((key, caller)),
            (other, None) => passes.push((key, other)),
        }
    }
    passes.extend(through_kwargs(index, entries, &sites, &forwarded));
    passes.extend(through_own(index, entries, &handed));
    let mut passed: FxHashMap<(NodeId, &'s str), Passed> = FxHashMap::default();
    let turned_on: FxHashSet<(NodeId, &'s str)> = passes
        .iter()
        .filter(|(_, value)| *value == Passed::Always(Const::True))
        .map(|(key, _)| *key)
        .collect();
    for (key, value) in passes {
        passed
            .entry(key)
            .and_modify(|before| *before = merge(*before, value))
            .or_insert(value);
    }
    capture_flags(index, &turned_on, &mut passed);
    constants_of(index, passed)
}

/// What two calls pass together: one literal, or values none of which is `None`, or anything.
fn merge(before: Passed, value: Passed) -> Passed {
    match (before, value) {
        _ if before == value => before,
        (Passed::Always(c), Passed::Given) | (Passed::Given, Passed::Always(c))
            if c != Const::None =>
        {
            Passed::Given
        }
        (Passed::Always(a), Passed::Always(b)) if a != Const::None && b != Const::None => {
            Passed::Given
        }
        _ => Passed::Varies,
    }
}

/// The parameters that hold one literal, or never `None`, by function.
fn constants_of<'s>(
    index: &ProjectIndex<'s>,
    passed: FxHashMap<(NodeId, &'s str), Passed>,
) -> Constants<'s> {
    let mut constants = Constants::default();
    for ((node, param), value) in passed {
        let held = match value {
            Passed::Always(value) => Held::Is(value),
            // Only a fallback's parameter: a `None` that selects a path (`if alpha is not
            // None: ... return`) comes from a setting, which may well be `None`.
            Passed::Given if fallback_params(index.function(node)).contains(&param) => {
                Held::NotNone
            }
            Passed::Given | Passed::Varies | Passed::Forwarded => continue,
        };
        constants.entry(node).or_default().push((param, held));
    }
    for params in constants.values_mut() {
        params.sort_unstable_by_key(|(param, _)| *param);
    }
    constants
}

/// A flag named for capture (`in_capture`, `is_capturing`) that defaults to `False` is true
/// only while the graphs are captured, which set-up does once: per-step code leaves it `False`,
/// whatever its calls pass on (a wrapper handing on its own flag, a name called from too many
/// places to resolve, an entry point), unless one of them passes a literal `True`.
fn capture_flags<'s>(
    index: &ProjectIndex<'s>,
    turned_on: &FxHashSet<(NodeId, &'s str)>,
    passed: &mut FxHashMap<(NodeId, &'s str), Passed>,
) {
    for node in index.nodes() {
        let function = index.function(node);
        if function.param_blocks.is_empty() || index.runs_once(node) {
            continue;
        }
        for block in &function.param_blocks {
            let param: &'s str = &block.param;
            if names_capture(param)
                && !turned_on.contains(&(node, param))
                && default_of(function, param) == Passed::Always(Const::False)
            {
                passed.insert((node, param), Passed::Always(Const::False));
            }
        }
    }
}

/// Whether a parameter's name says it is set while a graph is captured: `capturing`,
/// `is_capturing`, and `in_`, `is_`, `during_` or `for_` names that end in `capture`
/// (`in_capture`, `for_cuda_graph_capture`). `capture_hidden` says what to capture, not when.
fn names_capture(param: &str) -> bool {
    let name = param.trim_start_matches('_');
    name == "capturing"
        || name.ends_with("_capturing")
        || (name.ends_with("capture")
            && ["in_", "is_", "during_", "for_"]
                .iter()
                .any(|prefix| name.starts_with(prefix)))
}

/// What one call passes to a parameter of the function it calls: the literal it gives, the
/// default when it gives nothing, anything else (a splat among them) varies; the caller's own
/// `**kwargs` passed on is [`Passed::Forwarded`].
fn passes(
    caller: &FunctionSummary,
    function: &FunctionSummary,
    site: &CallSite,
    param: &str,
) -> Passed {
    let bound = bound(&site.target);
    given(caller, site, |key| {
        param_of(function, bound, key).is_some_and(|p| p.name == param)
    })
    .unwrap_or_else(|| match site.splat {
        Splat::None => default_of(function, param),
        Splat::OwnKwargs => Passed::Forwarded,
        Splat::Positional | Splat::Mapping => Passed::Varies,
    })
}

/// What a call passes in the argument `lands` picks out, when it gives one: its literal; the
/// caller's own parameter defaulting to `None` (which may be `None`), anything; any other value
/// [`Passed::Given`].
fn given(
    caller: &FunctionSummary,
    site: &CallSite,
    lands: impl Fn(&ArgKey) -> bool,
) -> Option<Passed> {
    let key = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key))
        .find(|key| lands(key))?;
    if let Some((_, c)) = site.const_args().iter().find(|(k, _)| k == key) {
        return Some(Passed::Always(*c));
    }
    Some(if own_optional(caller, site, key).is_some() {
        Passed::Varies
    } else {
        Passed::Given
    })
}

/// The caller's own parameter defaulting to `None` that a call passes to `param`, if it does.
fn handed_on<'s>(
    caller: &'s FunctionSummary,
    function: &FunctionSummary,
    site: &CallSite,
    param: &str,
) -> Option<&'s str> {
    let bound = bound(&site.target);
    site.param_args
        .iter()
        .map(|(key, _)| key)
        .find(|key| param_of(function, bound, key).is_some_and(|p| p.name == param))
        .and_then(|key| own_optional(caller, site, key))
}

/// What calls that hand on their caller's own parameter defaulting to `None` pass: what the
/// caller's own calls (from code that runs every step, of names called from few places) pass
/// to that parameter, one caller deep (`def masks(self, m, *, full=None): return
/// make(m, full=full)` called with `full=False` and `full=flag` gives `make`'s `full` a value).
/// A caller that is an entry point, or that no such call reaches, may receive anything.
fn through_own<'s>(
    index: &ProjectIndex<'s>,
    entries: &FxHashSet<NodeId>,
    handed: &[((NodeId, &'s str), NodeId, &'s str)],
) -> Vec<((NodeId, &'s str), Passed)> {
    if handed.is_empty() {
        return Vec::new();
    }
    let callers: FxHashSet<NodeId> = handed.iter().map(|(_, caller, _)| *caller).collect();
    let names: FxHashSet<&str> = callers
        .iter()
        .map(|&node| last_name(&index.function(node).qualname))
        .collect();
    let mut calls: FxHashMap<NodeId, Vec<(NodeId, &CallSite)>> = FxHashMap::default();
    for (outer, site) in calls_of(index, &names) {
        for callee in index.resolve(outer.module, &site.target) {
            if callers.contains(&callee) {
                calls.entry(callee).or_default().push((outer, site));
            }
        }
    }
    handed
        .iter()
        .map(|&(key, caller, own)| {
            let function = index.function(caller);
            let value = match calls.get(&caller) {
                Some(sites) if !entries.contains(&caller) => sites
                    .iter()
                    .map(|&(outer, site)| passes(index.function(outer), function, site, own))
                    .reduce(merge)
                    .unwrap_or(Passed::Varies),
                _ => Passed::Varies,
            };
            // Forwarded again (the outer caller's `**kwargs`) is not followed further: like
            // `Varies`, it decides nothing (see `constants_of`).
            (key, value)
        })
        .collect()
}

/// The calls of these names from code that runs every step, for names called from at most
/// [`MAX_SITES`] places (deciding a name called from many places means resolving every one of
/// its calls, and the arguments of so many calls seldom agree).
fn calls_of<'s>(index: &ProjectIndex<'s>, names: &FxHashSet<&str>) -> Vec<(NodeId, &'s CallSite)> {
    let nodes: Vec<NodeId> = index.nodes().collect();
    let sites: Vec<(NodeId, &'s CallSite)> = nodes
        .par_iter()
        .with_min_len(256)
        .flat_map_iter(|&caller| {
            index
                .function(caller)
                .calls
                .iter()
                .filter(|site| names.contains(site.target.method_name()))
                .map(move |site| (caller, site))
        })
        .collect();
    let mut counts: FxHashMap<&str, usize> = FxHashMap::default();
    for (_, site) in &sites {
        *counts.entry(site.target.method_name()).or_default() += 1;
    }
    sites
        .into_par_iter()
        .filter(|(_, site)| counts[site.target.method_name()] <= MAX_SITES)
        .filter(|(caller, _)| !index.runs_once(*caller))
        .collect()
}

/// The last part of a qualified name (`method` of `Class.method`): what calls spell.
pub(super) fn last_name(qualname: &str) -> &str {
    qualname.rsplit_once('.').map_or(qualname, |(_, last)| last)
}

/// A parameter's default, as what a call that does not give it passes.
fn default_of(function: &FunctionSummary, param: &str) -> Passed {
    function
        .params
        .iter()
        .find(|p| p.name == param)
        .and_then(|p| p.default)
        .map_or(Passed::Varies, Passed::Always)
}

/// What calls that pass their caller's `**kwargs` on pass, from what the caller's own callers
/// (code that runs every step) name: a parameter the caller declares itself, or none of its
/// callers names, keeps its default; a keyword literal is that literal; anything else, a splat
/// or a caller nobody calls (an entry point among them) varies.
fn through_kwargs<'s>(
    index: &ProjectIndex<'s>,
    entries: &FxHashSet<NodeId>,
    sites: &[(NodeId, &CallSite)],
    forwarded: &[((NodeId, &'s str), NodeId)],
) -> Vec<((NodeId, &'s str), Passed)> {
    if forwarded.is_empty() {
        return Vec::new();
    }
    let forwarders: FxHashSet<NodeId> = forwarded.iter().map(|(_, caller)| *caller).collect();
    let names: FxHashSet<&str> = forwarders
        .iter()
        .map(|&node| last_name(&index.function(node).qualname))
        .collect();
    // The calls of the forwarding functions (from code that runs every step, of names called
    // from few places), by the function each resolves to.
    let mut calls: FxHashMap<NodeId, Vec<(NodeId, &CallSite)>> = FxHashMap::default();
    for &(caller, site) in sites {
        if names.contains(site.target.method_name()) {
            for callee in index.resolve(caller.module, &site.target) {
                if forwarders.contains(&callee) {
                    calls.entry(callee).or_default().push((caller, site));
                }
            }
        }
    }
    forwarded
        .iter()
        .map(|&((callee, param), caller)| {
            let function = index.function(callee);
            let own = index.function(caller);
            let value = if own.params.iter().any(|p| p.name == param) {
                default_of(function, param)
            } else if entries.contains(&caller) || !calls.contains_key(&caller) {
                Passed::Varies
            } else {
                let mut value = None;
                for &(outer, site) in calls.get(&caller).into_iter().flatten() {
                    let keyword = |key: &ArgKey| matches!(key, ArgKey::Keyword(k) if **k == *param);
                    let outer = index.function(outer);
                    let passed = given(outer, site, keyword).unwrap_or_else(|| match site.splat {
                        // `*args` fills positions only, never the `**kwargs` passed on.
                        Splat::None | Splat::Positional => default_of(function, param),
                        Splat::OwnKwargs | Splat::Mapping => Passed::Varies,
                    });
                    value = Some(value.map_or(passed, |before| merge(before, passed)));
                }
                value.unwrap_or(Passed::Varies)
            };
            ((callee, param), value)
        })
        .collect()
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
    params: &[(&str, Held)],
    mut tests: impl Iterator<Item = (&'t str, ParamTest)>,
) -> bool {
    tests.any(|(param, test)| {
        params
            .iter()
            .any(|(name, held)| *name == param && !held.may_hold(test))
    })
}

#[cfg(test)]
mod tests {
    use super::names_capture;

    #[test]
    fn flags_named_for_capture() {
        for name in [
            "in_capture",
            "is_capture",
            "_in_capture",
            "capturing",
            "is_capturing",
            "during_capture",
            "for_cuda_graph_capture",
        ] {
            assert!(names_capture(name), "{name}");
        }
        for name in [
            "capture_hidden",
            "capture",
            "recapture",
            "skip_capture",
            "in_captures",
        ] {
            assert!(!names_capture(name), "{name}");
        }
    }
}
