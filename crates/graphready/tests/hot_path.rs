//! The hot path on a multi-file project: packages, relative imports, `__init__` re-exports,
//! submodules in an `nn.ModuleList`, inheritance, `super()`, a guarded warm-up, an eager-break
//! attention function, a loader with `.item()`, a capture site and a replaying step.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hot_project")
}

fn check(args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(project())
        .args(["check", "--isolated", "--output-format", "json"])
        .args(args)
        .arg("engine")
        .output()
        .expect("graphready runs");
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("report JSON")
}

/// (path, line, code, reach, chain) for every finding.
fn findings(report: &Value) -> Vec<(String, u64, String, String, Vec<String>)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["span"]["start"]["line"].as_u64().unwrap(),
                f["code"].as_str().unwrap().to_string(),
                f["reach"].as_str().unwrap().to_string(),
                f["chain"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|link| link["function"].as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

fn chain(links: &[&str]) -> Vec<String> {
    links.iter().map(|s| (*s).to_string()).collect()
}

/// A temporary project holding a package `pkg` with these files (paths under `pkg/`).
fn package(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/__init__.py"), "").unwrap();
    for (path, source) in files {
        std::fs::write(dir.path().join("pkg").join(path), source).unwrap();
    }
    dir
}

/// The JSON report of `graphready check --output-format json ARGS pkg`, run in `root`.
fn check_in(root: &Path, args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(root)
        .args(["check", "--output-format", "json"])
        .args(args)
        .arg("pkg")
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn exactly_the_hot_path_hazards_are_reported_with_their_chains() {
    let report = check(&[]);
    let found = findings(&report);
    let expected = vec![
        (
            "engine/model/decoder.py".to_string(),
            14,
            "GR101".to_string(),
            "capture".to_string(),
            chain(&[
                "Model.forward",
                "DecoderLayer.forward",
                "ScaledMLP.forward",
                "MLP.forward",
            ]),
        ),
        (
            "engine/model/decoder.py".to_string(),
            42,
            "GR104".to_string(),
            "capture".to_string(),
            chain(&["Model.forward"]),
        ),
        (
            "engine/runner.py".to_string(),
            26,
            "GR102".to_string(),
            "stall".to_string(),
            chain(&["Runner.step"]),
        ),
        (
            "engine/utils/math.py".to_string(),
            6,
            "GR104".to_string(),
            "capture".to_string(),
            chain(&[
                "Model.forward",
                "DecoderLayer.forward",
                "MoE.forward",
                "ExpertBase.route",
                "pack_ue8m0_to_int",
            ]),
        ),
    ];
    assert_eq!(found, expected);
}

#[test]
fn scope_all_also_reports_the_cold_code() {
    let report = check(&["--scope", "all"]);
    let mut cold: Vec<(String, u64)> = findings(&report)
        .into_iter()
        .filter(|f| f.3 == "unknown")
        .map(|f| (f.0, f.1))
        .collect();
    cold.sort();
    assert_eq!(
        cold,
        vec![
            ("engine/loader.py".to_string(), 6),
            ("engine/model/attention.py".to_string(), 6),
            ("engine/runner.py".to_string(), 7),
            ("engine/utils/math.py".to_string(), 11),
        ]
    );
}

#[test]
fn show_scope_lists_entries_breaks_and_counts() {
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(project())
        .args(["check", "--isolated", "--show-scope", "engine"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    insta::assert_snapshot!("hot_project_scope", text);
}

/// `--show-scope --output-format json`: the same facts as data, plus every reached function.
#[test]
fn show_scope_as_json_lists_every_reached_function() {
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(project())
        .args([
            "check",
            "--isolated",
            "--show-scope",
            "--output-format",
            "json",
        ])
        .arg("engine")
        .output()
        .unwrap();
    assert!(output.status.success());
    let scope: Value = serde_json::from_slice(&output.stdout).expect("scope JSON");
    let reached: Vec<(String, String)> = scope["reached"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["function"].as_str().unwrap().to_string(),
                f["reach"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        reached.len(),
        scope["captured"].as_u64().unwrap() as usize + scope["stalled"].as_u64().unwrap() as usize
    );
    assert!(reached.contains(&("MLP.forward".to_string(), "capture".to_string())));
    assert!(reached.contains(&("Runner.step".to_string(), "stall".to_string())));
    // The loader runs once: it is not reached.
    assert!(!reached
        .iter()
        .any(|(function, _)| function.contains("load")));
}

#[test]
fn configured_entries_and_eager_breaks() {
    let dir = package(&[(
        "step.py",
        "import torch\n\n\
         def helper(x: torch.Tensor):\n    return x.item()\n\n\
         def slow(x: torch.Tensor):\n    return x.tolist()\n\n\
         def decode_step(x: torch.Tensor):\n    slow(x)\n    return helper(x)\n\n\
         def unrelated(x: torch.Tensor):\n    return x.cpu()\n",
    )]);
    let root = dir.path();
    std::fs::write(
        root.join("pyproject.toml"),
        "[tool.graphready]\nentry-points = [\"pkg.step:decode_step\"]\neager = [\"pkg.step:slow\"]\n\
         module-forwards = false\n",
    )
    .unwrap();
    let report = check_in(root, &[]);
    let found = findings(&report);
    assert_eq!(
        found,
        vec![(
            "pkg/step.py".to_string(),
            4,
            "GR101".to_string(),
            "capture".to_string(),
            chain(&["decode_step", "helper"]),
        )]
    );
}

/// Code only AMD GPUs run (a platform test, a ROCm backend's module) is analysed by default;
/// `rocm = false` leaves AMD's GPUs out, and it becomes another device's.
#[test]
fn rocm_code_is_left_out_only_when_rocm_is_not_a_target() {
    let dir = package(&[
        (
            "step.py",
            "import torch\n\n_is_hip = torch.version.hip is not None\n\n\n\
             def decode_step(x: torch.Tensor):  # graphready: captured\n    \
             if _is_hip:\n        return x.tolist()\n    return x.item()\n",
        ),
        (
            "rocm_aiter_attn.py",
            "import torch\n\n\ndef plan(x: torch.Tensor):  # graphready: captured\n    return x.item()\n",
        ),
    ]);
    let root = dir.path();
    let codes = |config: &str| -> Vec<(String, u64, String)> {
        std::fs::write(root.join("pyproject.toml"), config).unwrap();
        findings(&check_in(root, &[]))
            .into_iter()
            .map(|(path, line, code, _, _)| (path, line, code))
            .collect()
    };
    assert_eq!(
        codes("[tool.graphready]\nrocm = false\n"),
        vec![("pkg/step.py".to_string(), 9, "GR101".to_string())]
    );
    assert_eq!(
        codes("[tool.graphready]\n"),
        vec![
            ("pkg/rocm_aiter_attn.py".to_string(), 5, "GR101".to_string()),
            ("pkg/step.py".to_string(), 8, "GR102".to_string()),
            ("pkg/step.py".to_string(), 9, "GR101".to_string()),
        ]
    );
}

#[test]
fn tensor_returns_flow_through_calls_across_modules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("pkg")).unwrap();
    std::fs::write(
        root.join("pkg/__init__.py"),
        "from .ops import router_logits\n",
    )
    .unwrap();
    std::fs::write(
        root.join("pkg/ops.py"),
        "import torch\n\ndef router_logits(x: torch.Tensor):\n    return x.softmax(-1)\n",
    )
    .unwrap();
    std::fs::write(
        root.join("pkg/model.py"),
        "from torch import nn\nfrom pkg import router_logits\nfrom .ops import router_logits as rl\n\n\
         def local_scores(x):\n    return x.sigmoid()\n\n\
         class M(nn.Module):\n    def forward(self, x):\n        if router_logits(x).max() > 0.5:\n            pass\n\
         \x20       if rl(x).any():\n            pass\n        return x\n\n\n\
         def capture(graph, x):\n    import torch\n\n    with torch.cuda.graph(graph):\n\
         \x20       if router_logits(x).any():\n            pass\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_graphready"))
        .current_dir(root)
        .args(["check", "--isolated", "--output-format", "json", "pkg"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let lines: Vec<u64> = findings(&report).iter().map(|f| f.1).collect();
    // Line 21 is inside a capture block of a function no entry reaches: re-checked with the
    // cross-module return types all the same.
    assert_eq!(lines, vec![10, 12, 21], "{report:#}");
}
