"""A flag set from literals in the arms of a rank test, inside a host loop (transformers'
`_preprocess_mask_arguments` returns `early_exit` True for a 4-D mask and False otherwise, and
`create_causal_mask` tests it): the rank test is fixed by the signature and the flag folds with it,
so exploration never forces `if early_exit:` with a mask of the wrong rank. The loop's break is
data-dependent."""
import torch
from torch import nn

D = 4
DYNAMIC = {"x": {0: "rows"}}


def prepare(mask):
    if len(mask.shape) == 4:
        return True, mask
    return False, mask.to(torch.bool)


class ShapeFlagInLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(D, D)

    def forward(self, x):
        h = x
        for _ in range(4):
            early_exit, mask = prepare(torch.ones_like(h))
            if early_exit:
                h = h + mask.sum()
            else:
                h = torch.where(mask, torch.tanh(self.fc(h)), h)
            if h.sum() > 0:
                break
        return h


def get_model():
    torch.manual_seed(0)
    return ShapeFlagInLoop().eval()


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1 + i % 4, D, generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
