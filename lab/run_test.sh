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
# python_attn_tests LIMIT: test_python_attn on the C++ ops (after the C++ ops' build running in the
# background: its log $out/build.txt), then on ctypes, each under LIMIT seconds; then their verdicts.
python_attn_tests() { wait; tail -2 "$out/build.txt"
  run test_python_attn "$1" python3 tests/test_python_attn.py
  SOFTMAX_TUNE_NO_CPP=1 run test_python_attn_ctypes "$1" python3 tests/test_python_attn.py
  grep -E "non-finite|failures" "$out"/test_python_attn*.log | tail -4; }
