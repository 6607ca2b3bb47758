#!/usr/bin/env bash
# Runs every probe GPU test on the device machine and prints a summary.
#
#   scripts/gpu/probe.sh        # from anywhere, on a machine with torch + CUDA
#
# 1. pytest python/tests: unit tests plus the GPU acceptance tests (every `# expect:` marker in
#    examples/probe names the right line in the right phase; clean programs replay bit-exactly).
# 2. `graphready probe` on every example: the hazard programs in parallel, then the clean ones one
#    at a time (their latencies, graph memory and capture times are reported), then the
#    tensor-parallel ones on several ranks (two NCCL ranks when two GPUs are present). Uses
#    .gpu-bin/graphready when present (the release binary built elsewhere), else drives the Python
#    harness directly. The real-model examples (transformers) run when transformers is installed,
#    and are listed as skipped, with the reason, when it is not.
# Reports land in ${OUT:-/tmp/graphready-probe}. Exit 0 when everything behaved as expected.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR="${OUT:-/tmp/graphready-probe}"
LOGS="$(mktemp -d)"
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
BIN=.gpu-bin/graphready
# GPU_TESTS_ONLY=ranks: only the multi-rank part (its pytest file and the tensor-parallel cases);
# GPU_TESTS_ONLY=no-ranks: everything else.
ONLY="${GPU_TESTS_ONLY:-}"
status=0

echo "== environment"
python3 -c 'import torch, sys; print("python", sys.version.split()[0], "| torch", torch.__version__, "| CUDA", torch.version.cuda, "|", torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU")'
if [ -x "$BIN" ]; then echo "driver: $BIN ($("$BIN" --version))"; else echo "driver: python3 -m graphready.harness (no $BIN)"; fi

echo
echo "== pytest python/tests (unit + GPU acceptance)"
xdist=""
python3 -c 'import xdist' 2>/dev/null && xdist="-n 4"
tests=python/tests
[ "$ONLY" = ranks ] && tests=python/tests/test_gpu_ranks.py
[ "$ONLY" = no-ranks ] && tests="python/tests --ignore=python/tests/test_gpu_ranks.py"
python3 -m pytest $tests -q -p no:cacheprovider -rs $xdist > "$LOGS/pytest.log" 2>&1
pytest_rc=$?
tail -30 "$LOGS/pytest.log"
[ "$pytest_rc" -eq 0 ] || status=1

HAVE_TRANSFORMERS=0
python3 -c 'import transformers' 2>/dev/null && HAVE_TRANSFORMERS=1
NEEDS_TRANSFORMERS=" mixtral_moe llama_static_cache "

# The library file each real-model example's events should point into: checked statically too.
library_file() {
  case "$1" in
    transformer_encoder) python3 -c 'import torch.nn.modules.transformer as m; print(m.__file__)' ;;
    mixtral_moe) python3 -c 'import transformers.models.mixtral.modeling_mixtral as m; print(m.__file__)' ;;
  esac
}

probe_one() {  # name buckets -> writes $LOGS/name.log and $LOGS/name.rc
  local name=$1 buckets=$2 lib
  lib=$(library_file "$name" 2>/dev/null)
  {
    echo "== graphready probe examples/probe/$name.py:factory --buckets $buckets${lib:+ --check ... $lib}"
    if [ -x "$BIN" ]; then
      "$BIN" probe "examples/probe/$name.py:factory" --buckets "$buckets" --timeout 300 \
        --output "$OUT_DIR/$name.json" --check "examples/probe/$name.py" $lib
      echo $? > "$LOGS/$name.rc"
    else
      python3 - "$name" "$buckets" "$OUT_DIR" <<'PY'
import json, os, subprocess, sys
from graphready.summary import is_ready, render
name, buckets, out = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
cmd = [sys.executable, "-m", "graphready.harness", "--target", f"examples/probe/{name}.py:factory"]
for b in buckets:
    cmd += ["--bucket", b]
proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
open(os.path.join(out, name + ".jsonl"), "w").write(proc.stdout)
lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
env = [m for m in lines if m["type"] == "env_error"]
if env:
    print("environment error:", env[0]["message"]); sys.exit(2)
phases = [m for m in lines if m["type"] == "phase"]
print(render(phases))
if proc.returncode != 0:
    started = [m["phase"] for m in lines if m["type"] == "phase_start"]
    print(f"harness died (status {proc.returncode}) during {started[-1] if started else 'start-up'}")
sys.exit(0 if is_ready(phases) and proc.returncode == 0 else 1)
PY
      echo $? > "$LOGS/$name.rc"
    fi
  } > "$LOGS/$name.log" 2>&1
}

HAZARDS=(item tolist if_any assert_all nonzero mask_index bincount tensor_from_list setitem_int
         cuda_synchronize empty_scale ue8m0_original crash_segfault device_assert
         transformer_encoder mixtral_moe hidden_counter uninit_index "pad_amax 4")
CLEAN=("clean_mlp 1,4" "ue8m0_final 1,8" "moe_decode 1,2,4,8" "kv_cache_decode 1,4,8"
       "llama_static_cache 1,2,4,8")
SKIPPED=()
runnable() {  # name -> 0 when it can run here
  [ "$ONLY" = ranks ] && return 1
  if [[ "$NEEDS_TRANSFORMERS" == *" $1 "* && "$HAVE_TRANSFORMERS" != 1 ]]; then
    SKIPPED+=("$(printf '%-18s skipped: transformers is not installed' "$1")")
    return 1
  fi
  return 0
}

running=0
for spec in "${HAZARDS[@]}"; do
  set -- $spec
  runnable "$1" || continue
  probe_one "$1" "${2:-1}" &
  running=$((running + 1))
  if [ "$running" -ge 4 ]; then wait -n; running=$((running - 1)); fi
done
wait
for spec in "${CLEAN[@]}"; do
  set -- $spec
  runnable "$1" || continue
  probe_one "$1" "$2"
done

SUMMARY=()
report() {  # name buckets expected
  local name=$1 buckets=$2 expect=$3 code verdict
  echo
  cat "$LOGS/$name.log"
  code=$(cat "$LOGS/$name.rc" 2>/dev/null || echo missing)
  if [ "$code" = "$expect" ]; then verdict=ok; else verdict=UNEXPECTED; status=1; fi
  echo "-> exit $code"
  SUMMARY+=("$(printf '%-18s buckets %-8s exit %-3s (expected %s) %s' "$name" "$buckets" "$code" "$expect" "$verdict")")
}
for spec in "${HAZARDS[@]}"; do
  set -- $spec
  [ -f "$LOGS/$1.log" ] && report "$1" "${2:-1}" 1
done
for spec in "${CLEAN[@]}"; do
  set -- $spec
  [ -f "$LOGS/$1.log" ] && report "$1" "$2" 0
done
# What issue 13 promises, read off the binary's outputs above.
expect_in() {  # label name pattern
  local label=$1 name=$2 pattern=$3 verdict=ok
  [ -f "$LOGS/$name.log" ] || return 0
  grep -qE "$pattern" "$LOGS/$name.log" || { verdict=UNEXPECTED; status=1; }
  SUMMARY+=("$(printf '%-18s %-44s %s' "$name" "$label" "$verdict")")
}
if [ -x "$BIN" ]; then
expect_in "library line named" transformer_encoder "innermost \(framework\): .*torch/nn/modules/transformer.py:[0-9]+"
expect_in "library line named" mixtral_moe "innermost \(library\): .*transformers/models/mixtral/modeling_mixtral.py:[0-9]+"
expect_in "confirmed at the library line" mixtral_moe "confirmed .*GR201 at .*modeling_mixtral.py:[0-9]+"
expect_in "re-run tells the poison caused it" uninit_index "re-run without poisoning: pass"
expect_in "inconclusive, not uninitialised" hidden_counter "uninitialized +INCONCLUSIVE"
expect_in "pad rows leak" pad_amax "row_isolation +FAIL +pad rows leak"
expect_in "state restored, ready" llama_static_cache "^ready: "
expect_in "graph memory totals" llama_static_cache "total \(4 graph\(s\)\)"
fi

# The CLI's other paths: a module TARGET, JSON on stdout, and environment errors (exit 2).
cli_case() {  # label expected-exit command...
  local label=$1 expect=$2 code verdict
  shift 2
  echo
  echo "== $label: $*"
  "$@" > "$LOGS/cli.out" 2> "$LOGS/cli.err"
  code=$?
  head -c 300 "$LOGS/cli.err"
  if [ "$code" = "$expect" ]; then verdict=ok; else verdict=UNEXPECTED; status=1; fi
  echo "-> exit $code"
  SUMMARY+=("$(printf '%-18s exit %-3s (expected %s) %s' "$label" "$code" "$expect" "$verdict")")
}
if [ -x "$BIN" ] && [ "$ONLY" != ranks ]; then
  ABS_BIN="$PWD/$BIN"
  cli_case "module TARGET" 0 bash -c "cd examples/probe && '$ABS_BIN' probe clean_mlp:factory --output-format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(\"schema\", r[\"schema_version\"], \"ready\", r[\"summary\"][\"ready\"]); sys.exit(0 if r[\"summary\"][\"ready\"] else 1)'"
  cli_case "no CUDA device" 2 env CUDA_VISIBLE_DEVICES= "$BIN" probe examples/probe/item.py:factory
  cli_case "bad TARGET" 2 "$BIN" probe examples/probe/item.py:no_such_factory
  cli_case "no interpreter" 2 "$BIN" probe examples/probe/item.py:factory --python /nonexistent/python3
fi

# Issue 15: several ranks (tensor-parallel steps). Two NCCL ranks need two GPUs and are skipped,
# with the reason, on fewer; one GPU still runs one NCCL rank, two gloo ranks sharing it (the
# hang), and more NCCL ranks than GPUs (exit 2).
GPUS=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
rank_case() {  # label expected-exit log-name probe-args...
  local label=$1 expect=$2 name=$3 code verdict
  shift 3
  echo
  echo "== $label: graphready probe $*"
  "$BIN" probe "$@" --output "$OUT_DIR/$name.json" > "$LOGS/$name.log" 2>&1
  code=$?
  cat "$LOGS/$name.log"
  if [ "$code" = "$expect" ]; then verdict=ok; else verdict=UNEXPECTED; status=1; fi
  echo "-> exit $code"
  SUMMARY+=("$(printf '%-18s exit %-3s (expected %s) %s' "$name" "$code" "$expect" "$verdict")")
}
if [ -x "$BIN" ] && [ "$ONLY" != no-ranks ]; then
  TP=examples/probe
  if [ "$GPUS" -ge 2 ]; then
    rank_case "TP MLP, all_reduce in the graph, 2 NCCL ranks" 0 tp_mlp_x2 "$TP/tp_mlp.py:factory" --nproc-per-node 2 --buckets 1,4 --timeout 300
    expect_in "latency per rank" tp_mlp_x2 "bucket +4 rank 1: eager .* replay .* speedup"
    rank_case "all_gather_object in the step, 2 ranks" 1 tp_ago_x2 "$TP/tp_all_gather_object.py:factory" --nproc-per-node 2 --timeout 300
    expect_in "host collective at its line" tp_ago_x2 "host_collective: torch.distributed.all_gather_object at .*tp_all_gather_object.py:[0-9]+"
    rank_case ".item() feeding all_reduce, 2 ranks" 1 tp_item_x2 "$TP/tp_item_all_reduce.py:factory" --nproc-per-node 2 --timeout 300
    rank_case "all_reduce on rank 0 only, 2 NCCL ranks" 1 tp_hang_x2 "$TP/tp_rank0_all_reduce.py:factory" --nproc-per-node 2 --hang-timeout 30 --timeout 240
    expect_in "hang diagnosed, group killed" tp_hang_x2 "HANG after .*rank 0 stayed in warmup"
    expect_in "rank 0's last collective" tp_hang_x2 "last collective: all_reduce #[0-9]+ in warmup at .*tp_rank0_all_reduce.py:[0-9]+"
  else
    SKIPPED+=("$(printf '%-18s skipped: 2 NCCL ranks need 2 GPUs, found %s' "tp_*_x2" "$GPUS")")
  fi
  rank_case "TP MLP, 1 NCCL rank" 0 tp_mlp_x1 "$TP/tp_mlp.py:factory" --nproc-per-node 1 --buckets 1,4 --timeout 300
  rank_case "all_gather_object, 1 rank" 1 tp_ago_x1 "$TP/tp_all_gather_object.py:factory" --nproc-per-node 1 --timeout 300
  rank_case "all_reduce on rank 0 only, 2 gloo ranks" 1 tp_hang_gloo "$TP/tp_rank0_all_reduce.py:factory" --nproc-per-node 2 --dist-backend gloo --hang-timeout 20 --timeout 180
  expect_in "host-side hang at the line" tp_hang_gloo "rank 0: HUNG in warmup; in the step, at .*tp_rank0_all_reduce.py:[0-9]+"
  rank_case "more NCCL ranks than GPUs" 2 tp_too_many "$TP/tp_mlp.py:factory" --nproc-per-node $((GPUS + 1)) --timeout 120
fi

echo
echo "== summary"
echo "pytest: $(grep -E '[0-9]+ (passed|failed)' "$LOGS/pytest.log" | tail -1)"
printf '%s\n' "${SUMMARY[@]}"
[ "${#SKIPPED[@]}" -eq 0 ] || printf '%s\n' "${SKIPPED[@]}"
if [ "$status" -eq 0 ]; then echo "ALL PROBE GPU CHECKS PASSED"; else echo "SOME PROBE GPU CHECKS FAILED"; fi
rm -rf "$LOGS"
exit "$status"
