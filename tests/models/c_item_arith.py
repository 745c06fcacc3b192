"""Python scalars from .item() steer control flow and feed tensor arithmetic.

``k = int(argmax(logits).item())`` picks a branch in an if/elif chain; a
sigmoid gate is pulled out as a float ``s = gate.item()`` and used to scale
the features (``h * s``) and to mix in the input (``(1 - s) * x``).
"""

import torch
import torch.nn as nn

DIM = 24
NUM_CLASSES = 3
CENTROID_SEED = 5


def centroids():
    gen = torch.Generator().manual_seed(CENTROID_SEED)
    q, _ = torch.linalg.qr(torch.randn(DIM, NUM_CLASSES, generator=gen))
    return q.t().contiguous()


class ItemGated(nn.Module):
    def __init__(self, dim=DIM, num_classes=NUM_CLASSES):
        super().__init__()
        self.classifier = nn.Linear(dim, num_classes)
        self.gate = nn.Linear(dim, 1)
        self.path0 = nn.Linear(dim, dim)
        self.path1 = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.path2 = nn.Sequential(nn.Linear(dim, dim), nn.Tanh())
        self.head = nn.Linear(dim, 8)

    def forward(self, x):
        logits = self.classifier(x)
        k = int(torch.argmax(logits, dim=1).item())
        if k == 0:
            h = self.path0(x)
        elif k == 1:
            h = self.path1(x)
        else:
            h = self.path2(x)
        s = torch.sigmoid(self.gate(x)).item()
        h = h * s + (1.0 - s) * x
        return self.head(h) * (k + 1)


def get_model():
    torch.manual_seed(0)
    model = ItemGated()
    with torch.no_grad():
        model.classifier.weight.copy_(centroids())
        model.classifier.bias.zero_()
    return model.eval()


def sample_inputs(n, seed=0):
    """Sample i sits near centroid i % 3 (scaled 3) with N(0, 0.3) noise."""
    gen = torch.Generator().manual_seed(seed)
    c = centroids()
    inputs = []
    for i in range(n):
        x = 3.0 * c[i % NUM_CLASSES] + 0.3 * torch.randn(DIM, generator=gen)
        inputs.append((x.unsqueeze(0),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
