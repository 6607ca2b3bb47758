//! A call's arguments by what the caller knows of them: device tensors, host values, the
//! caller's own parameters passed on, literals, and how splats hide the rest.

use crate::semantic::{SemanticModel, Ty};
use crate::summary::{ArgKey, Const, Splat};
use ruff_python_ast::{self as ast, Expr};
use rustc_hash::FxHashMap;

/// An entry of a dict literal bound to a local: its string key and its value's type.
pub(super) type DictEntry = (Box<str>, Ty);

/// A call's arguments by what the caller knows of them.
pub(super) struct ArgTypes {
    pub(super) tensor: Vec<ArgKey>,
    /// Host values that are not tensors, with their types; [`Ty::Unknown`] for the rest.
    pub(super) other: Vec<(ArgKey, Ty)>,
    pub(super) splat: Splat,
    /// Arguments that are the caller's parameters, as received or a view of one (`lens[a:b]`),
    /// not known to be host values.
    pub(super) params: Vec<(ArgKey, Box<str>)>,
    /// Literals (`True`, `False`, `None`, numbers, strings), switches off as shipped (`False`)
    /// and devices naming the host (`"cpu"`).
    pub(super) consts: Vec<(ArgKey, Const)>,
    /// Locals of unknown type unpacked from a call's result: the call's offset and the
    /// position (see [`crate::summary::CallSite::unpacked_args`]).
    pub(super) unpacked: Vec<(ArgKey, u32, u8)>,
}

impl ArgTypes {
    /// Files an argument by what the caller knows of it: a device tensor, a host value (host
    /// tensors included: `schedule = torch.linspace(...)` passed on), or unknown.
    fn place(&mut self, key: ArgKey, ty: Ty) {
        match ty {
            Ty::Tensor => self.tensor.push(key),
            ty if ty.is_host() => self.other.push((key, ty)),
            _ => self.other.push((key, Ty::Unknown)),
        }
    }

    /// `splatted`: the types of the tuple local a `*name` argument spreads, when known;
    /// `dicts`: the function's dict locals, whose entries a `**name` argument spreads.
    pub(super) fn of(
        model: &SemanticModel,
        call: &ast::ExprCall,
        mut splatted: Option<&[Ty]>,
        dicts: Option<&FxHashMap<&str, Vec<DictEntry>>>,
    ) -> Self {
        let mut args = ArgTypes {
            tensor: Vec::new(),
            other: Vec::new(),
            splat: Splat::None,
            params: Vec::new(),
            consts: Vec::new(),
            unpacked: Vec::new(),
        };
        // Each argument with its type, filed once all are read (the closure holds `args`).
        let mut placed = Vec::new();
        let mut record = |key: ArgKey, value: &Expr| {
            // A switch off as shipped (`check=self.debug_mode`, or a local bound to one) passes
            // `False`.
            // A device naming the host (`torch.device("cpu")`, a local bound to `"cpu"`)
            // passes `"cpu"`.
            if let Some(value) = Const::of(value)
                .or_else(|| {
                    model
                        .off_by_default(value, &|_| false)
                        .then_some(Const::False)
                })
                .or_else(|| model.is_host_device(value).then(Const::host_device))
            {
                args.consts.push((key.clone(), value));
            }
            let ty = model.ty(value);
            // The parameter itself, or a view of it (`lens[start:end]`, `lens[i]`, a local
            // bound to one): memory where the parameter's is.
            if !ty.is_host() {
                if let Some(param) = model.parameter_viewed(value) {
                    args.params.push((key.clone(), param.into()));
                }
            }
            if let (Ty::Unknown, Expr::Name(name)) = (ty, value) {
                if let Some((offset, position)) = model.unpacked_from(name.id.as_str()) {
                    args.unpacked.push((key.clone(), offset, position));
                }
            }
            placed.push((key, ty));
        };
        let mut positional = false;
        let mut spread = Vec::new();
        let mut i = 0;
        for argument in &call.arguments.args {
            if matches!(argument, Expr::Starred(_)) {
                // A tuple local spread (`f(*inputs)` with `inputs = (a, b)`): its elements'
                // places; the positions after another splat are not known.
                let Some(types) = splatted.take() else {
                    positional = true;
                    break;
                };
                for &ty in types {
                    spread.push((ArgKey::Position(i), ty));
                    i += 1;
                }
                continue;
            }
            record(ArgKey::Position(i), argument);
            i += 1;
        }
        let (mut own_kwargs, mut mapping) = (false, false);
        for keyword in &call.arguments.keywords {
            match &keyword.arg {
                Some(name) => record(ArgKey::Keyword(name.as_str().into()), &keyword.value),
                None => match &keyword.value {
                    Expr::Name(name) if model.is_kwargs_parameter(name.id.as_str()) => {
                        own_kwargs = true;
                    }
                    // The dict's entries land where their keys say; keys set later may land
                    // anywhere, so the call stays a mapping splat.
                    Expr::Name(name) => {
                        if let Some(entries) = dicts.and_then(|d| d.get(name.id.as_str())) {
                            for (key, ty) in entries {
                                spread.push((ArgKey::Keyword(key.clone()), *ty));
                            }
                        }
                        mapping = true;
                    }
                    _ => mapping = true,
                },
            }
        }
        for (key, ty) in placed.into_iter().chain(spread) {
            args.place(key, ty);
        }
        args.splat = match (positional, own_kwargs, mapping) {
            (_, _, true) | (true, true, _) => Splat::Mapping,
            (false, true, false) => Splat::OwnKwargs,
            (true, false, false) => Splat::Positional,
            (false, false, false) => Splat::None,
        };
        args
    }
}
