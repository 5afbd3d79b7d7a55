#!/usr/bin/env python3
"""test_python_ce_converge.py — a small causal LM (2 layers, d=256, vocab 32000, bf16 autocast,
AdamW) trained 200 steps on fixed-seed data (a noisy bigram chain over 2048 of the tokens, some
targets ignored) with torch's F.cross_entropy and with softmax_tune.cross_entropy (inplace=False
and True). The bf16 noise is measured first: torch's loss again on the same batches with their
rows permuted (the same math, other reduction orders), and with the logits upcast to float32
(bf16's rounding of the log-probabilities and gradient taken out: softmax_tune computes in float32
too); the noise is the larger spread. softmax_tune's curves must stay within twice that noise of
torch's (10-step means) and the loss must fall. Exit 77 without torch or a
GPU. ctest gpu_python_ce_converge (labels gpu, long)."""

import time

from pyharness import expect, finish, torch
import torch.nn.functional as F  # noqa: E402
import softmax_tune  # noqa: E402

V, D, H, LAYERS, B, T, STEPS = 32000, 256, 4, 2, 16, 128, 200
ACTIVE = 2048   # the tokens the data uses (the head still scores all V): a chain learnable in 200 steps


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(), torch.nn.Linear(4 * D, D))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, H, d // H).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.mlp(self.ln2(x))


class LM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.pos = torch.nn.Embedding(V, D), torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, V, bias=False)

    def forward(self, idx):
        x = self.emb(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def data():
    """STEPS batches of B sequences of T+1 tokens below ACTIVE: a bigram chain (next = perm[cur] 80%
    of the time, else random), the first 4 targets of each sequence ignored (-100)."""
    g = torch.Generator(device="cuda").manual_seed(1234)
    perm = torch.randperm(ACTIVE, device="cuda", generator=g)
    seq = torch.empty(STEPS, B, T + 1, dtype=torch.int64, device="cuda")
    seq[:, :, 0] = torch.randint(0, ACTIVE, (STEPS, B), device="cuda", generator=g)
    for i in range(1, T + 1):
        rnd = torch.randint(0, ACTIVE, (STEPS, B), device="cuda", generator=g)
        keep = torch.rand(STEPS, B, device="cuda", generator=g) < 0.8
        seq[:, :, i] = torch.where(keep, perm[seq[:, :, i - 1]], rnd)
    tgt = seq[:, :, 1:].clone()
    tgt[:, :, :4] = -100
    return seq[:, :, :-1], tgt


def train(loss_fn, inputs, targets, permute=False):
    torch.manual_seed(0)
    model = LM().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)
    pg = torch.Generator(device="cuda").manual_seed(99)
    losses = []
    t0 = time.time()
    for s in range(STEPS):
        x, y = inputs[s], targets[s]
        if permute:
            p = torch.randperm(B, device="cuda", generator=pg)
            x, y = x[p], y[p]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach().float())
    curve = torch.stack(losses).cpu()
    print("  %.1f s, loss %.4f -> %.4f" % (time.time() - t0, curve[0], curve[-5:].mean()), flush=True)
    return curve


inputs, targets = data()
runs = {}
for name, fn, permute in (("torch", lambda z, y: F.cross_entropy(z.flatten(0, 1), y.flatten()), False),
                          ("torch, rows permuted", lambda z, y: F.cross_entropy(z.flatten(0, 1), y.flatten()), True),
                          ("torch, float32 logits", lambda z, y: F.cross_entropy(z.flatten(0, 1).float(), y.flatten()), False),
                          ("softmax_tune", lambda z, y: softmax_tune.cross_entropy(z, y), False),
                          ("softmax_tune inplace", lambda z, y: softmax_tune.cross_entropy(z, y, inplace=True), False)):
    print(name, flush=True)
    runs[name] = train(fn, inputs, targets, permute)


def windows(c):
    return c.view(-1, 10).mean(1)


base = windows(runs["torch"])
# torch's own spread: the same loss in other reduction orders, and in float32 (the logits upcast,
# as many trainers do): how far bf16 rounding alone moves a curve
spread = {name: (windows(runs[name]) - base).abs().max().item() for name in ("torch, rows permuted", "torch, float32 logits")}
noise = max(spread.values())
tol = 2 * noise + 1e-3
print("bf16 noise (10-step means, torch against torch with rows permuted %.4f, with float32 logits %.4f): %.4f;"
      " tolerance %.4f" % (spread["torch, rows permuted"], spread["torch, float32 logits"], noise, tol))
f32 = windows(runs["torch, float32 logits"])
for name in ("softmax_tune", "softmax_tune inplace"):
    dev = (windows(runs[name]) - base).abs().max().item()
    print("%s: largest 10-step-mean difference from torch %.4f, from torch with float32 logits %.4f"
          % (name, dev, (windows(runs[name]) - f32).abs().max().item()))
    expect(dev <= tol, "%s: the loss curve is %.4f from torch's, the noise %.4f" % (name, dev, noise))
    expect(runs[name][-10:].mean() < 0.7 * runs[name][:3].mean(), "%s: the loss did not fall" % name)
finish("test_python_ce_converge")
