//! Runs the harness in a child process per bucket — or, with `--nproc-per-node N`, in N child
//! processes, one per rank — with a time limit and a watchdog (`group.rs`), and assembles the
//! report from the protocol lines that arrived: also when a child crashed, hung or was killed.

use crate::group::{run_group, GroupRun, Member};
use crate::protocol::{NVLS_OFF, PROTOCOL_VERSION};
use crate::ranks::{
    describe_stop, merge_outcome, merge_phases, Distributed, GroupStop, RankReport,
};
use crate::report::{BucketReport, Environment, GraphTotals, RuntimeReport};
use crate::rerun::{merge_rerun, needs_rerun, take_later_phases};
use crate::stream::Finished;
use std::ffi::OsString;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    #[error("{0}")]
    Options(String),
    #[error("I/O error while running the probe harness: {0}")]
    Io(#[from] std::io::Error),
}

pub(crate) fn stderr_suffix(stderr: &str) -> String {
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

    pub(crate) fn command(
        &self,
        target: &str,
        bucket: u32,
        extra: &[OsString],
        member_env: &[(OsString, OsString)],
    ) -> Command {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(["--target", target, "--bucket", &bucket.to_string()])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        for (key, value) in NVLS_OFF {
            command.env(key, value);
        }
        for (key, value) in member_env {
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
    /// Several ranks on this host (torchrun's `--nproc-per-node`); `None`: one process, no
    /// torch.distributed.
    pub nproc_per_node: Option<u32>,
    /// The ranks' torch.distributed backend: `nccl` (one GPU per rank) or `gloo`.
    pub backend: String,
    /// A rank that stays in a phase this long after another rank finished it is hung.
    pub hang_timeout: Duration,
}

/// The default of `ProbeOptions::hang_timeout`.
pub const DEFAULT_HANG_TIMEOUT: Duration = Duration::from_secs(120);

impl ProbeOptions {
    pub fn new(target: impl Into<String>, buckets: Vec<u32>, timeout: Duration) -> Self {
        ProbeOptions {
            target: target.into(),
            buckets,
            timeout,
            trace: Vec::new(),
            nproc_per_node: None,
            backend: "nccl".into(),
            hang_timeout: DEFAULT_HANG_TIMEOUT,
        }
    }

    /// `n` ranks on this host.
    pub fn with_ranks(mut self, n: u32) -> Self {
        self.nproc_per_node = Some(n);
        self
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
    /// The ranks of the group (1 without `--nproc-per-node`); the phase is rank 0's.
    pub ranks: u32,
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
    if options.nproc_per_node == Some(0) {
        return Err(ProbeError::Options(
            "--nproc-per-node must be at least 1".into(),
        ));
    }
    let mut report = RuntimeReport {
        protocol: PROTOCOL_VERSION,
        target: options.target.clone(),
        distributed: options.nproc_per_node.map(|n| Distributed {
            world_size: n,
            backend: options.backend.clone(),
        }),
        harness: None,
        python: None,
        environment: None,
        buckets: Vec::new(),
        graph_totals: None,
    };
    let started = Instant::now();
    let mut base: Vec<OsString> = vec!["--watchdog".into()];
    for path in &options.trace {
        base.push("--trace".into());
        base.push(path.as_os_str().to_owned());
    }
    if options.nproc_per_node.is_some() {
        // NCCL's own timeout outlasts the watchdog's, which reports the hang first.
        let dist_timeout = options.timeout.as_secs() + 60;
        base.extend([
            "--distributed".into(),
            OsString::from(&options.backend),
            "--dist-timeout".into(),
            dist_timeout.to_string().into(),
        ]);
    }
    for (index, &bucket) in options.buckets.iter().enumerate() {
        let mut tell = |phase: &str, rerun: bool| {
            progress(&Progress {
                bucket,
                position: index + 1,
                buckets: options.buckets.len(),
                phase,
                rerun,
                ranks: options.nproc_per_node.unwrap_or(1),
                elapsed: started.elapsed(),
            });
        };
        let run = run_bucket(launcher, options, bucket, &base, &mut |p| tell(p, false))?;
        report.harness = report.harness.or(run.harness);
        report.python = report.python.or(run.python);
        report.environment = report.environment.or(run.environment);
        let mut members = run.members;
        let mut group_stop = run.stop;
        // A device assert while poisoning: re-run that phase without poisoning (each poisoning
        // phase at most once) to tell whether the poison or the step caused it. With several
        // ranks, the whole group is re-run and each rank merged with its own re-run.
        while let Some(phase) = members.iter().find_map(|m| needs_rerun(&m.bucket)) {
            let mut extra = base.clone();
            extra.extend(["--rerun-from".into(), OsString::from(&phase)]);
            let rerun = run_bucket(launcher, options, bucket, &extra, &mut |p| tell(p, true))?;
            for (member, again) in members.iter_mut().zip(rerun.members) {
                if needs_rerun(&member.bucket).as_deref() == Some(phase.as_str()) {
                    merge_rerun(&mut member.bucket, &phase, again.bucket);
                } else {
                    take_later_phases(&mut member.bucket, &phase, again.bucket);
                }
                if again.hang.is_some() {
                    member.hang = again.hang;
                }
            }
            group_stop = group_stop.or(rerun.stop);
        }
        report.buckets.push(match options.nproc_per_node {
            None => members.remove(0).bucket,
            Some(_) => grouped(bucket, members, group_stop),
        });
    }
    report.graph_totals = GraphTotals::over(&report.buckets);
    Ok(report)
}

/// One process's results, as a bucket of its own (so a re-run merges the same way for one
/// rank as for one process).
struct MemberReport {
    rank: u32,
    bucket: BucketReport,
    device: Option<String>,
    hang: Option<crate::ranks::HangReport>,
}

struct BucketRun {
    members: Vec<MemberReport>,
    stop: Option<GroupStop>,
    harness: Option<String>,
    python: Option<String>,
    environment: Option<Environment>,
}

fn run_bucket(
    launcher: &Launcher,
    options: &ProbeOptions,
    bucket: u32,
    extra: &[OsString],
    progress: &mut dyn FnMut(&str),
) -> Result<BucketRun, ProbeError> {
    let members = match options.nproc_per_node {
        None => vec![Member {
            rank: None,
            env: Vec::new(),
        }],
        Some(n) => {
            let port = free_port()?;
            (0..n)
                .map(|rank| Member {
                    rank: Some(rank),
                    env: rank_env(rank, n, port),
                })
                .collect()
        }
    };
    let GroupRun { members, stop } =
        run_group(launcher, options, bucket, members, extra, progress)?;
    let mut run = BucketRun {
        members: Vec::new(),
        stop: None,
        harness: None,
        python: None,
        environment: None,
    };
    for member in members {
        let stream = member.stream;
        run.harness = run.harness.or_else(|| stream.harness.clone());
        run.python = run.python.or_else(|| stream.python.clone());
        run.environment = run.environment.or_else(|| stream.environment.clone());
        let device = stream.device.clone();
        let hang = stream.hang.clone();
        let Finished {
            outcome,
            phases,
            stderr_tail,
        } = stream.finish(member.ending, options.timeout, member.stderr);
        run.members.push(MemberReport {
            rank: member.rank.unwrap_or(0),
            bucket: BucketReport {
                bucket,
                outcome,
                phases,
                stderr_tail,
                ranks: Vec::new(),
                group_stop: None,
            },
            device,
            hang,
        });
    }
    if let Some(stop) = stop {
        let ranks: Vec<RankReport> = run.members.iter().map(rank_report).collect();
        run.stop = Some(GroupStop {
            cause: stop.cause.to_string(),
            message: describe_stop(
                stop.cause,
                &stop.ranks,
                stop.phase.as_deref(),
                stop.waited.as_secs_f64(),
                &ranks,
            ),
            ranks: stop.ranks,
            phase: stop.phase,
            after_secs: stop.after.as_secs_f64(),
        });
    }
    Ok(run)
}

fn rank_report(member: &MemberReport) -> RankReport {
    RankReport {
        rank: member.rank,
        outcome: member.bucket.outcome.clone(),
        phases: member.bucket.phases.clone(),
        device: member.device.clone(),
        hang: member.hang.clone(),
        stderr_tail: member.bucket.stderr_tail.clone(),
    }
}

/// The bucket of a group: each rank's report, and the phases merged over them.
fn grouped(bucket: u32, members: Vec<MemberReport>, group_stop: Option<GroupStop>) -> BucketReport {
    let ranks: Vec<RankReport> = members.iter().map(rank_report).collect();
    BucketReport {
        bucket,
        outcome: merge_outcome(&ranks),
        phases: merge_phases(&ranks),
        stderr_tail: None,
        ranks,
        group_stop,
    }
}

/// torchrun's environment for one rank of a group on this host.
fn rank_env(rank: u32, world_size: u32, port: u16) -> Vec<(OsString, OsString)> {
    let rank = rank.to_string();
    let world = world_size.to_string();
    [
        ("RANK", rank.as_str()),
        ("LOCAL_RANK", rank.as_str()),
        ("WORLD_SIZE", world.as_str()),
        ("LOCAL_WORLD_SIZE", world.as_str()),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", port.to_string().as_str()),
    ]
    .into_iter()
    .map(|(k, v)| (OsString::from(k), OsString::from(v)))
    .collect()
}

/// A free loopback port for the group's rendezvous: a fresh one for every group, so a group
/// never meets a previous group's store.
fn free_port() -> Result<u16, ProbeError> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}
