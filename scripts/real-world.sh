#!/usr/bin/env bash
# Run graphready over real-world PyTorch serving code (vLLM, SGLang, transformers)
# and report, per tree: .py files, lines, findings per rule code, parse errors
# (GR000), exit code, wall time, peak RSS, and whether the process panicked or
# was killed.
#
# Usage: scripts/real-world.sh [-h] [--download-only] [TREE_NAME...]
#        scripts/real-world.sh layout NAME==VERSION...
#        scripts/real-world.sh eval [ARGS...]
#   TREE_NAME   any of: vllm sglang transformers   (default: all three)
#   layout      only download (`pip download --no-deps`) and unpack the given
#               PyPI releases, each into its own tree $CORPUS/NAME-VERSION
#               (e.g. vllm==0.27.0, sgl-deep-gemm==0.2.5 for DeepGEMM), and
#               print each tree's path on stdout; runs nothing
#   eval        run scripts/eval-real-world.py (the real-code evaluation set in
#               eval/cases.toml; see its --help) with ARGS
#
# Environment:
#   CORPUS        where wheels are downloaded and unpacked, and reports written
#                 (default /tmp/gr-corpus; refused if it lies inside the repo)
#   GRAPHREADY    graphready binary (default <repo>/target/release/graphready)
#   GR_TIMEOUT    seconds before a run is killed (default 900)
#   PYTHON        python interpreter used for pip and JSON (default python3)
#   GNU_TIME      GNU time binary for peak RSS (default /usr/bin/time)
#   VLLM_VERSION / SGLANG_VERSION / TRANSFORMERS_VERSION
#                 package versions (defaults 0.33.0 / 0.5.23 / 5.24.0)
#
# Exit status: 0 if every run finished normally (exit code 0 or 1), 1 if any
# run panicked, was killed/aborted (signal or timeout), or failed with another
# exit code; 2 on a usage or setup error.
set -euo pipefail

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

if [ "${1:-}" = eval ]; then
    shift
    exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/eval-real-world.py" "$@"
fi
LAYOUT=0
SPECS=()
if [ "${1:-}" = layout ]; then
    LAYOUT=1
    shift
    [ $# -gt 0 ] || { echo "error: layout needs at least one NAME==VERSION" >&2; exit 2; }
    for spec in "$@"; do
        case "$spec" in
            [A-Za-z0-9]*==[0-9]*) SPECS+=("$spec") ;;
            *) echo "error: layout takes NAME==VERSION, got: $spec" >&2; exit 2 ;;
        esac
    done
    set --
fi

DOWNLOAD_ONLY=0
NAMES=()
while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --download-only) DOWNLOAD_ONLY=1 ;;
        vllm|sglang|transformers) NAMES+=("$1") ;;
        *) echo "error: unknown argument: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
[ ${#NAMES[@]} -eq 0 ] && NAMES=(vllm sglang transformers)

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CORPUS="${CORPUS:-/tmp/gr-corpus}"
GRAPHREADY="${GRAPHREADY:-$REPO/target/release/graphready}"
GR_TIMEOUT="${GR_TIMEOUT:-900}"
PYTHON="${PYTHON:-python3}"
VLLM_VERSION="${VLLM_VERSION:-0.33.0}"
SGLANG_VERSION="${SGLANG_VERSION:-0.5.23}"
TRANSFORMERS_VERSION="${TRANSFORMERS_VERSION:-5.24.0}"

CORPUS="$(realpath -m -- "$CORPUS")"
case "$CORPUS/" in
    "$REPO"/*)
        echo "error: CORPUS=$CORPUS is inside the repository; third-party code must not go there" >&2
        exit 2 ;;
esac
mkdir -p "$CORPUS"
DL="$CORPUS/dl"
REPORTS="$CORPUS/reports"
mkdir -p "$DL" "$REPORTS"

version_of() {
    case "$1" in
        vllm) echo "$VLLM_VERSION" ;;
        sglang) echo "$SGLANG_VERSION" ;;
        transformers) echo "$TRANSFORMERS_VERSION" ;;
    esac
}

# Print the downloaded archive for NAME VERSION, if any (wheel preferred). Wheel
# file names spell dashes as underscores (sgl-deep-gemm -> sgl_deep_gemm-...).
find_archive() {
    local name="$1" version="$2" f n
    for n in "$name" "${name//-/_}"; do
        for f in "$DL/$n-$version"-*.whl "$DL/$n-$version".tar.gz "$DL/$n-$version".zip; do
            [ -f "$f" ] && { echo "$f"; return 0; }
        done
    done
    return 1
}

fetch() {
    local name="$1" version="$2" archive
    if archive="$(find_archive "$name" "$version")"; then
        echo "$archive"; return 0
    fi
    echo ">> downloading $name==$version into $DL" >&2
    # First try what pip picks for this interpreter; vLLM and SGLang publish
    # platform wheels, so fall back to asking for CPython 3.11 / manylinux x86_64
    # wheels explicitly (the code is the same; only the native parts differ).
    # Releases differ in their glibc tag (vLLM 0.19 is manylinux_2_31, 0.20 is
    # 2_35, 0.21 is 2_24), hence the whole range.
    if ! "$PYTHON" -m pip download --no-deps --disable-pip-version-check -q -d "$DL" "$name==$version" >&2; then
        echo ">> retrying $name==$version as a cp311 manylinux x86_64 wheel" >&2
        local -a plats=()
        local g
        for g in $(seq 40 -1 17); do plats+=(--platform "manylinux_2_${g}_x86_64"); done
        "$PYTHON" -m pip download --no-deps --disable-pip-version-check -q -d "$DL" \
            --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
            "${plats[@]}" --platform manylinux2014_x86_64 --platform any \
            "$name==$version" >&2
    fi
    find_archive "$name" "$version" || {
        echo "error: pip downloaded nothing recognisable for $name==$version into $DL" >&2
        return 1
    }
}

# unpack NAME ARCHIVE [DEST]: DEST defaults to $CORPUS/NAME.
unpack() {
    local name="$1" archive="$2" dest="${3:-$CORPUS/$1}" stamp
    stamp="$dest/.gr-unpacked-from"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$(basename "$archive")" ]; then
        return 0
    fi
    echo ">> unpacking $(basename "$archive") into $dest" >&2
    rm -rf "$dest" "$dest.partial"
    mkdir -p "$dest.partial"
    case "$archive" in
        *.whl|*.zip) "$PYTHON" -m zipfile -e "$archive" "$dest.partial" ;;
        *.tar.gz) tar -xzf "$archive" -C "$dest.partial" ;;
    esac
    basename "$archive" > "$dest.partial/.gr-unpacked-from"
    mv "$dest.partial" "$dest"
}

if [ "$LAYOUT" -eq 1 ]; then
    for spec in "${SPECS[@]}"; do
        name="${spec%%==*}"
        version="${spec#*==}"
        archive="$(fetch "$name" "$version")"
        unpack "$name" "$archive" "$CORPUS/$name-$version"
        echo "$CORPUS/$name-$version"
    done
    exit 0
fi

for name in "${NAMES[@]}"; do
    archive="$(fetch "$name" "$(version_of "$name")")"
    unpack "$name" "$archive"
done
[ "$DOWNLOAD_ONLY" -eq 1 ] && { echo "corpus ready in $CORPUS"; exit 0; }

if [ ! -x "$GRAPHREADY" ]; then
    echo "error: GRAPHREADY=$GRAPHREADY is not an executable (build it with 'cargo build --release', or set GRAPHREADY)" >&2
    exit 2
fi
TIME_BIN=""
GNU_TIME="${GNU_TIME:-/usr/bin/time}"
if [ -x "$GNU_TIME" ] && "$GNU_TIME" -f '%M' -o /dev/null true 2>/dev/null; then
    TIME_BIN="$GNU_TIME"
else
    echo "note: GNU time not found (apt-get install time); peak RSS will not be reported" >&2
fi

# Run graphready on one tree; writes $REPORTS/NAME.{json,stderr,meta}.
run_tree() {
    local name="$1" tree="$CORPUS/$1" out="$REPORTS/$1.json" err="$REPORTS/$1.stderr"
    local meta="$REPORTS/$1.meta" timef="$REPORTS/$1.time" rc scope=all
    local -a cmd
    for attempt in with-scope without-scope; do
        cmd=("$GRAPHREADY" check --output-format json)
        [ "$attempt" = with-scope ] && cmd+=(--scope all)
        cmd+=("$tree")
        [ -n "$TIME_BIN" ] && cmd=("$TIME_BIN" -f '%e %M' -o "$timef" "${cmd[@]}")
        echo ">> $name: ${cmd[*]}" >&2
        local t0 t1
        t0="$(date +%s.%N)"
        set +e
        timeout -s KILL "$GR_TIMEOUT" "${cmd[@]}" > "$out" 2> "$err"
        rc=$?
        set -e
        t1="$(date +%s.%N)"
        # clap-style rejection of an unknown flag: retry without --scope.
        if [ "$attempt" = with-scope ] && [ "$rc" -eq 2 ] && grep -q -- '--scope' "$err"; then
            echo ">> $name: --scope rejected, retrying without it" >&2
            scope=none
            continue
        fi
        break
    done
    {
        echo "rc=$rc"
        echo "scope=$scope"
        echo "wall=$("$PYTHON" -c "print(f'{$t1-$t0:.2f}')")"
        if [ -n "$TIME_BIN" ] && [ -s "$timef" ]; then
            # GNU time prefixes 'Command terminated by signal N' / 'exited with non-zero status'.
            echo "rss_kb=$(tail -n 1 "$timef" | awk '{print $2}')"
        fi
    } > "$meta"
}

for name in "${NAMES[@]}"; do
    run_tree "$name"
done

# Summarise. Tolerates reports of unknown shape.
"$PYTHON" - "$CORPUS" "$REPORTS" "${NAMES[@]}" <<'PY'
import collections, json, os, sys

corpus, reports, names = sys.argv[1], sys.argv[2], sys.argv[3:]

def count_py(tree):
    files = lines = 0
    for root, dirs, fs in os.walk(tree):
        for f in fs:
            if f.endswith(".py"):
                p = os.path.join(root, f)
                if os.path.islink(p):
                    continue
                files += 1
                with open(p, "rb") as fh:
                    lines += fh.read().count(b"\n")
    return files, lines

def read_meta(path):
    meta = {}
    try:
        with open(path) as fh:
            for line in fh:
                k, _, v = line.strip().partition("=")
                meta[k] = v
    except OSError:
        pass
    return meta

def findings_of(doc):
    """Return (list of findings or None, note)."""
    if isinstance(doc, list):
        return doc, "top-level array"
    if isinstance(doc, dict):
        for key in ("findings", "diagnostics", "results", "messages"):
            if isinstance(doc.get(key), list):
                return doc[key], "" if key == "findings" else f"findings under '{key}'"
    return None, "no findings array found"

def field(f, *keys):
    if not isinstance(f, dict):
        return None
    for k in keys:
        if k in f:
            return f[k]
    loc = f.get("location")
    if isinstance(loc, dict):
        for k in keys:
            if k in loc:
                return loc[k]
    return None

bad = []
rows = []
for name in names:
    tree = os.path.join(corpus, name)
    files, lines = count_py(tree)
    meta = read_meta(os.path.join(reports, name + ".meta"))
    rc = int(meta.get("rc", "-1"))
    with open(os.path.join(reports, name + ".stderr"), errors="replace") as fh:
        stderr = fh.read()
    panicked = rc == 101 or "panicked at" in stderr
    killed = rc in (124, 137) or rc >= 128 or rc < 0
    status = "ok"
    if panicked:
        status = "PANICKED"
    elif killed:
        status = f"KILLED/ABORTED (rc={rc}" + (", signal %d" % (rc - 128) if rc > 128 else "") + ")"
    elif rc not in (0, 1):
        status = f"FAILED (rc={rc})"
    if status != "ok":
        bad.append(name)

    print(f"== {name}  ({tree})")
    print(f"   .py files: {files}   lines: {lines}")
    print(f"   exit code: {rc}   status: {status}   wall: {meta.get('wall', '?')} s"
          + (f"   peak RSS: {int(meta['rss_kb'])/1024:.0f} MiB" if meta.get("rss_kb", "").isdigit() else ""))
    if meta.get("scope") == "none":
        print("   note: binary rejected --scope; ran without it")
    report_path = os.path.join(reports, name + ".json")
    nfind = gr000 = None
    doc, text = None, ""
    try:
        with open(report_path, errors="replace") as fh:
            text = fh.read()
        if text.strip():
            doc = json.loads(text)
        else:
            print(f"   report: empty ({report_path})")
    except (OSError, ValueError) as e:
        print(f"   report: not valid JSON ({e.__class__.__name__}: {str(e)[:120]}); {len(text)} bytes in {report_path}")
    if doc is not None:
        if isinstance(doc, dict):
            print(f"   report: schema_version={doc.get('schema_version', '?')!r} tool={json.dumps(doc.get('tool', '?'))[:80]}")
        findings, note = findings_of(doc)
        if note:
            print(f"   report: {note}")
        if findings is not None:
            codes = collections.Counter(str(field(f, "code", "rule", "rule_id", "ruleId") or "?") for f in findings)
            nfind = len(findings)
            gr000 = codes.get("GR000", 0)
            paths = {field(f, "path", "filename", "file") for f in findings}
            print(f"   findings: {nfind} in {len(paths)} files   parse errors (GR000): {gr000}")
            for code, n in sorted(codes.items()):
                print(f"     {code:10} {n}")
            if gr000:
                ex = [f for f in findings if field(f, "code", "rule", "rule_id", "ruleId") == "GR000"][:5]
                for f in ex:
                    print(f"     GR000 e.g. {field(f, 'path', 'filename', 'file')}:{field(f, 'line', 'row')}: {str(field(f, 'message') or '')[:100]}")
        if isinstance(doc, dict) and "summary" in doc:
            print(f"   summary: {json.dumps(doc['summary'])[:300]}")
    tail = [l for l in stderr.splitlines() if l.strip()][-5:]
    if tail and (status != "ok" or meta.get("scope") == "none"):
        print("   stderr tail:")
        for l in tail:
            print("     " + l[:200])
    if status == "ok" and nfind is None:
        status = "ok (no usable report)"
    rows.append((name, files, lines, nfind, gr000, rc, status))

print()
print(f"{'tree':14}{'py files':>10}{'lines':>11}{'findings':>10}{'GR000':>7}{'rc':>5}  status")
for name, files, lines, nfind, gr000, rc, status in rows:
    print(f"{name:14}{files:>10}{lines:>11}{'-' if nfind is None else nfind:>10}{'-' if gr000 is None else gr000:>7}{rc:>5}  {status}")
print(f"\nreports: {reports}/<tree>.json (stderr in <tree>.stderr)")
sys.exit(1 if bad else 0)
PY
