"""Library helpers as transformers writes them: a module-level function that checks its `*tensors`
with `len()` and `inspect.signature()` of the method it is given, then calls it; an embedding whose
`if input_ids is not None:` sees forward's tensor input (never None); an assert whose message is an
implicitly concatenated f-string, and a raise whose message is one with a run-time part. All of it folds at conversion time; the gate stays data-dependent."""
import inspect

import torch
from torch import nn

D = 8
LIMIT = 1e4
DYNAMIC = {"x": {0: "batch"}}  # so that `x is not None` is not folded for one fixed input shape


def apply_in_chunks(forward_fn, chunk_size, chunk_dim, *tensors):
    assert len(tensors) > 0, f"{tensors} has to be a tuple of tensors"
    expected = len(inspect.signature(forward_fn).parameters)
    if expected != len(tensors):
        raise ValueError(f"forward_fn expects {expected} arguments, "
                         f"but {len(tensors)} were given")
    if chunk_size > 0:
        chunks = [t.chunk(t.shape[chunk_dim] // chunk_size, dim=chunk_dim) for t in tensors]
        return torch.cat([forward_fn(*parts) for parts in zip(*chunks)], dim=chunk_dim)
    return forward_fn(*tensors)


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, D)

    def forward(self, x=None, embeds=None):
        if x is not None:
            shape = x.size()
        else:
            shape = embeds.size()[:-1]
        if embeds is None:
            embeds = self.proj(x).view(*shape)
        if embeds.mean() > 0:
            return torch.relu(embeds)
        return -embeds


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = Embed()
        self.up = nn.Linear(D, 2 * D)
        self.down = nn.Linear(2 * D, D)
        self.chunk_size = 0
        self.name = "net"

    def feed_forward(self, h, residual):
        return self.down(torch.relu(self.up(h))) + residual

    def forward(self, x):
        if x.shape[0] > 64:
            raise ValueError(f"{self.name}: a batch of {x.shape[0]} rows, "
                             f"more than 64")
        h = self.embed(x=x)
        assert h.abs().max() < LIMIT, f"{self.name}: activations " f"above {LIMIT}"
        return apply_in_chunks(self.feed_forward, self.chunk_size, 1, h, x)


def get_model():
    torch.manual_seed(0)
    return Net().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1 + i % 3, D, generator=gen) + (1.0 if i % 2 else -1.0),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
