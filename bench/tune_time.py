#!/usr/bin/env python3
"""tune_time.py — issue 16 item 1's measurement: how long a cold `softmax-tune --shape` takes.

For each problem (the 18 public ones, then those of a shapes file), a fresh process with an
empty cache runs the fast sweep (the default); wall time is measured around the process. Then
the full pruned sweep (--sweep full) of the same problems in one list process per group (with a
deadline: what it finished is kept). Then, while time is left, both winners of each public
problem are timed again through the runtime (softmax-tune bench, each from its own cache), so
the two are compared outside the tuner's own noisy figures. Writes a TSV and prints a summary.
Cold means no kept cubins either: SOFTMAX_TUNE_CUBINS=none for every process (bench/kept_cubins.py
measures what a kept folder saves).

  python3 bench/tune_time.py BIN OUTDIR [--shapes FILE] [--limit SECONDS] [--tsv PATH]
"""
import os, re, sqlite3, statistics, subprocess, sys, time

PUBLIC = ['32000x16384', '4096x4096', '1048576x128', '131072x1000', '65536x2048', '8192x32000', '2048x128256',
          '256x1048576', '32x16384']


def args():
    a = sys.argv[1:]
    opt = {'bin': a[0], 'out': a[1], 'shapes': None, 'limit': 540., 'tsv': None}
    for i in range(2, len(a), 2):
        opt[a[i].lstrip('-')] = a[i + 1]
    opt['limit'] = float(opt['limit'])
    return opt


def problems(path):
    out = [(s, d, 'softmax') for d in ('f32', 'bf16') for s in PUBLIC]
    if path:
        for line in open(path):
            w = line.split('#')[0].split()
            if w:
                out.append((w[0], w[1] if len(w) > 1 else 'f32', w[2] if len(w) > 2 else 'softmax'))
    return out


def entry(db, shape, dtype, op):
    """(frac, us, config, run seconds) of db's entry for the problem, or None."""
    if not os.path.exists(db):
        return None
    r, c = map(int, shape.split('x'))
    con = sqlite3.connect(db)
    row = con.execute("select e.frac, e.us, e.config, runs.seconds from entries e left join runs on runs.id = e.run "
                      "where e.dtype = ? and e.op = ? and e.rows = ? and e.cols = ?", (dtype, op, r, c)).fetchone()
    con.close()
    return row


def bench(binary, db, shape, dtype, op):
    """The cached winner's fraction of copy through the runtime, or None."""
    p = subprocess.run([binary, 'bench', '--shape', shape, '--dtype', dtype, '--op', op, '--cache', db, '--reps', '60'],
                       capture_output=True, text=True)
    m = re.search(r'^softmax-tune\s+\S+\s+\S+\s+(\S+)', p.stdout, re.M)
    return float(m.group(1)) if m else None


def main():
    o = args()
    os.environ['SOFTMAX_TUNE_CUBINS'] = 'none'   # cold: every config compiled
    t_start = time.time()
    left = lambda: o['limit'] - (time.time() - t_start)
    os.makedirs(o['out'] + '/fast', exist_ok=True)
    probs = problems(o['shapes'])
    log = open(o['out'] + '/tune_time.log', 'w')
    # warm the machine (driver, page cache) once, untimed
    subprocess.run([o['bin'], '--shape', '32x16384', '--cache', o['out'] + '/warm.db', '--quiet'], capture_output=True)
    fast = {}
    for i, (s, d, op) in enumerate(probs):
        if left() < 200 and i >= 18 + 12:
            break
        db = '%s/fast/%d.db' % (o['out'], i)
        t0 = time.time()
        p = subprocess.run([o['bin'], '--shape', s, '--dtype', d, '--op', op, '--cache', db, '--quiet'],
                           capture_output=True, text=True)
        wall = time.time() - t0
        log.write('## fast %s %s %s rc %d wall %.2f\n%s%s\n' % (s, d, op, p.returncode, wall, p.stdout, p.stderr))
        fast[i] = (wall, db)
    # the full pruned sweep: a list process for the public problems, then the others
    groups = [[i for i in fast if i < 18], [i for i in fast if i >= 18]]
    full_db = o['out'] + '/full.db'
    for g in groups:
        if not g or left() < 40:
            continue
        lst = o['out'] + '/list%d.txt' % g[0]
        with open(lst, 'w') as f:
            for i in g:
                f.write('%s %s %s\n' % probs[i])
        budget = max(10, int(left() - (30 if g[0] == 0 else 70)))
        t0 = time.time()
        p = subprocess.run(['timeout', '-s', 'INT', str(budget), o['bin'], '--shapes', lst, '--sweep', 'full',
                            '--cache', full_db, '--quiet'], capture_output=True, text=True)
        log.write('## full list %s rc %d wall %.1f\n%s%s\n' % (lst, p.returncode, time.time() - t0, p.stdout, p.stderr))
    # both winners through the runtime, public problems first, while time is left
    pinned = {}
    for i in sorted(fast):
        if left() < 8:
            break
        if entry(full_db, *probs[i]) and entry(fast[i][1], *probs[i]):
            pinned[i] = (bench(o['bin'], fast[i][1], *probs[i]), bench(o['bin'], full_db, *probs[i]))
    rows = []
    for i in sorted(fast):
        s, d, op = probs[i]
        fe, ue = entry(fast[i][1], s, d, op), entry(full_db, s, d, op)
        bf, bu = pinned.get(i, (None, None))
        rows.append((d, s, op, fast[i][0], fe[0] if fe else None, ue[0] if ue else None, ue[3] if ue else None,
                     fe[3] if fe else None, bf, bu, i < 18, fe[2] if fe else '', ue[2] if ue else ''))
    fmt = lambda x, f='%.3f': '' if x is None else f % x
    tsv = o['tsv'] or o['out'] + '/tune-time.tsv'
    with open(tsv, 'w') as f:
        f.write('dtype\tshape\top\twall_s\tfrac_of_copy\tfull_sweep_frac\tfull_sweep_s\tfast_sweep_s\t'
                'bench_fast\tbench_full\tpublic\tfast_config\tfull_config\n')
        for r in rows:
            f.write('\t'.join([r[0], r[1], r[2], fmt(r[3], '%.2f'), fmt(r[4]), fmt(r[5]), fmt(r[6], '%.1f'),
                               fmt(r[7], '%.2f'), fmt(r[8]), fmt(r[9]), 'yes' if r[10] else 'no', r[11], r[12]]) + '\n')
        pub = [r[3] for r in rows if r[10]]
        lines = ['median wall %.2f s, worst %.2f s over %d public problems (fast sweep, cold process)' %
                 (statistics.median(pub), max(pub), len(pub)) if pub else 'no public problem ran']
        for name, a, b in (('tuner figures', 4, 5), ('bench (runtime, pinned winners)', 8, 9)):
            both = [r for r in rows if r[a] and r[b]]
            ok = [r for r in both if r[a] >= r[b] * 0.99]
            okp = [r for r in ok if r[10]]
            lines.append('within 1%% of the full sweep (%s): %d of %d compared (%d of %d public)' %
                         (name, len(ok), len(both), len(okp), len([r for r in both if r[10]])))
        allw = [r[3] for r in rows]
        lines.append('all %d fast runs: median wall %.2f s, worst %.2f s' % (len(allw), statistics.median(allw), max(allw)))
        for l in lines:
            f.write('# ' + l + '\n')
    print(open(tsv).read())
    print('total %.0f s' % (time.time() - t_start))


if __name__ == '__main__':
    main()
