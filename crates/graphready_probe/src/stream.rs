//! One harness process's protocol stream: what it said so far, and the phases it leaves behind
//! when it ends — normally, crashed, killed at the time limit, hung, or stopped for another
//! rank's sake.

use crate::crash::crash_event;
use crate::driver::ProbeError;
use crate::protocol::{Message, PHASES, PROTOCOL_VERSION};
use crate::ranks::HangReport;
use crate::report::{Environment, Outcome, PhaseResult, PhaseStatus};
use std::process::ExitStatus;
use std::time::Duration;

/// How a harness process ended.
#[derive(Debug, Clone)]
pub(crate) enum Ending {
    Exited(ExitStatus),
    /// The bucket's time limit ran out; it was killed.
    TimedOut,
    /// It stayed in a phase this long after another rank had finished it; it was killed.
    Hung(Duration),
    /// Killed because another rank hung, crashed or ran out of time.
    Stopped(String),
}

#[derive(Default)]
pub(crate) struct Stream {
    pub hello: bool,
    pub harness: Option<String>,
    pub python: Option<String>,
    pub environment: Option<Environment>,
    /// `cuda:N`, from the environment's `distributed` object.
    pub device: Option<String>,
    pub env_error: Option<(String, String)>,
    pub running: Option<String>,
    /// A phase that started since the last look (for progress).
    pub started: Option<String>,
    pub phases: Vec<PhaseResult>,
    pub done: bool,
    pub hang: Option<HangReport>,
}

/// What one process leaves for the report.
pub(crate) struct Finished {
    pub outcome: Outcome,
    pub phases: Vec<PhaseResult>,
    pub stderr_tail: Option<String>,
}

impl Stream {
    /// Results received (each phase's, and `done`): how far the process got.
    pub fn progress(&self) -> usize {
        self.phases.len() + usize::from(self.done)
    }

    pub fn handle(&mut self, line: &str) -> Result<(), ProbeError> {
        let message = Message::parse(line).map_err(|err| ProbeError::Protocol {
            line: line.chars().take(300).collect(),
            error: err.to_string(),
        })?;
        match message {
            None | Some(Message::Unknown) => {}
            Some(Message::Hello {
                protocol,
                harness,
                python,
                ..
            }) => {
                if protocol != PROTOCOL_VERSION {
                    return Err(ProbeError::ProtocolVersion {
                        found: protocol,
                        expected: PROTOCOL_VERSION,
                    });
                }
                self.hello = true;
                self.harness = harness;
                self.python = python;
            }
            Some(Message::Environment {
                environment,
                distributed,
            }) => {
                self.device = distributed.and_then(|d| d.device);
                self.environment = Some(environment);
            }
            Some(Message::EnvError { kind, message }) => self.env_error = Some((kind, message)),
            Some(Message::PhaseStart { phase, .. }) => {
                self.started = Some(phase.clone());
                self.running = Some(phase);
            }
            Some(Message::Phase { result, .. }) => {
                if self.running.as_deref() == Some(result.phase.as_str()) {
                    self.running = None;
                }
                self.phases.push(*result);
            }
            Some(Message::Done { .. }) => self.done = true,
            Some(Message::HangReport(report)) => self.hang = Some(*report),
        }
        Ok(())
    }

    /// The phases and outcome of a process that ended: the running phase takes the ending's
    /// status (with the crash's stack or the hang report as an event), phases never reached
    /// are `not_run`.
    pub fn finish(self, ending: Ending, timeout: Duration, stderr: String) -> Finished {
        let mut phases = self.phases;
        let running = self.running;
        let hang_event = self.hang.as_ref().map(HangReport::event);
        let synthetic = |status: PhaseStatus, message: String| {
            running.as_deref().map(|phase| {
                let mut result = PhaseResult::synthetic(phase, status, message);
                result.events.extend(hang_event.clone());
                result
            })
        };
        let (outcome, died) = match ending {
            Ending::Exited(_) if self.done => (Outcome::Completed, None),
            Ending::Exited(status) => {
                let (exit_code, signal) = exit_parts(status);
                let what = describe_exit(exit_code, signal);
                let died = running.as_deref().map(|phase| {
                    let mut result = PhaseResult::synthetic(
                        phase,
                        PhaseStatus::Crashed,
                        format!("the harness {what} while this phase ran"),
                    );
                    result.events.extend(crash_event(&stderr, &what));
                    result
                });
                let outcome = Outcome::Crashed {
                    phase: running.clone(),
                    exit_code,
                    signal,
                };
                (outcome, died)
            }
            Ending::TimedOut => (
                Outcome::TimedOut {
                    phase: running.clone(),
                    limit_secs: timeout.as_secs_f64(),
                },
                synthetic(
                    PhaseStatus::TimedOut,
                    format!(
                        "still running after the {:.0} s time limit; the harness was killed",
                        timeout.as_secs_f64()
                    ),
                ),
            ),
            Ending::Hung(waited) => (
                Outcome::Hung {
                    phase: running.clone(),
                    waited_secs: waited.as_secs_f64(),
                },
                synthetic(
                    PhaseStatus::Hung,
                    format!(
                        "this rank stayed in this phase {:.0} s after another rank finished it; the group was killed",
                        waited.as_secs_f64()
                    ),
                ),
            ),
            Ending::Stopped(reason) => (
                Outcome::Stopped {
                    phase: running.clone(),
                    reason: reason.clone(),
                },
                synthetic(PhaseStatus::Stopped, format!("stopped: {reason}")),
            ),
        };
        phases.extend(died);
        if outcome != Outcome::Completed {
            let reason = match (&outcome, &running) {
                (Outcome::Stopped { reason, .. }, _) => format!("not run: {reason}"),
                (_, Some(phase)) => format!("not run: the harness stopped during {phase}"),
                (_, None) => "not run: the harness stopped early".to_string(),
            };
            for name in PHASES {
                if !phases.iter().any(|p| p.phase == *name) {
                    phases.push(PhaseResult::synthetic(
                        name,
                        PhaseStatus::NotRun,
                        reason.clone(),
                    ));
                }
            }
        }
        let keep_stderr =
            outcome != Outcome::Completed || phases.iter().any(|p| p.status == PhaseStatus::Error);
        Finished {
            outcome,
            phases,
            stderr_tail: (keep_stderr && !stderr.trim().is_empty()).then_some(stderr),
        }
    }
}

fn exit_parts(status: ExitStatus) -> (Option<i32>, Option<i32>) {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        (status.code(), status.signal())
    }
    #[cfg(not(unix))]
    {
        (status.code(), None)
    }
}

pub(crate) fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (_, Some(signal)) => format!("was killed by signal {signal}{}", signal_name(signal)),
        (Some(code), None) => format!("exited with status {code} without finishing"),
        (None, None) => "stopped".to_string(),
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        10 => " (SIGUSR1)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}

/// How a process ended, in words (for a group stop's message).
pub(crate) fn ending_text(status: ExitStatus) -> String {
    let (code, signal) = exit_parts(status);
    describe_exit(code, signal)
}
