#!/usr/bin/env python3
"""kept_cubins.py — what kept cubins (cache/cubins.c) save, on a GPU.

    python3 bench/kept_cubins.py BIN OUTDIR

1. Tuning another batch size: for each pair (cols, rows A, rows B, dtype), a cold process tunes
   A with an empty kept folder; then B is tuned twice, each in a fresh process with an empty
   cache: with the folder A left (its sources are B's too where the picks agree: rows are a
   launch argument) and with SOFTMAX_TUNE_CUBINS=none. Wall time and the winner's fraction of
   copy, and how many configs were read back rather than compiled.
2. The untuned path's first call (through the Python binding, empty cache, miss policy
   heuristic): a process with an empty kept folder, then a second process with the folder the
   first left. Milliseconds of softmax_tune.softmax(x) plus a synchronize.
Prints a TSV (also OUTDIR/kept-cubins.tsv).
"""
import os, shutil, sqlite3, subprocess, sys, time

PAIRS = [(4096, 4096, 8192, 'f32'), (32000, 8192, 4096, 'bf16'), (128256, 2048, 1024, 'f32'), (16384, 32000, 16000, 'bf16')]
FIRST = ['3000x7000 f32 softmax', '1500x50257 bf16 log_softmax', '48x250000 f32 softmax', '20000x300 f16 softmax']
PROBE = r'''
import os, sys, time, torch
sys.path.insert(0, os.path.join(sys.argv[1], "python"))
import softmax_tune
softmax_tune.softmax(torch.randn(7, 3, device="cuda")); torch.cuda.synchronize()
shape, dtype, op = sys.argv[2].split()
r, c = map(int, shape.split("x"))
x = torch.randn(r, c, device="cuda").to(dict(f32=torch.float32, f16=torch.float16, bf16=torch.bfloat16)[dtype])
torch.cuda.synchronize()
t = time.perf_counter()
(softmax_tune.log_softmax if op == "log_softmax" else softmax_tune.softmax)(x)
torch.cuda.synchronize()
print("ms %.1f" % ((time.perf_counter() - t) * 1e3))
'''


def tune(binary, shape, dtype, db, kept):
    env = dict(os.environ, SOFTMAX_TUNE_CUBINS=kept)
    t0 = time.time()
    p = subprocess.run([binary, '--shape', shape, '--dtype', dtype, '--cache', db, '--quiet'], env=env,
                       capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode:
        sys.exit('%s %s: %s' % (shape, dtype, p.stderr.strip()))
    con = sqlite3.connect(db)
    frac, run = con.execute('select frac, run from entries').fetchone()
    n, kept_n = con.execute('select count(*), sum(compile_ms < 5) from trials where run = ?', (run,)).fetchone()
    con.close()
    return wall, frac, n, kept_n


def first_call(root, prob, db, kept):
    env = dict(os.environ, SOFTMAX_TUNE_CUBINS=kept, SOFTMAX_TUNE_CACHE=db, SOFTMAX_TUNE_MISS='heuristic')
    p = subprocess.run([sys.executable, '-c', PROBE, root, prob], env=env, capture_output=True, text=True)
    out = [l for l in p.stdout.split('\n') if l.startswith('ms ')]
    return float(out[0][3:]) if out else float('nan')


def main():
    binary, out = sys.argv[1], sys.argv[2]
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    os.makedirs(out, exist_ok=True)
    lines = ['what\tproblem\tcold_s\tkept_s\tcold_frac\tkept_frac\tconfigs\tread_back']
    tune(binary, '32x16384', 'f32', out + '/warm.db', 'none')   # driver and page cache, untimed
    for i, (cols, a, b, dtype) in enumerate(PAIRS):
        kept = '%s/kept%d' % (out, i)
        shutil.rmtree(kept, ignore_errors=True)
        tune(binary, '%dx%d' % (a, cols), dtype, '%s/a%d.db' % (out, i), kept)
        cw, cf, _, _ = tune(binary, '%dx%d' % (b, cols), dtype, '%s/c%d.db' % (out, i), 'none')
        kw, kf, n, k = tune(binary, '%dx%d' % (b, cols), dtype, '%s/k%d.db' % (out, i), kept)
        lines.append('tune %dx%d after %dx%d\t%s %dx%d\t%.2f\t%.2f\t%.3f\t%.3f\t%d\t%d' %
                     (b, cols, a, cols, dtype, b, cols, cw, kw, cf, kf, n, k))
    for i, prob in enumerate(FIRST):
        kept = '%s/first%d' % (out, i)
        shutil.rmtree(kept, ignore_errors=True)
        cold = first_call(root, prob, '%s/f%da.db' % (out, i), kept)
        again = first_call(root, prob, '%s/f%db.db' % (out, i), kept)
        lines.append('first call (ms)\t%s\t%.1f\t%.1f\t\t\t1\t' % (prob, cold, again))
    text = '\n'.join(lines) + '\n'
    open(out + '/kept-cubins.tsv', 'w').write(text)
    print(text)


if __name__ == '__main__':
    main()
