# carry_env.sh — sourced by the scripts that run on the GPU machine from the repository root
# (device_run.sh, host_run.sh, ce_py_run.sh): $out, the log folder ($OUT, or /tmp/st_out), and the environment
# that runs what bench/carry.sh packed into .carry/.
out=${OUT:-/tmp/st_out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export SOFTMAX_TUNE_LIB=$PWD/.carry/lib/libsoftmax_tune.so
export SOFTMAX_TUNE_CACHE=${SOFTMAX_TUNE_CACHE:-/tmp/st_cache.db}
export PYTHONUNBUFFERED=1
