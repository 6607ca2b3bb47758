//! Runs the harness processes of one bucket — one, or one per rank — and watches them.
//!
//! The watchdog, per rank:
//! - a rank that stays in a phase `hang_timeout` after another rank finished it is hung (the
//!   ranks agree after every phase, so a finished rank waits for it and nothing can move on);
//! - a rank that exits before finishing stops the others (they would wait for it forever);
//! - the bucket's time limit stops every rank still running.
//!
//! Stopping asks every live rank for its hang report (`dump` on stdin, answered by the rank's
//! watchdog thread with the phase, the last collective and the main thread's stack), falls back
//! to faulthandler's thread dump (SIGUSR1) for a rank that does not answer, then kills every
//! rank's process group.

use crate::crash::main_thread_stack;
use crate::driver::{Launcher, ProbeError, ProbeOptions};
use crate::protocol::DUMP_REQUEST;
use crate::ranks::HangReport;
use crate::report::Frame;
use crate::stream::{ending_text, Ending, Stream};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How much of each child's stderr is kept for messages and the report.
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// How often the watchdog looks at the children.
const POLL: Duration = Duration::from_millis(100);
/// How long a stopped rank gets to answer `dump`.
const DUMP_WAIT: Duration = Duration::from_secs(2);
/// How long faulthandler gets to write its dump after SIGUSR1.
const FAULT_DUMP_WAIT: Duration = Duration::from_millis(500);
/// A process that exited is over once its stdout ends, or this long after it exited (something
/// it started may hold stdout open).
const EOF_WAIT: Duration = Duration::from_millis(300);
/// A process that said `done` but does not exit (a teardown that hangs) is killed after this.
const EXIT_GRACE: Duration = Duration::from_secs(10);

/// One process to start: its rank (None for the single-process probe) and environment.
pub(crate) struct Member {
    pub rank: Option<u32>,
    pub env: Vec<(OsString, OsString)>,
}

/// What one process left.
pub(crate) struct MemberRun {
    pub rank: Option<u32>,
    pub stream: Stream,
    pub ending: Ending,
    pub stderr: String,
}

/// Why the group was stopped early.
pub(crate) struct Stop {
    /// `hang`, `crash` or `time_limit`.
    pub cause: &'static str,
    pub ranks: Vec<u32>,
    pub phase: Option<String>,
    pub after: Duration,
    /// For a hang: how long the culprits stayed behind.
    pub waited: Duration,
}

pub(crate) struct GroupRun {
    pub members: Vec<MemberRun>,
    pub stop: Option<Stop>,
}

enum Event {
    Line(usize, String),
    Eof(usize),
}

struct Proc {
    rank: Option<u32>,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<Vec<u8>>>,
    stream: Stream,
    eof: bool,
    status: Option<ExitStatus>,
    exited_at: Option<Instant>,
    done_at: Option<Instant>,
    /// Since when it has had fewer results than the most advanced rank, and how many.
    behind: Option<(Instant, usize)>,
    ending: Option<Ending>,
    signalled: bool,
}

impl Proc {
    fn ended(&self) -> bool {
        self.status.is_some()
            && (self.eof || self.exited_at.is_some_and(|t| t.elapsed() > EOF_WAIT))
    }
}

/// Start the members and watch them until every one ended or the group was stopped.
pub(crate) fn run_group(
    launcher: &Launcher,
    options: &ProbeOptions,
    bucket: u32,
    members: Vec<Member>,
    extra: &[OsString],
    progress: &mut dyn FnMut(&str),
) -> Result<GroupRun, ProbeError> {
    let (sender, events) = mpsc::channel();
    let mut procs: Vec<Proc> = Vec::new();
    for (index, member) in members.into_iter().enumerate() {
        let spawned = launcher
            .command(&options.target, bucket, extra, &member.env)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(source) => {
                procs.iter_mut().for_each(|p| kill(&mut p.child));
                return Err(ProbeError::Spawn {
                    program: launcher.program.to_string_lossy().into_owned(),
                    source,
                });
            }
        };
        read_lines(index, &mut child, sender.clone());
        procs.push(Proc {
            rank: member.rank,
            stdin: child.stdin.take(),
            stderr: collect_stderr(&mut child),
            child,
            stream: Stream::default(),
            eof: false,
            status: None,
            exited_at: None,
            done_at: None,
            behind: None,
            ending: None,
            signalled: false,
        });
    }
    drop(sender);
    let started = Instant::now();
    let mut watch = Watch {
        program: launcher.program.to_string_lossy().into_owned(),
        procs,
        events,
        started,
        deadline: started + options.timeout,
        hang_after: options.hang_timeout.min(options.timeout),
    };
    let stop = watch.run(progress)?;
    watch.finish(stop)
}

struct Watch {
    program: String,
    procs: Vec<Proc>,
    events: Receiver<Event>,
    started: Instant,
    deadline: Instant,
    hang_after: Duration,
}

impl Watch {
    fn run(&mut self, progress: &mut dyn FnMut(&str)) -> Result<Option<Stop>, ProbeError> {
        let mut checked = Instant::now();
        loop {
            match self.events.recv_timeout(POLL) {
                Ok(event) => {
                    if let Some(0) = self.take(event)? {
                        if let Some(phase) = self.procs[0].stream.started.take() {
                            progress(&phase);
                        }
                    }
                    // A chatty child never keeps the watchdog from looking.
                    if checked.elapsed() < POLL {
                        continue;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => thread::sleep(Duration::from_millis(10)),
            }
            checked = Instant::now();
            if let Some(stop) = self.check()? {
                self.stop(&stop);
                return Ok(Some(stop));
            }
            if self.procs.iter().all(Proc::ended) {
                return Ok(None);
            }
        }
    }

    /// Handle one event; the index of the process whose line it was.
    fn take(&mut self, event: Event) -> Result<Option<usize>, ProbeError> {
        match event {
            Event::Line(index, line) => {
                if let Err(err) = self.procs[index].stream.handle(&line) {
                    self.kill_all();
                    return Err(with_stderr(err, &self.procs[index].stderr));
                }
                Ok(Some(index))
            }
            Event::Eof(index) => {
                self.procs[index].eof = true;
                Ok(None)
            }
        }
    }

    /// Environment errors, and the watchdog's rules. A stop, or nothing to do yet.
    fn check(&mut self) -> Result<Option<Stop>, ProbeError> {
        let now = Instant::now();
        for proc in &mut self.procs {
            if proc.status.is_none() {
                if let Some(status) = proc.child.try_wait()? {
                    proc.status = Some(status);
                    proc.exited_at = Some(now);
                }
            }
        }
        // The run cannot start: the lowest rank's reason (the others wait in the rendezvous).
        if let Some(index) = self.procs.iter().position(|p| p.stream.env_error.is_some()) {
            self.kill_all();
            let proc = &mut self.procs[index];
            let (kind, message) = proc.stream.env_error.take().unwrap_or_default();
            return Err(ProbeError::Environment {
                kind,
                message,
                stderr: stderr_tail(&proc.stderr),
            });
        }
        if let Some(index) = self.procs.iter().position(|p| p.ended() && !p.stream.hello) {
            self.kill_all();
            let proc = &self.procs[index];
            return Err(ProbeError::NoHello {
                program: self.program.clone(),
                status: proc.status.map(|s| s.to_string()).unwrap_or_default(),
                stderr: stderr_tail(&proc.stderr),
            });
        }
        for proc in &mut self.procs {
            if proc.stream.done && proc.status.is_none() {
                let since = *proc.done_at.get_or_insert(now);
                if now.duration_since(since) > EXIT_GRACE {
                    kill(&mut proc.child);
                }
            }
        }
        let live = self.procs.iter().filter(|p| !p.ended()).count();
        if live == 0 {
            return Ok(None);
        }
        if let Some(gone) = self
            .procs
            .iter()
            .find(|p| p.ended() && !p.stream.done && p.rank.is_some())
        {
            return Ok(Some(Stop {
                cause: "crash",
                ranks: gone.rank.into_iter().collect(),
                phase: gone.stream.running.clone(),
                after: self.started.elapsed(),
                waited: Duration::ZERO,
            }));
        }
        if now >= self.deadline {
            let running: Vec<&Proc> = self
                .procs
                .iter()
                .filter(|p| !p.ended() && !p.stream.done)
                .collect();
            return Ok(Some(Stop {
                cause: "time_limit",
                ranks: running.iter().filter_map(|p| p.rank).collect(),
                phase: running.iter().find_map(|p| p.stream.running.clone()),
                after: self.started.elapsed(),
                waited: self.deadline.duration_since(self.started),
            }));
        }
        Ok(self.diverged(now))
    }

    /// A rank behind the most advanced one for `hang_after` is hung.
    fn diverged(&mut self, now: Instant) -> Option<Stop> {
        if self.procs.len() < 2 {
            return None;
        }
        let most = self
            .procs
            .iter()
            .map(|p| p.stream.progress())
            .max()
            .unwrap_or(0);
        for proc in &mut self.procs {
            let progress = proc.stream.progress();
            if proc.ended() || progress >= most {
                proc.behind = None;
            } else if proc.behind.is_none_or(|(_, at)| at != progress) {
                proc.behind = Some((now, progress));
            }
        }
        let stuck: Vec<&Proc> = self
            .procs
            .iter()
            .filter(|p| {
                p.behind
                    .is_some_and(|(since, _)| now.duration_since(since) >= self.hang_after)
            })
            .collect();
        let first = stuck.first()?;
        Some(Stop {
            cause: "hang",
            ranks: stuck.iter().filter_map(|p| p.rank).collect(),
            phase: first.stream.running.clone(),
            after: self.started.elapsed(),
            waited: first
                .behind
                .map_or(Duration::ZERO, |(since, _)| now.duration_since(since)),
        })
    }

    /// Ask every live process for its hang report, fall back to faulthandler, then kill them.
    fn stop(&mut self, stop: &Stop) {
        let reason = stop_reason(stop, &self.procs);
        // A rank that said `done` finished its work; it is only killed.
        for proc in self
            .procs
            .iter_mut()
            .filter(|p| !p.ended() && !p.stream.done)
        {
            proc.ending = Some(match stop.cause {
                "time_limit" => Ending::TimedOut,
                "hang" if proc.rank.is_some_and(|r| stop.ranks.contains(&r)) => {
                    Ending::Hung(stop.waited)
                }
                _ => Ending::Stopped(reason.clone()),
            });
            if let Some(stdin) = proc.stdin.as_mut() {
                let _ = writeln!(stdin, "{DUMP_REQUEST}").and_then(|()| stdin.flush());
            }
        }
        self.pump_until(DUMP_WAIT, |procs| {
            procs
                .iter()
                .all(|p| p.ending.is_none() || p.stream.hang.is_some() || p.ended())
        });
        let mut signalled = false;
        for proc in &mut self.procs {
            if proc.ending.is_some() && proc.stream.hang.is_none() && !proc.ended() {
                signal(&proc.child, SIGUSR1);
                proc.signalled = true;
                signalled = true;
            }
        }
        if signalled {
            self.pump_until(FAULT_DUMP_WAIT, |_| false);
        }
        self.kill_all();
        self.pump_until(Duration::from_millis(500), |procs| {
            procs.iter().all(|p| p.eof)
        });
    }

    fn pump_until(&mut self, limit: Duration, enough: impl Fn(&[Proc]) -> bool) {
        let until = Instant::now() + limit;
        while !enough(&self.procs) {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self
                .events
                .recv_timeout(left.min(Duration::from_millis(50)))
            {
                Ok(Event::Line(index, line)) => {
                    let _ = self.procs[index].stream.handle(&line);
                }
                Ok(Event::Eof(index)) => self.procs[index].eof = true,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn kill_all(&mut self) {
        for proc in &mut self.procs {
            kill(&mut proc.child);
            if proc.status.is_none() {
                proc.status = proc.child.try_wait().ok().flatten();
                proc.exited_at = Some(Instant::now());
            }
        }
    }

    fn finish(mut self, stop: Option<Stop>) -> Result<GroupRun, ProbeError> {
        let mut members = Vec::new();
        for proc in &mut self.procs {
            let stderr = stderr_tail(&proc.stderr);
            if !proc.stream.hello && proc.ending.is_none() {
                return Err(ProbeError::NoHello {
                    program: self.program.clone(),
                    status: proc.status.map(|s| s.to_string()).unwrap_or_default(),
                    stderr,
                });
            }
            if proc.signalled && proc.stream.hang.is_none() {
                proc.stream.hang = fault_report(&stderr, proc.stream.running.clone());
            }
            let ending = match (proc.ending.take(), proc.status) {
                (Some(ending), _) => ending,
                (None, Some(status)) => Ending::Exited(status),
                (None, None) => Ending::TimedOut,
            };
            members.push(MemberRun {
                rank: proc.rank,
                stream: std::mem::take(&mut proc.stream),
                ending,
                stderr,
            });
        }
        Ok(GroupRun { members, stop })
    }
}

/// What the ranks that did nothing wrong are told.
fn stop_reason(stop: &Stop, procs: &[Proc]) -> String {
    let who = crate::ranks::rank_list(&stop.ranks);
    let phase = stop.phase.as_deref().unwrap_or("start-up");
    match stop.cause {
        "hang" => format!("{who} hung in {phase}"),
        "crash" => {
            let how = stop
                .ranks
                .first()
                .and_then(|r| procs.iter().find(|p| p.rank == Some(*r)))
                .and_then(|p| p.status)
                .map_or_else(|| "exited".to_string(), ending_text);
            format!("{who} {how} during {phase}")
        }
        _ => "the time limit ran out".to_string(),
    }
}

/// A hang report from faulthandler's dump of every thread (the rank's watchdog did not answer).
fn fault_report(stderr: &str, phase: Option<String>) -> Option<HangReport> {
    let stack = main_thread_stack(stderr)?;
    let location: Option<Frame> = ["user", "library"]
        .iter()
        .find_map(|scope| stack.iter().find(|f| f.scope.as_deref() == Some(scope)))
        .cloned();
    Some(HangReport {
        phase,
        waiting: Some(match &location {
            Some(l) => format!("in the step, at {}:{} in {}", l.path, l.line, l.function),
            None => "outside the step (from faulthandler's thread dump)".into(),
        }),
        location,
        stack,
        last_collective: None,
        collectives: Default::default(),
        source: "faulthandler".into(),
    })
}

fn with_stderr(err: ProbeError, stderr: &Arc<Mutex<Vec<u8>>>) -> ProbeError {
    match err {
        ProbeError::Protocol { line, error } => ProbeError::Protocol {
            line,
            error: format!(
                "{error}{}",
                crate::driver::stderr_suffix(&stderr_tail(stderr))
            ),
        },
        other => other,
    }
}

fn read_lines(index: usize, child: &mut Child, sender: Sender<Event>) {
    if let Some(stdout) = child.stdout.take() {
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(Event::Line(index, line)).is_err() {
                    return;
                }
            }
            let _ = sender.send(Event::Eof(index));
        });
    } else {
        let _ = sender.send(Event::Eof(index));
    }
}

fn collect_stderr(child: &mut Child) -> Arc<Mutex<Vec<u8>>> {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut stderr) = child.stderr.take() {
        let sink = Arc::clone(&buffer);
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                let Ok(mut kept) = sink.lock() else { break };
                kept.extend_from_slice(&chunk[..n]);
                if kept.len() > 2 * STDERR_TAIL_BYTES {
                    let cut = kept.len() - STDERR_TAIL_BYTES;
                    kept.drain(..cut);
                }
            }
        });
    }
    buffer
}

fn stderr_tail(buffer: &Arc<Mutex<Vec<u8>>>) -> String {
    // Give the reader thread a moment to drain what the child wrote just before exiting.
    thread::sleep(Duration::from_millis(20));
    let Ok(kept) = buffer.lock() else {
        return String::new();
    };
    let start = kept.len().saturating_sub(STDERR_TAIL_BYTES);
    String::from_utf8_lossy(&kept[start..]).into_owned()
}

#[cfg(unix)]
const SIGUSR1: i32 = libc::SIGUSR1;
#[cfg(not(unix))]
const SIGUSR1: i32 = 10;

fn signal(child: &Child, sig: i32) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) on the child's own pid; it touches no memory.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(pid, sig);
        }
    }
    #[cfg(not(unix))]
    let _ = (child, sig);
}

/// Kill the child's whole process group, then reap the child.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group we created for this
        // child (`process_group(0)`); it touches no memory.
        #[allow(unsafe_code)]
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
