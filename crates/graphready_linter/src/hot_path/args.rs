//! Types flowing from arguments into parameters: an annotation is a claim, a reached call site is
//! evidence. A parameter that receives a device tensor at a reached call site is a tensor in its
//! function, whatever its annotation says (`_has_unfinished_sequences(this_peer_finished: bool)`
//! is passed `t.max() == 0`); a parameter annotated as a tensor that every reached call site
//! passes a host value (`compute_mrope_for_media(size: torch.LongTensor)` called with a row of
//! `grid.tolist()`, or a tensor in host memory: `run(schedule: Tensor)` given
//! `torch.linspace(...)`) holds a host value.

use super::index::{NodeId, ProjectIndex};
use crate::semantic::Ty;
use crate::summary::{ArgKey, CallSite, CallTarget, FunctionSummary, Param};
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters, by function, whose type the reached call sites (and a callable entry's known
/// inputs) decide: [`Ty::Tensor`] or [`Ty::Host`].
pub(super) fn param_types(
    index: &ProjectIndex,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    stalled: &FxHashMap<NodeId, Option<NodeId>>,
    drivers: &FxHashSet<NodeId>,
) -> FxHashMap<NodeId, Vec<(String, Ty)>> {
    let mut out: FxHashMap<NodeId, Vec<(String, Ty)>> = FxHashMap::default();
    // Parameters annotated as tensors: what the reached sites so far passed, while every one
    // passed a host value that is not a tensor (`None` once one did not).
    let mut host: FxHashMap<(NodeId, &str), Option<Ty>> = FxHashMap::default();
    let callers = captured
        .keys()
        .chain(stalled.keys())
        .chain(drivers.iter())
        .copied();
    for caller in callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            for &callee in callees.iter() {
                let function = index.function(callee);
                let bound = bound(&site.target);
                record_tensors(function, callee, bound, &site.tensor_args, &mut out);
                record_host(function, callee, bound, site, &mut host);
            }
        }
    }
    for (module, summary) in index.modules().iter().enumerate() {
        for entry in &summary.callable_entries {
            if entry.tensor_args.is_empty() {
                continue;
            }
            for callee in index.resolve(module, &entry.target) {
                let function = index.function(callee);
                record_tensors(
                    function,
                    callee,
                    bound(&entry.target),
                    &entry.tensor_args,
                    &mut out,
                );
            }
        }
    }
    for ((callee, name), passed) in host {
        if let Some(ty) = passed {
            out.entry(callee).or_default().push((name.to_string(), ty));
        }
    }
    for params in out.values_mut() {
        params.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}

/// Whether a call passes `self` implicitly (a bound method).
pub(super) fn bound(target: &CallTarget) -> bool {
    !matches!(
        target,
        CallTarget::Function(_) | CallTarget::Returned { .. }
    )
}

/// The parameter an argument lands in.
pub(super) fn param_of<'f>(
    function: &'f FunctionSummary,
    bound: bool,
    arg: &ArgKey,
) -> Option<&'f Param> {
    let params = &function.params;
    let takes_self = params
        .first()
        .is_some_and(|p| matches!(p.name.as_str(), "self" | "cls"));
    let offset = usize::from(bound && takes_self);
    match arg {
        ArgKey::Position(i) => params.get(i + offset),
        ArgKey::Keyword(name) => params.iter().find(|p| *p.name == **name),
    }
}

/// Device tensors passed to parameters not annotated as tensors, which the function judges on
/// the host (anything else changes nothing).
fn record_tensors(
    function: &FunctionSummary,
    callee: NodeId,
    bound: bool,
    args: &[ArgKey],
    out: &mut FxHashMap<NodeId, Vec<(String, Ty)>>,
) {
    for arg in args {
        let name = param_of(function, bound, arg)
            .filter(|p| !p.tensor && function.judged_params.contains(&p.name))
            .map(|p| p.name.as_str());
        if let Some(name) = name {
            let params = out.entry(callee).or_default();
            if !params.iter().any(|(n, _)| n == name) {
                params.push((name.to_string(), Ty::Tensor));
            }
        }
    }
}

/// What one reached site passes to the callee's parameters annotated as tensors: a host value
/// (a host tensor included) keeps a parameter host, anything else (a device tensor, an unknown
/// value, a splat) rules it out.
fn record_host<'f>(
    function: &'f FunctionSummary,
    callee: NodeId,
    bound: bool,
    site: &CallSite,
    host: &mut FxHashMap<(NodeId, &'f str), Option<Ty>>,
) {
    if !function.params.iter().any(|p| p.tensor) {
        return;
    }
    if site.opaque {
        for param in function.params.iter().filter(|p| p.tensor) {
            host.insert((callee, param.name.as_str()), None);
        }
        return;
    }
    let unknown = site.other_args.iter().filter(|(_, ty)| *ty == Ty::Unknown);
    let not_host = site.tensor_args.iter().chain(unknown.map(|(arg, _)| arg));
    for arg in not_host {
        if let Some(param) = param_of(function, bound, arg).filter(|p| p.tensor) {
            host.insert((callee, param.name.as_str()), None);
        }
    }
    for (arg, ty) in site.other_args.iter().filter(|(_, ty)| *ty != Ty::Unknown) {
        if let Some(param) = param_of(function, bound, arg).filter(|p| p.tensor) {
            host.entry((callee, param.name.as_str()))
                .and_modify(|passed| *passed = passed.map(|before| before.join(*ty)))
                .or_insert(Some(*ty));
        }
    }
}
