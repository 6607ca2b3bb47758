//! Phase 1: every file on its own, and what the project's files declare for the others (input
//! fields kept on the host, environment flags off by default, media records), read first.

use super::file::{check_file, worth_checking, Preread};
use super::modules::PackageCache;
use super::{non_empty, Candidate, Options, Outcome};
use crate::project::SourceFile;
use crate::semantic::ProjectFacts;
use rayon::prelude::*;
use rustc_hash::FxHashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Phase 1: every file on its own. While discovery runs, every file is read, and those that
/// declare input fields (vLLM's multimodal processors) are scanned for the fields they keep on
/// the host (and those that keep flag registries or media records, for those); then every file
/// worth checking is checked from what was read, knowing them, so
/// that a model reads a field its processor in another module keeps on the host as a host
/// tensor, and passes it on as one. Returns the candidates in
/// discovery order, the outcomes (files that never mention `torch` have none), the discovery
/// time, and what the project declares (see [`Declared`]).
pub(super) fn phase1(
    options: &Options,
    discover: impl FnOnce(&mut dyn FnMut(SourceFile)) + Send,
) -> (Vec<Candidate>, Vec<Outcome>, Duration, Declared) {
    let started = Instant::now();
    let declared = std::sync::Mutex::new(FieldTally::default());
    // What the scan read, by candidate: the check below reads no file twice.
    let read = std::sync::Mutex::new(Vec::new());
    let mut candidates = Vec::new();
    let mut discovered = Duration::ZERO;
    rayon::scope(|scope| {
        let declared = &declared;
        let read = &read;
        let mut packages = PackageCache::default();
        let mut seen = rustc_hash::FxHashSet::default();
        discover(&mut |file: SourceFile| {
            if !seen.insert(file.path.clone()) {
                return;
            }
            let index = candidates.len();
            let path = file.path.clone();
            candidates.push(Candidate {
                module: packages.module_of(&file.path),
                file,
            });
            scope.spawn(move |_| {
                let Ok(bytes) = options.read(&path) else {
                    return;
                };
                if let Some(fields) = crate::field_declarations(&bytes) {
                    if let Ok(mut declared) = declared.lock() {
                        declared.kept.extend(fields.0);
                        declared.on_device.extend(fields.1);
                    }
                }
                if let Some(template) = super::file::template_of(&path, &bytes) {
                    if let Ok(mut declared) = declared.lock() {
                        declared.templates.insert(template);
                    }
                }
                if let Some(flags) = crate::env_flag_declarations(&bytes) {
                    if let Ok(mut declared) = declared.lock() {
                        declared.off_flags.extend(flags);
                    }
                }
                if let Some(records) = crate::record_declarations(&bytes) {
                    if let Ok(mut declared) = declared.lock() {
                        declared.records.extend(records);
                    }
                }
                let source = if worth_checking(&path, &bytes) {
                    Preread::Source(bytes)
                } else {
                    Preread::Skip
                };
                if let Ok(mut read) = read.lock() {
                    read.push((index, source));
                }
            });
        });
        discovered = started.elapsed();
    });
    let mut declared = declared.into_inner().unwrap_or_default();
    let off_flags = std::mem::take(&mut declared.off_flags);
    let templates = std::mem::take(&mut declared.templates);
    let records = std::mem::take(&mut declared.records);
    let host_fields = declared.host_fields();
    let facts = ProjectFacts {
        host_fields: non_empty(&host_fields),
        off_flags: non_empty(&off_flags),
        records: non_empty(&records),
        ..ProjectFacts::default()
    };
    let mut sources: Vec<Preread> = candidates.iter().map(|_| Preread::Unread).collect();
    for (index, source) in read.into_inner().unwrap_or_default() {
        sources[index] = source;
    }
    let outcomes = sources
        .into_par_iter()
        .zip(candidates.par_iter())
        .enumerate()
        .with_max_len(1)
        .filter_map(|(index, (source, candidate))| {
            let mut outcome = check_file(index, candidate, options, facts, None, true, source)?;
            outcome.analysis.summary.template = templates.contains(&candidate.file.path);
            Some(outcome)
        })
        .collect();
    let declared = Declared {
        host_fields,
        off_flags,
        records,
    };
    (candidates, outcomes, discovered, declared)
}

/// What the project's files declare, read before any is checked.
pub(super) struct Declared {
    /// Input fields kept on the host (see `crate::semantic::fields`).
    pub(super) host_fields: rustc_hash::FxHashSet<String>,
    /// Environment flags off by default (see `crate::semantic::env_flags`).
    pub(super) off_flags: rustc_hash::FxHashSet<String>,
    /// Media record classes and their declared names (see `crate::semantic::records`).
    pub(super) records: rustc_hash::FxHashSet<String>,
}

/// The input fields the project's processors declare, the environment flags its registries
/// declare off by default, and its media record classes.
#[derive(Default)]
struct FieldTally {
    kept: rustc_hash::FxHashSet<String>,
    on_device: rustc_hash::FxHashSet<String>,
    off_flags: rustc_hash::FxHashSet<String>,
    /// See [`Declared::records`].
    records: rustc_hash::FxHashSet<String>,
    /// The templates generated files name (see [`super::file::template_of`]).
    templates: FxHashSet<PathBuf>,
}

impl FieldTally {
    /// The fields kept on the host, less those any processor declares without `keep_on_cpu`
    /// (the same name meaning a device tensor elsewhere).
    fn host_fields(self) -> rustc_hash::FxHashSet<String> {
        let on_device = self.on_device;
        self.kept
            .into_iter()
            .filter(|field| !on_device.contains(field))
            .collect()
    }
}
