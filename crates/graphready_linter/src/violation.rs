//! The contract every rule's violation type fulfils.

use crate::registry::Rule;

/// A violation: the data a rule found, able to explain itself.
///
/// Messages start lowercase and carry no trailing period; fix titles are imperative.
pub trait Violation {
    const RULE: Rule;
    /// A hazard only where the code is known to run captured (host state mutated per step, a
    /// per-step allocation): reported only for functions the hot-path analysis reaches from an
    /// entry point, never under `--scope all` alone.
    const CAPTURED_ONLY: bool = false;
    fn message(&self) -> String;
    fn fix_title(&self) -> Option<String> {
        None
    }
}

/// Declares a violation struct whose doc comment is the rule's documentation.
///
/// Like clippy's `declare_clippy_lint!`, the doc comment is captured with `concat!`, so the docs
/// printed by `graphready rule GR101` and written to `docs/rules/` come from one place.
#[macro_export]
macro_rules! declare_violation {
    ($(#[doc = $doc:literal])+ pub struct $name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone)]
        pub struct $name { $(pub $field: $ty),* }
        impl $name {
            /// The rule documentation, exactly as written in the doc comment.
            pub const DOCS: &'static str = concat!($($doc, "\n"),+);
        }
    };
}
