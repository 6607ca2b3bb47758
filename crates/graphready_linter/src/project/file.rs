//! Reading and checking one file, in phase 1 and again in phase 3.

use super::{display_path, file_rules, Candidate, Options, Outcome};
use crate::noqa;
use crate::semantic::ProjectFacts;
use crate::FileAnalysis;
use ruff_text_size::TextRange;
use std::path::Path;

/// A file's content as phase 1's scan left it.
pub(super) enum Preread {
    /// Read, and worth checking.
    Source(Vec<u8>),
    /// Read, and not worth checking (see [`worth_checking`]).
    Skip,
    /// Not read (an error, reported when the check reads it again).
    Unread,
}

/// Files that never mention `torch` hold no hazard; package `__init__.py` files still count,
/// for the re-exports the call graph follows through them, and so do processors that declare
/// fields kept on the host, for the modules that read them.
pub(super) fn worth_checking(path: &Path, bytes: &[u8]) -> bool {
    path.file_name().is_some_and(|name| name == "__init__.py")
        || crate::mentions_torch(bytes)
        || memchr::memmem::find(bytes, b"keep_on_cpu").is_some()
}

/// Reads (unless `source` holds what an earlier read found) and checks one file. `None` for a
/// file not worth checking. Without `summarise` (phase 3), the outcome's summary is empty.
pub(super) fn check_file(
    index: usize,
    candidate: &Candidate,
    options: &Options,
    facts: ProjectFacts,
    only: Option<&rustc_hash::FxHashSet<String>>,
    summarise: bool,
    source: Preread,
) -> Option<Outcome> {
    let path = display_path(&candidate.file.path);
    let unreadable = |message: String| Outcome {
        candidate: index,
        path: path.clone(),
        analysis: FileAnalysis {
            diagnostics: vec![crate::unreadable("", &path, TextRange::default(), message)],
            ..FileAnalysis::default()
        },
        directives: Vec::new(),
        used: Vec::new(),
        bytes: 0,
    };
    let bytes = match source {
        Preread::Source(bytes) => bytes,
        Preread::Skip => return None,
        Preread::Unread => match options.read(&candidate.file.path) {
            Ok(bytes) if worth_checking(&candidate.file.path, &bytes) => bytes,
            Ok(_) => return None,
            Err(err) => return Some(unreadable(format!("file could not be read: {err}"))),
        },
    };
    let source = match String::from_utf8(bytes) {
        Ok(source) => source,
        Err(err) => {
            return Some(unreadable(format!(
                "file is not valid UTF-8 (invalid byte at offset {})",
                err.utf8_error().valid_up_to()
            )))
        }
    };
    let settings = &options.settings[candidate.file.settings];
    let rules = file_rules(options, &candidate.file);
    let analysis = crate::analyze(
        &source,
        &path,
        &candidate.module,
        &crate::FileSettings { settings, rules },
        facts,
        only,
        summarise,
    );
    let judge = options.unused_suppressions && options.reports(&candidate.file.path);
    // Phase 3 (`external`) adds the suppressions it used to phase 1's comments.
    let directives = if judge && facts.returns.is_none() {
        noqa::directives(&source)
    } else {
        Vec::new()
    };
    let used = if judge {
        analysis
            .suppressed
            .iter()
            .map(|s| (s.diagnostic.span.start.line, s.diagnostic.code.clone()))
            .collect()
    } else {
        Vec::new()
    };
    Some(Outcome {
        candidate: index,
        path,
        analysis,
        directives,
        used,
        bytes: source.len(),
    })
}
