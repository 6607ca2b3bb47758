//! What other modules' functions return, gathered from the phase-1 summaries for phase 3:
//! tensor, host-tensor and capture-flag returns, and helpers that return unwritten buffers,
//! under their qualified names and the names other modules import them as.

use crate::summary::ModuleSummary;
use crate::ExternalReturns;

/// What other modules' functions return, as far as a module's check can use it.
#[derive(Default)]
pub(super) struct ExternalFacts {
    /// Tensor, host-tensor and capture-flag returns by qualified name.
    pub(super) returns: ExternalReturns,
    /// Functions whose every return is an uninitialised buffer, by qualified name.
    pub(super) uninitialized: rustc_hash::FxHashSet<String>,
    /// Functions that keep host data on the host, by qualified name.
    pub(super) host_preserving: rustc_hash::FxHashSet<String>,
    /// The positions of the tuples functions return, where one says where a tensor lives.
    pub(super) tuple_returns: crate::ExternalTupleReturns,
    /// Input fields the project's processors keep on the host (phase 1 found them).
    pub(super) host_fields: rustc_hash::FxHashSet<String>,
    /// Environment flags the project declares off by default (phase 1 found them).
    pub(super) off_flags: rustc_hash::FxHashSet<String>,
    /// Media record classes the project declares (phase 1 found them).
    pub(super) records: rustc_hash::FxHashSet<String>,
}

impl ExternalFacts {
    pub(super) fn knows(&self, qualified: &str) -> bool {
        self.returns.contains_key(qualified)
            || self.uninitialized.contains(qualified)
            || self.tuple_returns.contains_key(qualified)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.returns.is_empty() && self.uninitialized.is_empty() && self.tuple_returns.is_empty()
    }
}

pub(super) fn external_returns(summaries: &[ModuleSummary]) -> ExternalFacts {
    let mut table = ExternalReturns::default();
    let mut uninitialized = rustc_hash::FxHashSet::default();
    let mut host_preserving = rustc_hash::FxHashSet::default();
    let mut tuples = crate::ExternalTupleReturns::default();
    for summary in summaries {
        let Some(module) = &summary.module else {
            continue;
        };
        for function in &summary.functions {
            let known = function.returns.is_tensor_like()
                || function.returns.is_host_tensor()
                || function.returns == crate::semantic::Ty::CaptureFlag;
            let module_level = function.class.is_none() && !function.qualname.contains('.');
            if module_level && known {
                table.insert(format!("{module}.{}", function.qualname), function.returns);
            }
            if module_level && function.returns_uninitialized {
                uninitialized.insert(format!("{module}.{}", function.qualname));
            }
            if module_level && known && function.host_preserving {
                host_preserving.insert(format!("{module}.{}", function.qualname));
            }
            if let (true, Some(elements)) = (module_level, &function.tuple_returns) {
                tuples.insert(format!("{module}.{}", function.qualname), elements.clone());
            }
        }
    }
    let mut aliases = Vec::new();
    let mut uninitialized_aliases = Vec::new();
    let mut preserving_aliases = Vec::new();
    let mut tuple_aliases = Vec::new();
    for import in crate::summary::import_aliases(summaries) {
        if let Some(ty) = table.get(import.qualified) {
            aliases.push((import.alias(), *ty));
        }
        if uninitialized.contains(import.qualified) {
            uninitialized_aliases.push(import.alias());
        }
        if host_preserving.contains(import.qualified) {
            preserving_aliases.push(import.alias());
        }
        if let Some(elements) = tuples.get(import.qualified) {
            tuple_aliases.push((import.alias(), elements.clone()));
        }
    }
    table.extend(aliases);
    uninitialized.extend(uninitialized_aliases);
    host_preserving.extend(preserving_aliases);
    tuples.extend(tuple_aliases);
    ExternalFacts {
        returns: table,
        uninitialized,
        host_preserving,
        tuple_returns: tuples,
        host_fields: rustc_hash::FxHashSet::default(),
        off_flags: rustc_hash::FxHashSet::default(),
        records: rustc_hash::FxHashSet::default(),
    }
}
