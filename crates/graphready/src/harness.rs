//! Which `graphready` Python package the probe runs: the one installed for the chosen
//! interpreter when it is this binary's version (`pip install graphready` puts both in one
//! wheel), else the copy embedded in the binary, written to a temporary folder for the run.

use graphready_probe::{HarnessDir, Launcher};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the interpreter may take to import `graphready` and print its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// The harness a probe runs.
#[derive(Debug)]
pub enum Harness {
    /// The interpreter's own `graphready` package, of this binary's version.
    Installed,
    /// The embedded copy, in a temporary folder put first on `PYTHONPATH` (removed on drop).
    Embedded(HarnessDir),
}

impl Harness {
    /// Asks `python` for `graphready.__version__`: the installed package when it is this
    /// binary's version, the embedded copy otherwise (or when the question fails).
    pub fn choose(python: &OsStr) -> std::io::Result<Self> {
        Self::choose_for(python, env!("CARGO_PKG_VERSION"), VERSION_TIMEOUT)
    }

    fn choose_for(python: &OsStr, version: &str, timeout: Duration) -> std::io::Result<Self> {
        if installed_version(python, timeout).as_deref() == Some(version) {
            Ok(Harness::Installed)
        } else {
            HarnessDir::create().map(Harness::Embedded)
        }
    }

    /// `python -u -m graphready.harness`, importing the chosen package.
    pub fn launcher(&self, python: OsString) -> Launcher {
        match self {
            Harness::Embedded(dir) => Launcher::python(python, dir.root()),
            Harness::Installed => {
                let mut launcher = Launcher::custom(python, &["-u", "-m", "graphready.harness"]);
                launcher.env = vec![
                    ("PYTHONUNBUFFERED".into(), "1".into()),
                    ("PYTHONDONTWRITEBYTECODE".into(), "1".into()),
                ];
                launcher
            }
        }
    }
}

/// `graphready.__version__` as `python` imports it (from the working folder, with the
/// environment the harness will have); `None` when the import fails, prints nothing or takes
/// longer than `timeout`.
fn installed_version(python: &OsStr, timeout: Duration) -> Option<String> {
    let mut child = Command::new(python)
        .args([
            "-c",
            "import sys, graphready; sys.stdout.write(graphready.__version__)",
        ])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    if !status.success() {
        return None;
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    let version = out.trim();
    (!version.is_empty()).then(|| version.to_string())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};

    /// A fake interpreter: a shell script that ignores its arguments and runs `body`.
    fn fake_python(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn choice(python: &Path, timeout: Duration) -> Harness {
        Harness::choose_for(python.as_os_str(), "1.2.3", timeout).unwrap()
    }

    #[test]
    fn the_installed_package_is_used_only_at_the_same_version() {
        let dir = tempfile::tempdir().unwrap();
        let same = fake_python(dir.path(), "same", "printf '1.2.3\\n'");
        assert!(matches!(choice(&same, VERSION_TIMEOUT), Harness::Installed));
        let older = fake_python(dir.path(), "older", "printf '1.2.2'");
        assert!(matches!(
            choice(&older, VERSION_TIMEOUT),
            Harness::Embedded(_)
        ));
        let unknown = fake_python(dir.path(), "unknown", "printf '0+unknown'");
        assert!(matches!(
            choice(&unknown, VERSION_TIMEOUT),
            Harness::Embedded(_)
        ));
    }

    #[test]
    fn a_failing_silent_slow_or_missing_interpreter_gets_the_embedded_copy() {
        let dir = tempfile::tempdir().unwrap();
        let no_package = fake_python(
            dir.path(),
            "no_package",
            "echo \"ModuleNotFoundError: No module named 'graphready'\" >&2; exit 1",
        );
        let silent = fake_python(dir.path(), "silent", "exit 0");
        let slow = fake_python(dir.path(), "slow", "sleep 5; printf '1.2.3'");
        for python in [&no_package, &silent, &dir.path().join("missing")] {
            assert!(
                matches!(choice(python, VERSION_TIMEOUT), Harness::Embedded(_)),
                "{}",
                python.display()
            );
        }
        let started = Instant::now();
        assert!(matches!(
            choice(&slow, Duration::from_millis(200)),
            Harness::Embedded(_)
        ));
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "the slow one is cut off"
        );
    }

    #[test]
    fn only_the_embedded_copy_goes_on_pythonpath() {
        let dir = tempfile::tempdir().unwrap();
        let older = fake_python(dir.path(), "older", "printf '0.0.1'");
        let embedded = choice(&older, VERSION_TIMEOUT);
        let Harness::Embedded(harness) = &embedded else {
            panic!("expected the embedded copy");
        };
        assert!(harness.root().join("graphready/harness.py").is_file());
        let pythonpath = |launcher: &Launcher| {
            launcher
                .env
                .iter()
                .find(|(key, _)| key == "PYTHONPATH")
                .map(|(_, value)| value.clone())
        };
        let launcher = embedded.launcher("python3".into());
        assert!(pythonpath(&launcher)
            .unwrap()
            .to_string_lossy()
            .starts_with(&*harness.root().to_string_lossy()));
        let installed = Harness::Installed.launcher("python3".into());
        assert_eq!(pythonpath(&installed), None);
        assert_eq!(installed.args, ["-u", "-m", "graphready.harness"]);
    }
}
