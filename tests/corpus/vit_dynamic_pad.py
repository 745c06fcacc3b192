"""timm's VisionTransformer at any image size: PatchEmbed pads images that are not a multiple of the
patch size, and the position embedding is resampled (bicubic, antialiased) when the patch grid
differs from the one it was trained at: shape-determined branches in resample_abs_pos_embed, and
`if to_cat:` on the list of prefix tokens, whose length is fixed by the configuration.

The sizes take each arm: 32x32 and 28x32 (padded) keep the 4x4 grid, 16x64 has a 2x8 grid of as
many tokens (resampled all the same), the others change the number of tokens.
"""
import torch
from torch import nn

import _corpus
from timm.models.vision_transformer import VisionTransformer

SIZES = [(32, 32), (28, 32), (32, 20), (24, 24), (36, 28), (16, 64)]


class PaddedViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.vit = VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, mlp_ratio=2.0,
                                     num_classes=10, dynamic_img_size=True, dynamic_img_pad=True)

    def forward(self, x):
        return self.vit(x)


def get_model():
    return _corpus.randomize(PaddedViT(), seed=0, scale=0.3)


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, *SIZES[i % len(SIZES)], generator=gen),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
