#!/usr/bin/env bash
# pretune_add.sh BINARY FAKE_TUNE SOURCE_DIR — `softmax-tune pretune --add` without a GPU: a cache
# filled by the fake backend (two backward problems, one forward problem the table has) joins a copy
# of the shipped table through --from-cache --add: the table's other entries kept as they were, the
# same problem replaced, read back by explain (log_softmax_backward in f16 from a bf16
# softmax_backward entry); restamp of a table holding backward entries; refusals (a table of other
# templates, arch or SMs, none, --grid --add before any GPU is asked): one line, exit 2, untouched.
set -u
bin=$(realpath "$1")
fake=$(realpath "$2")
src=$(realpath "$3")
. "$(dirname "$0")/testlib.sh" add
entries() { grep -v '^#' "$1" | grep -v '^dtype' | sort; }

for p in "4096x8192 f32 softmax_backward" "65536x8 bf16 softmax_backward" "1x2 f32 softmax"; do
  set -- $p
  "$fake" --shape "$1" --dtype "$2" --op "$3" --cache c.db >>fill.log 2>&1 || bad "fake_tune $p: $(cat fill.log)"
done
grep -v _backward "$src/templates/defaults/sm_90.tsv" >ship.tsv   # the forward entries: the counts below are of these
ship=$PWD/ship.tsv
n=$(entries "$ship" | wc -l)
cp "$ship" t.tsv
out=$("$bin" pretune --from-cache --cache c.db --add -o t.tsv 2>&1) || bad "pretune --add: status $?: $out"
has "$out" "--add: 3 new problems, $((n - 1)) of the table's $n kept, 1 replaced"
has "$out" "wrote t.tsv: $((n + 2)) problems of "
[ "$(entries t.tsv | grep -vP '^f32\tsoftmax\t1\t2\t' | grep -v _backward)" = "$(entries "$ship" | grep -vP '^f32\tsoftmax\t1\t2\t')" ] ||
  bad "--add changed the table's other entries"
[ "$(grep -c _backward t.tsv)" -eq 2 ] || bad "the backward entries are not in: $(grep _backward t.tsv)"
has "$(grep '^# made' t.tsv)" "$(grep '^# made' "$ship" | cut -f2); added 3 problems by softmax-tune pretune --from-cache -o t.tsv --add"
has "$(grep '^# gpu' t.tsv)" "$(grep '^# gpu' "$ship" | cut -f2); added: Fake GPU (softmax-tune tests)"
[ "$(sed -n 5p t.tsv)" = "$(sed -n 5p "$ship")" ] || bad "--add changed the templates line"
[ ! -e t.tsv.tmp ] || bad "t.tsv.tmp left behind"
out=$(SOFTMAX_TUNE_TABLE=t.tsv "$bin" explain --arch sm_90 --shape 50000x9 --dtype f16 --op log_softmax_backward 2>&1) ||
  bad "explain with the added table: $out"
has "$out" "source   default table t.tsv entry 65536x8 bf16 softmax_backward"
# added again: the same table, each of the three replaced
cp t.tsv t1.tsv
out=$("$bin" pretune --from-cache --cache c.db --add -o t.tsv 2>&1) || bad "pretune --add again: status $?: $out"
has "$out" "--add: 3 new problems, $((n - 1)) of the table's $((n + 2)) kept, 3 replaced"
[ "$(entries t.tsv)" = "$(entries t1.tsv)" ] || bad "a second --add changed the entries"

# restamp of a table with backward entries: carried over a Lua comment, refused where the backward
# kernels changed (every entry is rendered, the backward ones too)
cp -r "$src/templates" old && cp -r old new && cp t1.tsv r.tsv && echo "-- a comment" >>new/space.lua
out=$("$bin" pretune --templates new --restamp old -o r.tsv 2>&1) || bad "restamp with backward entries: status $?: $out"
has "$out" "$((n + 2)) entries, each kernel the same"
[ "$(entries r.tsv)" = "$(entries t1.tsv)" ] || bad "restamp changed the entries"
echo "// changed" >>new/backward.cu && cp t1.tsv r2.tsv
out=$("$bin" pretune --templates new --restamp old -o r2.tsv 2>&1) && bad "restamp past a changed backward kernel: $out"
has "$out" "_backward: its kernel differs under these templates"
cmp -s r2.tsv t1.tsv || bad "a refused restamp changed the table"

# refusals: one line, status 2, the table untouched
sed 's/^# templates\t.*/# templates\t0000/' t1.tsv >stale.tsv
sed 's/^# arch\t.*/# arch\t80/' t1.tsv >arch.tsv
sed 's/^# sms\t.*/# sms\t114/' t1.tsv >sms.tsv
printf 'not a table\n' >junk.tsv
printf '64x64 f32 softmax_backward\n' >g.txt
while IFS='|' read -r want file args; do
  [ -z "$want" ] && continue
  [ -e "$file" ] && cp "$file" before.tsv
  eval "set -- $args"
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ] || [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || [[ "$err" != *"$want"* ]]; then
    bad "softmax-tune $args -> status $rc, stderr: $err (want '$want')"
  fi
  [ ! -e "$file" ] || cmp -s "$file" before.tsv || bad "softmax-tune $args changed $file"
  [ ! -e "$file.tmp" ] || bad "softmax-tune $args left $file.tmp"
done <<EOT
was made with templates 0000, these are|stale.tsv|pretune --from-cache --cache c.db --add -o stale.tsv
was made with templates 0000, these are|stale.tsv|pretune --gpu 0 --grid g.txt --cache g.db --add -o stale.tsv
is of sm_80 with 132 SMs, the new entries of sm_90|arch.tsv|pretune --from-cache --cache c.db --add -o arch.tsv
is of sm_90 with 114 SMs, the new entries of sm_90 with 132|sms.tsv|pretune --from-cache --cache c.db --add -o sms.tsv
is not a default table|junk.tsv|pretune --from-cache --cache c.db --add -o junk.tsv
cannot read the table 'none.tsv'|none.tsv|pretune --from-cache --cache c.db --add -o none.tsv
takes no --grid, --from-cache or --add|t1.tsv|pretune --restamp old --add -o t1.tsv
EOT
[ ! -e none.tsv ] || bad "a refused --add wrote none.tsv"
[ ! -e g.db ] || bad "--grid --add of a stale table opened a cache before refusing"

echo "pretune_add: $fail failed"
[ $fail -eq 0 ]
