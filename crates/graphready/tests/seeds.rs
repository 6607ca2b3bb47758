//! The seeds' acceptance cases: every hazard seed 002 (§B, §C) and seed 004 list is flagged in
//! its "before" form, and the "after" form is clean — with every rule selected, so that no rule
//! of any family fires on the fixed code.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn seed_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/seeds")
        .join(name)
}

/// (line, code) → count, from `# error: GR101 GR401` markers.
fn markers(source: &str) -> BTreeMap<(u32, String), usize> {
    let mut expected = BTreeMap::new();
    for (index, line) in source.lines().enumerate() {
        if let Some((_, codes)) = line.split_once("# error:") {
            for code in codes.split_whitespace().take_while(|w| w.starts_with("GR")) {
                *expected
                    .entry((index as u32 + 1, code.to_string()))
                    .or_default() += 1;
            }
        }
    }
    expected
}

fn findings(path: &Path, ignore: &[&str]) -> BTreeMap<(u32, String), usize> {
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .args([
            "check",
            "--isolated",
            "--scope",
            "all",
            "--select",
            "ALL",
            "--output-format",
            "json",
        ])
        .args(ignore.iter().flat_map(|code| ["--ignore", code]))
        .arg(path)
        .output()
        .expect("graphready runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).expect("report JSON");
    let mut actual = BTreeMap::new();
    for finding in report["findings"].as_array().unwrap() {
        let line = finding["span"]["start"]["line"].as_u64().unwrap() as u32;
        let code = finding["code"].as_str().unwrap().to_string();
        *actual.entry((line, code)).or_default() += 1;
    }
    actual
}

fn assert_seed(name: &str, ignore: &[&str]) {
    let path = seed_fixture(name);
    let source = std::fs::read_to_string(&path).unwrap();
    let (before, after) = source
        .split_once("\n# OK\n")
        .unwrap_or_else(|| panic!("{name} needs an `# OK` section"));
    assert!(before.contains("# error:"), "{name}: no `# error:` markers");
    assert!(!after.contains("# error:"), "{name}: markers in `# OK`");
    assert_eq!(
        findings(&path, ignore),
        markers(&source),
        "{name}: findings differ"
    );
}

#[test]
fn seed_002_before_forms_are_flagged_and_after_forms_are_not() {
    assert_seed("seed_002.py", &[]);
}

#[test]
fn seed_004_masked_scale_buffer_is_flagged_and_the_zeros_fix_is_not() {
    // A library (no entry point): its public functions count as captured, so the opt-in
    // per-step allocation advice would fire on every allocation; this test is about GR404.
    assert_seed("seed_004.py", &["GR401"]);
}
