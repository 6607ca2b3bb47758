#!/usr/bin/env bash
# Builds, here (x86-64, no GPU needed), everything scripts/gpu-tests.sh runs on the GPU machine,
# into .gpu-bin/ (git-ignored; name it in the device run's `carry`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/build-gpu-ue8m0.sh
cargo build --release -p graphready
mkdir -p .gpu-bin
cp target/release/graphready .gpu-bin/graphready
ls -l .gpu-bin .gpu-bin/ue8m0
