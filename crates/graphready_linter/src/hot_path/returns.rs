//! What reached method calls return, where the index resolves every method a call may run
//! (the class hierarchy of a typed receiver) and all of them return host data: the caller's
//! module learns it in phase 3 by the call's offset (`self.buffers.get_buf(i)` unpacked into
//! host tensors, `model.get_mrope_input_positions(...)` whose every implementation returns
//! `torch.from_numpy(...)`). A method that returns what one of its calls returns (`return
//! self.encoder_runner.gather_mm_embeddings(...)`) returns what that call's callees return, a
//! few levels deep. Only host data travels: a device tensor is what an unknown call already
//! counts as.

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
                    CallTarget::Method { .. }
                        | CallTarget::InstanceMethod { .. }
                        | CallTarget::Super { .. }
                )
            {
                continue;
            }
            if let Some(found) = host_return(index, callees, FORWARD_DEPTH) {
                out.entry(caller).or_default().push((site.offset, found));
            }
        }
    }
    out
}

/// How many functions that return another call's result (`return self.runner.gather(...)`) are
/// followed to the function that builds the value.
const FORWARD_DEPTH: u8 = 3;

/// What every one of `callees` returns, when that is host data; a callee that returns what
/// one of its calls returns returns what that call's callees return.
fn host_return(index: &ProjectIndex, callees: &[NodeId], depth: u8) -> Option<CallReturn> {
    let functions: Vec<&FunctionSummary> = callees
        .iter()
        .map(|&callee| index.function(callee))
        .collect();
    let joined = functions
        .iter()
        .map(|f| f.returns)
        .reduce(Ty::join)
        .filter(|ty| ty.is_host_tensor());
    if let Some(ty) = joined {
        return Some(CallReturn::Value(ty));
    }
    // A method that returns nothing (a base's `raise NotImplementedError`) cannot be what a
    // call unpacks: the others decide. The first callee whose tuple is not known settles it.
    let mut forwarded: Vec<Box<[Ty]>> = Vec::new();
    let mut tuples: Vec<&[Ty]> = Vec::new();
    for (&callee, function) in callees.iter().zip(&functions) {
        if let Some(elements) = function.tuple_returns.as_deref() {
            tuples.push(elements);
            continue;
        }
        let found = (depth > 0)
            .then(|| forwarded_return(index, callee, depth - 1))
            .flatten();
        match found {
            Some(CallReturn::Tuple(elements)) => forwarded.push(elements),
            Some(CallReturn::Value(_)) => return None,
            None if function.returns == Ty::Host => {}
            None => return None,
        }
    }
    tuples.extend(forwarded.iter().map(|elements| &**elements));
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

/// What a function that returns one call's result returns, when that is host data.
fn forwarded_return(index: &ProjectIndex, node: NodeId, depth: u8) -> Option<CallReturn> {
    site_return_depth(index, node, index.function(node).forwards?, depth)
}

/// What the method call at `offset` in `node` returns, when every function it may run returns
/// host data (see [`call_returns`]).
pub(super) fn site_return(index: &ProjectIndex, node: NodeId, offset: u32) -> Option<CallReturn> {
    site_return_depth(index, node, offset, FORWARD_DEPTH)
}

fn site_return_depth(
    index: &ProjectIndex,
    node: NodeId,
    offset: u32,
    depth: u8,
) -> Option<CallReturn> {
    let function = index.function(node);
    let (_, callees) = function
        .calls
        .iter()
        .zip(index.resolved_sites(node))
        .find(|(site, _)| site.offset == offset)?;
    if callees.is_empty() {
        return None;
    }
    host_return(index, callees, depth)
}
