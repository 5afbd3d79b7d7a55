#!/usr/bin/env bash
# rules_check.sh [LIST...] — do the untuned rules fitted on one GPU hold on this one? Each list of
# lab/shapes/ ("op dtype shape tune|config [flags]": a problem's `tune` line, then its pinned
# configs, most lists "the rule now, the rule before" or the rule and its candidates) goes through
# lab/pinned_ab.sh with one build (.carry, one round), then lab/pinned_summary.py: each pinned
# slot's tuned/pinned, geomean and worst, per list. Its output to $OUT/<list>.out, the summaries
# to stdout and $OUT/summary.txt.
#   OUT=$OUT bash lab/rules_check.sh                        # the default lists, in order
#   OUT=$OUT bash lab/rules_check.sh ce-loss-middle.txt     # named lists (lab/shapes/)
# LIMIT (default 540) seconds: no list starts after it; the lists left are printed, to name in the
# next call. A list runs 20-200 s (its tunes 4-9 s each, a pinned config 1-3 s).
# The default lists are the checks of the rules fitted on an H200 (lab/NOTES.md, docs/design/
# untuned.md), most important first; on an H100 they are the check the H200's figures owe.
# Read small problems' figures against each other: at 5-40 us a tune reads 10-15% under a pinned
# run of the same config (lab/NOTES.md).
set -u
. "$(dirname "$0")/../bench/carry_env.sh"
lists=("$@")
[ ${#lists[@]} -gt 0 ] || lists=(attn-fwd-narrow-check-20261234.txt attn-bw-class8k-20261232.txt
  attn-decode-long-band-20261229.txt ce-loss-many-rows-check-20261240.txt ce-f32-softcap-check-20261242.txt
  attn-bw-softcap-decode-check-20261256.txt attn-bw-narrow-check-20261255.txt attn-bw-narrowest-check-20261303.txt
  ce-mid-check-20261304.txt ce-adapt-grow-check-20261332.txt ce-middle-band-check-20261334.txt ce-spill-caps.txt attn-bias-fwd-check-20261307.txt
  ce-loss-softcap-cands.txt attn-packed-rules-20261129.txt attn-decode-band-check-20261213.txt
  attn-decode-fwd-check-20261208.txt ce-loss-middle.txt)
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "# rules_check.sh on $gpu, tree $(cat .carry/TREE), $(date +%F)" | tee "$out/summary.txt"
t0=$(date +%s) left=()
for l in "${lists[@]}"; do
  f=lab/shapes/$l
  [ -f "$f" ] || { echo "rules_check: no list '$f'" | tee -a "$out/summary.txt"; continue; }
  if [ $(( $(date +%s) - t0 )) -ge "${LIMIT:-540}" ]; then left+=("$l"); continue; fi
  ROUNDS=1 bash lab/pinned_ab.sh .carry .carry <"$f" >"$out/${l%.txt}.out" 2>&1
  { echo "## $l ($(tail -1 "$out/${l%.txt}.out"))"; python3 lab/pinned_summary.py "$f" "$out/${l%.txt}.out" | grep -E "^#|geomean|worst|slot"; } |
    tee -a "$out/summary.txt"
done
[ ${#left[@]} -eq 0 ] || echo "rules_check: not started (time): ${left[*]}" | tee -a "$out/summary.txt"
echo "rules_check: $(( $(date +%s) - t0 )) s"
