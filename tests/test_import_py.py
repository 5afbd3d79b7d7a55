#!/usr/bin/env python3
"""test_import_py.py — `import softmax_tune` without torch (CPU CI has none): every module's
import-time code run against a stand-in torch (unittest.mock: any attribute, any call), so a name
error, a bad decorator use or a missing export at module level fails here and not first on a GPU
machine; the public names exported; attention_softmax's option checks (pure Python: scale,
softcap, window, causal_offset, padding with causal or window) refuse with one-line ValueErrors;
fusion.py's pass set at its first arm(), not at import; vocab_parallel imported at its first use.
The GPU behaviour is tests/test_python*.py's."""

import os
import sys
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
os.environ["SOFTMAX_TUNE_NO_CPP"] = "1"   # the C++ ops would need a real torch
failures = 0


class _Function:   # torch.autograd.Function: subclassed at import time, so a class
    pass


torch = mock.MagicMock(name="torch")
torch.autograd.Function = _Function
torch.autograd.function.once_differentiable = lambda f: f
sys.modules.update({"torch": torch, "torch.nn": torch.nn, "torch.nn.functional": torch.nn.functional,
                    "torch.library": torch.library, "torch.autograd": torch.autograd})


def expect(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


import softmax_tune  # noqa: E402
from softmax_tune import attention  # noqa: E402

# vocab_parallel at its first use, not at import (its torch.compiler.disable imports torch._dynamo: seconds)
expect("softmax_tune.vocab_parallel" not in sys.modules, "import softmax_tune imported softmax_tune.vocab_parallel")

for name in softmax_tune.__all__:
    expect(hasattr(softmax_tune, name), "softmax_tune.%s is in __all__ but not defined" % name)
expect("softmax_tune.vocab_parallel" in sys.modules, "softmax_tune.vocab_parallel_cross_entropy did not import its module")
expect(not hasattr(softmax_tune, "no_such_name"), "an unknown attribute did not raise AttributeError")
expect("attention_softmax" in softmax_tune.__all__, "attention_softmax not exported")
shape = (2, 4, 8, 16)
check = attention._check_options
expect(check(0.5, None, True, None, None, None, shape) == (0.5, 0.0, -1, 8), "defaults: offset K - Q")
expect(check(1, 30.0, False, 3, -2, None, shape) == (1.0, 30.0, 3, -2), "window, offset, softcap")
expect(check(1, None, True, 3, None, [3, 4], shape) == (1.0, 0.0, 3, 8), "key_lengths with causal and window")
bad = [((float("nan"), None, False, None, None, None), "scale"),
       ((float("inf"), None, False, None, None, None), "scale"),
       ((1.0, 0.0, False, None, None, None), "softcap"), ((1.0, -1.0, False, None, None, None), "softcap"),
       ((1.0, None, False, -1, None, None), "window"), ((1.0, None, False, 1.5, None, None), "window"),
       ((1.0, None, False, None, 1 << 41, None), "causal_offset")]
for args, needle in bad:
    try:
        check(*args, shape)
        expect(False, "%r accepted" % (args,))
    except ValueError as e:
        msg = str(e)
        expect(needle in msg and "\n" not in msg and msg.startswith("softmax_tune.attention_softmax: "),
               "%r: message %r lacks %r" % (args, msg, needle))
# fusion.py: nothing of Inductor imported with the package (its config costs seconds); the pass is
# set at the first arm() (the op's fake kernel, under torch.compile), once, and never over a
# pass the user set.
from softmax_tune import fusion  # noqa: E402
import types  # noqa: E402

expect(not any(m.startswith("torch._inductor") for m in sys.modules), "import softmax_tune imported torch._inductor")
expect(softmax_tune.compile_fusion is True and not fusion._armed, "the pass is wanted, and not set at import")
inductor = types.ModuleType("torch._inductor")
inductor.config = types.SimpleNamespace(pre_grad_custom_pass=None)
sys.modules["torch._inductor"] = inductor
fusion.arm()
expect(inductor.config.pre_grad_custom_pass is fusion.swap_fusable, "arm() did not set the pass")
inductor.config.pre_grad_custom_pass = mine = object()
fusion.arm()
expect(inductor.config.pre_grad_custom_pass is mine, "a second arm() replaced the user's pass")
fusion._armed, inductor.config.pre_grad_custom_pass = False, mine
fusion.arm()
expect(inductor.config.pre_grad_custom_pass is mine, "arm() replaced a pass the user set first")
# _lib.CeOptions laid out as the C struct st_ce_options (tests/test_runtime.c asserts the same
# offsets in C), and the library built here new enough for this package's cross-entropy.
import ctypes  # noqa: E402
from softmax_tune import _lib  # noqa: E402

want = {"ignore_index": 0, "reduction": 8, "label_smoothing": 12, "z_loss": 16, "softcap": 20, "weight": 24,
        "row_stride": 32, "bad_label": 40, "reduced": 48, "reduced_in_dtype": 56, "grad_scale": 64}
got = {name: getattr(_lib.CeOptions, name).offset for name, _ in _lib.CeOptions._fields_}
expect(got == want and ctypes.sizeof(_lib.CeOptions) == 72, "CeOptions is not st_ce_options: %s" % got)
want = {"scale": 0, "softcap": 4, "causal": 8, "causal_offset": 16, "window": 24, "key_lengths": 32,
        "alibi_slopes": 40, "bias": 48, "bias_stride_b": 56, "bias_stride_h": 64, "bias_stride_q": 72, "bias_type": 80}
got = {name: getattr(_lib.AttnOptions, name).offset for name, _ in _lib.AttnOptions._fields_}
expect(got == want and ctypes.sizeof(_lib.AttnOptions) == 88, "AttnOptions is not st_attn_options: %s" % got)
want = {"rows": 0, "label_smoothing": 48, "label_type": 60, "weight": 64, "logits": 80, "sg": 144, "sg_rows": 152,
        "w": 160, "lab": 192}
got = {name: getattr(_lib.VocabArgs, name).offset for name in want}
expect(got == want and ctypes.sizeof(_lib.VocabArgs) == 200, "VocabArgs is not st_vocab_args: %s" % got)
try:
    lib = _lib._load()
except OSError as e:   # no library built next to the sources: said, not failed
    print("test_import_py: the library not loaded (%s): its version not checked" % e)
else:
    expect(_lib.ce_current(lib), "the library built here is older than the package's cross-entropy")
    expect(_lib.bias_native(lib), "the library built here is older than the package's bias types")
print("test_import_py: %d failures" % failures)
sys.exit(1 if failures else 0)
