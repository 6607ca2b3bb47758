//! A crash's stack from Python's faulthandler dump, so a segfault in user code still names its
//! line.

use crate::report::{Frame, RuntimeEvent};

/// A `crash` event from Python's faulthandler dump (`File "...", line N in f`, innermost first):
/// every frame but the harness's, located at the user's innermost frame.
pub fn crash_event(stderr: &str, what: &str) -> Option<RuntimeEvent> {
    let start = stderr.rfind("Fatal Python error")?;
    let stack: Vec<Frame> = probe_cut(
        stderr[start..]
            .lines()
            .skip_while(|line| !line.starts_with("Current thread") && !line.starts_with("Thread "))
            .skip(1)
            .take_while(|line| line.trim_start().starts_with("File "))
            .filter_map(parse_fault_frame),
    );
    let location = ["user", "library"]
        .iter()
        .find_map(|scope| stack.iter().find(|f| f.scope.as_deref() == Some(scope)))
        .cloned();
    Some(RuntimeEvent {
        kind: "crash".into(),
        what: stderr[start..]
            .lines()
            .next()
            .unwrap_or_default()
            .trim()
            .to_string(),
        message: format!("the harness {what}"),
        location,
        stack,
        count: 1,
        ranks: Vec::new(),
    })
}

/// The main thread's stack from faulthandler's dump of every thread (`faulthandler.register(
/// SIGUSR1, all_threads=True)`), innermost first, the harness's frames cut as in a crash: the
/// thread whose stack reaches the program's outermost frame, else the thread that took the
/// signal.
pub fn main_thread_stack(stderr: &str) -> Option<Vec<Frame>> {
    let mut threads: Vec<(bool, Vec<&str>)> = Vec::new();
    for line in stderr.lines() {
        let head = line.trim_start();
        if head.starts_with("Current thread ") || head.starts_with("Thread 0x") {
            threads.push((head.starts_with("Current"), Vec::new()));
        } else if let Some((_, frames)) = threads.last_mut() {
            if head.starts_with("File ") {
                frames.push(line);
            }
        }
    }
    let outermost = |frames: &Vec<&str>| {
        frames
            .last()
            .is_some_and(|l| l.ends_with(" in <module>") || l.ends_with(" in _run_module_as_main"))
    };
    let (_, lines) = threads
        .iter()
        .rev()
        .find(|(_, frames)| outermost(frames))
        .or_else(|| threads.iter().rev().find(|(current, _)| *current))?;
    Some(probe_cut(
        lines.iter().filter_map(|line| parse_fault_frame(line)),
    ))
}

/// The probe's wrappers around torch's functions (`python/graphready/frames.py`): a stack goes
/// through them to the user's frame.
pub const PASS_THROUGH: &[&str] = &["_graphready_sync_api", "_graphready_collective"];

/// The frames between the probe's leading hooks and its call into the step, its wrappers
/// left out (as `frames.select_frames` does).
fn probe_cut(frames: impl Iterator<Item = Frame>) -> Vec<Frame> {
    frames
        .filter(|f| !(f.scope.is_none() && PASS_THROUGH.contains(&f.function.as_str())))
        .skip_while(|frame| frame.scope.is_none())
        .take_while(|frame| frame.scope.is_some())
        .collect()
}

/// `  File "/path/x.py", line 15 in step`; the scope is `None` for the harness's own frames.
fn parse_fault_frame(line: &str) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once("\", line ")?;
    let (line_no, function) = rest.split_once(" in ")?;
    Some(Frame {
        path: path.to_string(),
        line: line_no.trim().parse().ok()?,
        function: function.trim().to_string(),
        scope: path_scope(path).map(str::to_string),
    })
}

/// The scope of a path as the harness would classify it (see `python/graphready/frames.py`).
fn path_scope(path: &str) -> Option<&'static str> {
    const HARNESS: &[&str] = &["graphready-probe-", "-packages/graphready/"];
    const FRAMEWORK: &[&str] = &["/torch/", "/triton/", "<frozen", "<string>"];
    if HARNESS.iter().any(|fragment| path.contains(fragment)) {
        return None;
    }
    if FRAMEWORK.iter().any(|fragment| path.contains(fragment)) {
        return Some("framework");
    }
    if path.contains("site-packages") || path.contains("dist-packages") {
        return Some("library");
    }
    if path.contains("/lib/python3") {
        return Some("framework");
    }
    Some("user")
}
