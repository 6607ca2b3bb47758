//! Types flowing from arguments into parameters: an annotation is a claim, a reached call site is
//! evidence. A parameter that receives a device tensor at a reached call site is a tensor in its
//! function, whatever its annotation says (`_has_unfinished_sequences(this_peer_finished: bool)`
//! is passed `t.max() == 0`); a parameter annotated as a tensor that every reached call site
//! passes a host value (`compute_mrope_for_media(size: torch.LongTensor)` called with a row of
//! `grid.tolist()`, or a tensor in host memory: `run(schedule: Tensor)` given
//! `torch.linspace(...)`) holds a host value; a site passing a value of unknown type says
//! nothing of such a parameter (the sites that pass host tensors decide), unless the value was
//! unpacked from a method call whose host return the index knows (`embeds, mask =
//! super().gather(batch)`, see [`super::returns`]). `torch.Tensor | None` and
//! `Optional[torch.Tensor]` annotate tensors here. A recursive call passing a parameter on
//! unchanged (`dfs(child, next_token)` in `dfs`) says nothing of it: the other callers decide.

use super::index::{NodeId, ProjectIndex};
use crate::semantic::Ty;
use crate::summary::{ArgKey, CallSite, CallTarget, Const, FunctionSummary, Param};
use rustc_hash::{FxHashMap, FxHashSet};

/// The parameters, by function, whose type the reached call sites (and a callable entry's known
/// inputs) decide: [`Ty::Tensor`] or [`Ty::Host`].
pub(super) fn param_types(
    index: &ProjectIndex,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    stalled: &FxHashMap<NodeId, Option<NodeId>>,
    drivers: &FxHashSet<NodeId>,
    uncaptured: &FxHashSet<NodeId>,
) -> FxHashMap<NodeId, Vec<(String, Ty)>> {
    let mut out: FxHashMap<NodeId, Vec<(String, Ty)>> = FxHashMap::default();
    let mut callers: Vec<NodeId> = captured
        .keys()
        .chain(stalled.keys())
        .chain(drivers.iter())
        .copied()
        .collect();
    let reached = callers.len();
    callers.extend(unreached_callers(index, &callers, uncaptured));
    // What the reached sites pass, while every one passed a host value (`None` once one did
    // not); a caller's parameter passed on is set aside, to count as what the caller's own
    // callers pass (`forward(grid_thw)` -> `get_window_index(grid_thw)`).
    let mut base: FxHashMap<ParamKey, Option<Ty>> = FxHashMap::default();
    let mut pending: Vec<(ParamKey, ParamKey)> = Vec::new();
    // Tensors the caller's own parameters are only by their annotation, passed on: device
    // tensors unless the caller's callers pass host data (decided below).
    let mut passed_on: Vec<(NodeId, bool, &ArgKey, ParamKey)> = Vec::new();
    let mut processors: FxHashMap<super::index::ClassId, bool> = FxHashMap::default();
    for (i, &caller) in callers.iter().enumerate() {
        let sites = &index.function(caller).calls;
        // A media processor prepares a request's inputs on the host: what it hands on is host
        // data.
        let from_processor = index.method_class(caller).is_some_and(|class| {
            *processors
                .entry(class)
                .or_insert_with(|| super::processors::is_media_processor(index, class))
        });
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            // Of an unreached caller, only its calls of the module forwards it runs.
            if i >= reached && !callees.iter().any(|c| uncaptured.contains(c)) {
                continue;
            }
            // What the index knows of the locals this call is passed, once for all its callees.
            let unpacked: Vec<(&ArgKey, Option<Ty>)> = site
                .unpacked_args
                .iter()
                .map(|(key, offset, position)| {
                    (key, unpacked_host(index, caller, *offset, *position))
                })
                .collect();
            for &callee in callees.iter() {
                if i >= reached && !uncaptured.contains(&callee) {
                    continue;
                }
                let function = index.function(callee);
                let bound = bound(&site.target);
                let mut tensors = Vec::new();
                for arg in &site.tensor_args {
                    match site.param_args.iter().find(|(passed, _)| passed == arg) {
                        Some((_, name)) => passed_on.push((callee, bound, arg, (caller, &**name))),
                        None => tensors.push(arg),
                    }
                }
                record_tensors(function, callee, bound, tensors, &mut out);
                record_host(
                    function,
                    (callee, caller, from_processor),
                    site,
                    &unpacked,
                    &mut base,
                    &mut pending,
                );
            }
        }
    }
    // To a fixed point (a few rounds: chains of parameters are short).
    let mut decided: FxHashMap<ParamKey, Ty> = FxHashMap::default();
    for _ in 0..4 {
        let mut host = base.clone();
        for &(key, passed_on) in &pending {
            pass(&mut host, key, decided.get(&passed_on).copied());
        }
        let next: FxHashMap<ParamKey, Ty> = host
            .into_iter()
            .filter_map(|((callee, name), passed)| {
                let ty = passed?;
                let param = index
                    .function(callee)
                    .params
                    .iter()
                    .find(|p| p.name == name)?;
                // A parameter not annotated as a tensor changes only when it holds a host tensor,
                // an array or a list of host values (`grid_thw.tolist()` handed on, which rules
                // out the branch that calls `.tolist()` itself; a number it holds says nothing
                // new), and not when annotated as a host value already (`slot_ids: list[int]`).
                let says_more =
                    ty.is_host_tensor() || matches!(ty, Ty::Array | Ty::HostList | Ty::HostLists);
                (param.tensor || (says_more && !param.host)).then_some(((callee, name), ty))
            })
            .collect();
        let settled = next == decided
            || !pending
                .iter()
                .any(|(_, passed_on)| next.contains_key(passed_on));
        decided = next;
        if settled {
            break;
        }
    }
    for (callee, bound, arg, caller_param) in passed_on {
        if !decided.get(&caller_param).is_some_and(|ty| ty.is_host()) {
            record_tensors(index.function(callee), callee, bound, [arg], &mut out);
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
    for ((callee, name), ty) in decided {
        let params = out.entry(callee).or_default();
        if !params.iter().any(|(n, _)| n == name) {
            params.push((name.to_string(), ty));
        }
    }
    for params in out.values_mut() {
        params.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out
}

/// The functions reached by no search (set-up and harnesses aside) that call module forwards
/// run only on the host path (a projector or a vision tower that its model's
/// `get_image_feature` runs, called through a table of callbacks nothing follows): their calls
/// are evidence of what those forwards receive as much as a reached caller's (a grid the model
/// keeps on the host). They are looked for in the forwards' own modules and in the modules
/// whose classes hold an instance of one (`self.visual = VisionTower(...)`).
fn unreached_callers<'s>(
    index: &ProjectIndex<'s>,
    reached: &[NodeId],
    uncaptured: &FxHashSet<NodeId>,
) -> Vec<NodeId> {
    let reached: FxHashSet<NodeId> = reached.iter().copied().collect();
    let classes: FxHashSet<&str> = uncaptured
        .iter()
        .filter_map(|node| index.method_class(*node))
        .map(|class| super::constants::last_name(index.class_name(class)))
        .collect();
    let holds = |module: &'s crate::summary::ModuleSummary| {
        module.classes.iter().any(|class| {
            class.attributes.values().flatten().any(|reference| {
                let (crate::summary::Ref::Local(name) | crate::summary::Ref::Qualified(name)) =
                    reference;
                classes.contains(super::constants::last_name(name))
            })
        })
    };
    let mut modules: FxHashSet<usize> = uncaptured.iter().map(|node| node.module).collect();
    modules.extend(
        index
            .modules()
            .iter()
            .enumerate()
            .filter(|(_, module)| holds(module))
            .map(|(i, _)| i),
    );
    index
        .nodes()
        .filter(|node| {
            modules.contains(&node.module) && !reached.contains(node) && !index.runs_once(*node)
        })
        .filter(|&node| {
            index
                .resolved_sites(node)
                .iter()
                .any(|callees| callees.iter().any(|c| uncaptured.contains(c)))
        })
        .collect()
}

/// Of the functions a call may run (the overrides a class hierarchy offers, a method guessed by
/// its name), those the call's arguments fit: Python raises `TypeError` for the others, so
/// they are not what runs (`self.quant_method.apply(self, x, bias)` does not run a MoE
/// method's `apply(layer, x, topk_weights, topk_ids, ...)`; `self.recv_skipper.handle(batch)`
/// is not a checker's `handle(action, *, role)`). A splat hides the arguments: all stay; so
/// do the methods of `self`, which a lookup by name may hand out unbound (`getattr(type(self),
/// name)(self, x)`).
pub(super) fn keep_accepting(index: &ProjectIndex, site: &CallSite, targets: &mut Vec<NodeId>) {
    if !site.opaque() && !matches!(site.target, CallTarget::SelfMethod { .. }) {
        targets.retain(|node| accepts(index.function(*node), site));
    }
}

/// Whether a call's arguments fit a function's parameters: no position beyond them (without
/// `*args`), no keyword it lacks (without `**kwargs`), every parameter without a default filled.
fn accepts(function: &FunctionSummary, site: &CallSite) -> bool {
    let params = &function.params;
    let (star_args, star_kwargs) = function.variadic;
    let takes_self = params
        .first()
        .is_some_and(|p| matches!(p.name.as_str(), "self" | "cls"));
    // A method reached through a reference to something else is called on a class or an
    // instance (`Class(...)` runs `__init__`, `module(x)` its `forward`): `self` is passed
    // too. Through a reference to the method itself, a class method's `cls` is
    // (`ForwardBatch.init_new(batch, ...)`), a method's `self` is not (`Base.free(self, ...)`).
    let class_method = params.first().is_some_and(|p| p.name == "cls");
    let implicit_self = bound(&site.target)
        || function.class.is_some()
            && (class_method
                || function.qualname.rsplit('.').next() != Some(site.target.method_name()));
    let offset = usize::from(takes_self && implicit_self);
    let mut filled = vec![false; params.len()];
    let keys = site
        .tensor_args
        .iter()
        .chain(site.other_args.iter().map(|(key, _)| key));
    for key in keys {
        let slot = match key {
            ArgKey::Position(i) => params
                .get(i + offset)
                .filter(|p| !p.keyword_only)
                .map(|_| i + offset),
            ArgKey::Keyword(name) => params.iter().position(|p| *p.name == **name),
        };
        match slot {
            Some(slot) => filled[slot] = true,
            None if matches!(key, ArgKey::Position(_)) && star_args => {}
            None if matches!(key, ArgKey::Keyword(_)) && star_kwargs => {}
            None => return false,
        }
    }
    params
        .iter()
        .zip(&filled)
        .skip(offset)
        .all(|(param, filled)| *filled || !param.required)
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
        // Past the positional parameters, arguments by position land in `*args`, never in a
        // keyword-only parameter (`def run(module, *inputs, use_checkpointing=False)`).
        ArgKey::Position(i) => params.get(i + offset).filter(|p| !p.keyword_only),
        ArgKey::Keyword(name) => params.iter().find(|p| *p.name == **name),
    }
}

/// Device tensors passed to parameters not annotated as tensors, which the function judges on
/// the host (anything else changes nothing).
fn record_tensors<'k>(
    function: &FunctionSummary,
    callee: NodeId,
    bound: bool,
    args: impl IntoIterator<Item = &'k ArgKey>,
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

/// A function's parameter, by name.
type ParamKey<'f> = (NodeId, &'f str);

/// What one site passes to a parameter: a host type joins what earlier sites passed, `None` (a
/// device tensor, an unknown value) rules the parameter out.
fn pass<'f>(host: &mut FxHashMap<ParamKey<'f>, Option<Ty>>, key: ParamKey<'f>, ty: Option<Ty>) {
    match ty {
        None => {
            host.insert(key, None);
        }
        Some(ty) => {
            host.entry(key)
                .and_modify(|before| *before = before.map(|before| before.join(ty)))
                .or_insert(Some(ty));
        }
    }
}

/// The host type of a local unpacked from the call at `offset` in `caller`, at `position` of
/// the tuple it returns, when the index knows it.
fn unpacked_host(index: &ProjectIndex, caller: NodeId, offset: u32, position: u8) -> Option<Ty> {
    match super::returns::site_return(index, caller, offset)? {
        crate::semantic::CallReturn::Tuple(elements) => elements
            .get(usize::from(position))
            .copied()
            .filter(|ty| ty.is_host_tensor()),
        crate::semantic::CallReturn::Value(_) => None,
    }
}

/// What one reached site passes to the callee's parameters: a host value (a host tensor
/// included, or a local `unpacked` from a call the index knows to return one) keeps a
/// parameter host; a device tensor, a splat, or a value of unknown type passed to a parameter
/// not annotated as a tensor rules it out; a `None`, or an unknown value passed to a tensor
/// parameter, does neither. The caller's own parameters passed on go to `pending`,
/// with the parameter they land in.
fn record_host<'f>(
    function: &'f FunctionSummary,
    (callee, caller, from_processor): (NodeId, NodeId, bool),
    site: &'f CallSite,
    unpacked: &[(&ArgKey, Option<Ty>)],
    host: &mut FxHashMap<ParamKey<'f>, Option<Ty>>,
    pending: &mut Vec<(ParamKey<'f>, ParamKey<'f>)>,
) {
    let bound = bound(&site.target);
    if site.opaque() {
        // A splat may fill any parameter the call does not name: those are unknown; what the
        // call does name (the positions before `*args`, the keywords) still lands where it says.
        let named = |param: &Param| {
            site.tensor_args
                .iter()
                .chain(site.other_args.iter().map(|(key, _)| key))
                .any(|key| param_of(function, bound, key).is_some_and(|p| p.name == param.name))
        };
        for param in function.params.iter().filter(|param| !named(param)) {
            host.insert((callee, param.name.as_str()), None);
        }
    }
    let unknown = site.other_args.iter().filter(|(_, ty)| *ty == Ty::Unknown);
    for (arg, known) in site
        .tensor_args
        .iter()
        .map(|arg| (arg, true))
        .chain(unknown.map(|(arg, _)| (arg, false)))
    {
        let Some(param) = param_of(function, bound, arg) else {
            continue;
        };
        let key = (callee, param.name.as_str());
        match site.param_args.iter().find(|(passed, _)| passed == arg) {
            // A recursive call passing the parameter on unchanged says nothing new of it.
            Some((_, name)) if key == (caller, &**name) => {}
            Some((_, name)) => pending.push((key, (caller, &**name))),
            // A local unpacked from what a method returns, which the index knows to be host
            // data (`embeds, mask = self.state.gather(batch)` with the runner's pinned mask).
            None if !known => match unpacked
                .iter()
                .find(|(key, _)| *key == arg)
                .and_then(|(_, ty)| *ty)
            {
                Some(ty) => pass(host, key, Some(ty)),
                // A media processor's are host data (`grid_thw = kwargs.get("img_grid_thw")`
                // handed to a rope index).
                None if from_processor => pass(host, key, Some(Ty::CpuTensor)),
                // A value of unknown type says nothing of where a tensor parameter lives: the
                // sites that pass host tensors decide.
                None if param.tensor => {}
                None => pass(host, key, None),
            },
            None => pass(host, key, None),
        }
    }
    // A `None` passed says nothing of the parameter's memory: the code that reads it as a
    // tensor cannot run with it, so what the other sites pass decides.
    let none = |arg: &ArgKey| {
        site.constants.as_ref().is_some_and(|c| {
            c.args
                .iter()
                .any(|(key, value)| key == arg && *value == Const::None)
        })
    };
    for (arg, ty) in site.other_args.iter().filter(|(_, ty)| *ty != Ty::Unknown) {
        if none(arg) {
            continue;
        }
        if let Some(param) = param_of(function, bound, arg) {
            pass(host, (callee, param.name.as_str()), Some(*ty));
        }
    }
}
