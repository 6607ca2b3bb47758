#!/usr/bin/env bash
# Benchmark `graphready check TREE` against `ruff check --no-cache --exit-zero TREE`
# (ruff's default rules) on one tree: one untimed warm-up each, then RUNS
# alternating timed runs of each (the order flips every round), output to
# /dev/null. Prints the median wall time of each with min/max, the ratio
# graphready/ruff, and the median peak RSS of each.
#
# Usage: scripts/bench.sh [-h] [TREE]
#   TREE   directory to check (default $CORPUS/vllm; fetch it with scripts/real-world.sh --download-only vllm)
#
# Environment:
#   CORPUS       corpus directory (default /tmp/gr-corpus)
#   GRAPHREADY   graphready binary (default <repo>/target/release/graphready)
#   GR_ARGS      extra arguments for graphready check (default none)
#   PAUSE        seconds to wait before each timed run (default 1)
#   RUFF         ruff binary (default $CORPUS/venv/bin/ruff, else ruff on PATH)
#   RUNS         timed runs per tool (default 5)
#   GNU_TIME     GNU time binary (default /usr/bin/time)
#
# Peak RSS needs GNU time at /usr/bin/time (Debian: apt-get install time);
# without it only wall times are reported.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
esac
[ $# -le 1 ] || { usage >&2; exit 2; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CORPUS="${CORPUS:-/tmp/gr-corpus}"
TREE="${1:-$CORPUS/vllm}"
GRAPHREADY="${GRAPHREADY:-$REPO/target/release/graphready}"
RUNS="${RUNS:-5}"
if [ -z "${RUFF:-}" ]; then
    if [ -x "$CORPUS/venv/bin/ruff" ]; then RUFF="$CORPUS/venv/bin/ruff"
    else RUFF="$(command -v ruff || true)"; fi
fi

[ -d "$TREE" ] || { echo "error: tree $TREE does not exist (run: scripts/real-world.sh --download-only vllm)" >&2; exit 2; }
[ -x "$GRAPHREADY" ] || { echo "error: GRAPHREADY=$GRAPHREADY is not executable (cargo build --release, or set GRAPHREADY)" >&2; exit 2; }
[ -n "$RUFF" ] && [ -x "$RUFF" ] || {
    echo "error: ruff not found; e.g. python3 -m venv $CORPUS/venv && $CORPUS/venv/bin/pip install ruff==0.17.6 (or set RUFF)" >&2
    exit 2
}
case "$RUNS" in ''|*[!0-9]*|0) echo "error: RUNS must be a positive integer" >&2; exit 2 ;; esac

TREE="$(cd "$TREE" && pwd -P)"
GRAPHREADY="$(realpath -- "$GRAPHREADY")"
RUFF="$(realpath -s -- "$RUFF")"   # keep venv symlinks as they are
read -r -a GR_EXTRA <<< "${GR_ARGS:-}"

TIME_BIN=""
GNU_TIME="${GNU_TIME:-/usr/bin/time}"
if [ -x "$GNU_TIME" ] && "$GNU_TIME" -f '%M' -o /dev/null true 2>/dev/null; then
    TIME_BIN="$GNU_TIME"
else
    echo "note: GNU time not found at /usr/bin/time (Debian: apt-get install time); peak RSS will be n/a" >&2
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Run from the tree's parent so that neither tool picks up configuration
# (pyproject.toml, ruff.toml) from the current directory.
cd "$(dirname "$TREE")"

# run_one TOOL: one timed run; appends "wall_s rss_kb" to $TMP/TOOL.
run_one() {
    local tool="$1" rc t0 t1 rss="nan"
    local -a cmd
    case "$tool" in
        graphready) cmd=("$GRAPHREADY" check "${GR_EXTRA[@]}" "$TREE") ;;
        ruff) cmd=("$RUFF" check --no-cache --exit-zero "$TREE") ;;
    esac
    [ -n "$TIME_BIN" ] && cmd=("$TIME_BIN" -f '%M' -o "$TMP/time.out" "${cmd[@]}")
    # On a shared VM a run right after the other tool's burst starts with a spent CPU quota;
    # the same short pause before every run keeps the comparison fair.
    sleep "${PAUSE:-1}"
    t0="$(date +%s%N)"
    set +e
    "${cmd[@]}" > /dev/null 2> "$TMP/$tool.stderr"
    rc=$?
    set -e
    t1="$(date +%s%N)"
    # graphready exits 1 when it reports findings; anything else is a failure.
    if [ "$rc" -ne 0 ] && { [ "$tool" = ruff ] || [ "$rc" -ne 1 ]; }; then
        echo "error: $tool exited with $rc; stderr tail:" >&2
        tail -n 5 "$TMP/$tool.stderr" >&2
        exit 1
    fi
    [ -n "$TIME_BIN" ] && rss="$(tail -n 1 "$TMP/time.out")"
    echo "$(( (t1 - t0) / 1000 )) $rss" >> "$TMP/$tool"
}

echo "tree:       $TREE ($(find "$TREE" -name '*.py' -type f | wc -l) .py files)"
echo "graphready: $GRAPHREADY check ${GR_ARGS:-}"
echo "ruff:       $RUFF check --no-cache --exit-zero   ($("$RUFF" --version))"
echo "runs:       $RUNS timed each, alternating, after one warm-up each"
run_one graphready; run_one ruff
rm -f "$TMP/graphready" "$TMP/ruff"
for ((i = 1; i <= RUNS; i++)); do
    if (( i % 2 )); then run_one graphready; run_one ruff
    else run_one ruff; run_one graphready; fi
    printf '.' >&2
done
echo >&2

python3 - "$TMP/graphready" "$TMP/ruff" <<'PY'
import math, statistics, sys

def load(p):
    walls, rss = [], []
    for line in open(p):
        w, r = line.split()
        walls.append(int(w) / 1e6)
        if r != "nan":
            rss.append(int(r))
    return walls, rss

res = {}
for name, path in (("graphready", sys.argv[1]), ("ruff", sys.argv[2])):
    walls, rss = load(path)
    med = statistics.median(walls)
    mrss = statistics.median(rss) if rss else None
    res[name] = med
    print(f"{name:10}  median {med:7.3f} s   (min {min(walls):.3f}, max {max(walls):.3f}, "
          f"all: {' '.join(f'{w:.3f}' for w in walls)})   peak RSS "
          + (f"{mrss/1024:.0f} MiB (max {max(rss)/1024:.0f})" if mrss else "n/a"))
print(f"ratio graphready/ruff (median wall): {res['graphready'] / res['ruff']:.2f}x")
PY
