"""Top-1 mixture of experts over a 64-d feature vector.

Architecture: a router (linear 64->4) scores four experts, each a small MLP
(64->128->64 with GELU).  The chosen expert's output is scaled by its router
probability (as in Switch Transformers), optionally added to the input
(residual), layer-normed and mapped to 10 logits.

Dynamic behaviour: the expert index ``k = argmax(router_logits)`` is pulled
into Python with ``.item()`` and dispatched through an if/elif chain, so each
input executes exactly one expert.  ``self.use_residual`` is a static config
flag tested with a plain ``if``.  The model returns a dict
``{"logits": Tensor[1, 10], "expert": int}``.

Inputs of ``sample_inputs`` come from four clusters around orthonormal
centroids, and the router is initialised from those centroids (as in
clustering-based routing), so sample ``i`` goes to expert ``i % 4`` with a
wide gap between the best and second-best router score.
"""

import torch
import torch.nn as nn

NUM_EXPERTS = 4
DIM = 64

# Input clusters: CLUSTER_SCALE * centroid + Gaussian noise of std NOISE_STD.
CENTROID_SEED = 2024
CLUSTER_SCALE = 4.0
NOISE_STD = 0.5


def cluster_centroids():
    """Four fixed orthonormal directions in R^64, shape [4, 64]."""
    gen = torch.Generator().manual_seed(CENTROID_SEED)
    q, _ = torch.linalg.qr(torch.randn(DIM, NUM_EXPERTS, generator=gen))
    return q.t().contiguous()


def expert_mlp(dim, hidden):
    return nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))


class Top1MoE(nn.Module):
    def __init__(self, dim=DIM, hidden=128, num_classes=10, use_residual=True):
        super().__init__()
        self.use_residual = use_residual
        self.router = nn.Linear(dim, NUM_EXPERTS)
        self.expert0 = expert_mlp(dim, hidden)
        self.expert1 = expert_mlp(dim, hidden)
        self.expert2 = expert_mlp(dim, hidden)
        self.expert3 = expert_mlp(dim, hidden)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        router_logits = self.router(x)
        k = int(torch.argmax(router_logits, dim=1).item())

        if k == 0:
            y = self.expert0(x)
        elif k == 1:
            y = self.expert1(x)
        elif k == 2:
            y = self.expert2(x)
        else:
            y = self.expert3(x)

        # Scale by the router probability of the chosen expert.
        gate = torch.softmax(router_logits, dim=1)[:, k:k + 1]
        y = y * gate
        if self.use_residual:
            y = y + x
        logits = self.head(self.norm(y))
        return {"logits": logits, "expert": k}


def get_model():
    torch.manual_seed(0)
    model = Top1MoE()
    with torch.no_grad():
        model.router.weight.copy_(cluster_centroids())
        model.router.bias.zero_()
    return model.eval()


def sample_inputs(n, seed=0):
    """``n`` feature vectors of shape [1, 64]; sample ``i`` comes from cluster ``i % 4``."""
    gen = torch.Generator().manual_seed(seed)
    centroids = cluster_centroids()
    inputs = []
    for i in range(n):
        centroid = centroids[i % NUM_EXPERTS].unsqueeze(0)
        noise = NOISE_STD * torch.randn(1, DIM, generator=gen)
        inputs.append((CLUSTER_SCALE * centroid + noise,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
