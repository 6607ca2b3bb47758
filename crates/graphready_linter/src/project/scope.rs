//! `--show-scope`: what the hot-path analysis found, as data (the CLI renders it as text or
//! JSON): entry points and why, eager breaks, configured names that matched nothing, and every
//! reachable function with its reach.

use crate::hot_path::{Entry, HotPath, NodeId};
use crate::summary::ModuleSummary;
use graphready_diagnostics::{ChainLink, Reach};
use serde::Serialize;

/// An entry point: the function, and why it is one.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeEntry {
    pub path: String,
    pub function: String,
    pub line: u32,
    pub reason: &'static str,
    /// The function that made this one an entry: the per-step code it calls, or the loop that
    /// calls it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
    /// Explicit entries (capture sites, markers, configuration) rather than default module
    /// forwards.
    pub explicit: bool,
}

/// A class, by the path of its module and its name there.
#[derive(Debug, Clone, Serialize)]
pub struct ScopeClass {
    pub path: String,
    pub class: String,
}

/// A function the hot path reaches.
#[derive(Debug, Clone, Serialize)]
pub struct ReachedFunction {
    pub path: String,
    /// Qualified inside its module: `Class.method`, `outer.inner`.
    pub function: String,
    /// The line of the `def`.
    pub line: u32,
    pub reach: Reach,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScopeReport {
    pub capture_entries: Vec<ScopeEntry>,
    pub step_entries: Vec<ScopeEntry>,
    pub eager: Vec<ChainLink>,
    /// Classes only code for devices without CUDA graphs builds: their methods are not
    /// followed.
    pub platform_only: Vec<ScopeClass>,
    /// Configured names (`entry-points`, `step-entry-points`, `eager`) that matched no function.
    pub unmatched: Vec<String>,
    /// Functions reached with capture reach, and with stall reach only.
    pub captured: usize,
    pub stalled: usize,
    pub functions: usize,
    pub files: usize,
    /// Call sites of reached functions that run several functions through the class
    /// hierarchy (overrides), the largest such fan-out, and the sites cut at the bound.
    pub dispatch: Dispatch,
    /// Every reached function, in path and line order.
    pub reached: Vec<ReachedFunction>,
}

/// Class-hierarchy dispatch among the resolved call sites.
#[derive(Debug, Clone, Serialize)]
pub struct Dispatch {
    pub call_sites: usize,
    pub largest: usize,
    pub capped: usize,
    pub bound: usize,
}

impl ScopeReport {
    pub(crate) fn new(hot: &HotPath, modules: &[ModuleSummary]) -> Self {
        let entry = |entry: &Entry| {
            let link = hot.index.link(entry.node);
            ScopeEntry {
                path: link.path,
                function: link.function,
                line: link.line,
                reason: entry.reason.describe(),
                via: entry
                    .via
                    .map(|node| hot.index.function(node).qualname.clone()),
                explicit: entry.reason.is_explicit(),
            }
        };
        let mut reached: Vec<(NodeId, Reach)> = hot.reached().collect();
        reached.sort_unstable_by_key(|(node, _)| *node);
        let reached = reached
            .into_iter()
            .map(|(node, reach)| {
                let link = hot.index.link(node);
                ReachedFunction {
                    path: link.path,
                    function: link.function,
                    line: link.line,
                    reach,
                }
            })
            .collect();
        ScopeReport {
            capture_entries: hot.capture_entries.iter().map(entry).collect(),
            step_entries: hot.step_entries.iter().map(entry).collect(),
            eager: hot.eager.iter().map(|node| hot.index.link(*node)).collect(),
            platform_only: hot
                .platform_only
                .iter()
                .map(|&class| ScopeClass {
                    path: modules[class.0].path.clone(),
                    class: hot.index.class_name(class).to_string(),
                })
                .collect(),
            unmatched: hot.unmatched.clone(),
            captured: hot.captured_count(),
            stalled: hot.stalled_count(),
            functions: modules.iter().map(|m| m.functions.len()).sum(),
            files: modules.len(),
            dispatch: hot.dispatch(),
            reached,
        }
    }
}
