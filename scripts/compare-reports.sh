#!/usr/bin/env bash
# Compares the output of two graphready binaries on real trees, byte for byte: the JSON
# reports under --scope hot and --scope all, and the --show-scope text. For refactors that must
# not change behaviour.
#
# Usage: scripts/compare-reports.sh BASELINE_BINARY [CANDIDATE_BINARY] [TREE...]
#   CANDIDATE_BINARY  default: target/release/graphready
#   TREE              a package folder; default: vLLM and SGLang under $CORPUS
#                     (scripts/real-world.sh --download-only lays them out)
# Environment: CORPUS (default /tmp/gr-corpus).
# Exit status: 0 when every output is identical, 1 when one differs, 2 on a usage error.
set -uo pipefail

[ $# -ge 1 ] || { sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
BASE="$1"; shift
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CAND="${1:-$REPO/target/release/graphready}"; [ $# -gt 0 ] && shift
CORPUS="${CORPUS:-/tmp/gr-corpus}"
TREES=("$@")
[ ${#TREES[@]} -eq 0 ] && TREES=("$CORPUS/vllm/vllm" "$CORPUS/sglang/sglang")
for binary in "$BASE" "$CAND"; do
    [ -x "$binary" ] || { echo "error: $binary is not an executable" >&2; exit 2; }
done
# The runs happen inside each tree's parent folder.
BASE="$(realpath "$BASE")"; CAND="$(realpath "$CAND")"

OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
status=0
for tree in "${TREES[@]}"; do
    [ -d "$tree" ] || { echo "error: $tree is not a folder" >&2; exit 2; }
    name="$(basename "$tree")"
    for mode in "--scope hot --output-format json" "--scope all --output-format json" \
                "--show-scope" "--scope all --select ALL --output-format json" \
                "--color never"; do
        label="$name $mode"
        # shellcheck disable=SC2086
        (cd "$(dirname "$tree")" && "$BASE" check $mode "$name" >"$OUT/base" 2>"$OUT/base.err")
        # shellcheck disable=SC2086
        (cd "$(dirname "$tree")" && "$CAND" check $mode "$name" >"$OUT/cand" 2>"$OUT/cand.err")
        if cmp -s "$OUT/base" "$OUT/cand"; then
            echo "same     $label ($(wc -c <"$OUT/cand") bytes)"
        else
            echo "DIFFERS  $label"
            diff <(head -c 2000000 "$OUT/base") <(head -c 2000000 "$OUT/cand") | head -20
            status=1
        fi
    done
done
exit "$status"
