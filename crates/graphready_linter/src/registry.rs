//! The one table of rules: code, variant, kebab-case name, family, default severity, violation type.

use graphready_diagnostics::Severity;
use std::fmt;

/// A rule family: the hundreds digit of the code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Sync,
    DynamicShape,
    HostData,
    Allocation,
    CaptureIllegal,
}

impl Family {
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Sync => "sync",
            Family::DynamicShape => "dynamic-shape",
            Family::HostData => "host-data",
            Family::Allocation => "allocation",
            Family::CaptureIllegal => "capture-illegal",
        }
    }
}

macro_rules! rule_table {
    ($( $code:literal, $variant:ident, $name:literal, $family:ident, $severity:ident, $violation:path; )*) => {
        /// Every rule graphready knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Rule { $($variant),* }

        impl Rule {
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            pub const fn code(self) -> &'static str {
                match self { $(Rule::$variant => $code),* }
            }

            pub const fn name(self) -> &'static str {
                match self { $(Rule::$variant => $name),* }
            }

            pub const fn family(self) -> Family {
                match self { $(Rule::$variant => Family::$family),* }
            }

            pub const fn severity(self) -> Severity {
                match self { $(Rule::$variant => Severity::$severity),* }
            }

            /// The doc comment of the rule's violation type, verbatim.
            pub const fn raw_docs(self) -> &'static str {
                match self { $(Rule::$variant => <$violation>::DOCS),* }
            }
        }
    };
}

rule_table! {
    "GR101", ItemCall, "item-call", Sync, Error, crate::rules::sync::rules::item_call::ItemCall;
    "GR102", TolistCall, "tolist-call", Sync, Error, crate::rules::sync::rules::tolist_call::TolistCall;
    "GR103", HostTransfer, "host-transfer", Sync, Error, crate::rules::sync::rules::host_transfer::HostTransfer;
    "GR104", TensorTruthiness, "tensor-truthiness", Sync, Error, crate::rules::sync::rules::tensor_truthiness::TensorTruthiness;
    "GR105", TensorToPythonScalar, "tensor-to-python-scalar", Sync, Error, crate::rules::sync::rules::tensor_to_python_scalar::TensorToPythonScalar;
    "GR106", TensorComparisonOnHost, "tensor-comparison-on-host", Sync, Error, crate::rules::sync::rules::tensor_comparison_on_host::TensorComparisonOnHost;
    "GR107", ExplicitSynchronize, "explicit-synchronize", Sync, Error, crate::rules::sync::rules::explicit_synchronize::ExplicitSynchronize;
    "GR108", TensorFormatting, "tensor-formatting", Sync, Error, crate::rules::sync::rules::tensor_formatting::TensorFormatting;
    "GR109", DeviceScalarAsSize, "device-scalar-as-size", Sync, Error, crate::rules::sync::rules::device_scalar_as_size::DeviceScalarAsSize;
}

impl Rule {
    /// Looks a rule up by code (`GR101`) or name (`item-call`).
    pub fn from_code(code: &str) -> Option<Rule> {
        Rule::ALL
            .iter()
            .copied()
            .find(|rule| rule.code().eq_ignore_ascii_case(code) || rule.name() == code)
    }

    /// The documentation with the doc comment's leading space removed from each line.
    pub fn docs(self) -> String {
        let mut out = String::new();
        for line in self.raw_docs().lines() {
            out.push_str(line.strip_prefix(' ').unwrap_or(line));
            out.push('\n');
        }
        out
    }

    /// The first paragraph under `## What it does`, as one line.
    pub fn summary(self) -> String {
        let docs = self.docs();
        let body = docs
            .split("## What it does")
            .nth(1)
            .unwrap_or(&docs)
            .trim_start();
        let paragraph = body.split("\n\n").next().unwrap_or("");
        paragraph.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A set of rules, as a bitset over [`Rule`]'s discriminants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RuleSet(u128);

impl RuleSet {
    pub const fn empty() -> Self {
        RuleSet(0)
    }

    pub fn all() -> Self {
        Rule::ALL.iter().copied().collect()
    }

    pub fn insert(&mut self, rule: Rule) {
        self.0 |= 1u128 << rule as u32;
    }

    pub fn remove(&mut self, rule: Rule) {
        self.0 &= !(1u128 << rule as u32);
    }

    pub const fn contains(&self, rule: Rule) -> bool {
        self.0 & (1u128 << rule as u32) != 0
    }

    pub const fn is_empty(&self) -> bool {
        self.0 == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Rule> + '_ {
        Rule::ALL
            .iter()
            .copied()
            .filter(|rule| self.contains(*rule))
    }
}

impl FromIterator<Rule> for RuleSet {
    fn from_iter<I: IntoIterator<Item = Rule>>(iter: I) -> Self {
        let mut set = RuleSet::empty();
        for rule in iter {
            set.insert(rule);
        }
        set
    }
}

/// A selector as written in configuration: `ALL`, a code prefix (`GR1`, `GR10`), a full code or
/// a rule name. Returns `None` when it matches no rule.
pub fn rules_matching(selector: &str) -> Option<RuleSet> {
    let selector = selector.trim();
    if selector.eq_ignore_ascii_case("ALL") {
        return Some(RuleSet::all());
    }
    let upper = selector.to_ascii_uppercase();
    let set: RuleSet = Rule::ALL
        .iter()
        .copied()
        .filter(|rule| {
            rule.code().starts_with(upper.as_str()) && upper.starts_with("GR")
                || rule.name() == selector
        })
        .collect();
    (!set.is_empty()).then_some(set)
}
