#!/usr/bin/env python3
"""test_untuned_py.py TEST_BATCH — the binding's record-then-tune plumbing without a GPU or torch
(python/softmax_tune/_lib.py, loaded alone): the shapes file write_untuned writes (every dtype
and op, backward ones too) read back whole by the command's parser (test_batch --parse, cli/list.c),
a merge keeping the lines already there, and which library messages warn: per-problem ones only
with SOFTMAX_TUNE_WARN=each, a stale table's note on one always, other messages always.
The GPU half (a run, write_untuned, softmax-tune --shapes, the run again) is tests/test_python_untuned.py."""

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


problems = [(77, 3000, "bf16", "log_softmax"), (1048576, 128, "f32", "softmax"), (5, 700, "f16", "softmax_backward"),
            (1, 2, "bf16", "log_softmax_backward")]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "shapes.txt")
    expect(lib.write_shapes(path, problems) == 4, "four lines written")
    text = open(path).read()
    got = subprocess.run([sys.argv[1], "--parse", path], capture_output=True, text=True)
    expect(got.returncode == 0 and got.stdout == text, "read back: rc %d, %r vs %r %s" % (got.returncode, got.stdout, text,
                                                                                            got.stderr))
    expect(lib.write_shapes(path, [problems[2], (9, 9, "f32", "softmax")], merge=True) == 5, "merge: five lines")
    lines = open(path).read().splitlines()
    expect(lines[:4] == text.splitlines() and lines[4] == "9x9 f32 softmax", "merge keeps the old lines first: %s" % lines)
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
