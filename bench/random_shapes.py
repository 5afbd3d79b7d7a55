#!/usr/bin/env python3
"""random_shapes.py [--seed S] [--n N] [--max-elems E] [--cols LO,HI] [--backward] — problems nobody
tuned, one 'RxC dtype op' a line (the --shapes format): rows 1..1M and cols LO..HI (default 2..2M;
2,128: the narrow rows), each log-uniform,
dtype f32/f16/bf16 and op softmax/log_softmax uniform (--backward: softmax_backward /
log_softmax_backward); a draw of more than E elements (default 2^28, a 1 GiB f32 tensor) is
drawn again. The command, seed included, is the first line, as a comment."""
import argparse
import math
import random

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--seed", type=int, default=20261124)
ap.add_argument("--n", type=int, default=40)
ap.add_argument("--max-elems", type=int, default=1 << 28)
ap.add_argument("--cols", default="2,%d" % (2 << 20), help="LO,HI: the columns' range")
ap.add_argument("--backward", action="store_true", help="the backward ops (softmax_backward, log_softmax_backward)")
a = ap.parse_args()
rng = random.Random(a.seed)
ops = ["softmax_backward", "log_softmax_backward"] if a.backward else ["softmax", "log_softmax"]
lo, hi = (int(v) for v in a.cols.split(","))
print(f"# bench/random_shapes.py --seed {a.seed} --n {a.n} --max-elems {a.max_elems}" + (f" --cols {a.cols}" if a.cols != ap.get_default("cols") else "")
      + (" --backward" if a.backward else ""))
logu = lambda lo, hi: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
done = 0
while done < a.n:
    r, c = logu(1, 1 << 20), logu(lo, hi)
    d, o = rng.choice(["f32", "f16", "bf16"]), rng.choice(ops)
    if r * c > a.max_elems:
        continue
    print(f"{r}x{c} {d} {o}")
    done += 1
