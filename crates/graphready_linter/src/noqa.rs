//! Suppression comments: `# noqa`, `# noqa: GR101, GR102` and `# graphready: ignore[GR101]`.

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

/// Parses the suppression on one physical line, if any.
pub fn parse_line(line: &str) -> Option<Suppression<'_>> {
    let hash = line.find('#')?;
    let comment = &line[hash..];
    let mut found: Option<Suppression> = None;
    for (start, _) in comment.match_indices('#') {
        let text = comment[start + 1..].trim_start();
        if let Some(rest) = strip_prefix_ignore_case(text, "noqa") {
            let rest = rest.trim_start();
            match rest.strip_prefix(':') {
                Some(codes) => merge(&mut found, Suppression::Codes(split_codes(codes))),
                None if rest.is_empty() || rest.starts_with('#') || rest.starts_with(' ') => {
                    found = Some(Suppression::All);
                }
                None => {}
            }
        } else if let Some(rest) = text.strip_prefix("graphready:") {
            let rest = rest.trim_start();
            if let Some(inner) = rest.strip_prefix("ignore") {
                let inner = inner.trim_start();
                match inner.strip_prefix('[').and_then(|i| i.split_once(']')) {
                    Some((codes, _)) => merge(&mut found, Suppression::Codes(split_codes(codes))),
                    None => found = Some(Suppression::All),
                }
            }
        }
    }
    found
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noqa_forms() {
        assert_eq!(parse_line("x.item()  # noqa"), Some(Suppression::All));
        assert_eq!(parse_line("x.item()  # NOQA"), Some(Suppression::All));
        assert_eq!(
            parse_line("x.item()  # noqa: GR101, GR104"),
            Some(Suppression::Codes(vec!["GR101", "GR104"]))
        );
        assert_eq!(
            parse_line("x.item()  # graphready: ignore[GR101]"),
            Some(Suppression::Codes(vec!["GR101"]))
        );
        assert_eq!(parse_line("x.item()  # noqa-ish"), None);
        assert_eq!(parse_line("x.item()  # a comment"), None);
        assert_eq!(parse_line("x.item()"), None);
    }

    #[test]
    fn codes_cover() {
        let suppression = parse_line("x  # noqa: GR101").unwrap();
        assert!(suppression.covers("GR101"));
        assert!(!suppression.covers("GR102"));
    }
}
