#!/usr/bin/env bash
# Runs every ue8m0 GPU test, the benchmark and the PyTorch cross-check on the device machine.
# Run from the repository root; expects the binaries built by scripts/build-gpu-ue8m0.sh in
# .gpu-bin/ue8m0/. Exit status: 0 when every part passed.
set -u -o pipefail

bin=.gpu-bin/ue8m0
work=${UE8M0_WORK:-/tmp/ue8m0-gpu}
mkdir -p "$work"
for f in gpu-tests gpu_bench; do
    if [ ! -x "$bin/$f" ]; then
        echo "ue8m0: $bin/$f missing: run scripts/build-gpu-ue8m0.sh first" >&2
        exit 2
    fi
done

# cudarc loads libcuda and libnvrtc at run time: the toolkit's and the pip wheel's (next to torch).
lib_path=${LD_LIBRARY_PATH:-}
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$d" ] && lib_path="$lib_path:$d"
done
wheel_nvrtc=$(python3 - <<'PY' 2>/dev/null
import glob, os, site
for p in site.getsitepackages():
    hits = glob.glob(os.path.join(p, "nvidia", "**", "libnvrtc.so*"), recursive=True)
    if hits:
        print(os.path.dirname(hits[0]))
        break
PY
)
[ -n "$wheel_nvrtc" ] && lib_path="$lib_path:$wheel_nvrtc"
export LD_LIBRARY_PATH=${lib_path#:}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
status=0

echo "== ue8m0: GPU tests (bit-exactness, capture/replay, deferred checks, masked rows)"
"$bin/gpu-tests" --ignored --test-threads=1 --nocapture || status=1

echo "== ue8m0: benchmark"
"$bin/gpu_bench" "$work" || status=1

echo "== ue8m0: PyTorch reference (cross-check and comparison)"
PYTHONUNBUFFERED=1 python3 crates/ue8m0/bench/torch_ref.py "$work" || status=1

if [ -n "${OUT:-}" ] && [ -f "$work/bench.json" ]; then
    cp "$work/bench.json" "$OUT/ue8m0-bench.json"
fi
echo "== ue8m0: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
