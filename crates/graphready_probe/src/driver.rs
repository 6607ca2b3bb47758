//! Runs the harness in a child process per bucket, with a time limit, and assembles the report
//! from the protocol lines that arrived — also when the child crashed or was killed.

use crate::crash::crash_event;
use crate::protocol::{Message, PHASES, PROTOCOL_VERSION};
use crate::report::{
    BucketReport, Environment, GraphTotals, Outcome, PhaseResult, PhaseStatus, RuntimeReport,
};
use crate::rerun::{merge_rerun, needs_rerun};
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// How much of the child's stderr is kept for messages and the report.
const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// How often a waiting driver checks whether the child is still alive.
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The harness reported that it cannot run here (no torch, no CUDA, bad target).
    #[error("{message}")]
    Environment {
        kind: String,
        message: String,
        stderr: String,
    },
    #[error("cannot start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the probe harness ({program}) exited before it said hello ({status}){}", stderr_suffix(.stderr))]
    NoHello {
        program: String,
        status: String,
        stderr: String,
    },
    #[error("the probe harness speaks protocol {found}, this graphready speaks {expected}")]
    ProtocolVersion { found: u32, expected: u32 },
    #[error("malformed protocol line from the probe harness: {error}: {line}")]
    Protocol { line: String, error: String },
    #[error("no buckets to probe")]
    NoBuckets,
    #[error("I/O error while running the probe harness: {0}")]
    Io(#[from] std::io::Error),
}

fn stderr_suffix(stderr: &str) -> String {
    let tail = stderr.trim();
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends with:\n{tail}")
    }
}

impl ProbeError {
    /// The stable kind of an environment error (`no_torch`, `no_cuda`, `bad_target`, ...).
    pub fn environment_kind(&self) -> Option<&str> {
        match self {
            ProbeError::Environment { kind, .. } => Some(kind),
            _ => None,
        }
    }
}

/// The program that speaks the protocol: normally `python -m graphready.harness`.
#[derive(Debug, Clone)]
pub struct Launcher {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub current_dir: Option<PathBuf>,
}

impl Launcher {
    /// `python -u -m graphready.harness`, with `harness_root` (the folder holding the
    /// `graphready` package) first on `PYTHONPATH`.
    pub fn python(python: impl Into<OsString>, harness_root: &Path) -> Self {
        let mut pythonpath = OsString::from(harness_root.as_os_str());
        if let Some(existing) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
            pythonpath.push(":");
            pythonpath.push(existing);
        }
        Launcher {
            program: python.into(),
            args: ["-u", "-m", "graphready.harness"]
                .iter()
                .map(OsString::from)
                .collect(),
            env: vec![
                ("PYTHONPATH".into(), pythonpath),
                ("PYTHONUNBUFFERED".into(), "1".into()),
                ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
            ],
            current_dir: None,
        }
    }

    /// Any program that speaks the protocol (tests use a fake harness).
    pub fn custom(program: impl Into<OsString>, args: &[&str]) -> Self {
        Launcher {
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    fn command(&self, target: &str, bucket: u32, extra: &[OsString]) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(["--target", target, "--bucket", &bucket.to_string()])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so a timeout also ends what user code started.
            command.process_group(0);
        }
        command
    }
}

#[derive(Debug, Clone)]
pub struct ProbeOptions {
    pub target: String,
    pub buckets: Vec<u32>,
    /// Time limit for each bucket's child process.
    pub timeout: Duration,
    /// Paths whose executed lines are recorded too (the `--check` paths, library code
    /// included), for the static correlation.
    pub trace: Vec<PathBuf>,
}

impl ProbeOptions {
    pub fn new(target: impl Into<String>, buckets: Vec<u32>, timeout: Duration) -> Self {
        ProbeOptions {
            target: target.into(),
            buckets,
            timeout,
            trace: Vec::new(),
        }
    }
}

/// A phase about to run, for a progress display.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub bucket: u32,
    /// 1-based position of the bucket in the ladder, and the ladder's length.
    pub position: usize,
    pub buckets: usize,
    pub phase: &'a str,
    /// A re-run without poisoning after a device assert.
    pub rerun: bool,
    /// Since the probe started.
    pub elapsed: Duration,
}

/// Probe every bucket, each in a fresh child process, and collect the runtime report.
///
/// Environment errors (the harness's `env_error`, a missing interpreter, a protocol mismatch)
/// are `Err`; anything user code does — raise, crash, hang — is recorded in the report.
pub fn run_probe(launcher: &Launcher, options: &ProbeOptions) -> Result<RuntimeReport, ProbeError> {
    run_probe_with_progress(launcher, options, &mut |_| {})
}

/// [`run_probe`], telling `progress` each phase as it starts.
pub fn run_probe_with_progress(
    launcher: &Launcher,
    options: &ProbeOptions,
    progress: &mut dyn FnMut(&Progress),
) -> Result<RuntimeReport, ProbeError> {
    if options.buckets.is_empty() {
        return Err(ProbeError::NoBuckets);
    }
    let mut report = RuntimeReport {
        protocol: PROTOCOL_VERSION,
        target: options.target.clone(),
        harness: None,
        python: None,
        environment: None,
        buckets: Vec::new(),
        graph_totals: None,
    };
    let started = Instant::now();
    let mut trace: Vec<OsString> = Vec::new();
    for path in &options.trace {
        trace.push("--trace".into());
        trace.push(path.as_os_str().to_owned());
    }
    for (index, &bucket) in options.buckets.iter().enumerate() {
        let mut tell = |phase: &str, rerun: bool| {
            progress(&Progress {
                bucket,
                position: index + 1,
                buckets: options.buckets.len(),
                phase,
                rerun,
                elapsed: started.elapsed(),
            });
        };
        let run = run_bucket(launcher, options, bucket, &trace, &mut |p| tell(p, false))?;
        report.harness = report.harness.or(run.harness);
        report.python = report.python.or(run.python);
        report.environment = report.environment.or(run.environment);
        let mut bucket_report = run.bucket;
        // A device assert while poisoning: re-run that phase without poisoning (each poisoning
        // phase at most once) to tell whether the poison or the step caused it.
        while let Some(phase) = needs_rerun(&bucket_report) {
            let mut extra = trace.clone();
            extra.extend(["--rerun-from".into(), OsString::from(&phase)]);
            let rerun = run_bucket(launcher, options, bucket, &extra, &mut |p| tell(p, true))?;
            merge_rerun(&mut bucket_report, &phase, rerun.bucket);
        }
        report.buckets.push(bucket_report);
    }
    report.graph_totals = GraphTotals::over(&report.buckets);
    Ok(report)
}

struct BucketRun {
    bucket: BucketReport,
    harness: Option<String>,
    python: Option<String>,
    environment: Option<Environment>,
}

enum Ending {
    Exited(ExitStatus),
    TimedOut,
}

fn run_bucket(
    launcher: &Launcher,
    options: &ProbeOptions,
    bucket: u32,
    extra: &[OsString],
    progress: &mut dyn FnMut(&str),
) -> Result<BucketRun, ProbeError> {
    let timeout = options.timeout;
    let program = launcher.program.to_string_lossy().into_owned();
    let mut child = launcher
        .command(&options.target, bucket, extra)
        .spawn()
        .map_err(|source| ProbeError::Spawn {
            program: program.clone(),
            source,
        })?;
    let deadline = Instant::now() + timeout;
    let stderr = collect_stderr(&mut child);
    let lines = read_lines(&mut child);

    let mut state = State::default();
    let ending = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            kill(&mut child);
            break Ending::TimedOut;
        }
        match lines.recv_timeout(left.min(POLL)) {
            Ok(line) => {
                if let Err(err) = state.handle(&line) {
                    kill(&mut child);
                    return Err(with_stderr(err, &stderr));
                }
                if let Some(phase) = state.started.take() {
                    progress(&phase);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                // The child may have exited while something it started still holds stdout open.
                if let Some(status) = child.try_wait()? {
                    while let Ok(line) = lines.recv_timeout(POLL) {
                        state
                            .handle(&line)
                            .map_err(|err| with_stderr(err, &stderr))?;
                    }
                    break Ending::Exited(status);
                }
            }
            Err(RecvTimeoutError::Disconnected) => match wait_until(&mut child, deadline)? {
                Some(status) => break Ending::Exited(status),
                None => {
                    kill(&mut child);
                    break Ending::TimedOut;
                }
            },
        }
    };
    let stderr_text = stderr_tail(&stderr);
    if let Some((kind, message)) = state.env_error.take() {
        return Err(ProbeError::Environment {
            kind,
            message,
            stderr: stderr_text,
        });
    }
    if !state.hello {
        return Err(ProbeError::NoHello {
            program,
            status: match &ending {
                Ending::Exited(status) => status.to_string(),
                Ending::TimedOut => format!("no output within {:.0} s", timeout.as_secs_f64()),
            },
            stderr: stderr_text,
        });
    }
    Ok(state.finish(bucket, ending, timeout, stderr_text))
}

#[derive(Default)]
struct State {
    hello: bool,
    harness: Option<String>,
    python: Option<String>,
    environment: Option<Environment>,
    env_error: Option<(String, String)>,
    running: Option<String>,
    /// A phase that started since the last look (for progress).
    started: Option<String>,
    phases: Vec<PhaseResult>,
    done: bool,
}

impl State {
    fn handle(&mut self, line: &str) -> Result<(), ProbeError> {
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
            Some(Message::Environment(env)) => self.environment = Some(env),
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
        }
        Ok(())
    }

    fn finish(self, bucket: u32, ending: Ending, timeout: Duration, stderr: String) -> BucketRun {
        let mut phases = self.phases;
        let running = self.running;
        let outcome = match ending {
            Ending::Exited(_) if self.done => Outcome::Completed,
            Ending::Exited(status) => {
                let (exit_code, signal) = exit_parts(status);
                let what = describe_exit(exit_code, signal);
                if let Some(phase) = &running {
                    let mut result = PhaseResult::synthetic(
                        phase,
                        PhaseStatus::Crashed,
                        format!("the harness {what} while this phase ran"),
                    );
                    result.events.extend(crash_event(&stderr, &what));
                    phases.push(result);
                }
                Outcome::Crashed {
                    phase: running.clone(),
                    exit_code,
                    signal,
                }
            }
            Ending::TimedOut => {
                if let Some(phase) = &running {
                    phases.push(PhaseResult::synthetic(
                        phase,
                        PhaseStatus::TimedOut,
                        format!(
                            "still running after the {:.0} s time limit; the harness was killed",
                            timeout.as_secs_f64()
                        ),
                    ));
                }
                Outcome::TimedOut {
                    phase: running.clone(),
                    limit_secs: timeout.as_secs_f64(),
                }
            }
        };
        if outcome != Outcome::Completed {
            let reason = match &running {
                Some(phase) => format!("not run: the harness stopped during {phase}"),
                None => "not run: the harness stopped early".to_string(),
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
        BucketRun {
            bucket: BucketReport {
                bucket,
                outcome,
                phases,
                stderr_tail: (keep_stderr && !stderr.trim().is_empty()).then_some(stderr),
            },
            harness: self.harness,
            python: self.python,
            environment: self.environment,
        }
    }
}

fn with_stderr(err: ProbeError, stderr: &Arc<Mutex<Vec<u8>>>) -> ProbeError {
    match err {
        ProbeError::Protocol { line, error } => ProbeError::Protocol {
            line,
            error: format!("{error}{}", stderr_suffix(&stderr_tail(stderr))),
        },
        other => other,
    }
}

fn read_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (sender, receiver) = mpsc::channel();
    if let Some(stdout) = child.stdout.take() {
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
    }
    receiver
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

fn wait_until(child: &mut Child, deadline: Instant) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(10));
    }
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

fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
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
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        _ => "",
    }
}
