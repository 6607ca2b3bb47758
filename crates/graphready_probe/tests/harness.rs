//! The embedded harness: complete, and usable without installing the Python package.

use graphready_probe::{run_probe, HarnessDir, Launcher, ProbeOptions, HARNESS_FILES};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn every_harness_module_is_embedded() {
    let package = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/graphready");
    let mut on_disk: Vec<String> = std::fs::read_dir(&package)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".py"))
        .collect();
    on_disk.sort();
    let embedded: Vec<&str> = HARNESS_FILES.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        on_disk, embedded,
        "add new modules to harness_files! in src/harness.rs"
    );
}

fn python_without_torch() -> Option<&'static str> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)",
        ])
        .status()
        .ok()?;
    out.success().then_some("python3")
}

/// Issue 5: without torch the probe stops with an environment error naming what is missing.
#[test]
fn missing_torch_is_an_environment_error() {
    let Some(python) = python_without_torch() else {
        return; // this machine has torch: covered on the GPU machine instead
    };
    let dir = HarnessDir::create().unwrap();
    let target = tempfile::Builder::new().suffix(".py").tempfile().unwrap();
    std::fs::write(target.path(), "def factory(bucket):\n    pass\n").unwrap();
    let err = run_probe(
        &Launcher::python(python, dir.root()),
        &ProbeOptions::new(
            format!("{}:factory", target.path().display()),
            vec![1],
            Duration::from_secs(60),
        ),
    )
    .unwrap_err();
    assert_eq!(err.environment_kind(), Some("no_torch"), "{err}");
    assert!(
        err.to_string().contains("PyTorch cannot be imported"),
        "{err}"
    );
}

#[test]
fn bad_target_is_reported_before_torch_is_looked_for() {
    if Command::new("python3").arg("--version").output().is_err() {
        return; // no python3 on this machine
    }
    let dir = HarnessDir::create().unwrap();
    for (target, expect) in [
        ("does/not/exist.py:factory", "does not exist"),
        ("no_colon_here", "must be `path/to/file.py:factory`"),
    ] {
        let err = run_probe(
            &Launcher::python("python3", dir.root()),
            &ProbeOptions::new(target, vec![1], Duration::from_secs(60)),
        )
        .unwrap_err();
        assert_eq!(err.environment_kind(), Some("bad_target"), "{err}");
        assert!(err.to_string().contains(expect), "{err}");
    }
}
