#!/usr/bin/env bash
# The install as a user does it (docs/install.md): build the wheel with maturin, install it into
# a fresh virtual environment, then run the executable, `python -m graphready`, the Python
# package, the GitHub Action's check step and the pre-commit hook (on a sample repository).
# Every expectation names its exit code; any other fails the script.
#
#   scripts/test-install.sh            # about 7 minutes on 2 cores from a cold target/: the
#                                      # wheel's release build (4.5), pre-commit's own pip
#                                      # install of this repository (2, dependencies reused)
#
# Release builds go to the workspace's target/ (or $CARGO_TARGET_DIR), so the dependencies are
# compiled once for both. pre-commit tests the committed state of this repository when the work
# tree is clean; with uncommitted changes it copies them into a shadow repository each time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
PYTHON="${PYTHON:-python3}"

work="$(mktemp -d "${TMPDIR:-/tmp}/graphready-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
passed=0

fail() {
    echo "FAIL: $*" >&2
    echo "install: $passed passed, 1 failed"
    exit 1
}

# expect CODE WHAT COMMAND...: runs COMMAND, its output in $work/out, and checks its exit code.
expect() {
    local want="$1" what="$2"
    shift 2
    local status=0
    "$@" >"$work/out" 2>&1 || status=$?
    if [ "$status" -ne "$want" ]; then
        cat "$work/out" >&2
        fail "$what: exit $status, expected $want"
    fi
    passed=$((passed + 1))
    echo "ok: $what (exit $status)"
}

# contains TEXT WHAT: the last command's output contains TEXT.
contains() {
    grep -qF -- "$1" "$work/out" || { cat "$work/out" >&2; fail "$2: no \`$1\` in the output"; }
    passed=$((passed + 1))
    echo "ok: $2"
}

seconds() { date +%s; }

echo "== build tools (maturin, pre-commit) in $work/tools"
"$PYTHON" -m venv "$work/tools"
tools="$work/tools/bin"
"$tools/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.5,<2" "pre-commit>=3"

echo "== maturin build --release"
start="$(seconds)"
expect 0 "maturin build --release (with maturin's manylinux audit)" \
    "$tools/maturin" build --release --out "$work/dist"
cat "$work/out" | grep -E "Built wheel|manylinux|musllinux" || true
wheel="$(ls "$work"/dist/graphready-*.whl)"
echo "wheel: $(basename "$wheel"), $(du -k "$wheel" | cut -f1) KiB, built in $(($(seconds) - start)) s"
case "$(basename "$wheel")" in
    *-py3-none-manylinux_*.whl | *-py3-none-macosx_*.whl | *-py3-none-win_*.whl) ;;
    *) fail "wheel tag: expected py3-none-<manylinux|macosx|win>, got $(basename "$wheel")" ;;
esac
passed=$((passed + 1))

# The wheel holds the executable, the package (with `__main__`) and nothing of the tests.
expect 0 "wheel contents" "$tools/python" - "$wheel" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["graphready/__init__.py", "graphready/__main__.py", "graphready/_find_bin.py",
        "graphready/target.py"]
missing = [n for n in need if n not in names]
scripts = [n for n in names if ".data/scripts/graphready" in n]
strays = [n for n in names if "/tests/" in n or n.endswith((".rs", ".toml")) or "conftest" in n]
print("\n".join(names))
sys.exit(1 if missing or len(scripts) != 1 or strays else 0)
EOF
# A size guard: today's wheel is about 2.3 MiB.
[ "$(du -k "$wheel" | cut -f1)" -lt 15360 ] || fail "the wheel is over 15 MiB"

echo "== a fresh virtual environment with the wheel"
"$PYTHON" -m venv "$work/venv"
venv="$work/venv/bin"
expect 0 "pip install the wheel" "$venv/python" -m pip install --disable-pip-version-check "$wheel"

expect 0 "graphready --version" "$venv/graphready" --version
version="$(cat "$work/out")"
cargo_version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
[ "$version" = "graphready $cargo_version" ] ||
    fail "graphready --version says \`$version\`, the workspace version is $cargo_version"

# On PATH, as in an activated environment; the example has hazards.
expect 1 "graphready check examples/ (findings)" env PATH="$venv:$PATH" graphready check examples/
contains "GR101" "graphready check examples/ reports GR101"

# `python -m graphready` finds the executable and passes the arguments and the exit code on.
# It runs from $work, so the installed package is imported, not python/graphready.
(
    cd "$work"
    expect 0 "python -m graphready --version" "$venv/python" -m graphready --version
    [ "$(cat "$work/out")" = "$version" ] || fail "python -m graphready --version: $(cat "$work/out")"
    expect 1 "python -m graphready check (findings)" "$venv/python" -m graphready check "$repo/examples/"
    expect 2 "python -m graphready with a bad flag (usage error)" "$venv/python" -m graphready check --no-such-flag
    expect 0 "import graphready" "$venv/python" -c \
        "from graphready import ProbeTarget, assert_capturable; import graphready; print(graphready.__version__, graphready.__file__)"
    contains "$cargo_version $work/venv/" "graphready.__version__ is $cargo_version, from the installed package"
    echo "passed=$passed" >"$work/passed"
)
passed="$(sed -n 's/^passed=//p' "$work/passed")"

echo "== the GitHub Action's check step (action.yml), with the installed executable"
"$tools/python" - action.yml "$work/check-step.sh" <<'EOF'
import sys, yaml
steps = yaml.safe_load(open(sys.argv[1]))["runs"]["steps"]
open(sys.argv[2], "w").write(next(s for s in steps if s.get("id") == "check")["run"])
EOF
expect 1 "action check step: annotations and SARIF (findings)" env GRAPHREADY_BIN="$venv/graphready" \
    GRAPHREADY_SRC="examples/" GRAPHREADY_ARGS="--select GR1" GRAPHREADY_SARIF_FILE="$work/out.sarif" \
    bash -e "$work/check-step.sh"
contains "::error title=graphready (GR101),file=examples/" "action check step prints ::error annotations"
expect 0 "action SARIF file has results" "$tools/python" -c \
    "import json, sys; r = json.load(open(sys.argv[1]))['runs'][0]['results']; print(len(r)); sys.exit(not r)" \
    "$work/out.sarif"

echo "== pre-commit try-repo on a sample repository"
sample="$work/sample"
mkdir -p "$sample"
cat >"$sample/hazard.py" <<'EOF'
from torch import nn


class Decoder(nn.Module):
    def forward(self, x):
        scale = x.abs().max().item()
        return x / scale
EOF
cat >"$sample/clean.py" <<'EOF'
from torch import nn


class Decoder(nn.Module):
    def forward(self, x):
        return x / x.abs().amax().clamp(min=1e-6)
EOF
git -C "$sample" init --quiet
git -C "$sample" add hazard.py clean.py
export PRE_COMMIT_HOME="$work/pre-commit-home"
start="$(seconds)"
(
    cd "$sample"
    expect 1 "pre-commit graphready-check on a hazard" \
        "$tools/pre-commit" try-repo "$repo" graphready-check --files hazard.py
    if grep -qF -- "unexpected argument '--force-exclude'" "$work/out"; then
        cat "$work/out" >&2
        fail "the hook's entry (.pre-commit-hooks.yaml) passes --force-exclude, which this graphready lacks"
    fi
    contains "GR101" "pre-commit graphready-check reports GR101"
    expect 0 "pre-commit graphready-check on a clean file" \
        "$tools/pre-commit" try-repo "$repo" graphready-check --files clean.py
    echo "passed=$passed" >"$work/passed"
)
passed="$(sed -n 's/^passed=//p' "$work/passed")"
echo "pre-commit: $(($(seconds) - start)) s (its own pip install of this repository included)"

echo "install: $passed passed, 0 failed"
