"""nn.py — softmax_tune.nn.Softmax(dim) and softmax_tune.nn.LogSoftmax(dim): torch.nn.Softmax and
torch.nn.LogSoftmax running softmax_tune.softmax. dim defaults to -1 (torch's None, an implicit
dim chosen from the tensor's rank, is deprecated there and not offered here). CrossEntropyLoss:
torch.nn.CrossEntropyLoss running softmax_tune.cross_entropy (z_loss, softcap, inplace too)."""

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


class CrossEntropyLoss(torch.nn.Module):
    """torch.nn.CrossEntropyLoss(weight, ignore_index=, reduction=, label_smoothing=) plus z_loss,
    softcap and inplace (softmax_tune.cross_entropy's)."""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0, *, z_loss=0.0,
                 softcap=None, inplace=False):
        super().__init__()
        self.register_buffer("weight", weight)
        self.ignore_index, self.reduction, self.label_smoothing = ignore_index, reduction, label_smoothing
        self.z_loss, self.softcap, self.inplace = z_loss, softcap, inplace

    def forward(self, input, target):
        return _st.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing,
                                 z_loss=self.z_loss, softcap=self.softcap, inplace=self.inplace)

    def extra_repr(self):
        return "ignore_index=%s, reduction=%s, label_smoothing=%s, z_loss=%s, softcap=%s, inplace=%s" % (
            self.ignore_index, self.reduction, self.label_smoothing, self.z_loss, self.softcap, self.inplace)


from .linear_cross_entropy import LinearCrossEntropyLoss  # noqa: E402,F401  (docs/linear-cross-entropy.md)
