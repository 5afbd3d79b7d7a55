#!/usr/bin/env bash
# kernel_set.sh BINARY — the kernel set without a GPU (docs/kernel-set.md): a small set built
# (`kernels --build`, f32 softmax classes up to 100 columns, a cross-entropy part and an attention
# backward part with its softcap's stand-ins), listed, the narrow classes' kernels free of local memory, a build
# stopped midway leaving nothing,
# each key's config the one explain's rule gives for the band's rows, explain naming the set,
# a set of other templates not used, and bad input: one line, exit 2 (or 1), nothing written.
set -u
bin=$(realpath "$1")
. "$(dirname "$0")/testlib.sh" kset
unset SOFTMAX_TUNE_KERNELS

out=$("$bin" kernels --build sm_90 --op softmax --dtype f32 --widest 100 --jobs 2 -o s.set 2>&1) || bad "build: $? $out"
has "$out" "kernels compiled"
[ -s s.set ] && [ -z "$(ls -A | grep parts)" ] || bad "no set, or its parts left: $(ls)"
# widths 1..64 each a class, then 65..72 ... 97..104: 69 classes, rows under 8 KB: bands 1 and 2
list=$(SOFTMAX_TUNE_KERNELS=s.set "$bin" kernels)
has "$list" "# kernel set s.set: 138 keys"
[ "$(grep -c '^sm_90	softmax	f32	' <<<"$list")" = 138 ] || bad "138 keys listed: $list"
has "$list" "sm_90	softmax	f32	97..104	<4096	"
# each key's config is the rule's (the default table adapted) for the band's rows (512; 16384, 65536
# for rows under 256 bytes)
while IFS=$'\t' read -r arch op dt class rows regs bytes cfg src; do
  hi=${class#*..}
  r=512
  [ "$rows" = ">=4096" ] && r=16384 && [ $((hi * 4)) -lt 256 ] && r=65536
  want=$(SOFTMAX_TUNE_KERNELS=none "$bin" explain --arch sm_90 --shape ${r}x$hi --op $op --dtype $dt | awk '/^kernel/{print $2}')
  [ "$cfg" = "$want" ] || bad "$class $rows: the set holds $cfg, the rule gives $want"
done < <(grep '^sm_90' <<<"$list" | awk 'NR % 9 == 1')
# explain names the set for a shape of one of its classes
out=$(SOFTMAX_TUNE_KERNELS=s.set "$bin" explain --arch sm_90 --shape 1000x99 2>&1)
has "$out" "source   the kernel set s.set (sm_90, built ahead: nothing to compile)"
out=$(SOFTMAX_TUNE_KERNELS=s.set "$bin" explain --arch sm_90 --shape 1000x99 --dtype bf16 2>&1)
[[ "$out" != *"kernel set"* ]] || bad "a bf16 shape from an f32-only set: $out"
out=$(SOFTMAX_TUNE_KERNELS=s.set "$bin" kernels --op log_softmax 2>&1)
[ $? -eq 1 ] && has "$out" "no key of that"
# a cross-entropy part: its classes from 2 columns
"$bin" kernels --build sm_90 --op cross_entropy_loss --dtype bf16 --widest 3 -o ce.set >/dev/null 2>&1 || bad "ce build"
ce=$(SOFTMAX_TUNE_KERNELS=ce.set "$bin" kernels)
has "$ce" "sm_90	cross_entropy_loss	bf16	2..2	<4096"
# a softcap's kernels, keys of their own, and the dtype's steps (ce_steps.cu), one record
has "$ce" "sm_90	cross_entropy_loss softcap	bf16	2..2	<4096"
has "$ce" "sm_90	cross_entropy steps	bf16	0..0	any	"
[ "$(grep -c 'softcap' <<<"$ce")" = "$(grep -c '^sm_90	cross_entropy_loss	' <<<"$ce")" ] || bad "a softcap key for each: $ce"
out=$(SOFTMAX_TUNE_KERNELS=ce.set "$bin" explain --arch sm_90 --shape 512x3 --dtype bf16 --op cross_entropy_loss --softcap 30 2>&1)
has "$out" "source   the kernel set ce.set"

# an attention part: the stand-ins (class any) of the softcap on each mask the set holds classes of
# and of the window masks with and without it, named by explain
at=$("$bin" kernels --build sm_90 --op attention_softmax_backward --dtype bf16 --widest 2 -o at.set 2>&1) || bad "attn build: $at"
at=$(SOFTMAX_TUNE_KERNELS=at.set "$bin" kernels)
[ "$(grep -c '	any	any	.*	stand-in$' <<<"$at")" = 12 ] || bad "12 stand-ins (4 softcaps, 4 windows with and without): $at"
has "$at" "sm_90	attention_softmax_backward:padding_causal:none softcap	bf16	any	any	"
has "$at" "sm_90	attention_softmax_backward:causal_window:none	bf16	any	any	"
out=$(SOFTMAX_TUNE_KERNELS=at.set "$bin" explain --arch sm_90 --op attention_softmax_backward --dtype bf16 --shape 2x4x100x3000 \
      --mask causal+window --window 512 2>&1)
has "$out" "first    the kernel set's stand-in threads=256,items=2,vec=1,"
out=$(SOFTMAX_TUNE_KERNELS=at.set "$bin" explain --arch sm_90 --op attention_softmax_backward --dtype bf16 --shape 2x4x100x3000 \
      --mask causal --softcap 30 2>&1)
has "$out" "first    the kernel set's stand-in threads=256,items=2,vec=1,"
out=$(SOFTMAX_TUNE_KERNELS=at.set "$bin" explain --arch sm_90 --op attention_softmax_backward --dtype bf16 --shape 2x4x100x3000 \
      --mask causal 2>&1)
[[ "$out" != *stand-in* ]] || bad "a stand-in named for a kind without softcap: $out"

# no local memory in the rule's kernels of the narrow classes that once spilled (space_ce.lua's
# register caps of float rows, space_attn.lua's narrow_bw and packed_margin): each part says how
# many of its kernels hold a stack frame, and none should
for part in "attention_softmax_backward bf16 64" "cross_entropy f32 48"; do
  set -- $part
  out=$("$bin" kernels --build sm_90 --op $1 --dtype $2 --widest $3 --jobs 2 -o lm.set 2>&1) || bad "$1 build: $out"
  [[ "$out" != *"local memory"* ]] || bad "$1 $2 up to $3: $out"
done

# a set of other templates is not used: the hash in its header changed
cp s.set other.set
printf 'f' | dd of=other.set bs=1 seek=16 conv=notrunc 2>/dev/null
out=$(SOFTMAX_TUNE_KERNELS=other.set "$bin" explain --arch sm_90 --shape 1000x99 2>&1)
[[ "$out" != *"kernel set"* ]] || bad "a set of other templates used: $out"

# a build stopped midway (SIGTERM: a shell's background job ignores SIGINT) dies of the signal and
# leaves neither the set nor its parts folder
"$bin" kernels --build sm_90 --op softmax --dtype f32 --widest 65536 --jobs 2 -o int.set >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do ls -d int.set.parts.* >/dev/null 2>&1 && break; sleep 0.1; done
sleep 0.5
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] && [ ! -e int.set ] && [ -z "$(ls -d int.set.parts.* 2>/dev/null)" ] || bad "stopped build: rc $rc, left $(ls)"

# bad input: one line, a non-zero exit, nothing written
out=$("$bin" kernels --build sm_9x -o b.set 2>&1)
[ $? -eq 2 ] && [ ! -e b.set ] && has "$out" "bad arch 'sm_9x'" || bad "bad arch: $out"
out=$("$bin" kernels --build sm_90 2>&1)
[ $? -eq 2 ] && has "$out" "needs -o FILE" || bad "no -o: $out"
out=$("$bin" kernels --build sm_90 --widest 0 -o b.set 2>&1)
[ $? -eq 2 ] && [ ! -e b.set ] && has "$out" "bad --widest '0'" || bad "widest 0: $out"
out=$("$bin" kernels --build sm_90 --widest 2 --op softmax --dtype f32 -o nodir/b.set 2>&1)
[ $? -ne 0 ] && [ ! -e nodir ] && [ "$(echo "$out" | wc -l)" = 1 ] || bad "unwritable output: $out"
head -c 1000 s.set > cut.set
out=$(SOFTMAX_TUNE_KERNELS=cut.set "$bin" kernels 2>&1)
has "$out" "'cut.set' is not a kernel set of this softmax-tune"
out=$(SOFTMAX_TUNE_KERNELS=missing.set "$bin" kernels 2>&1)
has "$out" "cannot read the kernel set 'missing.set'"
out=$(SOFTMAX_TUNE_KERNELS=none "$bin" kernels 2>&1)
has "$out" "no kernel set (\$SOFTMAX_TUNE_KERNELS is none)"

[ $fail -eq 0 ] && echo "kernel_set: all passed" || echo "kernel_set: $fail failed"
exit $((fail > 0))
