//! The command-line contract: output formats, exit codes, configuration errors, unreadable files,
//! broken pipes.

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn graphready() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_graphready"));
    command.current_dir(repo_root());
    command
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    graphready().args(args).output().expect("graphready runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

const EXAMPLE: &str = "examples/decode_step.py";

#[test]
fn text_output_snapshot() {
    let output = run(&["check", "--isolated", "--color", "never", EXAMPLE]);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("example_text", stdout(&output));
}

#[test]
fn json_output_snapshot_and_shape() {
    let output = run(&["check", "--isolated", "--output-format", "json", EXAMPLE]);
    assert_eq!(output.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["schema_version"], 1);
    assert_eq!(report["tool"]["name"], "graphready");
    assert_eq!(report["summary"]["ready"], false);
    assert_eq!(
        report["summary"]["findings"].as_u64().unwrap() as usize,
        report["findings"].as_array().unwrap().len()
    );
    let mut redacted = report.clone();
    redacted["tool"]["version"] = Value::from("[version]");
    insta::assert_snapshot!(
        "example_json",
        serde_json::to_string_pretty(&redacted).unwrap()
    );
}

#[test]
fn github_output_snapshot() {
    let output = run(&["check", "--isolated", "--output-format", "github", EXAMPLE]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text
        .lines()
        .all(|line| ["::error ", "::warning ", "::notice "]
            .iter()
            .any(|p| line.starts_with(p))));
    insta::assert_snapshot!("example_github", text);
}

/// The official OASIS schema, with the one pattern Rust regex engines have been known to reject
/// (`(?i)` in the middle of `language`'s pattern, in some published copies) normalised if present.
fn sarif_validator() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-schema-2.1.0.json");
    let text = std::fs::read_to_string(path).unwrap();
    let text = text.replace(
        r#"^(?i)[a-zA]{2}(-[a-z]{2})?$"#,
        r#"^[a-zA-Z]{2}(-[a-zA-Z]{2})?$"#,
    );
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft7::new(&schema).expect("the SARIF schema compiles")
}

#[test]
fn sarif_output_is_valid_against_the_official_schema() {
    let output = run(&["check", "--isolated", "--output-format", "sarif", EXAMPLE]);
    assert_eq!(output.status.code(), Some(1));
    let sarif: Value = serde_json::from_slice(&output.stdout).unwrap();
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "SARIF invalid: {errors:#?}");
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    // A document that breaks the schema must be caught, or the check above proves nothing.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = Value::from("fatal");
    assert!(!validator.is_valid(&broken));
    let mut redacted = sarif.clone();
    redacted["runs"][0]["tool"]["driver"]["version"] = Value::from("[version]");
    insta::assert_snapshot!(
        "example_sarif",
        serde_json::to_string_pretty(&redacted).unwrap()
    );
}

#[test]
fn clean_file_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clean.py");
    std::fs::write(
        &file,
        "import torch\n\ndef f(x: torch.Tensor):\n    return x * 2\n",
    )
    .unwrap();
    let output = run(&["check", "--isolated", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("All checks passed."));
}

#[test]
fn exit_zero_flag_and_statistics() {
    let output = run(&[
        "check",
        "--isolated",
        "--exit-zero",
        "--statistics",
        EXAMPLE,
    ]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    assert!(text.contains("GR104  tensor-truthiness"), "{text}");
    assert!(text.lines().last().unwrap().ends_with("total"));
}

#[test]
fn unknown_config_key_is_an_error_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.graphready]\nselect = [\"GR1\"]\nentry-pointz = []\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("m.py"), "import torch\n").unwrap();
    let output = graphready().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(err.contains("pyproject.toml"), "{err}");
    assert!(err.contains("entry-pointz"), "{err}");
    assert!(err.contains("select"), "allowed keys are listed: {err}");
}

#[test]
fn bad_config_value_is_an_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("graphready.toml"), "ignore = [\"GR999\"]\n").unwrap();
    std::fs::write(dir.path().join("m.py"), "import torch\n").unwrap();
    let output = graphready().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let err = stderr(&output);
    assert!(
        err.contains("graphready.toml") && err.contains("ignore") && err.contains("GR999"),
        "{err}"
    );

    std::fs::write(dir.path().join("graphready.toml"), "select = \"GR1\"\n").unwrap();
    let output = graphready().arg("check").arg(dir.path()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("graphready.toml"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn config_select_ignore_per_file_ignores_and_exclude() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("pyproject.toml"),
        "[tool.graphready]\nignore = [\"GR107\"]\nexclude = [\"vendored\"]\n\
         [tool.graphready.per-file-ignores]\n\"tests/*.py\" = [\"GR101\"]\n",
    )
    .unwrap();
    let body = "import torch\n\ndef f(x: torch.Tensor):\n    torch.cuda.synchronize()\n    return x.item()\n";
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::create_dir_all(root.join("vendored")).unwrap();
    std::fs::write(root.join("main.py"), body).unwrap();
    std::fs::write(root.join("tests/test_main.py"), body).unwrap();
    std::fs::write(root.join("vendored/lib.py"), body).unwrap();
    let output = graphready()
        .args(["check", "--output-format", "json"])
        .arg(root)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let path = f["path"].as_str().unwrap();
            let name = Path::new(path)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            (name, f["code"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(found, vec![("main.py".to_string(), "GR101".to_string())]);
    // The command line overrides the configuration.
    let output = graphready()
        .args(["check", "--output-format", "json", "--select", "GR107"])
        .arg(root.join("main.py"))
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let codes: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, vec!["GR107"]);
}

#[test]
fn unparsable_and_non_utf8_files_are_diagnostics_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("broken.py"),
        "import torch\ndef f(:\n    pass\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("latin1.py"), b"import torch\n# caf\xe9\n").unwrap();
    std::fs::write(
        dir.path().join("good.py"),
        "import torch\ndef f(x: torch.Tensor):\n    return x.item()\n",
    )
    .unwrap();
    let output = graphready()
        .args(["check", "--isolated", "--output-format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut found: Vec<(String, String)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let name = Path::new(f["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string();
            (name, f["code"].as_str().unwrap().to_string())
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("broken.py".to_string(), "GR000".to_string()),
            ("good.py".to_string(), "GR101".to_string()),
            ("latin1.py".to_string(), "GR000".to_string()),
        ]
    );
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(messages.iter().any(|m| m.contains("could not be parsed")));
    assert!(messages.iter().any(|m| m.contains("not valid UTF-8")));
}

#[test]
fn missing_path_and_unknown_rule_exit_two() {
    let output = run(&["check", "--isolated", "does/not/exist.py"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("does/not/exist.py"));
    let output = run(&["rule", "GR999"]);
    assert_eq!(output.status.code(), Some(2));
    let output = run(&["check", "--isolated", "--select", "XYZ", EXAMPLE]);
    assert_eq!(output.status.code(), Some(2));
    let output = run(&["check", "--no-such-flag"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn rule_prints_its_documentation() {
    let output = run(&["rule", "GR101"]);
    assert!(output.status.success());
    let text = stdout(&output);
    assert!(text.starts_with("# item-call (GR101)"));
    assert!(text.contains("## Why is this bad?"));
    let by_name = run(&["rule", "item-call"]);
    assert_eq!(stdout(&by_name), text);
}

#[test]
fn broken_pipe_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut body = String::from("import torch\n\ndef f(x: torch.Tensor):\n");
    for _ in 0..20_000 {
        body.push_str("    x.item()\n");
    }
    let file = dir.path().join("many.py");
    std::fs::write(&file, body).unwrap();
    let mut child = graphready()
        .args(["check", "--isolated", "--scope", "all", "--color", "never"])
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert!(err.is_empty(), "no error on a closed pipe: {err}");
}

#[test]
fn relative_imports_resolve_to_qualified_names() {
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("pkg");
    std::fs::create_dir_all(pkg.join("sub")).unwrap();
    std::fs::write(pkg.join("__init__.py"), "").unwrap();
    std::fs::write(pkg.join("sub/__init__.py"), "").unwrap();
    // `..compat` is `pkg.compat`; its `torch` re-export is not PyTorch, so nothing is reported,
    // while the absolute import in the same file is.
    std::fs::write(
        pkg.join("sub/mod.py"),
        "import torch\nfrom .. import compat\nfrom ..compat import synchronize\n\n\
         def f():\n    synchronize()\n    compat.torch.cuda.synchronize()\n    torch.cuda.synchronize()\n",
    )
    .unwrap();
    let output = graphready()
        .args(["check", "--isolated", "--output-format", "json"])
        .arg(&pkg)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let lines: Vec<u64> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["span"]["start"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![8]);
}

#[test]
fn array_methods_stay_ambiguous_in_modules_that_import_numpy() {
    let dir = tempfile::tempdir().unwrap();
    let body = "def f(mask):\n    if mask.any():\n        pass\n";
    std::fs::write(
        dir.path().join("with_numpy.py"),
        format!("import numpy as np\nimport torch\n\n{body}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("torch_only.py"),
        format!("import torch\n\n{body}"),
    )
    .unwrap();
    let output = graphready()
        .args([
            "check",
            "--isolated",
            "--scope",
            "all",
            "--output-format",
            "json",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let files: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            Path::new(f["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string()
        })
        .collect();
    assert_eq!(files, vec!["torch_only.py".to_string()]);
}

#[test]
fn per_step_allocation_is_opt_in() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("m.py"),
        "import torch\n\ndef step(x: torch.Tensor):  # graphready: captured\n    \
         return torch.empty_like(x)\n",
    )
    .unwrap();
    let codes = |args: &[&str]| -> Vec<String> {
        let output = graphready()
            .args(["check", "--isolated", "--output-format", "json"])
            .args(args)
            .arg(dir.path())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["code"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(codes(&[]).is_empty());
    assert_eq!(codes(&["--select", "GR401"]), vec!["GR401".to_string()]);
    assert_eq!(codes(&["--select", "ALL"]), vec!["GR401".to_string()]);
}

/// line → codes expected there, from `# error: GR101 GR104` markers.
fn expected_markers(source: &str) -> std::collections::BTreeMap<u32, Vec<String>> {
    let mut expected = std::collections::BTreeMap::new();
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

fn findings_by_line(report: &Value) -> std::collections::BTreeMap<u32, Vec<String>> {
    let mut actual: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
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

/// The configuration's `debug-guards` reach the checker: code under them is not reported.
#[test]
fn configured_debug_guards_silence_debug_only_code() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("graphready.toml"),
        "debug-guards = [\"VERBOSE >= 2\"]\n",
    )
    .unwrap();
    let fixture = repo_root()
        .join("crates/graphready_linter/resources/test/fixtures/sync/GR104_debug_guards.py");
    let target = dir.path().join("GR104_debug_guards.py");
    std::fs::copy(&fixture, &target).unwrap();
    let output = graphready()
        .args(["check", "--output-format", "json"])
        .arg(&target)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let source = std::fs::read_to_string(&fixture).unwrap();
    assert_eq!(findings_by_line(&report), expected_markers(&source));
}

/// Issue 14: every finding links its rule's page (JSON `url`, SARIF `helpUri`, a note in text
/// frames); the pages exist for every rule and for graphready's own codes, under the
/// workspace's `repository`.
#[test]
fn every_finding_links_its_rule_page() {
    let manifest = std::fs::read_to_string(repo_root().join("Cargo.toml")).unwrap();
    let repository = manifest
        .lines()
        .find_map(|line| line.strip_prefix("repository = "))
        .unwrap()
        .trim_matches('"');
    let base = format!("{repository}/blob/main/docs/rules/");
    let page = |url: &str| -> PathBuf {
        let name = url
            .strip_prefix(&base)
            .unwrap_or_else(|| panic!("{url} is not under {base}"));
        repo_root().join("docs/rules").join(name)
    };

    let rules: Value =
        serde_json::from_slice(&run(&["rules", "--output-format", "json"]).stdout).unwrap();
    let mut codes: Vec<String> = rules
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| rule["code"].as_str().unwrap().to_string())
        .collect();
    codes.extend(["GR000".to_string(), "GR001".to_string()]);
    for code in &codes {
        let path = page(&format!("{base}{code}.md"));
        assert!(path.is_file(), "{code}: no page at {}", path.display());
    }

    let output = run(&["check", "--isolated", "--output-format", "json", EXAMPLE]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    for finding in report["findings"].as_array().unwrap() {
        let url = finding["url"].as_str().unwrap();
        assert_eq!(
            url,
            format!("{base}{}.md", finding["code"].as_str().unwrap())
        );
    }

    let output = run(&["check", "--isolated", "--output-format", "sarif", EXAMPLE]);
    let sarif: Value = serde_json::from_slice(&output.stdout).unwrap();
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert!(!rules.is_empty());
    for rule in rules {
        let url = rule["helpUri"].as_str().unwrap();
        assert_eq!(url, format!("{base}{}.md", rule["id"].as_str().unwrap()));
    }

    let output = run(&["check", "--isolated", "--color", "never", EXAMPLE]);
    let text = stdout(&output);
    let frames = text.matches("error[").count() + text.matches("warning[").count();
    assert!(frames > 0);
    assert_eq!(
        text.matches(&format!("= note: see {base}")).count(),
        frames,
        "{text}"
    );
}

/// Issue 14: `GR000` findings carry a page too.
#[test]
fn unreadable_files_link_their_page() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.py"), "import torch\ndef f(:\n").unwrap();
    let output = graphready()
        .args(["check", "--isolated", "--output-format", "json"])
        .arg(dir.path())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let url = report["findings"][0]["url"].as_str().unwrap();
    assert!(url.ends_with("/docs/rules/GR000.md"), "{url}");
}
