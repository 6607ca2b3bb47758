//! The text of a group of ranks: why it was stopped, and where each rank was.

use super::{frame_text, write_stack, FrameDisplay};
use crate::ranks::{GroupStop, RankReport};
use crate::report::{Frame, Outcome};
use std::fmt::Write as _;
use std::path::Path;

/// Why the group was stopped, then where each rank was: what it waited on, its last
/// collective, and its stack.
pub(super) fn render_group_stop(
    out: &mut String,
    stop: &GroupStop,
    ranks: &[RankReport],
    base: &Path,
    frames: FrameDisplay,
) {
    let cause = match stop.cause.as_str() {
        "hang" => "HANG",
        "crash" => "CRASH",
        _ => "TIME LIMIT",
    };
    let _ = writeln!(
        out,
        "  {cause} after {:.0} s: {}",
        stop.after_secs, stop.message
    );
    for rank in ranks {
        let state = match &rank.outcome {
            Outcome::Completed => "finished".to_string(),
            Outcome::Hung { phase, .. } => format!("HUNG in {}", phase.as_deref().unwrap_or("?")),
            Outcome::TimedOut { phase, .. } => {
                format!("TIMED OUT in {}", phase.as_deref().unwrap_or("?"))
            }
            Outcome::Crashed { phase, .. } => {
                format!("CRASHED in {}", phase.as_deref().unwrap_or("start-up"))
            }
            Outcome::Stopped { phase, .. } => match phase {
                Some(phase) => format!("stopped in {phase}"),
                None => "stopped between phases".to_string(),
            },
        };
        let _ = write!(out, "    rank {}: {state}", rank.rank);
        let Some(hang) = &rank.hang else {
            out.push('\n');
            continue;
        };
        if let Some(waiting) = &hang.waiting {
            let _ = write!(out, "; {waiting}");
        }
        out.push('\n');
        match &hang.last_collective {
            Some(call) => {
                let at = call
                    .location
                    .as_ref()
                    .map(|l| format!(" at {}", frame_text(l, base)))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "        last collective: {} #{} in {}{at}",
                    call.what, call.seq, call.phase
                );
            }
            None if hang.source == "watchdog" => {
                let _ = writeln!(out, "        last collective: none issued");
            }
            None => {}
        }
        let shown: Vec<&Frame> = match frames {
            FrameDisplay::All => hang.stack.iter().collect(),
            FrameDisplay::User => hang.stack.iter().take(3).collect(),
        };
        write_stack(out, shown.iter().copied(), base);
        if hang.stack.len() > shown.len() {
            let _ = writeln!(
                out,
                "               ... {} more frame(s) (--frames all)",
                hang.stack.len() - shown.len()
            );
        }
    }
}
