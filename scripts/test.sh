#!/usr/bin/env bash
# The test suite: every Rust test of the workspace, then the Python harness's unit tests.
# GPU tests are #[ignore]d (Rust) or skip with a reason (pytest) without a CUDA device;
# scripts/gpu-tests.sh runs them on a GPU machine.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo test --workspace

if [ -d python/tests ]; then
    if ! python3 -c "import pytest, yaml" 2>/dev/null; then
        python3 -m pip install --quiet "pytest>=7" "pyyaml>=6"
    fi
    (cd python && python3 -m pytest -q tests)
fi
