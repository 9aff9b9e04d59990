"""Held-out models for bench/models.py (`--zoo heldout`): written before the
layout, split and tiling work was measured, and never used to tune it, so
that the suite's own figures can be checked on programs the work did not
see. Same conventions as model_zoo.py."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, Fn, ModelSpec, conv_bn, image, sizes


class ShuffleUnit(nn.Module):
    """A ShuffleNetV2 unit: split, 1x1 / depthwise 3x3 / 1x1 on one half, concat, channel shuffle."""

    def __init__(self, c):
        super().__init__()
        h = c // 2
        self.branch = nn.Sequential(conv_bn(h, h, 1), conv_bn(h, h, 3, groups=h, act=None), conv_bn(h, h, 1))

    def forward(self, x):
        a, b = x.chunk(2, dim=1)
        y = torch.cat([a, self.branch(b)], 1)
        n, c, hh, ww = y.shape
        return y.view(n, 2, c // 2, hh, ww).transpose(1, 2).reshape(n, c, hh, ww)


class ConvNeXtBlock(nn.Module):
    """Depthwise 7x7, LayerNorm over channels (permuted), MLP, layer scale, residual."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.up, self.down = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.rand(c) * 0.5)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.gamma * self.down(F.gelu(self.up(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class SqueezeExcite(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(c, c // r, 1), nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(F.silu(self.fc1(s))))


class MBConvSE(nn.Module):
    """EfficientNet's MBConv: expand 1x1, depthwise 5x5, squeeze-excite, project, residual."""

    def __init__(self, c, expand=4):
        super().__init__()
        e = c * expand
        self.expand = conv_bn(c, e, 1, act=nn.SiLU)
        self.dw = conv_bn(e, e, 5, groups=e, act=nn.SiLU)
        self.se = SqueezeExcite(e)
        self.project = conv_bn(e, c, 1, act=None)

    def forward(self, x):
        return x + self.project(self.se(self.dw(self.expand(x))))


class InceptionBlock(nn.Module):
    """Four parallel branches (1x1, 1x1-3x3, 1x1-5x5, maxpool-1x1) concatenated."""

    def __init__(self, c):
        super().__init__()
        self.b1 = conv_bn(c, 64, 1)
        self.b2 = nn.Sequential(conv_bn(c, 48, 1), conv_bn(48, 64, 3))
        self.b3 = nn.Sequential(conv_bn(c, 16, 1), conv_bn(16, 32, 5))
        self.b4 = conv_bn(c, 32, 1)

    def forward(self, x):
        pooled = F.max_pool2d(x, 3, 1, 1)
        return torch.cat([self.b1(x), self.b2(x), self.b3(x), self.b4(pooled)], 1)


class FPNMerge(nn.Module):
    """A feature-pyramid merge: lateral 1x1, nearest upsample of the coarser map, add, 3x3 smooth."""

    def __init__(self, c):
        super().__init__()
        self.lateral = nn.Conv2d(c, 128, 1)
        self.smooth = nn.Conv2d(128, 128, 3, padding=1)

    def forward(self, fine, coarse):
        return self.smooth(self.lateral(fine) + F.interpolate(coarse, scale_factor=2.0, mode="nearest"))


class GANGenerator(nn.Module):
    """Transposed convolutions with InstanceNorm and ReLU, tanh at the end."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.ConvTranspose2d(128, 64, 4, 2, 1),
            nn.InstanceNorm2d(64, affine=True),
            nn.ReLU(),
            nn.ConvTranspose2d(64, 32, 4, 2, 1),
            nn.InstanceNorm2d(32, affine=True),
            nn.ReLU(),
            nn.Conv2d(32, 3, 3, padding=1),
            nn.Tanh(),
        )

    def forward(self, x):
        return self.net(x)


class DiffusionResBlock(nn.Module):
    """A diffusion U-Net's residual block at batch 1: GroupNorm(32) + SiLU + conv, twice."""

    def __init__(self, c):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(32, c), nn.Conv2d(c, c, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(32, c), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        h = self.c1(F.silu(self.n1(x)))
        return x + self.c2(F.silu(self.n2(h)))


class AlexNetSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4, 2),
            nn.ReLU(),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(384, 256, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(3, 2),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(256 * 6 * 6, 1024), nn.ReLU(), nn.Linear(1024, 100))

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.features(x), 6))


def standardize_whole(x):
    return (x - x.mean()) / x.std()


def logsumexp_all(x):
    return torch.logsumexp(x.flatten(), 0)


def l1_normalize_rows_of_maps(x):
    return x / x.abs().sum((1, 2, 3), keepdim=True)


class ViTBlock(nn.Module):
    """A pre-norm ViT block with torch's scaled_dot_product_attention."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.n1(x)).split(d, -1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(a)
        return x + self.down(F.gelu(self.up(self.n2(x))))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec("shuffle_unit", conv, lambda: ShuffleUnit(116), image(116, cuda_hw=28, cuda_batch=64)),
        ModelSpec("convnext_block", conv, lambda: ConvNeXtBlock(96), image(96)),
        ModelSpec("mbconv_se", conv, lambda: MBConvSE(40), image(40)),
        ModelSpec("inception_block", conv, lambda: InceptionBlock(192), image(192, cuda_hw=28)),
        ModelSpec(
            "fpn_merge",
            conv,
            lambda: FPNMerge(256),
            sizes(
                [(16, 256, 64, 64), (16, 128, 32, 32)],
                [(2, 256, 32, 32), (2, 128, 16, 16)],
                [(2, 256, 8, 8), (2, 128, 4, 4)],
            ),
        ),
        ModelSpec(
            "gan_generator",
            norm,
            GANGenerator,
            sizes((8, 128, 32, 32), (2, 128, 8, 8), (2, 128, 3, 3)),
        ),
        ModelSpec(
            "diffusion_resblock",
            norm,
            lambda: DiffusionResBlock(128),
            image(128, cuda_hw=64, cuda_batch=1, cpu_batch=1, cpu_hw=32),
        ),
        ModelSpec(
            "alexnet_small", whole, AlexNetSmall, sizes((64, 3, 224, 224), (2, 3, 128, 128), (2, 3, 64, 64))
        ),
        ModelSpec("standardize_whole", memory, lambda: Fn(standardize_whole), image(128)),
        ModelSpec("logsumexp_all", memory, lambda: Fn(logsumexp_all), image(128)),
        ModelSpec(
            "l1_normalize_maps", memory, lambda: Fn(l1_normalize_rows_of_maps), image(64, cuda_batch=4)
        ),
        ModelSpec(
            "vit_block",
            transformer,
            lambda: ViTBlock(384, 6),
            sizes((32, 197, 384), (2, 65, 384), (2, 9, 384)),
        ),
    ]
