#!/usr/bin/env python3
"""random_shapes.py [--seed S] [--n N] [--max-elems E] — problems nobody tuned, one
'RxC dtype op' a line (the --shapes format): rows 1..1M and cols 2..2M, each log-uniform,
dtype f32/f16/bf16 and op softmax/log_softmax uniform; a draw of more than E elements
(default 2^28, a 1 GiB f32 tensor) is drawn again. The seed is the first line, as a comment."""
import argparse
import math
import random

ap = argparse.ArgumentParser()
ap.add_argument("--seed", type=int, default=20261124)
ap.add_argument("--n", type=int, default=40)
ap.add_argument("--max-elems", type=int, default=1 << 28)
a = ap.parse_args()
rng = random.Random(a.seed)
print(f"# bench/random_shapes.py --seed {a.seed} --n {a.n} --max-elems {a.max_elems}")
logu = lambda lo, hi: int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
done = 0
while done < a.n:
    r, c = logu(1, 1 << 20), logu(2, 2 << 20)
    d, o = rng.choice(["f32", "f16", "bf16"]), rng.choice(["softmax", "log_softmax"])
    if r * c > a.max_elems:
        continue
    print(f"{r}x{c} {d} {o}")
    done += 1
