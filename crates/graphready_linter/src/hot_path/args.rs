//! Types flowing from arguments into parameters: a parameter that receives a device tensor at a
//! reached call site is a tensor in its function, whatever its annotation claims
//! (`_has_unfinished_sequences(this_peer_finished: bool)` is passed `t.max() == 0`).

use super::index::{NodeId, ProjectIndex};
use crate::summary::{ArgKey, CallTarget};
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters, by function, that receive a device tensor from a reached caller or from a
/// callable entry's known inputs.
pub(super) fn tensor_params(
    index: &ProjectIndex,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    stalled: &FxHashMap<NodeId, Option<NodeId>>,
    drivers: &FxHashSet<NodeId>,
) -> FxHashMap<NodeId, Vec<String>> {
    let mut out: FxHashMap<NodeId, Vec<String>> = FxHashMap::default();
    let callers = captured
        .keys()
        .chain(stalled.keys())
        .chain(drivers.iter())
        .copied();
    for caller in callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            if site.tensor_args.is_empty() {
                continue;
            }
            for &callee in callees.iter() {
                record(
                    index,
                    callee,
                    bound(&site.target),
                    &site.tensor_args,
                    &mut out,
                );
            }
        }
    }
    for (module, summary) in index.modules().iter().enumerate() {
        for entry in &summary.callable_entries {
            if entry.tensor_args.is_empty() {
                continue;
            }
            for callee in index.resolve(module, &entry.target) {
                record(
                    index,
                    callee,
                    bound(&entry.target),
                    &entry.tensor_args,
                    &mut out,
                );
            }
        }
    }
    out
}

/// Whether a call passes `self` implicitly (a bound method).
fn bound(target: &CallTarget) -> bool {
    !matches!(target, CallTarget::Function(_))
}

fn record(
    index: &ProjectIndex,
    callee: NodeId,
    bound: bool,
    args: &[ArgKey],
    out: &mut FxHashMap<NodeId, Vec<String>>,
) {
    let function = index.function(callee);
    let params = &function.params;
    let takes_self = params
        .first()
        .is_some_and(|p| matches!(p.name.as_str(), "self" | "cls"));
    let offset = usize::from(bound && takes_self);
    for arg in args {
        let param = match arg {
            ArgKey::Position(i) => params.get(i + offset),
            ArgKey::Keyword(name) => params.iter().find(|p| p.name == *name),
        };
        // A parameter annotated as a tensor is one already; one the function never judges on
        // the host changes nothing.
        let name = param
            .filter(|p| !p.tensor && function.judged_params.contains(&p.name))
            .map(|p| p.name.as_str());
        if let Some(name) = name {
            let names = out.entry(callee).or_default();
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
}
