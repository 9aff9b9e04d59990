"""A second set of held-out models for bench/models.py (`--zoo heldout2`):
blocks of well-known architectures picked as a user would pick them, written
after the compiler's tuning and never used for it, so that its figures can be
checked again on programs no one looked at while tuning. Same conventions as
model_zoo.py."""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, Fn, ModelSpec, conv_bn, image, sizes

# --- conv-graph ----------------------------------------------------------------------------------------


class RegNetYBlock(nn.Module):
    """RegNetY's bottleneck (group width 24, so grouped but not depthwise), with squeeze-excite."""

    def __init__(self, c, group_width=24, se_ratio=0.25):
        super().__init__()
        squeeze = int(round(c * se_ratio))
        self.a = conv_bn(c, c, 1)
        self.b = conv_bn(c, c, 3, groups=c // group_width)
        self.se = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(c, squeeze, 1),
            nn.ReLU(),
            nn.Conv2d(squeeze, c, 1),
            nn.Sigmoid(),
        )
        self.c = conv_bn(c, c, 1, act=None)

    def forward(self, x):
        y = self.b(self.a(x))
        return torch.relu(x + self.c(y * self.se(y)))


class MobileNetV3Block(nn.Module):
    """MobileNetV3-Large's 112-channel block: 1x1 expand, depthwise 5x5 with hard-swish,
    squeeze-excite gated by hard-sigmoid, 1x1 project, residual."""

    def __init__(self, c=112, expanded=672, k=5):
        super().__init__()
        squeeze = expanded // 4
        self.expand = conv_bn(c, expanded, 1, act=nn.Hardswish)
        self.dw = conv_bn(expanded, expanded, k, groups=expanded, act=nn.Hardswish)
        self.fc1, self.fc2 = nn.Conv2d(expanded, squeeze, 1), nn.Conv2d(squeeze, expanded, 1)
        self.project = conv_bn(expanded, c, 1, act=None)

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return x + self.project(y * s)


class R2Plus1dBlock(nn.Module):
    """R(2+1)D's residual block for video: each 3x3x3 conv factored into a spatial 1x3x3 and a
    temporal 3x1x1 conv, with the paper's middle width."""

    def __init__(self, c=64):
        super().__init__()
        mid = 27 * c * c // (9 * c + 3 * c)
        self.conv1, self.conv2 = self._factored(c, mid), self._factored(c, mid)
        self.bn1, self.bn2 = nn.BatchNorm3d(c), nn.BatchNorm3d(c)

    @staticmethod
    def _factored(c, mid):
        return nn.Sequential(
            nn.Conv3d(c, mid, (1, 3, 3), padding=(0, 1, 1), bias=False),
            nn.BatchNorm3d(mid),
            nn.ReLU(),
            nn.Conv3d(mid, c, (3, 1, 1), padding=(1, 0, 0), bias=False),
        )

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class YOLOv3UpsampleNeck(nn.Module):
    """YOLOv3's route to its finest scale: 1x1 conv + BN + LeakyReLU(0.1), nearest upsample x2,
    concat with the backbone's feature map, then five alternating 1x1 / 3x3 convs."""

    def __init__(self, c=256):
        super().__init__()
        leaky = partial(nn.LeakyReLU, 0.1)
        h = c // 2
        self.reduce = conv_bn(c, h, 1, act=leaky)
        self.convs = nn.Sequential(
            conv_bn(h + c, h, 1, act=leaky),
            conv_bn(h, c, 3, act=leaky),
            conv_bn(c, h, 1, act=leaky),
            conv_bn(h, c, 3, act=leaky),
            conv_bn(c, h, 1, act=leaky),
        )

    def forward(self, coarse, fine):
        up = F.interpolate(self.reduce(coarse), scale_factor=2.0, mode="nearest")
        return self.convs(torch.cat([up, fine], 1))


# --- norm ----------------------------------------------------------------------------------------------


class VQGANResBlock(nn.Module):
    """The VQGAN / Stable Diffusion VAE encoder's residual block that widens the channels:
    GroupNorm(32) + SiLU + 3x3 conv twice, and a 1x1 conv on the shortcut."""

    def __init__(self, cin=128, cout=256):
        super().__init__()
        self.norm1, self.conv1 = nn.GroupNorm(32, cin, eps=1e-6), nn.Conv2d(cin, cout, 3, padding=1)
        self.norm2, self.conv2 = nn.GroupNorm(32, cout, eps=1e-6), nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x):
        h = self.conv1(F.silu(self.norm1(x)))
        return self.shortcut(x) + self.conv2(F.silu(self.norm2(h)))


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor, by permuting (as timm's)."""

    def forward(self, x):
        y = F.layer_norm(x.permute(0, 2, 3, 1), self.normalized_shape, self.weight, self.bias, self.eps)
        return y.permute(0, 3, 1, 2)


class ConvNeXtDownsample(nn.Module):
    """ConvNeXt's downsampling layer between stages: channel LayerNorm, then a 2x2 stride-2 conv."""

    def __init__(self, c=96):
        super().__init__()
        self.norm = LayerNorm2d(c, eps=1e-6)
        self.conv = nn.Conv2d(c, 2 * c, 2, stride=2)

    def forward(self, x):
        return self.conv(self.norm(x))


class StyleTransferResBlock(nn.Module):
    """The residual block of Johnson et al.'s fast style transfer network: reflection padding,
    3x3 conv, InstanceNorm and ReLU, twice (no ReLU after the second)."""

    def __init__(self, c=128):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(c, c, 3),
            nn.InstanceNorm2d(c, affine=True),
            nn.ReLU(),
            nn.ReflectionPad2d(1),
            nn.Conv2d(c, c, 3),
            nn.InstanceNorm2d(c, affine=True),
        )

    def forward(self, x):
        return x + self.body(x)


# --- whole-cnn -----------------------------------------------------------------------------------------


class VGG11BN(nn.Module):
    """VGG-11 with batch norm (configuration A), global average pool and a CIFAR-style 512-wide head."""

    CONFIG = (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M")

    def __init__(self, classes=100):
        super().__init__()
        layers, cin = [], 3
        for v in self.CONFIG:
            if v == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.BatchNorm2d(v), nn.ReLU()]
                cin = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(512, 512), nn.ReLU(), nn.Dropout(0.5), nn.Linear(512, classes)
        )

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 at width 0.5: a 3x3 stride-2 stem, then 13 depthwise-separable layers, pool, linear."""

    # (output channels at width 1.0, stride) of each depthwise-separable layer.
    CONFIG = (
        (64, 1),
        (128, 2),
        (128, 1),
        (256, 2),
        (256, 1),
        (512, 2),
        *[(512, 1)] * 5,
        (1024, 2),
        (1024, 1),
    )

    def __init__(self, width=0.5, classes=1000):
        super().__init__()
        cin = int(32 * width)
        layers = [conv_bn(3, cin, 3, 2)]
        for c, stride in self.CONFIG:
            cout = int(c * width)
            layers += [conv_bn(cin, cin, 3, stride, groups=cin), conv_bn(cin, cout, 1)]
            cin = cout
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


# --- memory-bound --------------------------------------------------------------------------------------


def rms_normalize_whole(x):
    return x * torch.rsqrt(x.pow(2).mean() + 1e-6)


def softmax_per_sample(x):
    """A softmax over each sample's whole C x H x W map (one probability map per image)."""
    return torch.softmax(x.flatten(1), dim=1).view_as(x)


# --- transformer ---------------------------------------------------------------------------------------


class BertLayer(nn.Module):
    """A post-norm BERT-base encoder layer built on nn.MultiheadAttention, with a GELU MLP."""

    def __init__(self, d=768, heads=12, hidden=3072):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.n1, self.n2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, x):
        x = self.n1(x + self.attn(x, x, x, need_weights=False)[0])
        return self.n2(x + self.down(F.gelu(self.up(x))))


class RMSNorm(nn.Module):
    """T5's and LLaMA's norm: scale by the root mean square over the last dim, no mean, no bias."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(d) + 0.5)
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class T5GatedFFN(nn.Module):
    """T5 v1.1's feed-forward sublayer: RMSNorm, gated GELU (tanh form), no biases, residual."""

    def __init__(self, d=768, hidden=2048):
        super().__init__()
        self.norm = RMSNorm(d)
        self.wi_0, self.wi_1 = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.wo = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.wo(F.gelu(self.wi_0(h), approximate="tanh") * self.wi_1(h))


class LlamaAttention(nn.Module):
    """LLaMA's attention sublayer: RMSNorm, rotary position embeddings computed in the forward,
    grouped-query attention (kv heads repeated), causal scaled_dot_product_attention, residual."""

    def __init__(self, d=1024, heads=16, kv_heads=4, base=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim, self.base = heads, kv_heads, d // heads, base
        self.norm = RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.kv = nn.Linear(d, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(d, d, bias=False)

    def _rotary(self, s, x):
        hd = self.head_dim
        inv_freq = 1.0 / self.base ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)
        freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), inv_freq)
        angles = torch.cat([freqs, freqs], -1)
        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)

    @staticmethod
    def _rotate(t, cos, sin):
        a, b = t.chunk(2, -1)
        return t * cos + torch.cat([-b, a], -1) * sin

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm(x)
        q = self.q(h).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(h).view(b, s, 2 * self.kv_heads, self.head_dim).transpose(1, 2).chunk(2, 1)
        cos, sin = self._rotary(s, x)
        q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
        rep = self.heads // self.kv_heads
        k, v = (
            t[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, -1, s, self.head_dim)
            for t in (k, v)
        )
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.o(a.transpose(1, 2).reshape(b, s, d))


def _tokens(d, cuda, cpu=(2, 32), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec(
            "regnety_block", conv, lambda: RegNetYBlock(72), image(72), "RegNetY-3.2GF stage 1, 3 groups"
        ),
        ModelSpec(
            "mobilenetv3_block",
            conv,
            MobileNetV3Block,
            image(112, cuda_hw=28, cuda_batch=64, cpu_hw=16),
            "112 -> 672 -> 112, dw 5x5, hard-swish, hard-sigmoid SE",
        ),
        ModelSpec(
            "r2plus1d_block",
            conv,
            R2Plus1dBlock,
            sizes((8, 64, 8, 56, 56), (1, 64, 4, 16, 16), (2, 64, 3, 5, 5)),
            "64ch, 1x3x3 then 3x1x1, middle 144",
        ),
        ModelSpec(
            "yolov3_upsample_neck",
            conv,
            YOLOv3UpsampleNeck,
            sizes(
                [(16, 256, 26, 26), (16, 256, 52, 52)],
                [(2, 256, 8, 8), (2, 256, 16, 16)],
                [(2, 256, 4, 4), (2, 256, 8, 8)],
            ),
            "BN + LeakyReLU(0.1), nearest x2, concat",
        ),
        ModelSpec(
            "vqgan_resblock",
            norm,
            VQGANResBlock,
            image(128, cuda_hw=128, cuda_batch=2, cpu_batch=1, cpu_hw=16),
            "128 -> 256, GroupNorm(32) + SiLU, 1x1 shortcut",
        ),
        ModelSpec(
            "convnext_downsample", norm, ConvNeXtDownsample, image(96), "channel LayerNorm, 2x2 s2 96->192"
        ),
        ModelSpec(
            "style_transfer_resblock",
            norm,
            StyleTransferResBlock,
            image(128, cuda_hw=64, cuda_batch=8, cpu_batch=2, cpu_hw=16),
            "reflection pad, InstanceNorm",
        ),
        ModelSpec(
            "vgg11_bn",
            whole,
            VGG11BN,
            sizes((32, 3, 224, 224), (2, 3, 32, 32), (2, 3, 32, 32)),
            "100 classes",
        ),
        ModelSpec(
            "mobilenet_v1_050",
            whole,
            MobileNetV1,
            sizes((32, 3, 224, 224), (2, 3, 64, 64), (2, 3, 32, 32)),
            "width 0.5",
        ),
        ModelSpec(
            "rms_normalize_whole", memory, lambda: Fn(rms_normalize_whole), image(256), "x * rsqrt(mean(x^2))"
        ),
        ModelSpec(
            "softmax_per_sample",
            memory,
            lambda: Fn(softmax_per_sample),
            image(64, cuda_hw=112),
            "softmax over C*H*W",
        ),
        ModelSpec(
            "bert_layer", transformer, BertLayer, _tokens(768, (16, 384)), "d 768, nn.MultiheadAttention"
        ),
        ModelSpec(
            "t5_gated_ffn", transformer, T5GatedFFN, _tokens(768, (16, 512)), "d 768, ff 2048, gated GELU"
        ),
        ModelSpec(
            "llama_attention",
            transformer,
            LlamaAttention,
            _tokens(1024, (8, 512), cpu=(2, 64)),
            "d 1024, 16 heads, 4 kv heads, rotary, causal",
        ),
    ]
