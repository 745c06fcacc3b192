"""Nested functions as transformers' masking_utils writes them: `and_fns(*fns)` returns a closure that
loops over `fns` (checked with `callable` first), `column_fn(t)` returns one that reads a run-time
tensor, `keep_fn(limit)` one that reads a static default; the combined function is called on a
run-time tuple spread into exactly its parameters (`fn(*grid(rows, cols))`). All of it is inlined
where called; the gate on the result stays data-dependent."""
import torch
from torch import nn

D = 6


def lower_fn(q, k):
    return k <= q


def keep_fn(limit):
    def inner(q, k, bound=limit):
        return k < bound
    return inner


def column_fn(weights):
    def inner(q, k):
        return weights[k] > 0
    return inner


def and_fns(*fns):
    if not all(callable(f) for f in fns):
        raise RuntimeError(f"not callable: {fns}")

    def combined(q, k):
        result = q.new_ones((), dtype=torch.bool)
        for fn in fns:
            result = result & fn(q, k)
        return result
    return combined


def grid(rows, cols):
    return rows[:, None], cols[None, :]


class Closures(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        n = torch.arange(x.shape[0])
        mask_fn = and_fns(lower_fn, keep_fn(5), column_fn(x[:, 0]))
        mask = mask_fn(*grid(n, n))
        h = torch.where(mask, 1.0, 0.0) @ self.proj(x)
        if h.sum() > 0:
            return h
        return -h


DYNAMIC = {"x": {0: "rows"}}


def get_model():
    torch.manual_seed(0)
    return Closures().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(4 + i % 3, D, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
