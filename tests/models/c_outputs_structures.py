"""Structured outputs whose contents depend on the path taken.

An iterative refiner: when the first-pass residual is large it runs an
extra refinement step.  The model returns a dict with the logits, the list
of intermediate features (2 or 3 entries), a (logits, confidence) tuple,
the number of steps as a Python int and whether refinement ran as a bool.
"""

import torch
import torch.nn as nn

DIM = 16


class IterativeRefiner(nn.Module):
    def __init__(self, dim=DIM, num_classes=5):
        super().__init__()
        self.enc = nn.Linear(dim, dim)
        self.step = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.refine = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x):
        h = self.enc(x)
        feats = [h]
        h = h + self.step(h)
        feats.append(h)
        num_steps = 1
        refined = False
        if x.abs().mean() > 1.0:
            h = h + self.refine(h)
            feats.append(h)
            num_steps += 1
            refined = True
        logits = self.head(h)
        confidence = torch.softmax(logits, dim=1).max(dim=1).values
        return {
            "logits": logits,
            "features": feats,
            "pair": (logits, confidence),
            "num_steps": num_steps,
            "refined": refined,
        }


def get_model():
    torch.manual_seed(0)
    return IterativeRefiner().eval()


def sample_inputs(n, seed=0):
    """Entries of magnitude ~1.6 (refined) or ~0.4 (not), alternating, random signs."""
    gen = torch.Generator().manual_seed(seed)
    inputs = []
    for i in range(n):
        mag = 1.6 if i % 2 == 0 else 0.4
        sign = torch.where(torch.rand(1, DIM, generator=gen) < 0.5, -1.0, 1.0)
        x = sign * mag * (1.0 + 0.2 * (torch.rand(1, DIM, generator=gen) - 0.5))
        inputs.append((x,))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
