#!/usr/bin/env bash
# Scaffolds a new rule: writes its rule file (docs, violation, hooks), its fixture, its registry
# row and its `pub mod` line. You then edit two files by hand, the rule file and the fixture, and
# regenerate what is generated:
#   GRAPHREADY_UPDATE_DOCS=1 cargo test -p graphready_linter --test rules   # docs/rules, README table
#   INSTA_UPDATE=always cargo test -p graphready_linter --test rules        # the rule's snapshot
#
# Usage: scripts/new-rule.sh CODE NAME
#   CODE   GR and three digits; the hundreds digit picks the family (1 sync, 2 dynamic-shape,
#          3 host-data, 4 allocation, 5 capture-illegal)
#   NAME   kebab-case, named for the bad pattern (`item-call`, not `no-item`)
# Example: scripts/new-rule.sh GR509 stream-wait-in-step
set -euo pipefail

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -eq 2 ] || { usage >&2; exit 2; }
CODE="$1"; NAME="$2"
[[ "$CODE" =~ ^GR[1-5][0-9][0-9]$ ]] || { echo "error: CODE must be GR followed by three digits, family 1-5: $CODE" >&2; exit 2; }
[[ "$NAME" =~ ^[a-z][a-z0-9]*(-[a-z0-9]+)*$ ]] || { echo "error: NAME must be kebab-case: $NAME" >&2; exit 2; }

cd "$(dirname "${BASH_SOURCE[0]}")/.."
LINTER=crates/graphready_linter
case "${CODE:2:1}" in
    1) FAMILY=sync ;;
    2) FAMILY=dynamic_shape ;;
    3) FAMILY=host_data ;;
    4) FAMILY=allocation ;;
    5) FAMILY=capture_illegal ;;
esac
SNAKE="${NAME//-/_}"
TYPE="$(echo "$NAME" | awk -F- '{ for (i = 1; i <= NF; i++) printf "%s%s", toupper(substr($i, 1, 1)), substr($i, 2) }')"
RULE_FILE="$LINTER/src/rules/$FAMILY/rules/$SNAKE.rs"
FIXTURE="$LINTER/resources/test/fixtures/$FAMILY/$CODE.py"
MODS="$LINTER/src/rules/$FAMILY/rules/mod.rs"
REGISTRY="$LINTER/src/registry.rs"

if grep -q "const CODE: &'static str = \"$CODE\"" -r "$LINTER/src/rules"; then
    echo "error: $CODE is taken" >&2; exit 2
fi
if grep -q "const NAME: &'static str = \"$NAME\"" -r "$LINTER/src/rules"; then
    echo "error: the name $NAME is taken" >&2; exit 2
fi
for file in "$RULE_FILE" "$FIXTURE"; do
    [ ! -e "$file" ] || { echo "error: $file exists" >&2; exit 2; }
done

cat >"$RULE_FILE" <<RUST
use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast as ast;
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for ... (one sentence: the README's rule table quotes its first clause).
    ///
    /// ## Why is this bad?
    /// What breaks under capture, or what it costs every step; cite public sources (PyTorch
    /// docs, pull requests) rather than internal notes.
    ///
    /// ## Example
    /// \`\`\`python
    /// \`\`\`
    ///
    /// Use instead:
    /// \`\`\`python
    /// \`\`\`
    pub struct $TYPE {}
}

impl Violation for $TYPE {
    const CODE: &'static str = "$CODE";
    const NAME: &'static str = "$NAME";
    // Set SEVERITY, OPT_IN or CAPTURED_ONLY here when the defaults (error, selected by
    // default, reported at every reach) do not fit.
    const CALLS: Calls = Calls::named(&["$SNAKE"]);

    fn message(&self) -> String {
        "lowercase, no trailing period".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Imperative: name the graph-safe alternative".to_string())
    }
}

impl Check for $TYPE {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        $SNAKE(checker, call);
    }
}

/// $CODE
fn $SNAKE(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(("$SNAKE", _receiver)) = method_call(call) else {
        return;
    };
    checker.report($TYPE {}, call.range());
}
RUST

mkdir -p "$(dirname "$FIXTURE")"
cat >"$FIXTURE" <<PY
import torch

# Error
# Each line that must fire ends with a marker comment: "# error: $CODE".


# OK
# Look-alikes that must not fire: guarded code, host values, the fixed forms.
PY

# The module line, in order.
{ grep -v '^$' "$MODS"; echo "pub mod $SNAKE;"; } | sort -u >"$MODS.new" && mv "$MODS.new" "$MODS"

# The registry row, in code order.
python3 - "$REGISTRY" "$TYPE" "$FAMILY" "$SNAKE" "$CODE" "$LINTER/src/rules" <<'PY'
import pathlib, re, sys
registry, type_, family, snake, code, rules = sys.argv[1:]
text = pathlib.Path(registry).read_text()
start = text.index("rule_table! {")
end = text.index("\n}\n", start)
rows = text[start:end].split("\n")[1:]
codes = {}
for path in pathlib.Path(rules).glob("*/rules/*.rs"):
    found = re.search(r'const CODE: &\'static str = "(GR\d{3})"', path.read_text())
    if found:
        codes[f"{path.parent.parent.name}::rules::{path.stem}::"] = found.group(1)
def code_of(row):
    for prefix, c in codes.items():
        if prefix in row:
            return c
    return ""
row = f"    {type_} => {family}::rules::{snake}::{type_};"
rows = sorted(rows + [row], key=code_of)
text = text[:start] + "rule_table! {\n" + "\n".join(rows) + text[end:]
pathlib.Path(registry).write_text(text)
PY

cat <<MSG
wrote   $RULE_FILE
wrote   $FIXTURE
added   the row $TYPE to $REGISTRY and \`pub mod $SNAKE;\` to $MODS
next    edit the rule file (docs, message, fix title, calls, hooks) and the fixture (markers),
        then: GRAPHREADY_UPDATE_DOCS=1 cargo test -p graphready_linter --test rules
              INSTA_UPDATE=always cargo test -p graphready_linter --test rules
MSG
