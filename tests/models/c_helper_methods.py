"""Forward delegating to helper methods, one of them inherited.

``_route`` picks an expert index with argmax(.item()), ``_expert`` dispatches
to the chosen expert of a ModuleList with if/elif, and ``_sanitize`` -- defined on the base
class -- rescales inputs with a large peak, returning early in that case.
"""

import torch
import torch.nn as nn

DIM = 32
NUM_EXPERTS = 3
CENTROID_SEED = 11


def centroids():
    gen = torch.Generator().manual_seed(CENTROID_SEED)
    q, _ = torch.linalg.qr(torch.randn(DIM, NUM_EXPERTS, generator=gen))
    return q.t().contiguous()


class SanitizingModule(nn.Module):
    """Base class with a shared input-sanitising helper."""

    clip = 3.0

    def _sanitize(self, x):
        peak = x.abs().max()
        if peak > self.clip:
            return x * (self.clip / peak)
        return x


class RoutedExperts(SanitizingModule):
    def __init__(self, dim=DIM, num_experts=NUM_EXPERTS, num_classes=10):
        super().__init__()
        self.router = nn.Linear(dim, num_experts)
        self.inp = nn.Linear(dim, dim)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim)) for _ in range(num_experts)]
        )
        self.head = nn.Linear(dim, num_classes)

    def _route(self, x):
        return int(torch.argmax(self.router(x), dim=1).item())

    def _expert(self, i, h):
        if i == 0:
            return self.experts[0](h)
        elif i == 1:
            return self.experts[1](h)
        return self.experts[2](h)

    def forward(self, x):
        x = self._sanitize(x)
        i = self._route(x)
        h = self.inp(x)
        h = h + self._expert(i, h)
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    model = RoutedExperts()
    with torch.no_grad():
        model.router.weight.copy_(centroids())
        model.router.bias.zero_()
    return model.eval()


def sample_inputs(n, seed=0):
    """Sample i sits near centroid i % 3; every other pair of samples is amplified 5x."""
    gen = torch.Generator().manual_seed(seed)
    c = centroids()
    inputs = []
    for i in range(n):
        x = 2.0 * c[i % NUM_EXPERTS] + 0.2 * torch.randn(DIM, generator=gen)
        if (i // 2) % 2 == 1:
            x = 5.0 * x  # large-amplitude sample: _sanitize rescales it
        inputs.append((x.unsqueeze(0),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
