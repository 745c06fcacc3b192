"""BranchyNet-style early exit: return from the middle of forward when confident.

The first exit head's softmax confidence is compared with a threshold; a
confident input returns the early logits right away, the others continue
through a second stage and return from the final head.  All layers are
bias-free ReLU/linear maps, so the confidence grows with the input scale,
which sample_inputs uses to pick the exit.
"""

import torch
import torch.nn as nn

DIM = 32


class EarlyExitNet(nn.Module):
    def __init__(self, dim=DIM, hidden=64, num_classes=10, threshold=0.9):
        super().__init__()
        self.threshold = threshold
        self.stage1 = nn.Sequential(nn.Linear(dim, hidden, bias=False), nn.ReLU())
        self.exit1 = nn.Linear(hidden, num_classes, bias=False)
        self.stage2 = nn.Sequential(
            nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.exit2 = nn.Linear(hidden, num_classes)

    def forward(self, x):
        h = self.stage1(x)
        early_logits = self.exit1(h)
        confidence = torch.softmax(early_logits, dim=1).max()
        if confidence > self.threshold:
            return early_logits
        h = self.stage2(h)
        logits = self.exit2(h)
        return logits + 0.1 * early_logits


def get_model():
    torch.manual_seed(0)
    return EarlyExitNet().eval()


# Confident inputs lie near a few fixed "prototype" directions (drawn with
# PROTOTYPE_SEED; the chosen ones were calibrated once to give the first exit
# a wide top-1/top-2 logit gap at scale 1000).
PROTOTYPE_SEED = 123
PROTOTYPE_IDS = [2, 4, 5, 15]


def prototypes():
    gen = torch.Generator().manual_seed(PROTOTYPE_SEED)
    p = torch.randn(16, DIM, generator=gen)
    p = p / p.norm(dim=1, keepdim=True)
    return p[PROTOTYPE_IDS]


def sample_inputs(n, seed=0):
    """Even samples: a prototype direction plus 5% noise, scaled to norm 1000 (early exit).
    Odd samples: a random direction with norm 0.05 (low confidence, full network)."""
    gen = torch.Generator().manual_seed(seed)
    protos = prototypes()
    inputs = []
    for i in range(n):
        v = torch.randn(1, DIM, generator=gen)
        v = v / v.norm()
        if i % 2 == 0:
            v = protos[(i // 2) % len(protos)].unsqueeze(0) + 0.05 * v
            x = 1000.0 * v / v.norm()
        else:
            x = 0.05 * v
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
