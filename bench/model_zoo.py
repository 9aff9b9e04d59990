"""The models of bench/models.py, written with torch.nn only (no torchvision).

Each `ModelSpec` names a model, its group, a constructor and the input
shapes at three sizes: `cuda` (realistic batches for one GPU), `cpu` (small
batches and images, so the whole CPU suite runs in minutes on 2 cores) and
`small` (tiny, for checking the script). `build` returns the model in eval
mode with random parameters: batch-norm running statistics come from one
training-mode pass over random data (so they are neither 0/1 nor far from
the activations' real scale, which keeps deep nets finite), and every norm's
affine weight and bias is random.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

GROUPS = ("conv-graph", "norm", "whole-cnn", "memory-bound", "transformer")


@dataclass(frozen=True)
class ModelSpec:
    name: str
    group: str
    make: Callable[[], nn.Module]
    shapes: dict  # size ("cuda", "cpu", "small") -> list of input shapes
    note: str = ""

    def build(self, seed: int = 0) -> nn.Module:
        """The model with seeded random parameters and calibrated statistics, in eval mode."""
        torch.manual_seed(seed)
        model = self.make()
        calibrate_batch_norms(model, [torch.randn(s) for s in self.shapes["cpu"]])
        randomize_affine(model, seed)
        return model.eval()


# --- building blocks ---------------------------------------------------------------------------------


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU, dims=2):
    conv = (nn.Conv2d, nn.Conv3d)[dims - 2]
    bn = (nn.BatchNorm2d, nn.BatchNorm3d)[dims - 2]
    layers = [conv(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), bn(cout)]
    return nn.Sequential(*layers, *([act()] if act else []))


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(conv_bn(cin, width, 3, stride), conv_bn(width, cout, 3, act=None))
        self.shortcut = _shortcut(cin, cout, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = width * self.expansion
        self.body = nn.Sequential(
            conv_bn(cin, width, 1), conv_bn(width, width, 3, stride), conv_bn(width, cout, 1, act=None)
        )
        self.shortcut = _shortcut(cin, cout, stride)

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def _shortcut(cin, cout, stride):
    # As torchvision's ResNet: a 1x1 conv + BN where the shape changes.
    return nn.Identity() if cin == cout and stride == 1 else conv_bn(cin, cout, 1, stride, act=None)


class ResNet(nn.Module):
    def __init__(self, block, depths, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for k, depth in enumerate(depths):
            width = 64 * 2**k
            for j in range(depth):
                layers.append(block(cin, width, 2 if j == 0 and k > 0 else 1))
                cin = width * block.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, depthwise 3x3, 1x1 project, residual when shapes allow."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        expand_layers = [conv_bn(cin, hidden, 1, act=nn.ReLU6)] if expand != 1 else []
        self.body = nn.Sequential(
            *expand_layers,
            conv_bn(hidden, hidden, 3, stride, groups=hidden, act=nn.ReLU6),
            conv_bn(hidden, cout, 1, act=None),
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    # (expansion, channels, repeats, stride), as torchvision's mobilenet_v2.
    CONFIG = (
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    )

    def __init__(self, classes=1000):
        super().__init__()
        layers, cin = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)], 32
        for t, c, n, s in self.CONFIG:
            for j in range(n):
                layers.append(InvertedResidual(cin, c, s if j == 0 else 1, t))
                cin = c
        layers.append(conv_bn(cin, 1280, 1, act=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(1280, classes)

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


class DenseLayer(nn.Module):
    def __init__(self, cin, growth, bn_size=4):
        super().__init__()
        self.body = nn.Sequential(
            nn.BatchNorm2d(cin),
            nn.ReLU(),
            nn.Conv2d(cin, bn_size * growth, 1, bias=False),
            nn.BatchNorm2d(bn_size * growth),
            nn.ReLU(),
            nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False),
        )

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class DenseBlockTransition(nn.Module):
    """DenseNet-121's first dense block (6 layers, growth 32) and its transition layer."""

    def __init__(self, cin=64, layers=6, growth=32):
        super().__init__()
        self.block = nn.Sequential(*[DenseLayer(cin + k * growth, growth) for k in range(layers)])
        c = cin + layers * growth
        self.transition = nn.Sequential(
            nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, c // 2, 1, bias=False), nn.AvgPool2d(2)
        )

    def forward(self, x):
        return self.transition(self.block(x))


class VGGStack(nn.Module):
    def __init__(self, cin=64, cout=128, convs=3):
        super().__init__()
        layers = []
        for k in range(convs):
            layers += [nn.Conv2d(cin if k == 0 else cout, cout, 3, padding=1), nn.ReLU()]
        self.body = nn.Sequential(*layers, nn.MaxPool2d(2))

    def forward(self, x):
        return self.body(x)


class Fire(nn.Module):
    """SqueezeNet's fire module: 1x1 squeeze, then 1x1 and 3x3 expands concatenated."""

    def __init__(self, cin=96, squeeze=16, expand=64):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, squeeze, 1), nn.ReLU())
        self.e1 = nn.Sequential(nn.Conv2d(squeeze, expand, 1), nn.ReLU())
        self.e3 = nn.Sequential(nn.Conv2d(squeeze, expand, 3, padding=1), nn.ReLU())

    def forward(self, x):
        s = self.squeeze(x)
        return torch.cat([self.e1(s), self.e3(s)], 1)


class ConvNormAct(nn.Module):
    def __init__(self, cin, cout, norm: nn.Module, act=nn.SiLU):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), norm, act())

    def forward(self, x):
        return self.body(x)


class ConvTransposeScalePool(nn.Module):
    """ConvTranspose2d, then * scale and a global average pool (a KernelBench-style epilogue)."""

    def __init__(self, cin=64, cout=32, scale=0.5):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cout, 4, stride=2, padding=1)
        self.scale = scale

    def forward(self, x):
        return (self.up(x) * self.scale).mean((2, 3), keepdim=True)


class UNet(nn.Module):
    """Two levels down (conv pairs, maxpool), one up by ConvTranspose2d and one by
    nearest upsampling, skip connections concatenated."""

    def __init__(self, cin=3, base=32, classes=2):
        super().__init__()
        b = base
        self.enc1, self.enc2 = self._pair(cin, b), self._pair(b, 2 * b)
        self.mid = self._pair(2 * b, 4 * b)
        self.up2 = nn.ConvTranspose2d(4 * b, 2 * b, 2, stride=2)
        self.dec2 = self._pair(4 * b, 2 * b)
        self.up1 = nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(2 * b, b, 1))
        self.dec1 = self._pair(2 * b, b)
        self.head = nn.Conv2d(b, classes, 1)

    @staticmethod
    def _pair(cin, cout):
        return nn.Sequential(conv_bn(cin, cout), conv_bn(cout, cout))

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(nn.functional.max_pool2d(e1, 2))
        m = self.mid(nn.functional.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.head(d1)


class Fn(nn.Module):
    """A function of the inputs as a module (no parameters)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *xs):
        return self.fn(*xs)


def normalize_whole(x):
    return x / torch.linalg.vector_norm(x)


def frobenius(x):
    return torch.norm(x, p="fro")


def mean_all(x):
    return x.mean()


def var_all(x):
    return x.var()


def global_avg_pool(x):
    return x.mean((2, 3))


class MLPBlock(nn.Module):
    """LayerNorm, then a GELU MLP with a residual."""

    def __init__(self, d, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up, self.down = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class GPTBlock(nn.Module):
    """A pre-norm GPT-2 block: causal attention written out (no fused SDPA), then an MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.norm = nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = MLPBlock(d, 4 * d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm(x)).split(d, dim=-1)
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        att = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        return self.mlp(x)


# --- parameters --------------------------------------------------------------------------------------


def calibrate_batch_norms(model: nn.Module, inputs: list) -> None:
    """Running statistics from one training-mode pass (cumulative average), as a trained net would have."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    for m in norms:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        model(*inputs)
    for m in norms:
        m.momentum = 0.1


def randomize_affine(model: nn.Module, seed: int) -> None:
    """Every norm's weight around 1 and bias around 0, drawn from a seeded generator."""
    g = torch.Generator().manual_seed(seed)
    affine = (
        nn.modules.batchnorm._BatchNorm,
        nn.GroupNorm,
        nn.LayerNorm,
        nn.modules.instancenorm._InstanceNorm,
    )
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, affine) and getattr(m, "weight", None) is not None:
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=g) * 0.4 - 0.2)


# --- the suite ---------------------------------------------------------------------------------------


def sizes(cuda, cpu, small) -> dict:
    """Each size's input shapes; a bare shape stands for one input."""
    one = lambda s: [s] if isinstance(s[0], int) else list(s)  # noqa: E731
    return {"cuda": one(cuda), "cpu": one(cpu), "small": one(small)}


def image(c, cuda_hw=56, cuda_batch=32, cpu_hw=32, cpu_batch=4, small_hw=9):
    return sizes(
        (cuda_batch, c, cuda_hw, cuda_hw), (cpu_batch, c, cpu_hw, cpu_hw), (2, c, small_hw, small_hw)
    )


def _conv_block(act):
    return lambda: conv_bn(64, 128, 3, act=act)


def _tokens(d, cuda=(16, 256), cpu=(2, 64), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec("conv_bn_relu", conv, _conv_block(nn.ReLU), image(64), "64->128 3x3"),
        ModelSpec("conv_bn_relu6", conv, _conv_block(nn.ReLU6), image(64), "64->128 3x3"),
        ModelSpec("conv_bn_hardswish", conv, _conv_block(nn.Hardswish), image(64), "64->128 3x3"),
        ModelSpec("conv_bn_silu", conv, _conv_block(nn.SiLU), image(64), "64->128 3x3"),
        ModelSpec("resnet_basic_block", conv, lambda: BasicBlock(64, 64), image(64), "64ch"),
        ModelSpec("resnet_bottleneck", conv, lambda: Bottleneck(256, 64), image(256), "256ch, width 64"),
        ModelSpec("vgg_stack", conv, VGGStack, image(64, cuda_hw=112), "3x (3x3 64->128 + ReLU), maxpool"),
        ModelSpec("dense_block", conv, DenseBlockTransition, image(64), "6 layers, growth 32, transition"),
        ModelSpec(
            "inverted_residual",
            conv,
            lambda: InvertedResidual(32, 32, 1, 6),
            image(32, cuda_hw=112),
            "32ch, x6 expand, depthwise",
        ),
        ModelSpec("fire_module", conv, Fire, image(96), "96 -> 16 -> 64+64"),
        ModelSpec(
            "conv3d_bn_relu",
            conv,
            lambda: conv_bn(32, 64, 3, dims=3),
            sizes((8, 32, 16, 56, 56), (2, 32, 8, 16, 16), (2, 32, 3, 5, 6)),
            "32->64 3x3x3",
        ),
        ModelSpec(
            "conv_transpose_scale_gap", conv, ConvTransposeScalePool, image(64), "64->32 4x4 s2, *0.5, mean"
        ),
        ModelSpec(
            "unet_small",
            conv,
            UNet,
            sizes((16, 3, 128, 128), (2, 3, 64, 64), (2, 3, 12, 12)),
            "2 levels, base 32",
        ),
        ModelSpec(
            "conv_groupnorm_silu",
            norm,
            lambda: ConvNormAct(64, 128, nn.GroupNorm(32, 128)),
            image(64),
            "32 groups",
        ),
        ModelSpec(
            "conv_groupnorm_few",
            norm,
            lambda: ConvNormAct(32, 64, nn.GroupNorm(2, 64)),
            image(32, cuda_hw=128, cuda_batch=2, cpu_batch=1, cpu_hw=64),
            "2 groups, batch 1-2: few long rows",
        ),
        ModelSpec(
            "conv_instancenorm_relu",
            norm,
            lambda: ConvNormAct(32, 64, nn.InstanceNorm2d(64, affine=True), nn.ReLU),
            image(32, cuda_hw=128, cuda_batch=4, cpu_batch=2, cpu_hw=64),
            "affine",
        ),
        ModelSpec(
            "resnet18",
            whole,
            lambda: ResNet(BasicBlock, (2, 2, 2, 2)),
            sizes((32, 3, 224, 224), (2, 3, 64, 64), (2, 3, 32, 32)),
        ),
        ModelSpec(
            "resnet50",
            whole,
            lambda: ResNet(Bottleneck, (3, 4, 6, 3)),
            sizes((16, 3, 224, 224), (2, 3, 64, 64), (2, 3, 32, 32)),
        ),
        ModelSpec(
            "mobilenet_v2",
            whole,
            MobileNetV2,
            sizes((32, 3, 224, 224), (2, 3, 64, 64), (2, 3, 32, 32)),
            "width 1.0",
        ),
        ModelSpec("normalize_whole", memory, lambda: Fn(normalize_whole), image(256), "x / ||x||"),
        ModelSpec("frobenius_norm", memory, lambda: Fn(frobenius), image(256), "4-D"),
        ModelSpec("mean_all", memory, lambda: Fn(mean_all), image(256), "x.mean()"),
        ModelSpec("var_all", memory, lambda: Fn(var_all), image(256), "x.var()"),
        ModelSpec(
            "global_avg_pool",
            memory,
            lambda: Fn(global_avg_pool),
            image(128, cuda_hw=112, cpu_hw=64),
            "mean over HxW",
        ),
        ModelSpec("layernorm_mlp", transformer, lambda: MLPBlock(768, 3072), _tokens(768), "d 768"),
        ModelSpec("gpt_block", transformer, lambda: GPTBlock(768, 12), _tokens(768), "d 768, 12 heads"),
    ]
