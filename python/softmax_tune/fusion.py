"""fusion.py — softmax_tune under torch.compile with Inductor: a softmax whose every use is
elementwise goes back to torch.softmax, so that Inductor fuses it with those uses.

    y = softmax_tune.softmax(x) * 2       # compiled: Inductor's one kernel (read x, write y)
    p = softmax_tune.softmax(s) @ v       # compiled: softmax-tune's kernel, then the matmul

Our kernel is an extern call to Inductor: it cannot take an epilogue, so softmax(x) * 2 costs
our pass and then a pass of Inductor's multiply, twice the bytes of Inductor's fused kernel (and
two launches). No kernel of ours gains back a whole pass over memory, so where every user of the
softmax (through views: movedim, transpose, ...) is elementwise, this pass swaps the op for
torch.softmax / torch.log_softmax before Inductor sees the graph. A softmax that feeds a matmul,
a reduction or the graph's output keeps our kernel, forward and backward.

It is Inductor's pre-grad custom pass (torch._inductor.config.pre_grad_custom_pass), set the first
time torch.compile traces our op (its fake kernel calls arm(): dynamo runs it before Inductor's
passes), unless the user has set that pass already (theirs stays; ours is then off), or
SOFTMAX_TUNE_FUSE=0. Not when the package loads: importing Inductor's config costs seconds (4 s
on an H100 host), which `import softmax_tune` should not. `swapped` counts the nodes swapped in
this process (for tests).
"""

import operator
import os

import torch

swapped = 0

_VIEW_METHODS = {"movedim", "permute", "transpose", "view", "reshape", "contiguous", "unsqueeze", "squeeze", "flatten"}
_VIEW_FUNCTIONS = {torch.movedim, torch.permute, torch.transpose, torch.reshape, torch.unsqueeze, torch.squeeze,
                   torch.flatten}
_POINTWISE_METHODS = {"mul", "add", "sub", "div", "neg", "pow", "exp", "log", "clamp", "masked_fill", "float", "half",
                      "bfloat16", "type_as", "sigmoid", "tanh", "abs", "sqrt", "rsqrt", "__mul__", "__add__",
                      "__sub__", "__truediv__", "__rmul__", "__radd__", "__rsub__", "__rtruediv__"}
_POINTWISE_FUNCTIONS = {operator.mul, operator.add, operator.sub, operator.truediv, operator.neg, operator.pow,
                        torch.mul, torch.add, torch.sub, torch.div, torch.true_divide, torch.neg, torch.exp, torch.log,
                        torch.pow, torch.where, torch.clamp, torch.tanh, torch.sigmoid, torch.abs, torch.sqrt,
                        torch.rsqrt, torch.masked_fill, torch.nn.functional.dropout}


def _ours():
    """The softmax op's overload and packet (the C++ ops' or Python's: the same names)."""
    packet = torch.ops.softmax_tune.softmax
    return {packet, packet.default}


def _pointwise(node):
    t = node.target
    if node.op == "call_method":
        return t in _POINTWISE_METHODS
    if node.op != "call_function":
        return False
    if t in _POINTWISE_FUNCTIONS:
        return True
    tags = getattr(getattr(t, "default", t), "tags", ())   # an aten op: its own tag says
    return torch.Tag.pointwise in tags


def _view(node):
    return (node.op == "call_method" and node.target in _VIEW_METHODS or
            node.op == "call_function" and node.target in _VIEW_FUNCTIONS)


def _only_elementwise(node):
    """Whether every use of node, through views, is an elementwise op (and there is one)."""
    if not node.users:
        return False
    return all(_only_elementwise(u) if _view(u) else _pointwise(u) for u in node.users)


def swap_fusable(graph):
    """The pass: each softmax_tune.softmax node whose every use is elementwise becomes torch's."""
    global swapped
    ours = _ours()
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in ours or not _only_elementwise(node):
            continue
        x = node.args[0] if node.args else node.kwargs["x"]
        log = node.args[1] if len(node.args) > 1 else node.kwargs.get("log", False)
        with graph.inserting_before(node):
            new = graph.call_function(torch.log_softmax if log else torch.softmax, (x, -1))
        new.meta.update(node.meta)   # the same shape and dtype: the example value holds
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        swapped += 1


_wanted = False   # install(): the pass is wanted (SOFTMAX_TUNE_FUSE is not 0); arm() sets it once
_armed = False


def install():
    """Whether the pass will be set at the first trace of our op (arm()); nothing imported here."""
    global _wanted
    _wanted = os.environ.get("SOFTMAX_TUNE_FUSE") != "0"
    return _wanted


def arm():
    """Set the pass as Inductor's pre-grad custom pass, once, where it is wanted and the user has
    set none; called by the softmax op's fake kernels, so only under torch.compile."""
    global _armed
    if _armed or not _wanted:
        return
    _armed = True
    try:
        from torch._inductor import config
    except Exception:  # noqa: BLE001  (no Inductor in this torch: nothing to fuse with)
        return
    if config.pre_grad_custom_pass is None:
        config.pre_grad_custom_pass = swap_fusable
