//! Device parameters the project's calls give the host: a parameter named for a device
//! (`device`, `target_device`) that every reached call passes `"cpu"` (a `torch.device("cpu")`
//! or a local bound to one alike), or leaves at a `None` or `"cpu"` default, with at least one
//! call passing it, holds the host in its function. A padding helper's `.to(device)` is then no
//! upload: its caller stages the rows in host memory and copies them up itself (vLLM's
//! penalties build their output tokens with `make_tensor_with_pad(..., device="cpu",
//! pin_memory=...)` and copy them with `non_blocking=True`).
//!
//! A function that is an entry point is called from outside the project too, and a call that
//! splats may pass anything: either keeps the parameter open.

use super::args::{bound, param_of};
use super::index::{NodeId, ProjectIndex};
use crate::semantic::Ty;
use crate::summary::{ArgKey, CallSite, Const, FunctionSummary};
use rustc_hash::{FxHashMap, FxHashSet};

/// What the calls seen so far give a device parameter.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Given {
    /// The host, passed by at least one call.
    Host,
    /// Only the default, so far.
    Default,
    /// Something else, or something unknown.
    Other,
}

/// The reached functions, by search: parent on the shortest chain (`None` for an entry) of the
/// captured and the stalled, and the step drivers.
type Reached<'r> = (
    &'r FxHashMap<NodeId, Option<NodeId>>,
    &'r FxHashMap<NodeId, Option<NodeId>>,
    &'r FxHashSet<NodeId>,
);

/// Adds to the parameters whose type the reached calls decide the device parameters every
/// reached call gives the host, as [`Ty::HostDevice`].
pub(super) fn add_params(
    index: &ProjectIndex,
    (captured, stalled, drivers): Reached,
    params: &mut FxHashMap<NodeId, Vec<(String, Ty)>>,
) {
    let entry = |node| captured.get(&node) == Some(&None) || stalled.get(&node) == Some(&None);
    let reached = captured
        .keys()
        .chain(stalled.keys())
        .chain(drivers)
        .copied();
    for (node, names) in host_device_params(index, reached, entry) {
        let params = params.entry(node).or_default();
        params.extend(
            names
                .into_iter()
                .map(|name| (name.to_string(), Ty::HostDevice)),
        );
        params.sort_by(|a, b| a.0.cmp(&b.0));
    }
}

/// The device parameters, by function, that every reached call gives the host.
fn host_device_params<'s>(
    index: &ProjectIndex<'s>,
    callers: impl Iterator<Item = NodeId>,
    entries: impl Fn(NodeId) -> bool,
) -> FxHashMap<NodeId, Vec<&'s str>> {
    let mut given: FxHashMap<(NodeId, &'s str), Given> = FxHashMap::default();
    for caller in callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            for &callee in callees.iter() {
                let function = index.function(callee);
                for param in function.params.iter().filter(|p| names_device(&p.name)) {
                    let now = given_at(function, bound(&site.target), site, &param.name);
                    given
                        .entry((callee, param.name.as_str()))
                        .and_modify(|seen| *seen = merge(*seen, now))
                        .or_insert(now);
                }
            }
        }
    }
    let mut out: FxHashMap<NodeId, Vec<&'s str>> = FxHashMap::default();
    for ((callee, name), seen) in given {
        if seen == Given::Host && !entries(callee) {
            out.entry(callee).or_default().push(name);
        }
    }
    for names in out.values_mut() {
        names.sort_unstable();
    }
    out
}

/// A parameter named for a device (`device`, `target_device`, `device_id` aside).
fn names_device(name: &str) -> bool {
    name == "device" || name.ends_with("_device")
}

/// What one call gives the parameter `name` of `function`.
fn given_at(function: &FunctionSummary, bound: bool, site: &CallSite, name: &str) -> Given {
    let lands = |key: &ArgKey| param_of(function, bound, key).is_some_and(|p| p.name == name);
    let passed = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key))
        .any(lands);
    if !passed {
        if site.opaque() {
            return Given::Other;
        }
        let default = function
            .params
            .iter()
            .find(|p| p.name == name)
            .and_then(|p| p.default);
        return match default {
            Some(Const::None) => Given::Default,
            Some(value) if value == Const::host_device() => Given::Default,
            _ => Given::Other,
        };
    }
    let host = site
        .const_args()
        .iter()
        .any(|(key, value)| lands(key) && *value == Const::host_device());
    if host {
        Given::Host
    } else {
        Given::Other
    }
}

fn merge(seen: Given, now: Given) -> Given {
    match (seen, now) {
        (Given::Other, _) | (_, Given::Other) => Given::Other,
        (Given::Host, _) | (_, Given::Host) => Given::Host,
        _ => Given::Default,
    }
}
