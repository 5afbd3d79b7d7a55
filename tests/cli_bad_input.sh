#!/usr/bin/env bash
# cli_bad_input.sh BINARY — each bad command line gets exit status 2 and one line on stderr
# that names the bad value. Table: expected text in the message | arguments.
set -u
bin=$1
fail=0 n=0
cfg=threads=256,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none
while IFS='|' read -r want args; do
  [ -z "$want" ] && continue
  n=$((n + 1))
  eval "set -- $args"
  err=$("$bin" "$@" 2>&1 >/dev/null)
  rc=$?
  lines=$(printf '%s\n' "$err" | wc -l)
  if [ $rc -ne 2 ] || [ "$lines" -ne 1 ] || [[ "$err" != *"$want"* ]]; then
    echo "FAIL: softmax-tune $args -> status $rc, stderr: $err (want '$want')"
    fail=$((fail + 1))
  fi
done <<EOT
'0x5'|space --shape 0x5
bad --sms 'x'|--shape 64x64 --sms x
bad --sms '0'|--shape 64x64 --sms 0
--sms is for tuning one problem, not space|space --shape 64x64 --sms 96
--sms is for tuning one problem, not a list|--shape 64x64,128x128 --sms 96
bad --max-local 'x'|--shape 64x64 --max-local x
bad --max-local '-8'|--shape 64x64 --max-local -8
--max-local is for tuning one problem, not space|space --shape 64x64 --max-local 64
--max-local is for tuning one problem, not a list|--shape 64x64,128x128 --max-local 0
bad --cubins ''|--shape 64x64 --cubins ''
'32000x'|space --shape 32000x
'axb'|space --shape axb
and --space full do not go together|--shape 64x64 --config $cfg --space full
'-3x4'|space --shape -3x4
'99999999999999999999x5'|space --shape 99999999999999999999x5
'1e3x5'|space --shape 1e3x5
'32000X16384 '|space --shape '32000X16384 '
'x16384'|emit --shape x16384 --config $cfg
unknown knob 'warp'|emit --shape 32000x16384 --config $cfg,warp=2
duplicate knob 'vec'|emit --shape 32000x16384 --config $cfg,vec=4
missing knob 'split'|emit --shape 32000x16384 --config threads=256,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,xchg=none,hint=none
got '3'|emit --shape 32000x16384 --config threads=256,items=16,vec=3,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none
got '2000'|compile --shape 32000x16384 --arch sm_90 -o /tmp/st_bad.cubin --config threads=2000,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none
unknown dtype 'f64'|space --shape 32000x16384 --dtype f64
unknown op 'softmin'|space --shape 32000x16384 --op softmin
unknown op 'softmax_bw'|space --shape 32000x16384 --op softmax_bw
unknown op 'log_softmax_backwards'|emit --shape 64x64 --op log_softmax_backwards --config $cfg
hold=smem|emit --shape 4096x4096 --op softmax_backward --config threads=256,items=4,vec=4,reduce=shfl,passes=1,hold=smem,rows=1,split=1,xchg=none,hint=none
xchg=dsmem|emit --shape 1024x1048576 --op log_softmax_backward --config threads=512,items=8,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=64,xchg=global,hint=none
max 64|compile --shape 64x4096 --op softmax_backward --arch sm_90 -o /tmp/st_bad.cubin --config threads=128,items=16,vec=4,reduce=shfl,passes=1,hold=reg,rows=1,split=1,xchg=none,hint=none
bad arch 'hopper'|space --shape 32000x16384 --arch hopper
sm_70|space --shape 32000x16384 --arch sm_70
unknown option '--bogus'|space --shape 32000x16384 --bogus
unknown command 'frobnicate'|frobnicate
needs --shape|space
needs --config|emit --shape 32000x16384
needs --arch|compile --shape 32000x16384 --config $cfg -o /tmp/st_bad.cubin
needs a value|space --shape
bad --gpu '-1'|--gpu -1 --shape 32000x16384
'0x5'|report --shape 0x5
bad --run 'x'|report --run x
unknown dtype 'f64'|report --dtype f64
unexpected argument 'all'|report all
cannot write report '/nonexistent/r.html'|report -o /nonexistent/r.html
'/tmp': it is a directory|report -o /tmp
bad -o ''|report -o ''
EOT
[ -e /tmp/st_bad.cubin ] && { echo "FAIL: a failed compile left /tmp/st_bad.cubin"; fail=$((fail + 1)); }
echo "cli_bad_input: $n cases, $fail failed"
[ $fail -eq 0 ]
