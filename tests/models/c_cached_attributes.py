"""Attribute writes in forward that cache a value, as transformers' SwitchTransformers router does:
`self.input_dtype = x.dtype` (fixed by the signature), `self.proj = self.proj.to(torch.float32)`
(no change on a float32 model), a branch on dtypes, and sizes unpacked from a shape before the
tensor is reshaped (`b, n, d = x.shape`) used after it was reassigned."""
import torch
from torch import nn

D = 8


class Cached(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, D)
        self.gate = nn.Linear(D, 1)
        self.dtype = torch.float32

    def forward(self, x):
        b, n, d = x.shape
        self.input_dtype = x.dtype
        x = x.reshape(-1, d).to(self.dtype)
        self.proj = self.proj.to(self.dtype)
        h = self.proj(x)
        if h.dtype != self.proj.weight.dtype:
            h = h.to(self.proj.weight.dtype)
        if self.gate(h).mean() > 0:
            h = torch.relu(h)
        return h.to(self.input_dtype).reshape(b, n, d)


def get_model():
    torch.manual_seed(0)
    return Cached().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1 + i % 4, D, generator=gen) * 2,) for i in range(n)]


def get_inputs():
    return sample_inputs(3)[2]
