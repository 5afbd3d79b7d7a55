# run_test.sh — sourced by the lab scripts that run GPU tests (after bench/carry_env.sh, which sets
# $out): run NAME LIMIT CMD... runs CMD with its own cache under a time limit, its log in
# $out/NAME.log, and prints its status, time and failure lines.
run() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  SOFTMAX_TUNE_CACHE=/tmp/c_$name.db timeout "$lim" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - s )) s"; grep -E "FAIL|failed|failures|Error" "$out/$name.log" | head -8; }
# attn_tests LIMIT: test_gpu --attn and --attn-bw side by side (each under LIMIT seconds), then
# their summary lines and the seconds since $t0.
attn_tests() { run test_gpu_attn "$1" .carry/test_gpu --attn & run test_gpu_attn_bw "$1" .carry/test_gpu --attn-bw &
  wait; grep -hE "knob values|checks" "$out"/test_gpu_attn*.log | tail -4; echo "tests: $(( $(date +%s) - t0 )) s"; }
