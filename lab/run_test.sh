# run_test.sh — sourced by the lab scripts that run GPU tests (after bench/carry_env.sh, which sets
# $out): run NAME LIMIT CMD... runs CMD with its own cache under a time limit, its log in
# $out/NAME.log, and prints its status, time and failure lines.
run() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  SOFTMAX_TUNE_CACHE=/tmp/c_$name.db timeout "$lim" "$@" >"$out/$name.log" 2>&1
  echo "$name: rc=$? $(( $(date +%s) - s )) s"; grep -E "FAIL|failed|failures|Error" "$out/$name.log" | head -8; }
