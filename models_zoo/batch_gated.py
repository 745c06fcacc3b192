"""Batch-gated MLP: per-sample gate scores pick a cheap or an expensive path for the whole batch.

Architecture: feature vectors [B, 16] go through a gate (linear(16, 1), one
score per sample), a cheap path (one linear layer, 16 -> 5 classes) and an
expensive path (a three-layer MLP, 16 -> 64 -> 64 -> 5 with ReLU and a
residual hidden layer).  Output: logits [B, 5].

Dynamic behaviour: ``DYNAMIC`` declares the batch dim of ``x`` dynamic, and
the branch depends on the whole batch's scores:

* ``if (scores > 0).all():`` -- every sample wants the expensive path: run
  only the expensive MLP;
* ``elif (scores > 0).any():`` -- a mixed batch: run both paths and pick per
  sample with ``torch.where``;
* ``else:`` -- no sample wants it: run only the cheap linear layer.

``sample_inputs`` builds batches of 4 from two prototype vectors, one along
the gate's weight (score ``+GATE_MARGIN``) and its mirror image (score
``-GATE_MARGIN``), plus small noise; sample ``i`` is all-positive, mixed or
all-negative for ``i % 3 == 0, 1, 2``, and every score is far from 0.
"""

import torch
import torch.nn as nn

DYNAMIC = {"x": {0: "batch"}}

IN_DIM = 16
HIDDEN = 64
NUM_CLASSES = 5
BATCH = 4

# Input distribution of sample_inputs: rows scored exactly +-GATE_MARGIN by
# the gate (whose bias is zeroed), plus Gaussian noise.
GATE_MARGIN = 3.0
NOISE_STD = 0.1
# Sign patterns of the batch's rows, cycled over the samples: all positive
# (first arm), mixed (second arm), all negative (third arm).
SIGN_PATTERNS = [
    (1, 1, 1, 1),
    (1, -1, -1, 1),
    (-1, -1, -1, -1),
]


class BatchGated(nn.Module):
    def __init__(self, in_dim=IN_DIM, hidden=HIDDEN, num_classes=NUM_CLASSES):
        super().__init__()
        self.gate = nn.Linear(in_dim, 1)
        self.cheap = nn.Linear(in_dim, num_classes)
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, num_classes)

    def expensive(self, x):
        h = torch.relu(self.fc1(x))
        h = h + torch.relu(self.fc2(h))
        return self.head(h)

    def forward(self, x):
        scores = self.gate(x).squeeze(1)
        if (scores > 0).all():
            logits = self.expensive(x)
        elif (scores > 0).any():
            mask = (scores > 0).unsqueeze(1)
            logits = torch.where(mask, self.expensive(x), self.cheap(x))
        else:
            logits = self.cheap(x)
        return logits


def get_model():
    torch.manual_seed(0)
    model = BatchGated()
    with torch.no_grad():
        model.gate.bias.zero_()
    return model.eval()


def _gate_direction():
    """``w / |w|^2`` for the gate's weight ``w``: the input whose score is exactly 1."""
    weight = get_model().gate.weight.detach()[0]
    return weight / weight.dot(weight)


def sample_inputs(n, seed=0):
    """``n`` batches [4, 16]: rows at score ``+-GATE_MARGIN`` (signs from ``SIGN_PATTERNS[i % 3]``) plus noise."""
    gen = torch.Generator().manual_seed(seed)
    direction = _gate_direction()
    inputs = []
    for i in range(n):
        signs = torch.tensor(SIGN_PATTERNS[i % len(SIGN_PATTERNS)], dtype=torch.float32)
        noise = NOISE_STD * torch.randn(BATCH, IN_DIM, generator=gen)
        inputs.append((GATE_MARGIN * signs[:, None] * direction + noise,))
    return inputs


def get_inputs():
    return sample_inputs(2)[1]
