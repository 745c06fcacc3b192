"""A model that returns the indices of an unsorted top-k itself: their order is torch's CPU kernel's
(4 of 8: never sorted), which no compiled graph reproduces."""
import torch
import torch.nn as nn

WIDTH = 8


class TopkUnsortedReturned(nn.Module):
    def forward(self, x):
        return torch.topk(x, 4, dim=-1, sorted=False)[1]


def get_model():
    return TopkUnsortedReturned().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(2, WIDTH, generator=gen),) for _ in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
