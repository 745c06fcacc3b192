"""State that grows: `seq = torch.cat([seq, tok], dim=1)` in a `while` on the sequence length;
the region over `seq` gets a symbolic length dim."""
import torch
from torch import nn

class Grow(nn.Module):
    def __init__(self, vocab=10, d=8):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.proj = nn.Linear(d, vocab)
        self.max_len = 7
        self.eos = 0

    def forward(self, seq):
        while seq.shape[1] < self.max_len:
            ctx = self.emb(seq).mean(dim=1)
            tok = self.proj(ctx).argmax(-1, keepdim=True)
            seq = torch.cat([seq, tok], dim=1)
            if (tok == self.eos).all():
                break
        return seq

def get_model():
    torch.manual_seed(0)
    model = Grow()
    with torch.no_grad():
        model.proj.bias[0] += 0.5  # make EOS common enough to end some sequences early
    return model.eval()

def get_inputs():
    return (torch.tensor([[3, 4]]),)

def sample_inputs(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randint(1, 10, (1, 2), generator=g),) for _ in range(n)]
