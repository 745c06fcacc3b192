"""A sequential scan written as transformers writes its reference kernels: an `lru_cache`d
availability check picks the Python path, imports run inside the function, optional tensors
reach it through a `**kwargs` wrapper and are tested with `is not None`, and a dtype read before
the loop (`input_dtype = u.dtype`) is used in the loop's body, a host loop over the time steps."""
import functools

import torch
from torch import nn

D = 4
DYNAMIC = {"x": {1: "time"}}


@functools.lru_cache
def fast_kernels_available():
    return False


def reference_kernel(fallback):
    @functools.wraps(fallback)
    def wrapped(*args, **kwargs):
        return fallback(*args, **kwargs)

    return wrapped


@reference_kernel
def selective_scan(u, decay, bias=None, gate=None):
    if fast_kernels_available():
        from fast_kernels import scan  # never imported: the arm folds away

        return scan(u, decay)
    import math

    input_dtype = u.dtype
    if bias is not None:
        u = u + bias
    state = torch.zeros(u.shape[0], u.shape[2], dtype=input_dtype)
    outs = []
    for t in range(u.shape[1]):
        state = decay * state + u[:, t]
        outs.append(state.to(input_dtype) * math.sqrt(2.0))
    y = torch.stack(outs, dim=1)
    if gate is not None:
        y = y * torch.sigmoid(gate)
    return y


class Scan(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, 2 * D)
        self.bias = nn.Parameter(torch.randn(D))
        self.decay = 0.9
        self.use_bias = True

    def forward(self, x):
        dtype = x.dtype
        u, gate = self.proj(x).chunk(2, dim=-1)
        bias = self.bias.float() if self.use_bias else None
        y = selective_scan(u, self.decay, bias=bias, gate=gate)
        if y.mean() > 1.0:
            y = torch.relu(y)
        else:
            y = -y
        return y.to(dtype)


def get_model():
    torch.manual_seed(0)
    return Scan().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, D, generator=gen) + (2.0 if i % 2 else -2.0),) for i in range(n)]


def get_inputs():
    return sample_inputs(2)[1]
