"""Early exit over timm's VisionTransformer blocks: after each encoder block an exit head reads the
class token, and the model returns as soon as one is confident enough."""
import torch
from torch import nn

import _corpus
from timm.models.vision_transformer import VisionTransformer

DEPTH = 4
DIM = 32
CLASSES = 10
THRESHOLD = 0.33


class EarlyExitViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.vit = VisionTransformer(img_size=32, patch_size=8, embed_dim=DIM, depth=DEPTH, num_heads=2,
                                     mlp_ratio=2.0, num_classes=CLASSES)
        self.exits = nn.ModuleList([nn.Linear(DIM, CLASSES) for _ in range(DEPTH - 1)])
        self.threshold = THRESHOLD

    def forward(self, x):
        h = self.vit.patch_embed(x)
        h = self.vit._pos_embed(h)
        h = self.vit.norm_pre(h)
        for i, exit_head in enumerate(self.exits):
            h = self.vit.blocks[i](h)
            logits = exit_head(self.vit.norm(h)[:, 0])
            if torch.softmax(logits, dim=-1).max() > self.threshold:
                return logits, i
        h = self.vit.blocks[DEPTH - 1](h)
        return self.vit.forward_head(self.vit.norm(h)), DEPTH - 1


def get_model():
    model = _corpus.randomize(EarlyExitViT(), seed=0, scale=0.3)
    with torch.no_grad():
        for head, gain in zip(model.exits, (0.3, 0.6, 1.2)):  # later exits are more confident
            head.weight.mul_(gain)
    return model


def sample_inputs(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 3, 32, 32, generator=gen) * (0.5 + 0.25 * (i % 4)),) for i in range(n)]


def get_inputs():
    return sample_inputs(1)[0]
