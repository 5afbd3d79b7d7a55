#!/usr/bin/env python3
"""test_untuned_py.py TEST_BATCH — the binding's record-then-tune plumbing without a GPU or torch
(python/softmax_tune/_lib.py, loaded alone): the library's structs named as untuned() names them
(st_problem, st_attn_problem: its kinds and the launch options not at their defaults), the structs
laid out as the C ones (tests/test_runtime.c asserts the same offsets); the shapes file
write_untuned writes (every dtype and op, backward ones, cross-entropy and attention ones too) read
back whole by the command's parser (test_batch --parse, cli/list.c), a merge keeping the lines
already there, and which library messages warn: per-problem ones only with SOFTMAX_TUNE_WARN=each,
a stale table's note on one always, other messages always.
The GPU half (a run, write_untuned, softmax-tune --shapes, the run again) is tests/test_python_untuned.py."""

import ctypes
import importlib.util
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("st_lib", os.path.join(here, "..", "python", "softmax_tune", "_lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)
failures = 0


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


want = {"B": 0, "H": 8, "Q": 16, "K": 24, "causal_offset": 32, "window": 40, "scale": 48, "softcap": 52, "dtype": 56,
        "backward": 60, "mask": 64, "bias": 68}
got = {name: getattr(lib._AttnProblem, name).offset for name, _ in lib._AttnProblem._fields_}
expect(got == want and ctypes.sizeof(lib._AttnProblem) == 72, "_AttnProblem is not st_attn_problem: %s" % got)
expect(lib.problem_entry(lib._Problem(64, 50257, 2, 0, 0, 2)) == (64, 50257, "bf16", "cross_entropy_loss"), "a loss")
expect(lib.problem_entry(lib._Problem(5, 700, 1, 1, 1, 0)) == (5, 700, "f16", "log_softmax_backward"), "a backward")
causal = lib._AttnProblem(B=2, H=4, Q=8, K=3000, causal_offset=2992, window=-1, scale=0.125, softcap=0.0, dtype=2,
                          backward=0, mask=1, bias=1)
expect(lib.attn_entry(causal) == (2, 4, 8, 3000, "bf16", "attention_softmax", "mask=causal", "bias=alibi", "scale=0.125"),
       "a causal forward: %s" % (lib.attn_entry(causal),))
window = lib._AttnProblem(B=1, H=2, Q=16, K=700, causal_offset=0, window=16, scale=0.1, softcap=30.0, dtype=1, backward=1,
                          mask=7, bias=0)
expect(lib.attn_entry(window) == (1, 2, 16, 700, "f16", "attention_softmax_backward", "mask=padding_causal_window",
                                  "bias=none", "window=16", "offset=0", "scale=0.100000001", "softcap=30"),
       "a windowed backward: %s" % (lib.attn_entry(window),))
plain = lib._AttnProblem(B=8, H=32, Q=1, K=32768, causal_offset=32767, window=-1, scale=1.0, softcap=0.0, dtype=0)
expect(lib.attn_entry(plain) == (8, 32, 1, 32768, "f32", "attention_softmax", "mask=none", "bias=none"), "defaults: no words")

problems = [(77, 3000, "bf16", "log_softmax"), (1048576, 128, "f32", "softmax"), (5, 700, "f16", "softmax_backward"),
            (1, 2, "bf16", "log_softmax_backward"), (64, 50257, "bf16", "cross_entropy"),
            (64, 50257, "f32", "cross_entropy_loss"), lib.attn_entry(causal), lib.attn_entry(window), lib.attn_entry(plain)]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "shapes.txt")
    expect(lib.write_shapes(path, problems) == 9, "nine lines written")
    expect(open(path).read().splitlines()[7] == "1x2x16x700 f16 attention_softmax_backward mask=padding_causal_window "
           "bias=none window=16 offset=0 scale=0.100000001 softcap=30", "an attention line: %r" % open(path).read())
    text = open(path).read()
    got = subprocess.run([sys.argv[1], "--parse", path], capture_output=True, text=True)
    expect(got.returncode == 0 and got.stdout == text, "read back: rc %d, %r vs %r %s" % (got.returncode, got.stdout, text,
                                                                                            got.stderr))
    expect(lib.write_shapes(path, [problems[2], (9, 9, "f32", "softmax"), problems[6]], merge=True) == 10, "merge: ten lines")
    lines = open(path).read().splitlines()
    expect(lines[:9] == text.splitlines() and lines[9] == "9x9 f32 softmax", "merge keeps the old lines first: %s" % lines)
    expect(os.listdir(d) == ["shapes.txt"], "no temporary file left: %s" % os.listdir(d))

untuned = ("softmax-tune: no tuned kernel for 77x3000 bf16 log_softmax; using threads=256,..., from the default table "
           "(sm_90) entry 64x4096 (x), adapted (tune with: softmax-tune --shape 77x3000 --dtype bf16 --op log_softmax)")
similar = "softmax-tune: 999x1024 f32 softmax uses the kernel tuned for 256x1024"
other = "softmax-tune: tuning 5x5 f32 softmax now (miss policy tune)"
os.environ.pop("SOFTMAX_TUNE_WARN", None)
expect(lib._per_shape(untuned) is None and lib._per_shape(similar) is None, "per-problem messages silent by default")
expect(lib._per_shape(untuned + "; default table x is stale") == "softmax-tune: default table x is stale",
       "a stale table's note still said: %r" % lib._per_shape(untuned + "; default table x is stale"))
expect(lib._per_shape(other) == other, "other messages said")
os.environ["SOFTMAX_TUNE_WARN"] = "each"
expect(lib._per_shape(untuned) == untuned and lib._per_shape(similar) == similar, "SOFTMAX_TUNE_WARN=each: all said")
print("test_untuned_py: %d failures" % failures)
sys.exit(1 if failures else 0)
