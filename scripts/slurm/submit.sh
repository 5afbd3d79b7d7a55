#!/usr/bin/env bash
# submit.sh SHAPES OUT TASKS [SBATCH OPTION...] — the fleet recipe on Slurm (docs/fleet.md): a
# job array of TASKS tasks with one GPU each (task.sh: its share of SHAPES, a bundle each),
# then the merge (merge.sh, no GPU) once every task has ended, whatever their status. Extra
# options (--partition, --account, --time, ...) go to both jobs. OUT must be on a file system
# every node sees. SOFTMAX_TUNE (the command's path) reaches the jobs with the environment.
# Prints the two job ids. Then: softmax-tune cache import OUT/fleet.stb on each host.
set -u
usage="usage: submit.sh SHAPES OUT TASKS [SBATCH OPTION...]"
shapes=${1:?$usage}
out=${2:?$usage}
tasks=${3:?$usage}
shift 3
here=$(cd "$(dirname "$0")" && pwd)
case $tasks in '' | *[!0-9]*) echo "submit.sh: TASKS '$tasks' is not a number ($usage)" >&2; exit 2 ;; esac
[ "$tasks" -ge 1 ] || { echo "submit.sh: TASKS must be at least 1" >&2; exit 2; }
[ -r "$shapes" ] || { echo "submit.sh: cannot read the shape list '$shapes'" >&2; exit 2; }
mkdir -p "$out" || exit 2
shapes=$(cd "$(dirname "$shapes")" && pwd)/$(basename "$shapes")
out=$(cd "$out" && pwd)

array=$(sbatch --parsable --job-name=softmax-tune --array=0-$((tasks - 1)) --gres=gpu:1 --ntasks=1 \
  --output="$out/task-%a.log" "$@" "$here/task.sh" "$shapes" "$out") || exit 1
array=${array%%;*}
merge=$(sbatch --parsable --job-name=softmax-tune-merge --dependency=afterany:"$array" --ntasks=1 \
  --output="$out/merge.log" --export=ALL,ST_TASKS="$tasks" "$@" "$here/merge.sh" "$out") || exit 1
echo "array job $array ($tasks tasks), merge job ${merge%%;*}; then: softmax-tune cache import $out/fleet.stb"
