"""if/elif/elif/else on a router's scalar confidence pulled out with .item().

A router scores the input (sigmoid of a linear projection); its confidence
picks one of four processing depths, from a cheap linear map to a deep MLP.
"""

import torch
import torch.nn as nn

DIM = 24
ROUTER_SEED = 7
# Router logit targets (sigmoid^-1 of 0.125, 0.375, 0.625, 0.875).
LOGIT_LEVELS = [-1.95, -0.51, 0.51, 1.95]


def router_direction():
    gen = torch.Generator().manual_seed(ROUTER_SEED)
    v = torch.randn(DIM, generator=gen)
    return v / v.norm()


class ConfidenceRouted(nn.Module):
    def __init__(self, dim=DIM, num_classes=5):
        super().__init__()
        self.router = nn.Linear(dim, 1)
        self.tiny = nn.Linear(dim, dim)
        self.small = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.medium = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim), nn.LayerNorm(dim))
        self.large = nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)
        )
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        score = torch.sigmoid(self.router(x)).item()
        if score < 0.25:
            h = self.tiny(x)
        elif score < 0.5:
            h = self.small(x)
        elif score < 0.75:
            h = self.medium(x)
        else:
            h = self.large(x)
        return self.head(h)


def get_model():
    torch.manual_seed(0)
    model = ConfidenceRouted()
    with torch.no_grad():
        model.router.weight.copy_(router_direction().unsqueeze(0))
        model.router.bias.zero_()
    return model.eval()


def sample_inputs(n, seed=0):
    """Sample i has router logit LOGIT_LEVELS[i % 4] plus small orthogonal-ish noise."""
    gen = torch.Generator().manual_seed(seed)
    u = router_direction()
    inputs = []
    for i in range(n):
        noise = 0.5 * torch.randn(DIM, generator=gen)
        noise = noise - (noise @ u) * u  # keep the router logit exact ...
        noise = noise + 0.05 * torch.randn(DIM, generator=gen)  # ... up to a little jitter
        x = LOGIT_LEVELS[i % 4] * u + noise
        inputs.append((x.unsqueeze(0),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
