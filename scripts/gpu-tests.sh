#!/usr/bin/env bash
# Every GPU test and benchmark, on a machine with an NVIDIA GPU, CUDA and PyTorch:
#   scripts/build-gpu.sh            # here: builds .gpu-bin/
#   scripts/gpu-tests.sh            # there, from the repository root, with .gpu-bin/ carried along
# Parts: the ue8m0 kernels (bit-exactness, capture/replay, deferred validation, benchmark) and
# the probe (examples per hazard, clean programs, MoE buckets, the UE8M0 controls, stateful decode
# steps, row isolation, real models from transformers when it is installed, and tensor-parallel
# steps on several ranks: two NCCL ranks when two GPUs are present, skipped with the reason when
# not).
# `scripts/gpu-tests.sh --ranks-only` runs only the multi-rank part, `--no-ranks` everything else:
# where the whole suite takes longer than one device command may (a cold single-GPU machine took
# just over 600 s on 2026-12-02), the two together run every test.
# Exit status: 0 when every part passed.
set -u -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
status=0
case "${1:-}" in
  --ranks-only) export GPU_TESTS_ONLY=ranks ;;
  --no-ranks) export GPU_TESTS_ONLY=no-ranks ;;
  "") ;;
  *) echo "usage: scripts/gpu-tests.sh [--ranks-only | --no-ranks]" >&2; exit 2 ;;
esac
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

if [ "${GPU_TESTS_ONLY:-}" != ranks ]; then
  echo; echo "######## ue8m0"
  bash scripts/gpu/ue8m0.sh || status=1
fi

echo; echo "######## probe"
bash scripts/gpu/probe.sh || status=1

echo
if [ "$status" -eq 0 ]; then echo "== gpu-tests: PASS"; else echo "== gpu-tests: FAIL"; fi
exit "$status"
