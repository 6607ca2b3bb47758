#!/usr/bin/env bash
# Runs every probe GPU test on the device machine and prints a summary.
#
#   scripts/gpu/probe.sh            # from the repository root, on a machine with torch + CUDA
#
# Uses .gpu-bin/graphready when present (the release binary built elsewhere); otherwise drives
# the Python harness directly. Reports land in ${OUT:-/tmp/graphready-probe}.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR="${OUT:-/tmp/graphready-probe}"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
BIN=.gpu-bin/graphready
status=0

echo "== environment"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "| torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")'

echo "== pytest (unit + GPU acceptance)"
python3 -m pytest python/tests -q -p no:cacheprovider -rs 2>&1 | tail -25
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

probe() {  # name buckets expected-exit
  local name=$1 buckets=$2 expect=$3 code
  echo
  echo "== probe examples/probe/$name.py --buckets $buckets (expect exit $expect)"
  if [ -x "$BIN" ]; then
    "$BIN" probe "examples/probe/$name.py:factory" --buckets "$buckets" --timeout 300 \
      --output "$OUT_DIR/$name.json" --check "examples/probe/$name.py"
    code=$?
  else
    python3 - "$name" "$buckets" "$OUT_DIR" <<'PY'
import json, os, subprocess, sys
from graphready.summary import is_ready, render
name, buckets, out = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
cmd = [sys.executable, "-m", "graphready.harness", "--target", f"examples/probe/{name}.py:factory"]
for b in buckets:
    cmd += ["--bucket", b]
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
open(os.path.join(out, name + ".jsonl"), "w").write(proc.stdout)
phases = [m for m in lines if m["type"] == "phase"]
env = [m for m in lines if m["type"] == "env_error"]
if env:
    print("environment error:", env[0]["message"]); sys.exit(2)
print(render(phases))
if proc.returncode != 0:
    started = [m["phase"] for m in lines if m["type"] == "phase_start"]
    print(f"harness died (status {proc.returncode}) during {started[-1] if started else 'start-up'}")
    print("\n".join(proc.stderr.splitlines()[-5:]))
sys.exit(0 if is_ready(phases) and proc.returncode == 0 else 1)
PY
    code=$?
  fi
  if [ "$code" -eq "$expect" ]; then verdict=ok; else verdict=UNEXPECTED; status=1; fi
  SUMMARY+=("$(printf '%-18s buckets %-8s exit %s (expected %s) %s' "$name" "$buckets" "$code" "$expect" "$verdict")")
}

SUMMARY=()
for hazard in item tolist if_any assert_all nonzero mask_index bincount tensor_from_list \
              setitem_int cuda_synchronize empty_scale ue8m0_original crash_segfault device_assert; do
  probe "$hazard" 1 1
done
probe clean_mlp 1,4 0
probe ue8m0_final 1,8 0
probe moe_decode 1,2,4,8 0

echo
echo "== summary"
printf '%s\n' "${SUMMARY[@]}"
[ "$status" -eq 0 ] && echo "ALL PROBE GPU CHECKS PASSED" || echo "SOME PROBE GPU CHECKS FAILED"
exit "$status"
