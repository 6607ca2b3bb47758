//! What reached method calls return, where the index resolves every method a call may run
//! (the class hierarchy of a typed receiver) and all of them return host data: the caller's
//! module learns it in phase 3 by the call's offset (`self.buffers.get_buf(i)` unpacked into
//! host tensors, `model.get_mrope_input_positions(...)` whose every implementation returns
//! `torch.from_numpy(...)`). Only host data travels: a device tensor is what an unknown call
//! already counts as.

use super::index::{NodeId, ProjectIndex};
use crate::semantic::{CallReturn, Ty};
use crate::summary::{CallTarget, FunctionSummary};
use rustc_hash::FxHashMap;

/// Per reached caller, the `(offset, return)` of its method calls whose callees all return host
/// data.
pub(super) fn call_returns<'n>(
    index: &ProjectIndex,
    callers: impl Iterator<Item = &'n NodeId>,
) -> FxHashMap<NodeId, Vec<(u32, CallReturn)>> {
    let mut out: FxHashMap<NodeId, Vec<(u32, CallReturn)>> = FxHashMap::default();
    for &caller in callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            if callees.is_empty()
                || !matches!(
                    site.target,
                    CallTarget::Method { .. } | CallTarget::InstanceMethod { .. }
                )
            {
                continue;
            }
            let functions: Vec<&FunctionSummary> = callees
                .iter()
                .map(|&callee| index.function(callee))
                .collect();
            if let Some(found) = host_return(&functions) {
                out.entry(caller).or_default().push((site.offset, found));
            }
        }
    }
    out
}

/// What every one of `functions` returns, when that is host data.
fn host_return(functions: &[&FunctionSummary]) -> Option<CallReturn> {
    let joined = functions
        .iter()
        .map(|f| f.returns)
        .reduce(Ty::join)
        .filter(|ty| ty.is_host_tensor());
    if let Some(ty) = joined {
        return Some(CallReturn::Value(ty));
    }
    // A method that returns nothing (a base's `raise NotImplementedError`) cannot be what a
    // call unpacks: the others decide.
    let tuples: Vec<&[Ty]> = functions
        .iter()
        .filter(|f| f.tuple_returns.is_some() || f.returns != Ty::Host)
        .map(|f| f.tuple_returns.as_deref())
        .collect::<Option<_>>()?;
    let width = tuples.first()?.len();
    if tuples.iter().any(|t| t.len() != width) {
        return None;
    }
    let positions: Box<[Ty]> = (0..width)
        .map(|i| {
            tuples
                .iter()
                .map(|t| t[i])
                .reduce(Ty::join)
                .filter(|ty| ty.is_host_tensor())
                .unwrap_or(Ty::Unknown)
        })
        .collect();
    positions
        .iter()
        .any(|ty| ty.is_host_tensor())
        .then_some(CallReturn::Tuple(positions))
}
