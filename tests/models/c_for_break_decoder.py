"""Greedy decoding: `for t in range(max_len)` with a data-dependent `break` at EOS stays a host
loop; tokens collect in a Python list joined by `torch.stack` (a host op)."""
import torch
from torch import nn

class Dec(nn.Module):
    def __init__(self, vocab=12, hidden=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.eos = 0
        self.max_len = 8

    def forward(self, h):
        tok = torch.full((1,), 1, dtype=torch.long)
        tokens = []
        for t in range(self.max_len):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(-1)
            tokens.append(tok)
            if tok.item() == self.eos:
                break
        return torch.stack(tokens, dim=1), h

def get_model():
    torch.manual_seed(0)
    m = Dec()
    with torch.no_grad():
        m.out.bias[0] = 0.3
    return m.eval()

def get_inputs():
    return (torch.randn(1, 16),)

def sample_inputs(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 16, generator=g) * 2,) for _ in range(n)]
