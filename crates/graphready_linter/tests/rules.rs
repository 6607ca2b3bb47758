//! Every rule, in process: its fixture's `# error:` markers match the findings exactly, its
//! rendered text is pinned by a snapshot beside the fixtures, its documentation has every
//! section and the generated pages (docs/rules, the README's rule table) are current. Plus the
//! conventions that keep the rule set consistent.

use graphready_diagnostics::{text, Diagnostic, FileDiagnostics};
use graphready_linter::project::{self, Options, Scope, SourceFile};
use graphready_linter::registry::Family;
use graphready_linter::HotPathSettings;
use graphready_linter::{Rule, RuleSet, Settings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const UPDATE: &str = "GRAPHREADY_UPDATE_DOCS";

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn repo_dir() -> PathBuf {
    crate_dir().join("../..")
}

/// `resources/test/fixtures/<family>/<CODE>.py`, relative to the crate.
fn fixture_for(rule: Rule) -> PathBuf {
    let folder = rule.family().as_str().replace('-', "_");
    Path::new("resources/test/fixtures")
        .join(folder)
        .join(format!("{}.py", rule.code()))
}

/// Checks one fixture as `graphready check --isolated --scope all --select RULE` would.
fn check(fixture: &Path, rules: RuleSet) -> Vec<FileDiagnostics> {
    let settings = Settings {
        rules,
        ..Settings::default()
    };
    let hot_path = HotPathSettings::default();
    let options = Options::new(std::slice::from_ref(&settings), &hot_path, Scope::All);
    let absolute = crate_dir().join(fixture);
    let mut files = project::check(&options, |found| {
        found(SourceFile {
            path: absolute.clone(),
            settings: 0,
            ignored: RuleSet::empty(),
        });
    })
    .files;
    // Paths as the crate sees them, so that snapshots do not depend on where the checkout is.
    let shown = fixture.display().to_string();
    for file in &mut files {
        file.path.clone_from(&shown);
        for diagnostic in &mut file.diagnostics {
            diagnostic.path.clone_from(&shown);
        }
    }
    files
}

fn only(rule: Rule) -> RuleSet {
    std::iter::once(rule).collect()
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

fn findings_by_line(diagnostics: &[&Diagnostic]) -> BTreeMap<u32, Vec<String>> {
    let mut actual: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for diagnostic in diagnostics {
        actual
            .entry(diagnostic.span.start.line)
            .or_default()
            .push(diagnostic.code.clone());
    }
    for codes in actual.values_mut() {
        codes.sort();
    }
    actual
}

#[test]
fn every_rule_matches_its_fixture_markers() {
    for &rule in Rule::ALL {
        let code = rule.code();
        let fixture = fixture_for(rule);
        let source = std::fs::read_to_string(crate_dir().join(&fixture))
            .unwrap_or_else(|_| panic!("{code} has no fixture at {}", fixture.display()));
        assert!(
            source.contains("# Error"),
            "{code}: fixture needs an `# Error` section"
        );
        assert!(
            source.contains("# OK"),
            "{code}: fixture needs an `# OK` section"
        );
        // Markers of this rule only: other rules may legitimately fire on the same lines.
        let expected: BTreeMap<u32, Vec<String>> = expected_markers(&source)
            .into_iter()
            .filter_map(|(line, codes)| {
                let own: Vec<String> = codes.into_iter().filter(|c| c == code).collect();
                (!own.is_empty()).then_some((line, own))
            })
            .collect();
        assert!(
            !expected.is_empty(),
            "{code}: fixture has no `# error: {code}` marker"
        );
        let files = check(&fixture, only(rule));
        let diagnostics: Vec<&Diagnostic> = files.iter().flat_map(|f| &f.diagnostics).collect();
        assert_eq!(
            findings_by_line(&diagnostics),
            expected,
            "{code}: findings differ from markers"
        );
        for diagnostic in diagnostics {
            let message = &diagnostic.message;
            assert!(
                message.starts_with(|c: char| !c.is_uppercase()),
                "{code}: message must start lowercase: {message}"
            );
            assert!(
                !message.ends_with('.'),
                "{code}: message must not end with a period"
            );
            assert!(
                diagnostic.fix.is_some(),
                "{code}: every finding needs a fix title"
            );
        }
    }
}

#[test]
fn every_rule_has_a_text_snapshot() {
    for &rule in Rule::ALL {
        let files = check(&fixture_for(rule), only(rule));
        let rendered = text::render(&files, false);
        insta::with_settings!({
            snapshot_path => "../resources/test/snapshots",
            prepend_module_to_snapshot => false,
            omit_expression => true,
        }, {
            insta::assert_snapshot!(rule.code(), rendered);
        });
    }
}

#[test]
fn rule_codes_and_names_are_unique_and_well_formed() {
    let mut codes: Vec<_> = Rule::ALL.iter().map(|r| r.code()).collect();
    let mut names: Vec<_> = Rule::ALL.iter().map(|r| r.name()).collect();
    codes.sort_unstable();
    codes.dedup();
    names.sort_unstable();
    names.dedup();
    assert_eq!(codes.len(), Rule::ALL.len(), "duplicate rule codes");
    assert_eq!(names.len(), Rule::ALL.len(), "duplicate rule names");
    for rule in Rule::ALL {
        let code = rule.code();
        assert!(
            code.len() == 5
                && code.starts_with("GR")
                && code[2..].bytes().all(|b| b.is_ascii_digit()),
            "{code}"
        );
        let expected = match rule.family() {
            Family::Sync => "1",
            Family::DynamicShape => "2",
            Family::HostData => "3",
            Family::Allocation => "4",
            Family::CaptureIllegal => "5",
        };
        assert_eq!(
            &code[2..3],
            expected,
            "{code} is in family {:?}",
            rule.family()
        );
        assert!(
            rule.name()
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '-'),
            "{} must be kebab-case",
            rule.name()
        );
    }
}

/// Compares a generated file with the committed one; `GRAPHREADY_UPDATE_DOCS=1` writes it.
fn assert_current(path: &Path, generated: &str) {
    if std::env::var_os(UPDATE).is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale: rerun with {UPDATE}=1 cargo test -p graphready_linter --test rules",
        path.display()
    );
}

#[test]
fn rule_docs_have_every_section_and_generated_docs_are_current() {
    let docs_dir = repo_dir().join("docs/rules");
    for rule in Rule::ALL {
        let page = rule.page();
        for section in [
            "## What it does",
            "## Why is this bad?",
            "## Example",
            "Use instead:",
        ] {
            assert!(
                page.contains(section),
                "{}: docs lack `{section}`",
                rule.code()
            );
        }
        assert_current(&docs_dir.join(format!("{}.md", rule.code())), &page);
    }
}

const TABLE_START: &str = "<!-- rules table: generated";
const TABLE_END: &str = "<!-- end of rules table -->";

/// What a rule checks for, in a few words: the first clause of its documentation.
fn what(rule: Rule) -> String {
    let summary = rule.summary();
    let text = summary
        .strip_prefix("Checks, in code that runs captured, for ")
        .or_else(|| summary.strip_prefix("Checks for "))
        .unwrap_or(&summary);
    let clause = text.split(": ").next().unwrap_or(text);
    clause.trim_end_matches('.').to_string()
}

/// The README's rule table, from the rules' declarations.
fn rule_table() -> String {
    let mut table = String::from("| code | name | what |\n|---|---|---|\n");
    for &rule in Rule::ALL {
        let mut notes = String::new();
        if rule.severity() != graphready_diagnostics::Severity::Error {
            notes.push_str(&format!(" ({})", rule.severity()));
        }
        if rule.is_opt_in() {
            notes.push_str(" (opt-in: `--select ");
            notes.push_str(rule.code());
            notes.push_str("`)");
        }
        if rule.is_captured_only() {
            notes.push_str(" ¹");
        }
        table.push_str(&format!(
            "| [{code}](docs/rules/{code}.md) | {} | {}{notes} |\n",
            rule.name(),
            what(rule),
            code = rule.code(),
        ));
    }
    table
}

#[test]
fn readme_rule_table_is_current() {
    let path = repo_dir().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme
        .find(TABLE_START)
        .expect("README has the table's start marker");
    let body = start + readme[start..].find('\n').unwrap() + 1;
    let end = readme
        .find(TABLE_END)
        .expect("README has the table's end marker");
    let generated = format!("{}{}{}", &readme[..body], rule_table(), &readme[end..]);
    assert_current(&path, &generated);
}

/// The first ```python block after `marker` in a rule's documentation.
fn python_block<'d>(docs: &'d str, marker: &str) -> Option<&'d str> {
    let after = &docs[docs.find(marker)? + marker.len()..];
    let start = after.find("```python\n")? + "```python\n".len();
    let end = start + after[start..].find("```")?;
    Some(&after[start..end])
}

/// A documentation snippet as a checkable module: the modules it names imported, every `def`
/// but `__init__` marked as a captured entry point, methods (a first parameter `self`) and loose
/// statements (which may use `self`) wrapped in a class.
fn snippet_module(snippet: &str) -> String {
    let mut module = String::from("import torch\n");
    for (used, import) in [
        ("np.", "import numpy as np\n"),
        ("F.", "import torch.nn.functional as F\n"),
        ("dist.", "import torch.distributed as dist\n"),
        ("time.", "import time\n"),
        ("math.", "import math\n"),
        (
            "logger.",
            "import logging\n\nlogger = logging.getLogger(__name__)\n",
        ),
    ] {
        if snippet.contains(used) {
            module.push_str(import);
        }
    }
    module.push('\n');
    let mark = |line: &str| {
        let code = line.trim_start();
        if code.starts_with("def ")
            && !code.starts_with("def __init__")
            && line.trim_end().ends_with(':')
        {
            format!("{line}  # graphready: captured\n")
        } else {
            format!("{line}\n")
        }
    };
    let top_level_defs: Vec<&str> = snippet
        .lines()
        .filter(|line| line.starts_with("def ") || line.starts_with("class "))
        .collect();
    let methods = top_level_defs.iter().any(|line| line.contains("(self"));
    if !top_level_defs.is_empty() && !methods {
        module.extend(snippet.lines().map(mark));
        return module;
    }
    module.push_str("class Example(torch.nn.Module):\n");
    if top_level_defs.is_empty() {
        module.push_str("    def example(self):  # graphready: captured\n");
    }
    let indent = if top_level_defs.is_empty() {
        "        "
    } else {
        "    "
    };
    for line in snippet.lines() {
        module.push_str(indent);
        module.push_str(&mark(line));
    }
    module
}

/// Every rule's documented example is flagged by the rule, and its "Use instead" is not.
#[test]
fn documentation_examples_are_flagged_and_their_fixes_are_not() {
    let dir = std::env::temp_dir().join(format!("graphready-doc-examples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for &rule in Rule::ALL {
        let docs = rule.docs();
        let code = rule.code();
        for (marker, must_fire) in [("## Example", true), ("Use instead:", false)] {
            let Some(snippet) = python_block(&docs, marker) else {
                failures.push(format!("{code}: no ```python block after `{marker}`"));
                continue;
            };
            let module = snippet_module(snippet);
            let path = dir.join(format!(
                "{code}_{}.py",
                if must_fire { "example" } else { "fix" }
            ));
            std::fs::write(&path, &module).unwrap();
            let settings = Settings {
                rules: only(rule),
                ..Settings::default()
            };
            let hot_path = HotPathSettings::default();
            let options = Options::new(std::slice::from_ref(&settings), &hot_path, Scope::All);
            let fired = project::check(&options, |found| {
                found(SourceFile {
                    path: path.clone(),
                    settings: 0,
                    ignored: RuleSet::empty(),
                });
            })
            .files
            .iter()
            .flat_map(|file| &file.diagnostics)
            .any(|diagnostic| diagnostic.code == code);
            if fired != must_fire {
                failures.push(format!(
                    "{code}: the `{marker}` snippet is {} flagged:\n{module}",
                    if fired { "" } else { "not" }
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
