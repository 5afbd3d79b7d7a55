"""pinned_summary.py — how close each pinned config comes to the tuner's pick, from a pinned_ab.sh run.

    python3 lab/pinned_summary.py LIST OUTPUT [--build DIR]

LIST is the input pinned_ab.sh read: lines "op dtype shape config|tune [flags...]"; the lines of one
problem (its op, dtype, shape and flags) are its `tune` line and the configs pinned after it.
OUTPUT is what pinned_ab.sh printed for it ("... | round R BUILD: US us, ..."). For each problem:
the tune's time and each pinned config's, as means over the rounds and builds (or of --build
alone), and tuned/pinned (1.0: the pinned config as fast as the tuner's pick). Then the geomean
and worst of tuned/pinned for the first pinned config of every problem, the second, and so on,
so a list written as "tune, the rule now, the rule before" (lab/shapes/attn-packed-rules-20261129.txt)
reads as the rule's fraction of tuned after and before.
Variants: none; a line of LIST that pinned_ab.sh skipped (a comment, a blank) is skipped here too.
"""
import math
import re
import sys


def problems(list_path):
    """[(key, [config or 'tune', ...])] in LIST's order, one entry a pinned_ab.sh line."""
    lines = []
    for line in open(list_path):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        op, dtype, shape, config, flags = words[0], words[1], words[2], words[3], words[4:]
        lines.append((" ".join([op, dtype, shape] + flags), config))
    return lines


def times(out_path):
    """The us of each pinned_ab.sh output line, in order, with the build that ran it."""
    got = []
    for line in open(out_path):
        m = re.search(r"\| round \d+ (\S+): ([\d.]+) us", line)
        if m:
            got.append((m.group(1), float(m.group(2))))
        elif "| round" in line:
            got.append((None, None))   # no winner: the run failed; its line says why
    return got


def main():
    args = sys.argv[1:]
    build = None
    if "--build" in args:
        i = args.index("--build")
        build = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit("usage: python3 lab/pinned_summary.py LIST OUTPUT [--build DIR]")
    lines, runs = problems(args[0]), times(args[1])
    if not lines or len(runs) % len(lines):
        sys.exit(f"pinned_summary: {len(runs)} runs in {args[1]} for {len(lines)} lines of {args[0]}: not a multiple")
    per = len(runs) // len(lines)   # runs a line: rounds x 2 builds
    table, order = {}, []
    for i, (key, config) in enumerate(lines):
        us = [t for b, t in runs[i * per:(i + 1) * per] if t is not None and (build is None or b == build)]
        if key not in table:
            table[key] = []
            order.append(key)
        table[key].append((config, sum(us) / len(us) if us else None))
    slots = {}
    for key in order:
        entries = table[key]
        tuned = next((t for c, t in entries if c == "tune"), None)
        print(key)
        pinned = [(c, t) for c, t in entries if c != "tune"]
        print(f"  tune    {tuned if tuned is None else f'{tuned:9.1f}'} us")
        for j, (config, t) in enumerate(pinned):
            frac = tuned / t if tuned and t else None
            print(f"  pin {j + 1}   {t if t is None else f'{t:9.1f}'} us  {'-' if frac is None else f'{frac:.3f}'}  {config}")
            if frac:
                slots.setdefault(j, []).append((frac, key))
    for j in sorted(slots):
        fr = slots[j]
        geo = math.exp(sum(math.log(f) for f, _ in fr) / len(fr))
        worst = min(fr)
        print(f"pin {j + 1}: tuned/pinned geomean {geo:.3f}, worst {worst[0]:.3f} ({worst[1]}), over {len(fr)} problems")


if __name__ == "__main__":
    main()
