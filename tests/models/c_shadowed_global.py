"""A helper's local named like a global its caller reads (transformers' `is_tracing` keeps its result in
`_is_tracing`, and `find_packed_sequence_indices` calls `is_tracing(...)`): the inlined local must not
take the global's name, or `not is_tracing(x) and ...` would read the function and fold to False,
dropping the decision."""
import torch
from torch import nn


def is_large(t, limit=None):
    _is_large = t.abs().sum() > 100
    if limit is not None:
        _is_large = _is_large | (t.abs().max() > limit)
    return _is_large


def pick(t):
    if not is_large(t) and t.mean() > 0:
        return None
    return t


class ShadowedGlobal(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        h = self.fc(x)
        p = pick(h)
        if p is None:
            return h * 2
        return p


def get_model():
    torch.manual_seed(0)
    return ShadowedGlobal().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, 3, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
