#!/usr/bin/env bash
# untuned_cli.sh BINARY REPORT_CACHE SOURCE_DIR — `softmax-tune explain` without a GPU (--arch): the default
# table's choice and its source, a shape's width class (two shapes of one class, one kernel), a stale table reported, no table (the rule), a table given by
# $SOFTMAX_TUNE_TABLE; `pretune --from-cache` on a cache filled by the fake backend, its table read
# back by explain; `space --sweep fast` ending with the untuned kernel's config; bad input: one line,
# exit 2.
set -u
bin=$(realpath "$1")
fill=$(realpath "$2")
src=$(realpath "$3")
. "$(dirname "$0")/testlib.sh" untuned

out=$("$bin" explain --arch sm_90 --shape 16384x50257 2>&1) || bad "explain: status $?: $out"
has "$out" "problem  16384x50257 f32 softmax on any GPU (sm_90)"
has "$out" "kernel   threads="
has "$out" "source   default table defaults/sm_90.tsv entry "
[[ "$out" != *note* ]] || bad "the built-in table is reported stale: $out"
out=$("$bin" explain --arch sm_90 --shape 3x273820 --dtype f16 --op log_softmax --unaligned 2>&1) || bad "explain --unaligned: $?"
has "$out" ",vec=1,"
has "$out" "aligned differently"
out=$(SOFTMAX_TUNE_TABLE=none "$bin" explain --arch sm_90 --shape 1x1000000 2>&1) || bad "no table: $?"
has "$out" "source   rule (no tuned entry"
"$bin" explain --arch sm_80 --shape 64x64 >/dev/null 2>&1 || bad "sm_80 (no table) failed"
# two shapes of one width class (2817..3072) name the class and the same kernel
# a softcap's cross-entropy kernel over a wide row reads twice where the table's config holds the
# row; a narrow row (under 16K classes) keeps the table's
out=$("$bin" explain --arch sm_90 --shape 2048x262144 --dtype bf16 --op cross_entropy --softcap 30 2>&1) || bad "softcap: $?: $out"
has "$out" "passes=2,hold=none"
has "$out" "rule (a softcap's cross-entropy: two reads, not default table"
plain=$("$bin" explain --arch sm_90 --shape 2048x262144 --dtype bf16 --op cross_entropy 2>&1)
has "$plain" "passes=1"
a=$("$bin" explain --arch sm_90 --shape 64x1000 --dtype bf16 --op cross_entropy --softcap 30 2>&1 | grep '^kernel')
b=$("$bin" explain --arch sm_90 --shape 64x1000 --dtype bf16 --op cross_entropy 2>&1 | grep '^kernel')
[ -n "$a" ] && [ "$a" = "$b" ] || bad "a narrow softcap row changed its kernel: '$a' against '$b'"
a=$("$bin" explain --arch sm_90 --shape 256x3000 --dtype bf16 2>&1) || bad "explain 256x3000: $?"
b=$("$bin" explain --arch sm_90 --shape 256x2817 --dtype bf16 2>&1) || bad "explain 256x2817: $?"
has "$a" "class    cols 2817..3072"
has "$b" "class    cols 2817..3072"
[ "$(grep '^kernel' <<<"$a")" = "$(grep '^kernel' <<<"$b")" ] || bad "one class, two kernels: $a / $b"

# loss-only rows whose class holds 64 KB or more: the many-row band from 1024 rows (two reads), the
# middle band under it; cross_entropy keeps 4096
out=$("$bin" explain --arch sm_90 --shape 1451x151936 --op cross_entropy_loss 2>&1) || bad "explain loss 1451: $?"
has "$out" "band     rows >=1024: the untuned kernel is chosen for 16384x163840"
out=$("$bin" explain --arch sm_90 --shape 1000x151936 --op cross_entropy_loss 2>&1) || bad "explain loss 1000: $?"
has "$out" "band     rows <1024: the untuned kernel is chosen for 512x163840"
out=$("$bin" explain --arch sm_90 --shape 1451x151936 --op cross_entropy 2>&1) || bad "explain ce 1451: $?"
has "$out" "band     rows <4096: the untuned kernel is chosen for 512x163840"
# rows of 1025 classes to 64 KB, both ops: from 1024 rows; a softcap's and 1024 classes or fewer from 4096
out=$("$bin" explain --arch sm_90 --shape 1451x15000 --op cross_entropy_loss 2>&1) || bad "explain loss 15000: $?"
has "$out" "band     rows >=1024: the untuned kernel is chosen for 16384x15360"
out=$("$bin" explain --arch sm_90 --shape 1451x15000 --op cross_entropy_loss --softcap 30 2>&1) || bad "explain softcap 15000: $?"
has "$out" "band     rows <4096: the untuned kernel is chosen for 512x15360"
out=$("$bin" explain --arch sm_90 --shape 1451x1000 --op cross_entropy 2>&1) || bad "explain ce 1000: $?"
has "$out" "band     rows <4096: the untuned kernel is chosen for 512x1024"

# the attention forward's 16-bit rows of 1025-16384 keys: the many-row band from 163840 / G rows
# (decode_fwd's group G of 2 vectors a thread: 256 at 2994 keys, 640 rows); float32 and 1024 keys keep 4096
attn() { "$bin" explain --arch sm_90 --op attention_softmax --mask causal "$@" 2>&1 | grep '^band'; }
has "$(attn --shape 8x32x4x2994 --dtype f16)" "band     rows >=640: the untuned kernel is chosen for 16384x3072"
has "$(attn --shape 4x32x4x2994 --dtype f16)" "band     rows <640: the untuned kernel is chosen for 320x3072"
has "$(attn --shape 2x32x4x16000 --dtype bf16)" "band     rows >=160: the untuned kernel is chosen for 16384x16384"
has "$(attn --shape 8x32x4x2994 --dtype f32)" "band     rows <4096: the untuned kernel is chosen for 512x3072"
# ... and its rows of 16385-32768 keys from 256 rows (a softcap's from 4096): the row held under it
has "$(attn --shape 8x16x1x30829 --dtype f16)" "band     rows <256: the untuned kernel is chosen for 128x32768"
has "$(attn --shape 16x16x1x30829 --dtype f16)" "band     rows >=256: the untuned kernel is chosen for 16384x32768"
has "$(attn --shape 16x16x1x30829 --dtype f16 --softcap 50)" "band     rows <4096: the untuned kernel is chosen for 512x32768"
has "$(attn --shape 8x32x4x1000 --dtype f16)" "band     rows <4096: the untuned kernel is chosen for 512x1024"

# the fast sweep times the config an untuned call runs: last, when its picks lack it (the softcap's
# held rule at bf16 8192x32000), and once
k=$("$bin" explain --arch sm_90 --shape 8192x32000 --dtype bf16 --op cross_entropy --softcap 30 2>&1 | awk '/^kernel/ {print $2}')
fast=$("$bin" space --arch sm_90 --shape 8192x32000 --dtype bf16 --op cross_entropy --softcap 30 --sweep fast 2>&1) || bad "space --softcap: $?: $fast"
[ -n "$k" ] && [ "$(tail -n 1 <<<"$fast")" = "$k" ] && [ "$(grep -cxF "$k" <<<"$fast")" = 1 ] ||
  bad "the fast sweep's configs do not end with the untuned one '$k': $(tail -n 2 <<<"$fast")"

# a stale copy of the table: said, and still used (each config checked)
sed 's/^# templates\t.*/# templates\t0000/' "$src/templates/defaults/sm_90.tsv" > stale.tsv
out=$(SOFTMAX_TUNE_TABLE=stale.tsv "$bin" explain --arch sm_90 --shape 100x5000 2>&1) || bad "stale: $?"
has "$out" "note     default table stale.tsv was made for templates 0000"
has "$out" "source   default table stale.tsv entry"

# pretune --from-cache: a table of one fake GPU's entries, read back by explain
"$fill" c.db >fill.log 2>&1 || { cat fill.log; bad "report_cache"; }
out=$("$bin" pretune --from-cache --cache c.db -o t.tsv 2>&1)
[ $? -eq 2 ] && [ ! -e t.tsv ] || bad "pretune of a cache of two GPU models: $out"
has "$out" "pick one with --gpu-model"
out=$("$bin" pretune --from-cache --cache c.db --gpu-model 'Fake <GPU> & "B"' -o t.tsv 2>&1) || bad "pretune --from-cache: $out"
has "$out" "wrote t.tsv: 1 problems of Fake <GPU> & \"B\""
has "$(cat t.tsv)" "# made	softmax-tune pretune --from-cache --gpu-model Fake <GPU> & \"B\" -o t.tsv"
has "$(cat t.tsv)" "f16	softmax	1024	256	"
# an entry of the same model tuned on fewer SMs (--sms) stays out of the table
if command -v sqlite3 >/dev/null; then
  sqlite3 c.db "CREATE TEMP TABLE n AS SELECT * FROM entries WHERE gpu LIKE 'Fake <GPU>%'; UPDATE n SET sms = sms - 8, rows = rows * 2;
                INSERT INTO entries SELECT * FROM n;" || bad "sqlite3 could not add a narrowed entry"
  out=$("$bin" pretune --from-cache --cache c.db --gpu-model 'Fake <GPU> & "B"' -o t2.tsv 2>&1) || bad "pretune --from-cache with --sms entries: $out"
  has "$out" "wrote t2.tsv: 1 problems of"
  has "$out" "left out 1 entries tuned on fewer of its SMs"
  [ "$(grep -v '^#' t2.tsv)" = "$(grep -v '^#' t.tsv)" ] || bad "a narrowed entry reached the table: $(cat t2.tsv)"
else echo "SKIP (the --sms entry case): no sqlite3 command"; fi
out=$(SOFTMAX_TUNE_TABLE=t.tsv "$bin" explain --arch sm_90 --shape 100x300 --dtype bf16 2>&1) || bad "explain with t.tsv: $out"
has "$out" "source   default table t.tsv entry 1024x256 f16 softmax"

# bad tables named by $SOFTMAX_TUNE_TABLE
printf 'dtype\top\trows\tcols\tfrac\tconfig\nf32\tsoftmax\t4\n' > bad.tsv
for t in nope.tsv bad.tsv; do
  err=$(SOFTMAX_TUNE_TABLE=$t "$bin" explain --arch sm_90 --shape 4x4 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [[ "$err" == *"$t"* || "$err" == *"line 2"* ]] ||
    bad "SOFTMAX_TUNE_TABLE=$t: status $rc, $err"
done

# bad input: one line, status 2, naming the problem
while IFS='|' read -r want args; do
  [ -z "$want" ] && continue
  eval "set -- $args"
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ $rc -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != *"$want"* ]]; then
    bad "softmax-tune $args -> status $rc, stderr: $err (want '$want')"
  fi
done <<EOT
explain needs --shape|explain --arch sm_90
'0x5'|explain --arch sm_90 --shape 0x5
unknown dtype 'f8'|explain --arch sm_90 --shape 4x4 --dtype f8
unsupported arch|explain --arch sm_7 --shape 4x4
not both|explain --arch sm_90 --gpu 0 --shape 4x4
pretune needs -o FILE|pretune --from-cache
pretune needs --grid FILE|pretune -o x.tsv
not both|pretune --from-cache --grid g.txt -o x.tsv
takes no --grid, --from-cache|pretune --restamp old --from-cache -o x.tsv
cannot read the table|pretune --restamp old -o x.tsv
EOT
[ ! -e x.tsv ] || bad "a failed pretune left x.tsv"
# pretune --restamp: a table carried over to templates that changed elsewhere (a Lua comment), its
# entries kept; refused, the file untouched, where a kernel changed or DIR is not its templates
cp -r "$src/templates" old && cp -r old new && cp old/defaults/sm_90.tsv t.tsv && echo "-- a comment" >>new/space.lua
out=$("$bin" pretune --templates new --restamp old -o t.tsv 2>&1) || bad "restamp: status $?: $out"
has "$out" "restamped"
has "$(sed -n 5p t.tsv)" "$("$bin" explain --templates new --arch sm_90 --shape 4x4 | sed -n 's/^templates *//p')"
[ "$(grep -v '^#' t.tsv)" = "$(grep -v '^#' old/defaults/sm_90.tsv)" ] || bad "restamp changed the entries"
echo "// changed" >>new/split.cu && cp old/defaults/sm_90.tsv t2.tsv
out=$("$bin" pretune --templates new --restamp old -o t2.tsv 2>&1) && bad "restamp past a changed kernel: $out"
has "$out" "its kernel differs under these templates"
out=$("$bin" pretune --restamp new -o t2.tsv 2>&1); [ $? -eq 2 ] || bad "restamp from the wrong templates: $out"
has "$out" "the table was made with templates"
cmp -s t2.tsv old/defaults/sm_90.tsv || bad "a refused restamp changed the table"

echo "untuned_cli: $fail failed"
[ $fail -eq 0 ]
