"""Sequence classifier with a confidence early exit, for batches of any size and length.

Architecture: an ``nn.GRU`` encoder (8 -> 16, batch_first) reads the
sequence [B, T, 8]; its outputs are mean-pooled over time (a sum divided by
``x.shape[1]``) and a linear head (16 -> 4 classes) gives the first-pass
logits.  The refinement stage is a second ``nn.GRU`` (16 -> 16) over the
encoder's outputs, mean-pooled the same way, and an MLP (32 -> 16 -> 4) over
both pooled vectors.

Dynamic behaviour: ``DYNAMIC`` declares the batch and time dims of ``x``
dynamic; the sequence length enters the tensor math through the mean
pooling's ``/ x.shape[1]``.  After the first pass the model computes every
sample's confidence ``softmax(logits).max()``; ``if conf.min() >
self.threshold:`` -- every sample in the batch is confident -- it returns the
first-pass logits, otherwise it runs the refinement stage and returns its
logits (shape [B, 4] either way).

``sample_inputs`` draws batches of 2 sequences, each a class prototype (one
fixed frame per class, four orthonormal frames, repeated over time) plus
noise, at a high or a low amplitude.  The GRUs' biases are zeroed, so the
encoder's state scales with the input's amplitude, and ``get_model`` sets
the first-pass head deterministically (the pseudo-inverse of the encoder's
pooled features for the four prototypes, times ``HEAD_GAIN``): high-amplitude
sequences are classified with confidence above 0.98, low-amplitude ones
below 0.4 (chance is 0.25), both far from the 0.9 threshold.
"""

import torch
import torch.nn as nn

DYNAMIC = {"x": {0: "batch", 1: "time"}}

INPUT_DIM = 8
HIDDEN = 16
NUM_CLASSES = 4
BATCH = 2
SEQ_LEN = 12

# Calibration (see module docstring): the first-pass head gives the
# noise-free prototype sequences at amplitude HIGH the logits
# HEAD_GAIN * one_hot(class), a confidence of 0.993.
HEAD_GAIN = 6.0

# Input distribution of sample_inputs: per row, a class prototype frame
# (fixed by PROTOTYPE_SEED) repeated over time, times an amplitude, plus
# Gaussian noise.  Amplitudes per row, cycled over the samples: both rows
# confident (early exit), one row not (refine), neither (refine).
PROTOTYPE_SEED = 1234
NOISE_STD = 0.1
HIGH, LOW = 2.0, 0.1
AMPLITUDES = [(HIGH, HIGH), (HIGH, LOW), (HIGH, HIGH), (LOW, LOW)]


class SeqClassifier(nn.Module):
    def __init__(self, input_dim=INPUT_DIM, hidden=HIDDEN, num_classes=NUM_CLASSES, threshold=0.9):
        super().__init__()
        self.threshold = threshold
        self.encoder = nn.GRU(input_dim, hidden, batch_first=True)
        self.head = nn.Linear(hidden, num_classes)
        self.refiner = nn.GRU(hidden, hidden, batch_first=True)
        self.refine_head = nn.Sequential(
            nn.Linear(2 * hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        out, _ = self.encoder(x)
        pooled = out.sum(1) / x.shape[1]
        logits = self.head(pooled)
        conf = torch.softmax(logits, dim=1).max(dim=1).values
        if conf.min() > self.threshold:
            return logits
        refined, _ = self.refiner(out)
        pooled2 = refined.sum(1) / x.shape[1]
        return self.refine_head(torch.cat([pooled, pooled2], dim=1))


def get_model():
    torch.manual_seed(0)
    model = SeqClassifier()
    with torch.no_grad():
        for gru in (model.encoder, model.refiner):
            gru.bias_ih_l0.zero_()
            gru.bias_hh_l0.zero_()
        # The head maps the encoder's pooled feature for prototype c at
        # amplitude HIGH (noise-free) to HEAD_GAIN * one_hot(c): its weight is
        # HEAD_GAIN times the pseudo-inverse of the four features.
        frames = HIGH * _prototypes()[:, None, :].expand(NUM_CLASSES, SEQ_LEN, INPUT_DIM)
        feats = model.encoder(frames)[0].mean(1)
        model.head.weight.copy_(HEAD_GAIN * torch.linalg.pinv(feats).T)
        model.head.bias.zero_()
    return model.eval()


def _prototypes():
    """One frame per class: orthonormal vectors (QR of a seeded Gaussian matrix)."""
    gen = torch.Generator().manual_seed(PROTOTYPE_SEED)
    q, _ = torch.linalg.qr(torch.randn(INPUT_DIM, NUM_CLASSES, generator=gen))
    return q.T.contiguous()


def sample_inputs(n, seed=0):
    """``n`` batches [2, 12, 8]: class prototypes repeated over time, scaled, plus noise.

    Row ``r`` of sample ``i`` uses prototype ``(2 * i + r) % 4`` and amplitude
    ``AMPLITUDES[i % 4][r]``; the seed only changes the noise.
    """
    gen = torch.Generator().manual_seed(seed)
    protos = _prototypes()
    inputs = []
    for i in range(n):
        rows = []
        for r, amplitude in enumerate(AMPLITUDES[i % len(AMPLITUDES)]):
            proto = protos[(2 * i + r) % NUM_CLASSES]
            noise = NOISE_STD * torch.randn(SEQ_LEN, INPUT_DIM, generator=gen)
            rows.append(amplitude * proto + noise)
        inputs.append((torch.stack(rows),))
    return inputs


def get_inputs():
    return sample_inputs(1)[0]
