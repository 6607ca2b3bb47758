//! Suppression comments: `# noqa`, `# noqa: GR101, GR102` and `# graphready: ignore[GR101]`,
//! each optionally followed by a reason, `-- why this is fine`; and which of them suppress
//! nothing (`GR001`).

use crate::registry::{Rule, RuleSet};
use crate::{UNREADABLE_CODE, UNUSED_SUPPRESSION_CODE};
use graphready_diagnostics::{Diagnostic, Reach, Severity};
use ruff_source_file::LineIndex;
use ruff_text_size::{TextRange, TextSize};

/// What a line's comment suppresses.
#[derive(Debug, PartialEq, Eq)]
pub enum Suppression<'a> {
    All,
    Codes(Vec<&'a str>),
}

impl Suppression<'_> {
    pub fn covers(&self, code: &str) -> bool {
        match self {
            Suppression::All => true,
            Suppression::Codes(codes) => codes.iter().any(|c| c.eq_ignore_ascii_case(code)),
        }
    }
}

/// The suppression comment of one physical line.
#[derive(Debug, PartialEq, Eq)]
pub struct Comment<'a> {
    pub suppression: Suppression<'a>,
    /// The text after ` -- `, trimmed; `None` when there is none or it is empty.
    pub reason: Option<&'a str>,
    /// Byte offset in the line of the `#` that starts the first directive.
    pub start: usize,
    /// A bare `# noqa` took part: it serves other linters too, so it is never judged unused.
    pub bare_noqa: bool,
}

impl Comment<'_> {
    pub fn covers(&self, code: &str) -> bool {
        self.suppression.covers(code)
    }
}

/// Parses the suppression on one physical line, if any.
pub fn parse_line(line: &str) -> Option<Comment<'_>> {
    let hash = line.find('#')?;
    let comment = &line[hash..];
    let mut found: Option<Suppression> = None;
    let mut start = None;
    let mut reason = None;
    let mut bare_noqa = false;
    for (offset, _) in comment.match_indices('#') {
        let text = comment[offset + 1..].trim_start();
        let before = found.is_some();
        // The text after this directive's codes, where a reason may follow.
        let mut tail = "";
        if let Some(rest) = strip_prefix_ignore_case(text, "noqa") {
            let rest = rest.trim_start();
            match rest.strip_prefix(':') {
                Some(codes) => {
                    let (codes, after) = split_reason(codes);
                    merge(&mut found, Suppression::Codes(split_codes(codes)));
                    tail = after;
                }
                None if rest.is_empty() || rest.starts_with('#') || rest.starts_with(' ') => {
                    found = Some(Suppression::All);
                    bare_noqa = true;
                    tail = rest;
                }
                // `# noqa -- why`: a bare `noqa` with a reason.
                None if rest.starts_with("--") => {
                    found = Some(Suppression::All);
                    bare_noqa = true;
                    tail = rest;
                }
                None => {}
            }
        } else if let Some(rest) = text.strip_prefix("graphready:") {
            let rest = rest.trim_start();
            if let Some(inner) = rest.strip_prefix("ignore") {
                let inner = inner.trim_start();
                match inner.strip_prefix('[').and_then(|i| i.split_once(']')) {
                    Some((codes, after)) => {
                        merge(&mut found, Suppression::Codes(split_codes(codes)));
                        tail = after;
                    }
                    None => {
                        found = Some(Suppression::All);
                        tail = inner;
                    }
                }
            }
        }
        if found.is_some() && !before {
            start = Some(hash + offset);
        }
        if let Some(text) = tail.trim_start().strip_prefix("--") {
            let text = text.trim();
            reason = (!text.is_empty()).then_some(text);
            // The reason runs to the end of the line: a `#` in it starts no directive.
            break;
        }
    }
    let suppression = found?;
    Some(Comment {
        suppression,
        reason,
        start: start.unwrap_or(hash),
        bare_noqa,
    })
}

/// Splits `GR101, GR102 -- reason` into the codes and what follows them (`-- reason`).
fn split_reason(codes: &str) -> (&str, &str) {
    match codes.find("--") {
        Some(at) => (&codes[..at], &codes[at..]),
        None => (codes, ""),
    }
}

fn merge<'a>(found: &mut Option<Suppression<'a>>, new: Suppression<'a>) {
    match (found.as_mut(), new) {
        (Some(Suppression::All), _) => {}
        (Some(Suppression::Codes(existing)), Suppression::Codes(codes)) => existing.extend(codes),
        (_, new) => *found = Some(new),
    }
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

fn split_codes(codes: &str) -> Vec<&str> {
    codes
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(str::trim)
        .take_while(|code| !code.starts_with('#'))
        .filter(|code| !code.is_empty())
        .collect()
}

/// Whether a code names one of graphready's (`GR` and digits); other linters' codes in a
/// shared `# noqa: F401, GR101` are not ours to judge.
pub fn is_graphready_code(code: &str) -> bool {
    code.len() > 2
        && code[..2].eq_ignore_ascii_case("GR")
        && code[2..].bytes().all(|b| b.is_ascii_digit())
}

/// A suppression comment found in a file, with what of it graphready may judge unused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// One-based line.
    pub line: u32,
    /// Byte offsets in the source: from the directive's `#` to the end of the comment.
    pub range: (u32, u32),
    /// `# graphready: ignore` without codes: used when anything on its line is suppressed.
    pub all: bool,
    /// The graphready codes it names (`GR101`), as written.
    pub codes: Vec<String>,
}

/// Every suppression comment of a source that graphready can judge: `# graphready: ignore`
/// with or without codes, and `# noqa: ...` naming `GR` codes. A bare `# noqa` is left out.
/// Lines are found by their text, as [`parse_line`] finds them.
pub fn directives(source: &str) -> Vec<Directive> {
    let mut found = Vec::new();
    let mut offset = 0usize;
    for (index, line) in source.split_inclusive('\n').enumerate() {
        let start = offset;
        offset += line.len();
        if !line.contains('#') {
            continue;
        }
        let text = line.trim_end_matches(['\n', '\r']);
        let Some(comment) = parse_line(text) else {
            continue;
        };
        if comment.bare_noqa {
            continue;
        }
        let (all, codes) = match &comment.suppression {
            Suppression::All => (true, Vec::new()),
            Suppression::Codes(codes) => (
                false,
                codes
                    .iter()
                    .filter(|code| is_graphready_code(code))
                    .map(|code| code.to_ascii_uppercase())
                    .collect::<Vec<_>>(),
            ),
        };
        if !all && codes.is_empty() {
            continue;
        }
        let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        found.push(Directive {
            line: to_u32(index + 1),
            range: (to_u32(start + comment.start), to_u32(start + text.len())),
            all,
            codes,
        });
    }
    found
}

/// A directive that suppresses nothing: the codes it names in vain (none for a
/// `# graphready: ignore` without codes), and those that name no graphready rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unused {
    pub directive: Directive,
    pub idle: Vec<String>,
    pub unknown: Vec<String>,
}

/// The directives of a file that suppress nothing, given the (line, code) of every finding
/// suppressed in the file. Codes of rules disabled in the file are not
/// judged: the suppression may serve another configuration.
pub fn unused(directives: &[Directive], used: &[(u32, String)], rules: RuleSet) -> Vec<Unused> {
    let mut unused = Vec::new();
    for directive in directives {
        let used_here = || used.iter().filter(|(line, _)| *line == directive.line);
        if directive.all {
            if used_here().next().is_none() {
                unused.push(Unused {
                    directive: directive.clone(),
                    idle: Vec::new(),
                    unknown: Vec::new(),
                });
            }
            continue;
        }
        let mut idle = Vec::new();
        let mut unknown = Vec::new();
        for code in &directive.codes {
            if code == UNREADABLE_CODE || code == UNUSED_SUPPRESSION_CODE {
                continue;
            }
            match Rule::from_code(code) {
                None => unknown.push(code.clone()),
                Some(rule) if rules.contains(rule) => {
                    if !used_here().any(|(_, used)| used.eq_ignore_ascii_case(code)) {
                        idle.push(code.clone());
                    }
                }
                Some(_) => {}
            }
        }
        if !idle.is_empty() || !unknown.is_empty() {
            unused.push(Unused {
                directive: directive.clone(),
                idle,
                unknown,
            });
        }
    }
    unused
}

/// The `GR001` finding for one unused directive.
pub fn unused_diagnostic(
    path: &str,
    source: &str,
    index: &LineIndex,
    Unused {
        directive,
        idle,
        unknown,
    }: &Unused,
) -> Diagnostic {
    let quoted = |codes: &[String]| {
        codes
            .iter()
            .map(|code| format!("`{code}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if directive.all {
        parts.push("`graphready: ignore` suppresses nothing on this line".to_string());
    }
    if !idle.is_empty() {
        parts.push(format!(
            "the suppression of {} matches no finding on this line",
            quoted(idle)
        ));
    }
    if !unknown.is_empty() {
        parts.push(format!("{} names no graphready rule", quoted(unknown)));
    }
    let range = TextRange::new(
        TextSize::new(directive.range.0),
        TextSize::new(directive.range.1),
    );
    let range = crate::clamp(range, source);
    Diagnostic {
        code: UNUSED_SUPPRESSION_CODE.to_string(),
        name: "unused-suppression".to_string(),
        severity: Severity::Warning,
        reach: Reach::Unknown,
        path: path.to_string(),
        span: crate::span(index, source, range),
        function: None,
        chain: Vec::new(),
        message: parts.join("; "),
        fix: Some("Remove the codes that suppress nothing, or the whole comment".to_string()),
        url: Some(graphready_diagnostics::rule_url(UNUSED_SUPPRESSION_CODE)),
        offsets: (range.start().to_u32(), range.end().to_u32()),
        captured_only: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suppression(line: &str) -> Option<Suppression<'_>> {
        parse_line(line).map(|comment| comment.suppression)
    }

    #[test]
    fn noqa_forms() {
        assert_eq!(suppression("x.item()  # noqa"), Some(Suppression::All));
        assert_eq!(suppression("x.item()  # NOQA"), Some(Suppression::All));
        assert_eq!(
            suppression("x.item()  # noqa: GR101, GR104"),
            Some(Suppression::Codes(vec!["GR101", "GR104"]))
        );
        assert_eq!(
            suppression("x.item()  # graphready: ignore[GR101]"),
            Some(Suppression::Codes(vec!["GR101"]))
        );
        assert_eq!(suppression("x.item()  # noqa-ish"), None);
        assert_eq!(suppression("x.item()  # a comment"), None);
        assert_eq!(suppression("x.item()"), None);
    }

    #[test]
    fn codes_cover() {
        let suppression = parse_line("x  # noqa: GR101").unwrap();
        assert!(suppression.covers("GR101"));
        assert!(!suppression.covers("GR102"));
    }

    #[test]
    fn reasons_follow_two_dashes() {
        let comment = parse_line("x.item()  # graphready: ignore[GR101] -- warm-up only").unwrap();
        assert_eq!(comment.suppression, Suppression::Codes(vec!["GR101"]));
        assert_eq!(comment.reason, Some("warm-up only"));
        assert_eq!(comment.start, 10);
        assert!(!comment.bare_noqa);

        let comment = parse_line("x  # noqa: GR101, GR104 -- see #123").unwrap();
        assert_eq!(
            comment.suppression,
            Suppression::Codes(vec!["GR101", "GR104"])
        );
        assert_eq!(comment.reason, Some("see #123"));

        let comment = parse_line("x  # noqa: GR101--tight").unwrap();
        assert_eq!(comment.suppression, Suppression::Codes(vec!["GR101"]));
        assert_eq!(comment.reason, Some("tight"));

        let comment = parse_line("x  # graphready: ignore -- debug only").unwrap();
        assert_eq!(comment.suppression, Suppression::All);
        assert_eq!(comment.reason, Some("debug only"));

        let comment = parse_line("x  # noqa -- vendored").unwrap();
        assert_eq!(comment.suppression, Suppression::All);
        assert!(comment.bare_noqa);
        assert_eq!(comment.reason, Some("vendored"));

        // No reason, or an empty one.
        assert_eq!(parse_line("x  # noqa: GR101").unwrap().reason, None);
        assert_eq!(parse_line("x  # noqa: GR101 --").unwrap().reason, None);
        // A directive after a comment: the offset is the directive's own `#`.
        assert_eq!(parse_line("x  # note # noqa: GR101").unwrap().start, 10);
    }

    #[test]
    fn directives_leave_out_bare_noqa_and_other_linters_codes() {
        let source = "a  # noqa\nb  # noqa: F401\nc  # noqa: F401, gr101 -- why\n\
                      d  # graphready: ignore\ne = 1\nf  # graphready: ignore[GR999]\r\n";
        let found = directives(source);
        let lines: Vec<(u32, bool, Vec<String>)> = found
            .iter()
            .map(|d| (d.line, d.all, d.codes.clone()))
            .collect();
        assert_eq!(
            lines,
            vec![
                (3, false, vec!["GR101".to_string()]),
                (4, true, vec![]),
                (6, false, vec!["GR999".to_string()]),
            ]
        );
        let (start, end) = found[0].range;
        assert_eq!(
            &source[start as usize..end as usize],
            "# noqa: F401, gr101 -- why"
        );
        let (start, end) = found[2].range;
        assert_eq!(
            &source[start as usize..end as usize],
            "# graphready: ignore[GR999]"
        );
    }

    #[test]
    fn unused_judges_enabled_and_unknown_codes_only() {
        let source = "a  # noqa: GR101, GR102\nb  # graphready: ignore\nc  # graphready: ignore\n\
                      d  # noqa: GR999, GR000\ne  # noqa: GR203\n";
        let used = vec![(1, "GR101".to_string()), (3, "GR104".to_string())];
        let rules: RuleSet = [Rule::from_code("GR101"), Rule::from_code("GR102")]
            .into_iter()
            .flatten()
            .collect();
        let found: Vec<(u32, Vec<String>, Vec<String>)> = unused(&directives(source), &used, rules)
            .into_iter()
            .map(|u| (u.directive.line, u.idle, u.unknown))
            .collect();
        // Line 1: GR102 is enabled and unused; line 2: nothing there; line 3: used by GR104;
        // line 4: GR999 is unknown, GR000 is graphready's own; line 5: GR203 is not enabled.
        assert_eq!(
            found,
            vec![
                (1, vec!["GR102".to_string()], vec![]),
                (2, vec![], vec![]),
                (4, vec![], vec!["GR999".to_string()]),
            ]
        );
    }
}
