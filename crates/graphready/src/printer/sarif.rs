//! SARIF 2.1.0: one run, the rules that fired, one result per finding, the call chain as a
//! code flow.

use graphready_diagnostics::{Diagnostic, Severity};
use graphready_linter::Rule;
use serde_json::{json, Value};

const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

fn uri(path: &str) -> String {
    path.replace('\\', "/")
}

fn result(diagnostic: &Diagnostic, rule_index: Option<usize>) -> Value {
    let mut message = diagnostic.message.clone();
    if let Some(fix) = &diagnostic.fix {
        message.push_str(". ");
        message.push_str(fix);
    }
    let mut result = json!({
        "ruleId": diagnostic.code,
        "level": level(diagnostic.severity),
        "message": {"text": message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": uri(&diagnostic.path)},
                "region": {
                    "startLine": diagnostic.span.start.line,
                    "startColumn": diagnostic.span.start.column,
                    "endLine": diagnostic.span.end.line,
                    "endColumn": diagnostic.span.end.column,
                }
            }
        }],
        "properties": {"reach": diagnostic.reach.as_str()},
    });
    if let Some(index) = rule_index {
        result["ruleIndex"] = json!(index);
    }
    if !diagnostic.chain.is_empty() {
        let locations: Vec<Value> = diagnostic
            .chain
            .iter()
            .map(|link| {
                json!({"location": {
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&link.path)},
                        "region": {"startLine": link.line}
                    },
                    "message": {"text": link.function}
                }})
            })
            .collect();
        result["codeFlows"] = json!([{"threadFlows": [{"locations": locations}]}]);
    }
    result
}

pub fn render(diagnostics: &[Diagnostic]) -> String {
    let mut rules: Vec<Rule> = diagnostics
        .iter()
        .filter_map(|d| Rule::from_code(&d.code))
        .collect();
    rules.sort();
    rules.dedup();
    let rule_objects: Vec<Value> = rules
        .iter()
        .map(|rule| {
            json!({
                "id": rule.code(),
                "name": rule.name(),
                "shortDescription": {"text": rule.summary()},
                "fullDescription": {"text": rule.docs()},
                "help": {"text": rule.docs(), "markdown": rule.docs()},
                "helpUri": graphready_diagnostics::rule_url(rule.code()),
                "defaultConfiguration": {"level": level(rule.severity())},
                "properties": {"family": rule.family().as_str()},
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|diagnostic| {
            let index = rules.iter().position(|rule| rule.code() == diagnostic.code);
            result(diagnostic, index)
        })
        .collect();
    let log = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "graphready",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/graphready/graphready",
                "rules": rule_objects,
            }},
            "results": results,
        }]
    });
    let mut out = serde_json::to_string_pretty(&log).unwrap_or_default();
    out.push('\n');
    out
}
