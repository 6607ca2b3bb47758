//! Every rule: its fixture's `# error:` markers match the findings exactly, its rendered text is
//! pinned by a snapshot, and its generated docs are current. Plus the conventions that keep the
//! rule set consistent.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn graphready() -> Command {
    Command::new(env!("CARGO_BIN_EXE_graphready"))
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../graphready_linter/resources/test/fixtures")
}

/// (code, name, family) for every rule, as the binary lists them.
fn rules() -> Vec<(String, String, String)> {
    let output = graphready()
        .args(["rules", "--output-format", "json"])
        .output()
        .expect("graphready runs");
    assert!(output.status.success());
    let rules: Vec<Value> = serde_json::from_slice(&output.stdout).expect("rules JSON");
    rules
        .iter()
        .map(|rule| {
            (
                rule["code"].as_str().unwrap().to_string(),
                rule["name"].as_str().unwrap().to_string(),
                rule["family"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn fixture_for(code: &str, family: &str) -> PathBuf {
    let folder = match family {
        "sync" => "sync",
        "dynamic-shape" => "dynamic_shape",
        "host-data" => "host_data",
        "allocation" => "allocation",
        "capture-illegal" => "capture_illegal",
        other => panic!("unknown family {other}"),
    };
    fixtures_dir().join(folder).join(format!("{code}.py"))
}

/// line → codes expected there, from `# error: GR101 GR104` markers.
fn expected_markers(source: &str) -> BTreeMap<u32, Vec<String>> {
    let mut expected = BTreeMap::new();
    for (index, line) in source.lines().enumerate() {
        if let Some((_, markers)) = line.split_once("# error:") {
            let mut codes: Vec<String> = markers
                .split_whitespace()
                .take_while(|word| word.starts_with("GR"))
                .map(str::to_string)
                .collect();
            codes.sort();
            expected.insert(index as u32 + 1, codes);
        }
    }
    expected
}

fn check_json(args: &[&str], path: &Path) -> Value {
    let output = graphready()
        .arg("check")
        .args(["--isolated", "--scope", "all", "--output-format", "json"])
        .args(args)
        .arg(path)
        .output()
        .expect("graphready runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "unexpected exit {:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("report JSON")
}

fn actual_findings(report: &Value) -> BTreeMap<u32, Vec<String>> {
    let mut actual: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for finding in report["findings"].as_array().unwrap() {
        let line = finding["span"]["start"]["line"].as_u64().unwrap() as u32;
        actual
            .entry(line)
            .or_default()
            .push(finding["code"].as_str().unwrap().to_string());
    }
    for codes in actual.values_mut() {
        codes.sort();
    }
    actual
}

#[test]
fn every_rule_matches_its_fixture_markers() {
    for (code, _, family) in rules() {
        let fixture = fixture_for(&code, &family);
        let source = std::fs::read_to_string(&fixture)
            .unwrap_or_else(|_| panic!("{code} has no fixture at {}", fixture.display()));
        assert!(
            source.contains("# Error"),
            "{code}: fixture needs an `# Error` section"
        );
        assert!(
            source.contains("# OK"),
            "{code}: fixture needs an `# OK` section"
        );
        let expected = expected_markers(&source);
        // Markers of this rule only: other rules may legitimately fire on the same lines.
        let expected: BTreeMap<u32, Vec<String>> = expected
            .into_iter()
            .filter_map(|(line, codes)| {
                let own: Vec<String> = codes.into_iter().filter(|c| *c == code).collect();
                (!own.is_empty()).then_some((line, own))
            })
            .collect();
        assert!(
            !expected.is_empty(),
            "{code}: fixture has no `# error: {code}` marker"
        );
        let report = check_json(&["--select", &code], &fixture);
        assert_eq!(
            actual_findings(&report),
            expected,
            "{code}: findings differ from markers"
        );
        for finding in report["findings"].as_array().unwrap() {
            let message = finding["message"].as_str().unwrap();
            assert!(
                message.starts_with(|c: char| !c.is_uppercase()),
                "{code}: message must start lowercase: {message}"
            );
            assert!(
                !message.ends_with('.'),
                "{code}: message must not end with a period"
            );
            assert!(
                finding["fix"].is_string(),
                "{code}: every finding needs a fix title"
            );
        }
    }
}

#[test]
fn every_rule_has_a_text_snapshot() {
    for (code, _, family) in rules() {
        let fixture = fixture_for(&code, &family);
        let relative = fixture
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .unwrap()
            .to_path_buf();
        let output = graphready()
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .args([
                "check",
                "--isolated",
                "--scope",
                "all",
                "--color",
                "never",
                "--select",
                &code,
            ])
            .arg(&relative)
            .output()
            .expect("graphready runs");
        let text = String::from_utf8(output.stdout).unwrap();
        insta::assert_snapshot!(code.clone(), text);
    }
}

#[test]
fn rule_codes_and_names_are_unique_and_well_formed() {
    let rules = rules();
    let mut codes: Vec<_> = rules.iter().map(|r| r.0.clone()).collect();
    let mut names: Vec<_> = rules.iter().map(|r| r.1.clone()).collect();
    codes.sort();
    codes.dedup();
    names.sort();
    names.dedup();
    assert_eq!(codes.len(), rules.len(), "duplicate rule codes");
    assert_eq!(names.len(), rules.len(), "duplicate rule names");
    for (code, name, family) in &rules {
        assert!(code.len() == 5 && code.starts_with("GR"), "{code}");
        let hundreds = &code[2..3];
        let expected = match family.as_str() {
            "sync" => "1",
            "dynamic-shape" => "2",
            "host-data" => "3",
            "allocation" => "4",
            "capture-illegal" => "5",
            other => panic!("{other}"),
        };
        assert_eq!(hundreds, expected, "{code} is in family {family}");
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '-'),
            "{name} must be kebab-case"
        );
    }
}

#[test]
fn rule_docs_have_every_section_and_generated_docs_are_current() {
    let docs_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules");
    let update = std::env::var_os("GRAPHREADY_UPDATE_DOCS").is_some();
    for (code, _, _) in rules() {
        let output = graphready().args(["rule", &code]).output().unwrap();
        assert!(output.status.success());
        let page = String::from_utf8(output.stdout).unwrap();
        for section in [
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "Use instead:",
        ] {
            assert!(page.contains(section), "{code}: docs lack `{section}`");
        }
        let path = docs_dir.join(format!("{code}.md"));
        if update {
            std::fs::create_dir_all(&docs_dir).unwrap();
            std::fs::write(&path, &page).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert_eq!(
            committed,
            page,
            "{} is stale: rerun with GRAPHREADY_UPDATE_DOCS=1",
            path.display()
        );
    }
}

#[test]
fn configured_debug_guards_silence_debug_only_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("graphready.toml"),
        "debug-guards = [\"VERBOSE >= 2\"]\n",
    )
    .unwrap();
    let fixture = fixtures_dir().join("sync/GR104_debug_guards.py");
    let target = dir.path().join("GR104_debug_guards.py");
    std::fs::copy(&fixture, &target).unwrap();
    let output = graphready()
        .args(["check", "--output-format", "json"])
        .arg(&target)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let source = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(actual_findings(&report), expected_markers(&source));
}
