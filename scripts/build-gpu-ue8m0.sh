#!/usr/bin/env bash
# Builds the ue8m0 GPU test binary and benchmark (x86-64, feature `cuda`, release) and copies them
# into .gpu-bin/ue8m0/ for scripts/gpu/ue8m0.sh on the device machine. Needs no CUDA here.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target/ue8m0}
out=.gpu-bin/ue8m0
mkdir -p "$out"

test_bin=$(cargo test -p ue8m0 --features cuda --release --test gpu --no-run --message-format=json \
    | python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "gpu":
        print(msg["executable"])
')
[ -n "$test_bin" ] || { echo "build-gpu-ue8m0: no test executable found" >&2; exit 1; }
cp "$test_bin" "$out/gpu-tests"

cargo build -p ue8m0 --features cuda --release --example gpu_bench
cp "$CARGO_TARGET_DIR/release/examples/gpu_bench" "$out/gpu_bench"
ls -l "$out"
