"""An unsorted top-k whose results leave their region: onnxruntime returns the k in another order
than torch (2 of 8: smallest first, where torch gives them sorted), yet the model's answer is the
same in any order, as a router's picked experts and their weights are."""
import torch
import torch.nn as nn

WIDTH = 8


class TopkUnsorted(nn.Module):
    def forward(self, x):
        values, idx = torch.topk(x, 2, dim=-1, sorted=False)
        if x.mean() > 0:  # a value decision: `values` and `idx` are outputs of the region above
            return values.sum(-1), x.gather(-1, idx).prod(-1)
        return -values.sum(-1), idx.sum(-1)


def get_model():
    return TopkUnsorted().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1 + i % 3, WIDTH, generator=gen) + (0.5 if i % 2 else -0.5),) for i in range(n)]


def get_inputs():
    return sample_inputs(2)[1]
