//! Which files a run checks and reports (issue 14): `--force-exclude`, `--stdin-filename`, a
//! subset of a project's files (pre-commit, editors), a run that checked nothing, `--quiet`.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Runs `graphready ARGS` in `dir`, with `stdin` on standard input.
fn run_in(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    run_bytes(dir, args, stdin.unwrap_or_default().as_bytes())
}

fn run_bytes(dir: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("graphready runs");
    let mut input = child.stdin.take().unwrap();
    // A run that fails early does not read its input: a closed pipe here is no error.
    let _ = input.write_all(stdin);
    drop(input);
    child.wait_with_output().unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|err| panic!("{err}: {}{}", stdout(output), stderr(output)))
}

/// (path, line, code) of every finding.
fn found(report: &Value) -> Vec<(String, u64, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["span"]["start"]["line"].as_u64().unwrap(),
                f["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const HAZARD: &str = "import torch\n\ndef f(x: torch.Tensor):\n    return x.item()\n";
const CLEAN: &str = "import torch\n\ndef f(x: torch.Tensor):\n    return x * 2\n";

/// A project with a configured exclude, a default-excluded folder and per-file ignores.
fn excluding_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "pyproject.toml",
        "[tool.graphready]\nexclude = [\"vendored\"]\n\
         [tool.graphready.per-file-ignores]\n\"tests/*.py\" = [\"GR101\"]\n",
    );
    write(root, "main.py", HAZARD);
    write(root, "tests/test_main.py", HAZARD);
    write(root, "vendored/lib.py", HAZARD);
    write(root, ".venv/lib/site-packages/dep.py", HAZARD);
    dir
}

#[test]
fn a_named_path_is_checked_despite_the_excludes_unless_force_exclude() {
    let project = excluding_project();
    let root = project.path();
    for path in [
        "vendored/lib.py",
        "vendored",
        ".venv/lib/site-packages/dep.py",
    ] {
        let output = run_in(root, &["check", "--output-format", "json", path], None);
        assert_eq!(output.status.code(), Some(1), "{path}: {}", stderr(&output));
        assert_eq!(found(&json(&output)).len(), 1, "{path}");

        let output = run_in(
            root,
            &["check", "--force-exclude", "--output-format", "json", path],
            None,
        );
        assert_eq!(output.status.code(), Some(0), "{path}: {}", stderr(&output));
        assert!(found(&json(&output)).is_empty(), "{path}");
        assert!(
            stderr(&output).contains("no Python files were checked (1 path excluded)"),
            "{path}: {}",
            stderr(&output)
        );
    }
    // Named alongside a file that is not excluded, only the excluded one is left out.
    let output = run_in(
        root,
        &[
            "check",
            "--force-exclude",
            "--output-format",
            "json",
            "vendored/lib.py",
            "main.py",
        ],
        None,
    );
    assert_eq!(
        found(&json(&output)),
        vec![("main.py".to_string(), 4, "GR101".to_string())]
    );
}

/// Issue 14: `graphready check .` from the configuration's folder walks `./vendored`,
/// `./tests/...`: the configured globs must still match them.
#[test]
fn exclude_and_per_file_ignores_apply_when_checking_dot_from_the_project_root() {
    let project = excluding_project();
    for dir in [project.path().to_path_buf(), project.path().join("tests")] {
        let output = run_in(&dir, &["check", "--output-format", "json", "."], None);
        let report = json(&output);
        let expected: Vec<(String, u64, String)> = if dir == project.path() {
            vec![("main.py".to_string(), 4, "GR101".to_string())]
        } else {
            Vec::new()
        };
        assert_eq!(found(&report), expected, "from {}", dir.display());
    }
}

#[test]
fn a_run_that_checked_no_file_says_so_and_exits_zero() {
    let project = excluding_project();
    let root = project.path();
    std::fs::create_dir_all(root.join("docs")).unwrap();
    write(root, "docs/notes.txt", "not Python\n");

    let output = run_in(root, &["check", "docs"], None);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "", "no `All checks passed.`");
    assert_eq!(
        stderr(&output),
        "graphready: warning: no Python files were checked\n"
    );

    // `.venv` holds only `site-packages`, which the defaults exclude.
    let output = run_in(root, &["check", ".venv"], None);
    assert_eq!(output.status.code(), Some(0));
    assert!(!stdout(&output).contains("All checks passed"));
    assert!(
        stderr(&output).contains("no Python files were checked (1 path excluded)"),
        "{}",
        stderr(&output)
    );

    // Machine-readable formats stay valid documents.
    let output = run_in(root, &["check", "--output-format", "json", "docs"], None);
    let report = json(&output);
    assert_eq!(report["summary"]["files_checked"], 0);
    assert_eq!(report["findings"], Value::Array(Vec::new()));
    let output = run_in(root, &["check", "--output-format", "sarif", "docs"], None);
    let sarif = json(&output);
    assert_eq!(sarif["runs"][0]["results"], Value::Array(Vec::new()));

    let output = run_in(root, &["check", "--quiet", "docs"], None);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stderr(&output), "", "--quiet: no warning");

    // Python files that never mention torch were checked: they pass.
    write(root, "docs/conf.py", "project = 'x'\n");
    let output = run_in(root, &["check", "docs"], None);
    assert_eq!(stdout(&output), "All checks passed.\n");
    assert_eq!(stderr(&output), "");
}

#[test]
fn quiet_prints_only_the_findings() {
    let project = excluding_project();
    let root = project.path();
    write(root, "clean.py", CLEAN);
    // No entry point: without --quiet a note says every function is reported.
    let loud = run_in(root, &["check", "--color", "never", "main.py"], None);
    assert!(
        stderr(&loud).contains("no entry point"),
        "{}",
        stderr(&loud)
    );
    assert!(stdout(&loud).ends_with("Found 1 finding.\n"));

    let quiet = run_in(root, &["check", "-q", "--color", "never", "main.py"], None);
    assert_eq!(quiet.status.code(), Some(1));
    assert_eq!(stderr(&quiet), "");
    let text = stdout(&quiet);
    assert!(text.contains("error[GR101]"), "{text}");
    assert!(!text.contains("Found 1 finding"), "{text}");
    assert_eq!(stdout(&loud), format!("{text}Found 1 finding.\n"));

    let clean = run_in(root, &["check", "--quiet", "clean.py"], None);
    assert_eq!(clean.status.code(), Some(0));
    assert_eq!(stdout(&clean), "");
    assert_eq!(stderr(&clean), "");

    // Errors still speak.
    let missing = run_in(root, &["check", "--quiet", "nope.py"], None);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("nope.py"));
}

#[test]
fn stdin_filename_checks_standard_input_as_that_file_with_its_configuration() {
    let project = excluding_project();
    let root = project.path();
    // On disk the file is clean; standard input (an editor's unsaved buffer) is what counts.
    write(root, "main.py", CLEAN);
    let output = run_in(
        root,
        &[
            "check",
            "--output-format",
            "json",
            "--stdin-filename",
            "main.py",
        ],
        Some(HAZARD),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report = json(&output);
    assert_eq!(
        found(&report),
        vec![("main.py".to_string(), 4, "GR101".to_string())]
    );
    assert_eq!(report["summary"]["files_checked"], 1);

    // A file that does not exist yet, under the per-file ignores of its configuration.
    let output = run_in(
        root,
        &[
            "check",
            "--output-format",
            "json",
            "--stdin-filename",
            "tests/test_new.py",
        ],
        Some(HAZARD),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(found(&json(&output)).is_empty());

    // The code frame shows standard input's text.
    let output = run_in(
        root,
        &["check", "--color", "never", "--stdin-filename", "new.py"],
        Some(HAZARD),
    );
    let text = stdout(&output);
    assert!(text.contains("--> new.py:4:12"), "{text}");
    assert!(text.contains("4 |     return x.item()"), "{text}");

    // With --force-exclude an excluded path is not checked.
    let output = run_in(
        root,
        &[
            "check",
            "--force-exclude",
            "--stdin-filename",
            "vendored/new.py",
        ],
        Some(HAZARD),
    );
    assert_eq!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("no Python files were checked"));
    let output = run_in(
        root,
        &["check", "--stdin-filename", "vendored/new.py"],
        Some(HAZARD),
    );
    assert_eq!(output.status.code(), Some(1));

    // Not UTF-8: a GR000 finding, as for a file.
    let output = run_in(
        root,
        &[
            "check",
            "--output-format",
            "json",
            "--stdin-filename",
            "x.py",
        ],
        None,
    );
    assert_eq!(output.status.code(), Some(0), "empty input is a clean file");
}

#[test]
fn stdin_filename_with_paths_or_a_folder_is_a_usage_error() {
    let project = excluding_project();
    let root = project.path();
    let output = run_in(
        root,
        &["check", "--stdin-filename", "a.py", "main.py"],
        Some(HAZARD),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("--stdin-filename"),
        "{}",
        stderr(&output)
    );
    let output = run_in(root, &["check", "--stdin-filename", "tests"], Some(HAZARD));
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("tests"), "{}", stderr(&output));
}

/// A copy of tests/fixtures/hot_project, optionally with a configuration file at its root.
fn hot_project(config: Option<&str>) -> tempfile::TempDir {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_project");
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&source, dir.path());
    if let Some(config) = config {
        write(dir.path(), "graphready.toml", config);
    }
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn python_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            python_files(root, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(
                path.strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .to_string(),
            );
        }
    }
}

/// Every finding with its reach and chain, as one comparable line.
fn detailed(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let chain: Vec<String> = f["chain"]
                .as_array()
                .unwrap()
                .iter()
                .map(|link| format!("{}@{}", link["function"], link["path"]))
                .collect();
            format!(
                "{}:{} {} {} [{}]",
                f["path"].as_str().unwrap(),
                f["span"]["start"]["line"],
                f["code"].as_str().unwrap(),
                f["reach"].as_str().unwrap(),
                chain.join(" ")
            )
        })
        .collect()
}

/// Issue 14: a finding must not appear or vanish because of which files were passed. Each
/// file of the project named alone (as pre-commit and editors do), or given on standard
/// input, reports exactly the findings the whole project's run reports in it, with the same
/// reach and chain; the project is found from the configuration's folder, or else from the
/// outermost package.
#[test]
fn a_subset_of_files_reports_what_the_whole_project_reports_in_them() {
    for (config, flags) in [
        (None, vec!["--isolated"]),
        (Some("module-forwards = true\n"), vec![]),
    ] {
        let project = hot_project(config);
        let root = project.path();
        let check = |extra: &[&str], stdin: Option<&str>| -> Value {
            let mut args = vec!["check", "--output-format", "json"];
            args.extend(&flags);
            args.extend(extra);
            let output = run_in(root, &args, stdin);
            assert!(
                matches!(output.status.code(), Some(0 | 1)),
                "{}",
                stderr(&output)
            );
            json(&output)
        };
        let whole = detailed(&check(&["engine"], None));
        assert!(whole.len() >= 4, "{whole:?}");
        let mut files = Vec::new();
        python_files(root, &root.join("engine"), &mut files);
        files.sort();
        let mut seen = 0;
        for file in &files {
            let expected: Vec<String> = whole
                .iter()
                .filter(|line| line.starts_with(&format!("{file}:")))
                .cloned()
                .collect();
            seen += expected.len();
            let alone = check(&[file], None);
            assert_eq!(detailed(&alone), expected, "{file} named alone");
            assert_eq!(alone["summary"]["files_checked"], 1, "{file}");
            let source = std::fs::read_to_string(root.join(file)).unwrap();
            let piped = check(&["--stdin-filename", file], Some(&source));
            assert_eq!(detailed(&piped), expected, "{file} on standard input");
        }
        assert_eq!(seen, whole.len(), "every finding is in some file");
        // Two files at once, as pre-commit passes the staged ones.
        let pair = check(&["engine/runner.py", "engine/model/decoder.py"], None);
        let expected: Vec<String> = whole
            .iter()
            .filter(|line| {
                line.starts_with("engine/runner.py:")
                    || line.starts_with("engine/model/decoder.py:")
            })
            .cloned()
            .collect();
        assert_eq!(detailed(&pair), expected);
    }
}

/// From inside the project, the named file keeps its name as given and the chain's other
/// files read relative to the working folder.
#[test]
fn a_named_file_keeps_its_name_from_a_subfolder() {
    let project = hot_project(None);
    let model = project.path().join("engine/model");
    let output = run_in(
        &model,
        &[
            "check",
            "--isolated",
            "--output-format",
            "json",
            "decoder.py",
        ],
        None,
    );
    let report = json(&output);
    let paths: Vec<String> = found(&report).into_iter().map(|(p, _, _)| p).collect();
    assert_eq!(
        paths,
        vec!["decoder.py".to_string(), "decoder.py".to_string()]
    );
    let output = run_in(
        &model,
        &[
            "check",
            "--isolated",
            "--output-format",
            "json",
            "../runner.py",
        ],
        None,
    );
    let report = json(&output);
    assert_eq!(
        found(&report),
        vec![("../runner.py".to_string(), 26, "GR102".to_string())]
    );
}

/// Files outside any configuration and package are checked alone, as before.
#[test]
fn files_outside_a_project_are_checked_alone() {
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().to_path_buf();
    write(
        &root,
        "hazard.py",
        "from torch import nn\n\nclass Decoder(nn.Module):\n    def forward(self, x):\n        \
         return x / x.abs().max().item()\n",
    );
    write(
        &root,
        "clean.py",
        "from torch import nn\n\nclass Decoder(nn.Module):\n    def forward(self, x):\n        \
         return x / x.abs().amax()\n",
    );
    let output = run_in(&root, &["check", "--force-exclude", "clean.py"], None);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    assert_eq!(stdout(&output), "All checks passed.\n");
    let output = run_in(&root, &["check", "--force-exclude", "hazard.py"], None);
    assert_eq!(output.status.code(), Some(1));
}
