//! Who caused a device-side assert in a poisoning phase: the poison or the step?
//!
//! The uninitialised-memory phase fills fresh memory with NaN / integer max, and row isolation
//! writes hostile values into pad rows. Either can make a step index out of range and trip a
//! device assert, which leaves the CUDA context unusable, so the bucket is probed again in a
//! fresh process (`--rerun-from PHASE`) with that phase run without poisoning. No assert then:
//! the poison caused it, which is itself the finding (the step reads memory it never wrote, or
//! pad rows reach the real ones). An assert again: the step triggers it by itself.

use crate::protocol::{PHASES, POISONING_PHASES};
use crate::report::{BucketReport, Outcome, PhaseStatus, Rerun};

/// The first poisoning phase that lost the context while poisoning and was not re-run yet.
pub fn needs_rerun(bucket: &BucketReport) -> Option<String> {
    bucket
        .phases
        .iter()
        .find(|p| {
            p.context_lost
                && p.poisoning
                && p.rerun.is_none()
                && POISONING_PHASES.contains(&p.phase.as_str())
        })
        .map(|p| p.phase.clone())
}

/// Fold the re-run into the original bucket: the asserting phase gets the verdict, the phases
/// after it (skipped for the lost context) take the re-run's results.
pub fn merge_rerun(original: &mut BucketReport, phase: &str, rerun: BucketReport) {
    let Some(index) = original.phases.iter().position(|p| p.phase == phase) else {
        return;
    };
    let again = rerun.phase(phase);
    let verdict = match again {
        Some(result) => Rerun {
            status: result.status,
            message: result.message.clone(),
            poison_caused_it: !result.context_lost
                && matches!(
                    result.status,
                    PhaseStatus::Pass | PhaseStatus::Fail | PhaseStatus::Inconclusive
                ),
        },
        None => Rerun {
            status: PhaseStatus::NotRun,
            message: Some("the re-run never reached this phase".into()),
            poison_caused_it: false,
        },
    };
    // The harness's own note on the lost context is answered by the verdict below.
    let asserted = original.phases[index]
        .message
        .as_deref()
        .unwrap_or_default()
        .split("; the CUDA context")
        .next()
        .unwrap_or_default()
        .to_string();
    let result = &mut original.phases[index];
    if verdict.poison_caused_it {
        result.status = PhaseStatus::Fail;
        result.message = Some(format!("{} ({asserted})", poison_explanation(phase)));
    } else if again.is_some_and(|r| r.context_lost) {
        result.message = Some(format!(
            "{asserted}; re-run without poisoning: it asserts again, so the step itself triggers it"
        ));
    } else {
        result.message = Some(format!(
            "{asserted}; re-run without poisoning: {} ({}), so who caused the assert is unknown",
            verdict.status.as_str(),
            verdict.message.as_deref().unwrap_or("no message")
        ));
    }
    result.rerun = Some(verdict);
    take_later_phases(original, phase, rerun);
}

/// The phases after `phase` (skipped for the lost context) take the re-run's results. Alone,
/// for a rank of a group that did not assert itself but stopped its CUDA work with the others.
pub fn take_later_phases(original: &mut BucketReport, phase: &str, rerun: BucketReport) {
    let later = |name: &str| {
        let position = |n: &str| PHASES.iter().position(|p| *p == n);
        matches!((position(name), position(phase)), (Some(a), Some(b)) if a > b)
    };
    for slot in original.phases.iter_mut().filter(|p| later(&p.phase)) {
        if let Some(fresh) = rerun.phases.iter().find(|p| p.phase == slot.phase) {
            *slot = fresh.clone();
        }
    }
    if rerun.outcome != Outcome::Completed {
        original.outcome = rerun.outcome;
        original.stderr_tail = rerun.stderr_tail;
    }
}

fn poison_explanation(phase: &str) -> &'static str {
    match phase {
        "uninitialized" => {
            "a device-side assert fires only while uninitialised memory is filled with NaN / \
             integer max, and the step runs to the end without the fill: it reads memory it \
             never wrote (as an index or a bound, say)"
        }
        "row_isolation" => {
            "a device-side assert fires only while the pad rows hold hostile values, and the step \
             runs to the end with neutral ones: pad rows reach a bounds-checked read"
        }
        _ => "a device-side assert fires only while this phase poisons memory",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::PhaseResult;

    fn bucket(statuses: &[(&str, PhaseStatus)]) -> BucketReport {
        BucketReport {
            bucket: 1,
            outcome: Outcome::Completed,
            phases: statuses
                .iter()
                .map(|(name, status)| PhaseResult::synthetic(name, *status, name.to_string()))
                .collect(),
            stderr_tail: None,
            ranks: Vec::new(),
            group_stop: None,
        }
    }

    fn asserted(mut report: BucketReport, phase: &str) -> BucketReport {
        let p = report.phases.iter_mut().find(|p| p.phase == phase).unwrap();
        p.status = PhaseStatus::Error;
        p.message = Some("AcceleratorError: device-side assert triggered".into());
        p.context_lost = true;
        p.poisoning = true;
        report
    }

    #[test]
    fn the_poison_caused_it_when_the_rerun_passes() {
        let original = asserted(
            bucket(&[
                ("replay", PhaseStatus::Pass),
                ("uninitialized", PhaseStatus::Error),
                ("timing", PhaseStatus::Skipped),
            ]),
            "uninitialized",
        );
        assert_eq!(needs_rerun(&original).as_deref(), Some("uninitialized"));
        let rerun = bucket(&[
            ("replay", PhaseStatus::Skipped),
            ("uninitialized", PhaseStatus::Pass),
            ("timing", PhaseStatus::Pass),
        ]);
        let mut merged = original;
        merge_rerun(&mut merged, "uninitialized", rerun);
        let phase = merged.phase("uninitialized").unwrap();
        assert_eq!(phase.status, PhaseStatus::Fail);
        assert!(phase.rerun.as_ref().unwrap().poison_caused_it);
        assert!(phase
            .message
            .as_deref()
            .unwrap()
            .contains("reads memory it never wrote"));
        assert_eq!(merged.phase("timing").unwrap().status, PhaseStatus::Pass);
        assert_eq!(merged.phase("replay").unwrap().status, PhaseStatus::Pass);
        assert_eq!(needs_rerun(&merged), None, "each phase is re-run once");
    }

    #[test]
    fn the_step_caused_it_when_the_rerun_asserts_again() {
        let original = asserted(
            bucket(&[
                ("row_isolation", PhaseStatus::Error),
                ("uninitialized", PhaseStatus::Skipped),
            ]),
            "row_isolation",
        );
        let mut rerun = bucket(&[
            ("row_isolation", PhaseStatus::Error),
            ("uninitialized", PhaseStatus::Skipped),
        ]);
        rerun.phases[0].context_lost = true;
        let mut merged = original;
        merge_rerun(&mut merged, "row_isolation", rerun);
        let phase = merged.phase("row_isolation").unwrap();
        assert_eq!(phase.status, PhaseStatus::Error);
        assert!(!phase.rerun.as_ref().unwrap().poison_caused_it);
        assert!(phase
            .message
            .as_deref()
            .unwrap()
            .ends_with("so the step itself triggers it"));
    }

    #[test]
    fn an_assert_without_poisoning_is_not_re_run() {
        let mut original = asserted(bucket(&[("warmup", PhaseStatus::Error)]), "warmup");
        assert_eq!(needs_rerun(&original), None);
        original.phases[0].phase = "uninitialized".into();
        original.phases[0].poisoning = false;
        assert_eq!(needs_rerun(&original), None);
    }
}
