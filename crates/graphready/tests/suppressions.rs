//! Suppression comments (issue 14): the findings they silence are listed in the JSON report
//! with their reasons, and `--report-unused-suppressions` reports those that silence nothing
//! (`GR001`).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn check(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(dir)
        .arg("check")
        .args(args)
        .output()
        .expect("graphready runs")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}", String::from_utf8_lossy(&output.stderr)))
}

/// (line, code, message) of every finding.
fn found(report: &Value) -> Vec<(u64, String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["span"]["start"]["line"].as_u64().unwrap(),
                f["code"].as_str().unwrap().to_string(),
                f["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// A captured step with suppressions of every kind; `helper` is on the hot path, `loader`
/// is not.
const STEP: &str = r#"import torch


def helper(x: torch.Tensor):
    a = x.item()  # graphready: ignore[GR101] -- warm-up only, never captured
    b = x.tolist()  # noqa: GR102 -- tiny, measured
    c = x.item()  # noqa
    d = x + 1  # noqa: GR101, F401
    e = x + 2  # graphready: ignore -- left over
    f = x + 3  # noqa: E501
    g = x.item()  # noqa: GR101 # graphready: ignore[GR999]
    h = x + 4  # noqa: GR203
    return a, b, c, d, e, f, g, h


def step(x: torch.Tensor):  # graphready: captured
    return helper(x)


def loader(x: torch.Tensor):
    return x.item()  # graphready: ignore[GR101] -- cold code
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("step.py"), STEP).unwrap();
    dir
}

#[test]
fn suppressed_findings_are_listed_with_their_reasons() {
    let dir = project();
    let output = check(
        dir.path(),
        &["--isolated", "--output-format", "json", "step.py"],
    );
    assert_eq!(output.status.code(), Some(0), "everything is suppressed");
    let report = json(&output);
    assert!(found(&report).is_empty());
    let suppressed: Vec<(u64, &str, Option<&str>)> = report["suppressed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert_eq!(s["path"], "step.py");
            (
                s["line"].as_u64().unwrap(),
                s["code"].as_str().unwrap(),
                s["reason"].as_str(),
            )
        })
        .collect();
    // `loader` is not on the hot path: its finding would not be reported, so its suppression
    // is not listed under the default scope.
    assert_eq!(
        suppressed,
        vec![
            (5, "GR101", Some("warm-up only, never captured")),
            (6, "GR102", Some("tiny, measured")),
            (7, "GR101", None),
            (11, "GR101", None),
        ]
    );
    let output = check(
        dir.path(),
        &[
            "--isolated",
            "--scope",
            "all",
            "--output-format",
            "json",
            "step.py",
        ],
    );
    let report = json(&output);
    let last = report["suppressed"].as_array().unwrap().last().unwrap();
    assert_eq!(last["line"], 21);
    assert_eq!(last["reason"], "cold code");
}

#[test]
fn unused_suppressions_are_reported_only_when_asked() {
    let dir = project();
    let output = check(
        dir.path(),
        &["--isolated", "--output-format", "json", "step.py"],
    );
    assert!(found(&json(&output)).is_empty(), "off by default");

    let output = check(
        dir.path(),
        &[
            "--isolated",
            "--report-unused-suppressions",
            "--output-format",
            "json",
            "step.py",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "GR001 is a finding");
    let report = json(&output);
    // Not the bare `# noqa` (line 7, other linters' too), not `E501` (line 10); `GR203`
    // (line 12) is enabled and suppresses nothing.
    assert_eq!(
        found(&report),
        vec![
            (
                8,
                "GR001".to_string(),
                "the suppression of `GR101` matches no finding on this line".to_string()
            ),
            (
                9,
                "GR001".to_string(),
                "`graphready: ignore` suppresses nothing on this line".to_string()
            ),
            (
                11,
                "GR001".to_string(),
                "`GR999` names no graphready rule".to_string()
            ),
            (
                12,
                "GR001".to_string(),
                "the suppression of `GR203` matches no finding on this line".to_string()
            ),
        ]
    );
    let first = &report["findings"][0];
    assert_eq!(first["severity"], "warning");
    assert_eq!(first["span"]["start"]["column"], 16);
    assert_eq!(
        first["url"],
        "https://github.com/graphready/graphready/blob/main/docs/rules/GR001.md"
    );

    // A suppression of a rule that is not enabled is not judged: another configuration may
    // need it.
    let output = check(
        dir.path(),
        &[
            "--isolated",
            "--report-unused-suppressions",
            "--select",
            "GR1",
            "--output-format",
            "json",
            "step.py",
        ],
    );
    let lines: Vec<u64> = found(&json(&output)).iter().map(|f| f.0).collect();
    assert_eq!(lines, vec![8, 9, 11]);

    // A suppression in code the hot path does not reach still suppresses a finding there.
    let output = check(
        dir.path(),
        &[
            "--isolated",
            "--report-unused-suppressions",
            "--color",
            "never",
            "step.py",
        ],
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains("step.py:21"), "{text}");
    assert!(text.contains("warning[GR001]"), "{text}");
    assert!(text.contains("docs/rules/GR001.md"), "{text}");
}
