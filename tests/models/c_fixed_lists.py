"""Lists whose length is fixed when converting, as library code builds them: a decorator collects
`(module, hook)` pairs in a static loop and walks them in reverse after forward (accelerate's
`force_accelerate_hooks`); a layer gathers optional prefix tokens in `to_cat`, tests `if to_cat:`
and concatenates `to_cat + [x]` (timm's ViT `_pos_embed`); a wrapper keeps only the keyword
arguments the implementation accepts (`{k: v for k, v in kwargs.items() if k in params}`)."""
import functools
import inspect

import torch
from torch import nn

D = 8


def fire_hooks(names):
    def decorator(forward):
        @functools.wraps(forward)
        def wrapped(self, *args, **kwargs):
            hooked = []
            for name in names:
                module = getattr(self, name)
                hook = getattr(module, "_dycl_test_hook", None)
                hooked.append((module, hook))
                if hook is not None:
                    hook.pre_forward(module)
            output = forward(self, *args, **kwargs)
            for module, hook in reversed(hooked):
                if hook is not None:
                    hook.post_forward(module, ())
            return output

        return wrapped

    return decorator


def scale_rows(x, weight, scale=1.0):
    return x * weight * scale


def filtered(fn):
    params = tuple(inspect.signature(fn).parameters)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if k in params}
        return fn(*args, **kwargs)

    return call


scale_filtered = filtered(scale_rows)


class Prefixed(nn.Module):
    def __init__(self, cls_token: bool, reg_tokens: int):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, D)) if cls_token else None
        self.reg_token = nn.Parameter(torch.randn(1, reg_tokens, D)) if reg_tokens else None
        self.proj = nn.Linear(D, D)

    @fire_hooks(["proj"])
    def forward(self, x):
        x = self.proj(x)
        to_cat = []
        if self.cls_token is not None:
            to_cat.append(self.cls_token.expand(x.shape[0], -1, -1))
        if self.reg_token is not None:
            to_cat.append(self.reg_token.expand(x.shape[0], -1, -1))
        if to_cat:
            x = torch.cat(to_cat + [x], dim=1)
        return x, len(to_cat)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.with_prefix = Prefixed(True, 2)
        self.without_prefix = Prefixed(False, 0)
        self.weight = nn.Parameter(torch.randn(D))

    def forward(self, x):
        h, n = self.with_prefix(x)
        g, m = self.without_prefix(x)
        h = h[:, h.shape[1] - g.shape[1]:] + g
        if h.mean() > 0:
            h = scale_filtered(h, self.weight, scale=2.0, unused=h)
        else:
            h = scale_filtered(h, self.weight, unused=h)
        return h, n + m


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 3, D, generator=gen) + (1.0 if i % 2 else -1.0),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
