"""nn.py — softmax_tune.nn.Softmax(dim) and softmax_tune.nn.LogSoftmax(dim): torch.nn.Softmax and
torch.nn.LogSoftmax running softmax_tune.softmax. dim defaults to -1 (torch's None, an implicit
dim chosen from the tensor's rank, is deprecated there and not offered here)."""

import torch

import softmax_tune as _st   # the package, loaded by the time forward runs


class Softmax(torch.nn.Module):
    log = False

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return _st.softmax(x, self.dim, self.log)

    def extra_repr(self):
        return "dim=%s" % self.dim


class LogSoftmax(Softmax):
    log = True
