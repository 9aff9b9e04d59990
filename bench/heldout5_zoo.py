"""A fifth set of held-out models for bench/models.py (`--zoo heldout5`):
blocks and small whole nets of well-known architectures picked as a user
would pick them, none of them in the suite or the first four held-out sets,
written after the compiler's tuning and never used for it (nor looked at with
it), so that its figures can be checked on programs no one tuned for. Same
conventions as model_zoo.py."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, Fn, ModelSpec, conv_bn, image, sizes


def _affine(*shape):
    """A norm's weight and bias drawn as model_zoo.randomize_affine draws them (for norms written by hand)."""
    return nn.Parameter(torch.rand(shape) + 0.5), nn.Parameter(torch.rand(shape) * 0.4 - 0.2)


# --- conv-graph ----------------------------------------------------------------------------------------


class LCNetSE(nn.Module):
    """PP-LCNet's squeeze-excite: average pool, 1x1 conv to C/4, ReLU, 1x1 conv back, hard-sigmoid gate."""

    def __init__(self, c, reduction=4):
        super().__init__()
        self.reduce, self.expand = nn.Conv2d(c, c // reduction, 1), nn.Conv2d(c // reduction, c, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.expand(F.relu(self.reduce(x.mean((2, 3), keepdim=True)))))


class LCNetBlock(nn.Module):
    """PP-LCNet's depthwise-separable block: depthwise kxk conv + BN + hard-swish, optional SE, then a
    1x1 conv + BN + hard-swish."""

    def __init__(self, cin, cout, k, stride, se):
        super().__init__()
        self.dw = conv_bn(cin, cin, k, stride, groups=cin, act=nn.Hardswish)
        self.se = LCNetSE(cin) if se else nn.Identity()
        self.pw = conv_bn(cin, cout, 1, act=nn.Hardswish)

    def forward(self, x):
        return self.pw(self.se(self.dw(x)))


class PPLCNetTail(nn.Module):
    """PP-LCNet x1.0's last stage and head (Cui et al., PaddleClas): two 5x5 depthwise-separable blocks
    with SE (256 -> 512 stride 2, 512 -> 512), global average pool, a 1x1 conv to 1280 without BN,
    hard-swish, a 1000-class linear."""

    def __init__(self, classes=1000):
        super().__init__()
        self.blocks = nn.Sequential(LCNetBlock(256, 512, 5, 2, True), LCNetBlock(512, 512, 5, 1, True))
        self.last_conv = nn.Conv2d(512, 1280, 1, bias=False)
        self.fc = nn.Linear(1280, classes)

    def forward(self, x):
        y = self.blocks(x).mean((2, 3), keepdim=True)
        return self.fc(torch.flatten(F.hardswish(self.last_conv(y)), 1))


class RepVGGBlock(nn.Module):
    """RepVGG's block in its training form (Ding et al.): a 3x3 conv + BN, a 1x1 conv + BN and, where the
    shape is kept, a BN on the identity, summed, then ReLU."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.dense = conv_bn(cin, cout, 3, stride, act=None)
        self.one = conv_bn(cin, cout, 1, stride, act=None)
        self.identity = nn.BatchNorm2d(cin) if cin == cout and stride == 1 else None

    def forward(self, x):
        y = self.dense(x) + self.one(x)
        return torch.relu(y + self.identity(x) if self.identity is not None else y)


class RepVGGStage(nn.Module):
    """RepVGG-A0's third stage (widths 48, 48, 96, 192, 1280; depths 1, 2, 4, 14, 1): four training-form
    blocks, 48 -> 96 with stride 2 first, then three 96-channel blocks with the identity branch."""

    def __init__(self, cin=48, cout=96, blocks=4):
        super().__init__()
        self.blocks = nn.Sequential(
            RepVGGBlock(cin, cout, 2), *(RepVGGBlock(cout, cout) for _ in range(blocks - 1))
        )

    def forward(self, x):
        return self.blocks(x)


class SKConv(nn.Module):
    """SKNet's selective-kernel convolution (Li et al.): two grouped 3x3 branches (dilation 1 and 2, for
    the 3x3 and 5x5 receptive fields) with BN + ReLU, fused by summing, global pooling, a 1x1 conv +
    BN + ReLU to d = max(C/16, 32), then a per-branch 1x1 conv and a softmax across the branches that
    weights each branch's map."""

    def __init__(self, c, groups=32, reduction=16, floor=32, branches=2):
        super().__init__()
        self.branches = nn.ModuleList(
            nn.Sequential(
                nn.Conv2d(c, c, 3, padding=d, dilation=d, groups=groups, bias=False),
                nn.BatchNorm2d(c),
                nn.ReLU(),
            )
            for d in range(1, branches + 1)
        )
        d = max(c // reduction, floor)
        self.fc = nn.Sequential(nn.Conv2d(c, d, 1, bias=False), nn.BatchNorm2d(d), nn.ReLU())
        self.select = nn.Conv2d(d, c * branches, 1)

    def forward(self, x):
        feats = torch.stack([branch(x) for branch in self.branches], 1)
        b, m, c = feats.shape[:3]
        z = self.fc(feats.sum(1).mean((2, 3), keepdim=True))
        weights = torch.softmax(self.select(z).view(b, m, c, 1, 1), 1)
        return (feats * weights).sum(1)


class SKNetUnit(nn.Module):
    """SKNet-50's stage-1 unit [1x1 128, SK(M 2, G 32, r 16) 128, 1x1 256]: 1x1 conv + BN + ReLU, the
    selective-kernel conv, 1x1 conv + BN, identity shortcut, ReLU."""

    def __init__(self, c=256, mid=128):
        super().__init__()
        self.reduce, self.sk = conv_bn(c, mid, 1), SKConv(mid)
        self.expand = conv_bn(mid, c, 1, act=None)

    def forward(self, x):
        return torch.relu(x + self.expand(self.sk(self.reduce(x))))


class Wav2Vec2FeatureEncoder(nn.Module):
    """wav2vec 2.0 base's feature encoder and projection (Baevski et al., as HF's feat_extract_norm
    "group"): seven bias-free Conv1d layers of 512 channels (kernels 10, 3, 3, 3, 3, 2, 2; strides 5, 2,
    2, 2, 2, 2, 2: 320x down), GroupNorm(512, 512) after the first, GELU after each; then LayerNorm(512)
    and a linear to 768 on the transposed frames. Input: raw 16 kHz waveforms (batch, samples)."""

    KERNELS, STRIDES = (10, 3, 3, 3, 3, 2, 2), (5, 2, 2, 2, 2, 2, 2)

    def __init__(self, c=512, d=768):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv1d(1 if i == 0 else c, c, k, s, bias=False)
            for i, (k, s) in enumerate(zip(self.KERNELS, self.STRIDES))
        )
        self.norm = nn.GroupNorm(c, c)
        self.ln, self.projection = nn.LayerNorm(c), nn.Linear(c, d)

    def forward(self, wave):
        x = wave[:, None]
        for i, conv in enumerate(self.convs):
            x = conv(x)
            x = F.gelu(self.norm(x) if i == 0 else x)
        return self.projection(self.ln(x.transpose(1, 2)))


# --- norm ----------------------------------------------------------------------------------------------


class GRN(nn.Module):
    """ConvNeXt-V2's global response normalization on a channels-last map: each channel's L2 norm over
    H x W, divided by its mean over the channels, scales the input; learned gamma and beta, residual."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.rand(c) * 0.4 - 0.2)
        self.beta = nn.Parameter(torch.rand(c) * 0.4 - 0.2)

    def forward(self, x):
        gx = torch.linalg.vector_norm(x, dim=(1, 2), keepdim=True)
        nx = gx / (gx.mean(-1, keepdim=True) + self.eps)
        return self.gamma * (x * nx) + self.beta + x


class ConvNeXtV2Block(nn.Module):
    """ConvNeXt-V2-Tiny's stage-2 block (dim 192; Woo et al.): depthwise 7x7, channels-last LayerNorm
    (eps 1e-6), linear to 4x, GELU, GRN, linear back, residual (no layer scale in V2)."""

    def __init__(self, d=192):
        super().__init__()
        self.dw = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.up, self.grn, self.down = nn.Linear(d, 4 * d), GRN(4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.down(self.grn(F.gelu(self.up(y))))
        return x + y.permute(0, 3, 1, 2)


class NAFLayerNorm2d(nn.Module):
    """NAFNet's LayerNorm2d: each pixel normalized over its channels (mean and biased variance taken
    along dim 1, no permute), per-channel weight and bias."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = _affine(1, c, 1, 1)

    def forward(self, x):
        mu = x.mean(1, keepdim=True)
        var = (x - mu).pow(2).mean(1, keepdim=True)
        return self.weight * (x - mu) / (var + self.eps).sqrt() + self.bias


class NAFBlock(nn.Module):
    """NAFNet's block (Chen et al., "Simple Baselines for Image Restoration", width 32): LayerNorm2d,
    1x1 conv to 2c, depthwise 3x3, SimpleGate (product of the two halves), simplified channel attention
    (pool + 1x1 conv, multiplied in), 1x1 conv, residual scaled by beta; then LayerNorm2d, 1x1 conv to
    2c, SimpleGate, 1x1 conv, residual scaled by gamma."""

    def __init__(self, c=32, dw_expand=2, ffn_expand=2):
        super().__init__()
        dw, ffn = c * dw_expand, c * ffn_expand
        self.norm1, self.norm2 = NAFLayerNorm2d(c), NAFLayerNorm2d(c)
        self.conv1 = nn.Conv2d(c, dw, 1)
        self.conv2 = nn.Conv2d(dw, dw, 3, padding=1, groups=dw)
        self.sca = nn.Conv2d(dw // 2, dw // 2, 1)
        self.conv3 = nn.Conv2d(dw // 2, c, 1)
        self.conv4, self.conv5 = nn.Conv2d(c, ffn, 1), nn.Conv2d(ffn // 2, c, 1)
        # Zero at initialization in NAFNet; a trained net's are not.
        self.beta = nn.Parameter(torch.rand(1, c, 1, 1) * 0.5 + 0.1)
        self.gamma = nn.Parameter(torch.rand(1, c, 1, 1) * 0.5 + 0.1)

    @staticmethod
    def _gate(x):
        a, b = x.chunk(2, 1)
        return a * b

    def forward(self, inp):
        x = self._gate(self.conv2(self.conv1(self.norm1(inp))))
        x = self.conv3(x * self.sca(x.mean((2, 3), keepdim=True)))
        y = inp + x * self.beta
        return y + self.conv5(self._gate(self.conv4(self.norm2(y)))) * self.gamma


class EqualizedConv2d(nn.Module):
    """ProGAN's equalized-learning-rate convolution: N(0, 1) weights scaled at run time by
    gain / sqrt(fan-in)."""

    def __init__(self, cin, cout, k, gain=2**0.5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k))
        self.bias = nn.Parameter(torch.randn(cout) * 0.1)
        self.scale, self.pad = gain / math.sqrt(cin * k * k), k // 2

    def forward(self, x):
        return F.conv2d(x, self.weight * self.scale, self.bias, padding=self.pad)


class ProGANGeneratorBlock(nn.Module):
    """Progressive GAN's (Karras et al.) 32 -> 64 generator block with its toRGB layer: nearest x2
    upsample, then (equalized 3x3 conv, LeakyReLU(0.2), pixel norm) twice, 512 -> 256 channels, and a
    1x1 equalized conv (gain 1) to RGB."""

    def __init__(self, cin=512, cout=256):
        super().__init__()
        self.conv1, self.conv2 = EqualizedConv2d(cin, cout, 3), EqualizedConv2d(cout, cout, 3)
        self.to_rgb = EqualizedConv2d(cout, 3, 1, gain=1.0)

    @staticmethod
    def _pixel_norm(x, eps=1e-8):
        return x * torch.rsqrt(x.pow(2).mean(1, keepdim=True) + eps)

    def forward(self, x):
        x = F.interpolate(x, scale_factor=2, mode="nearest")
        x = self._pixel_norm(F.leaky_relu(self.conv1(x), 0.2))
        x = self._pixel_norm(F.leaky_relu(self.conv2(x), 0.2))
        return self.to_rgb(x)


class AdaIN(nn.Module):
    """StarGAN v2's AdaIN: InstanceNorm2d without affine, then (1 + gamma) and beta from a linear of the
    style code."""

    def __init__(self, style, c):
        super().__init__()
        self.norm, self.fc = nn.InstanceNorm2d(c, affine=False), nn.Linear(style, 2 * c)

    def forward(self, x, s):
        gamma, beta = self.fc(s)[:, :, None, None].chunk(2, 1)
        return (1 + gamma) * self.norm(x) + beta


class StarGAN2AdaINResBlock(nn.Module):
    """StarGAN v2's upsampling decoder block (AdainResBlk, AFHQ's w_hpf = 0; Choi et al.), 256 -> 128:
    (AdaIN, LeakyReLU(0.2)), nearest x2, 3x3 conv, (AdaIN, LeakyReLU(0.2)), 3x3 conv; the shortcut is
    upsampled and a bias-free 1x1 conv; sum / sqrt(2). Inputs: features and a 64-dim style code."""

    def __init__(self, cin=256, cout=128, style=64):
        super().__init__()
        self.norm1, self.norm2 = AdaIN(style, cin), AdaIN(style, cout)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.shortcut = nn.Conv2d(cin, cout, 1, bias=False)

    def forward(self, x, s):
        h = F.interpolate(F.leaky_relu(self.norm1(x, s), 0.2), scale_factor=2, mode="nearest")
        h = self.conv2(F.leaky_relu(self.norm2(self.conv1(h), s), 0.2))
        return (h + self.shortcut(F.interpolate(x, scale_factor=2, mode="nearest"))) / math.sqrt(2)


# --- whole-cnn -----------------------------------------------------------------------------------------


def _make_divisible(v, divisor=8):
    """torchvision's channel rounding for MobileNets."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


class V3SqueezeExcite(nn.Module):
    def __init__(self, c):
        super().__init__()
        squeeze = _make_divisible(c // 4)
        self.fc1, self.fc2 = nn.Conv2d(c, squeeze, 1), nn.Conv2d(squeeze, c, 1)

    def forward(self, x):
        return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(x.mean((2, 3), keepdim=True)))))


class V3InvertedResidual(nn.Module):
    def __init__(self, cin, k, expanded, cout, se, act, stride):
        super().__init__()
        layers = [conv_bn(cin, expanded, 1, act=act)] if expanded != cin else []
        layers.append(conv_bn(expanded, expanded, k, stride, groups=expanded, act=act))
        if se:
            layers.append(V3SqueezeExcite(expanded))
        layers.append(conv_bn(expanded, cout, 1, act=None))
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV3Small(nn.Module):
    """MobileNetV3-Small (Howard et al., torchvision's configuration, width 1.0): a hard-swish 3x3 stem
    to 16, eleven bottlenecks (3x3 / 5x5 depthwise, ReLU or hard-swish, hard-sigmoid SE on eight),
    1x1 conv to 576, pool, linear 576 -> 1024, hard-swish, dropout, 1000 classes; BN eps 1e-3."""

    # (input, kernel, expanded, output, squeeze-excite, hard-swish, stride)
    CONFIG = (
        (16, 3, 16, 16, True, False, 2),
        (16, 3, 72, 24, False, False, 2),
        (24, 3, 88, 24, False, False, 1),
        (24, 5, 96, 40, True, True, 2),
        (40, 5, 240, 40, True, True, 1),
        (40, 5, 240, 40, True, True, 1),
        (40, 5, 120, 48, True, True, 1),
        (48, 5, 144, 48, True, True, 1),
        (48, 5, 288, 96, True, True, 2),
        (96, 5, 576, 96, True, True, 1),
        (96, 5, 576, 96, True, True, 1),
    )

    def __init__(self, classes=1000):
        super().__init__()
        layers = [conv_bn(3, 16, 3, 2, act=nn.Hardswish)]
        for cin, k, expanded, cout, se, hs, stride in self.CONFIG:
            layers.append(
                V3InvertedResidual(cin, k, expanded, cout, se, nn.Hardswish if hs else nn.ReLU, stride)
            )
        layers.append(conv_bn(96, 576, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, classes)
        )
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eps = 1e-3

    def forward(self, x):
        return self.classifier(self.features(x).mean((2, 3)))


class ShuffleV2Block(nn.Module):
    """torchvision's ShuffleNetV2 InvertedResidual: stride 1 splits the channels and transforms one half;
    stride 2 transforms the whole input on both branches; concat, then a channel shuffle of 2 groups."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        half = cout // 2
        self.stride = stride
        if stride > 1:
            self.branch1 = nn.Sequential(
                conv_bn(cin, cin, 3, stride, groups=cin, act=None), conv_bn(cin, half, 1)
            )
        self.branch2 = nn.Sequential(
            conv_bn(cin if stride > 1 else half, half, 1),
            conv_bn(half, half, 3, stride, groups=half, act=None),
            conv_bn(half, half, 1),
        )

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, 1)
            out = torch.cat([x1, self.branch2(x2)], 1)
        else:
            out = torch.cat([self.branch1(x), self.branch2(x)], 1)
        b, c, h, w = out.shape
        return out.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w)


class ShuffleNetV2(nn.Module):
    """ShuffleNetV2 x0.5 (Ma et al., torchvision's layout): 3x3 stride-2 stem to 24 + max pool, stages of
    4, 8, 4 blocks (48, 96, 192 channels), a 1x1 conv to 1024, global pool, 1000 classes."""

    def __init__(self, repeats=(4, 8, 4), channels=(24, 48, 96, 192, 1024), classes=1000):
        super().__init__()
        layers, cin = [conv_bn(3, channels[0], 3, 2), nn.MaxPool2d(3, 2, 1)], channels[0]
        for n, c in zip(repeats, channels[1:4]):
            layers += [ShuffleV2Block(cin, c, 2), *(ShuffleV2Block(c, c, 1) for _ in range(n - 1))]
            cin = c
        layers.append(conv_bn(cin, channels[4], 1))
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(channels[4], classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


class PeleeStem(nn.Module):
    """PeleeNet's stem block: 3x3 stride-2 conv to 32, then a 1x1 -> 3x3 stride-2 branch beside a 2x2
    max pool, concatenated, and a 1x1 conv back to 32 (4x down)."""

    def __init__(self, c=32):
        super().__init__()
        self.stem1 = conv_bn(3, c, 3, 2)
        self.stem2 = nn.Sequential(conv_bn(c, c // 2, 1), conv_bn(c // 2, c, 3, 2))
        self.stem3 = conv_bn(2 * c, c, 1)

    def forward(self, x):
        y = self.stem1(x)
        return self.stem3(torch.cat([F.max_pool2d(y, 2), self.stem2(y)], 1))


class TwoWayDenseLayer(nn.Module):
    """PeleeNet's two-way dense layer: a 1x1 -> 3x3 branch and a 1x1 -> 3x3 -> 3x3 branch of half the
    growth rate each, concatenated to the input."""

    def __init__(self, cin, growth, bottleneck_width):
        super().__init__()
        half = growth // 2
        inter = int(half * bottleneck_width / 4) * 4
        if inter > cin / 2:
            inter = int(cin / 8) * 4
        self.branch1 = nn.Sequential(conv_bn(cin, inter, 1), conv_bn(inter, half, 3))
        self.branch2 = nn.Sequential(conv_bn(cin, inter, 1), conv_bn(inter, half, 3), conv_bn(half, half, 3))

    def forward(self, x):
        return torch.cat([x, self.branch1(x), self.branch2(x)], 1)


class PeleeNet(nn.Module):
    """PeleeNet (Wang et al., the reference PyTorch code): stem, four stages of 3, 4, 8, 6 two-way dense
    layers (growth 32, bottleneck widths 1, 2, 4, 4), each closed by a 1x1 transition conv (2x2 average
    pool after all but the last), global pool, 1000 classes."""

    def __init__(self, growth=32, layers=(3, 4, 8, 6), widths=(1, 2, 4, 4), classes=1000):
        super().__init__()
        blocks, c = [PeleeStem(32)], 32
        for k, (n, width) in enumerate(zip(layers, widths)):
            for _ in range(n):
                blocks.append(TwoWayDenseLayer(c, growth, width))
                c += growth
            blocks.append(conv_bn(c, c, 1))
            if k < len(layers) - 1:
                blocks.append(nn.AvgPool2d(2, 2))
        self.features = nn.Sequential(*blocks)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


# --- memory-bound --------------------------------------------------------------------------------------


def label_smoothed_cross_entropy(logits, smoothing=0.1):
    """The label-smoothed (0.1) cross entropy of a language model's logits over LLaMA's 32000-word
    vocabulary, averaged to a scalar. The bench gives float inputs only, so each row's target is fixed
    by its index (row * 7919 mod vocabulary), computed from the shape."""
    n, vocab = logits.shape
    target = torch.arange(n, device=logits.device) * 7919 % vocab
    return F.cross_entropy(logits, target, label_smoothing=smoothing)


class LlamaRMSNorm(nn.Module):
    """LLaMA-7B's RMSNorm over the 4096-wide hidden state, as HF's LlamaRMSNorm: upcast to float32, scale
    by the reciprocal root mean square (eps 1e-6), cast back, times the learned weight."""

    def __init__(self, d=4096, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        h = x.to(torch.promote_types(x.dtype, torch.float32))
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class SwitchTop1Router(nn.Module):
    """Switch Transformer's top-1 router (Fedus et al.; switch-base-8, d 768, 8 experts; as HF's
    SwitchTransformersTop1Router): a bias-free linear to the expert logits in float32, softmax, the
    top expert's probability and one-hot mask, each expert's token priority by a cumulative sum over
    the sequence, tokens past the capacity (1.25 x tokens / experts) dropped. Outputs: the combine
    weights (batch, seq, experts), the load-balancing loss (per sequence, from the top-1 choices
    before the capacity cut, as the paper) and the router z-loss."""

    def __init__(self, d=768, experts=8, capacity_factor=1.25):
        super().__init__()
        self.experts, self.capacity_factor = experts, capacity_factor
        self.classifier = nn.Linear(d, experts, bias=False)

    def forward(self, x):
        wide = torch.promote_types(x.dtype, torch.float32)
        logits = F.linear(x.to(wide), self.classifier.weight.to(wide))
        probs = torch.softmax(logits, -1)
        gate, index = probs.max(-1)
        mask = F.one_hot(index, self.experts).to(wide)
        capacity = max(1, int(self.capacity_factor * x.shape[1] / self.experts))
        kept = mask * (torch.cumsum(mask, dim=-2) <= capacity)
        balance = (mask.mean(1) * probs.mean(1)).mean() * self.experts**2
        z_loss = torch.logsumexp(logits, -1).pow(2).mean()
        return kept * gate[..., None], balance, z_loss


# --- transformer ---------------------------------------------------------------------------------------


# T5's norm is LLaMA's RMSNorm (root mean square over the last dim in float32, no mean, no bias, then
# the weight), which T5 introduced.
T5LayerNorm = LlamaRMSNorm


class T5EncoderLayer(nn.Module):
    """T5-base's (v1.0) first encoder layer: T5LayerNorm, bias-free attention (12 heads of 64, no 1/sqrt(d)
    scaling) with the learned relative position bias over 32 bidirectional log-spaced buckets (max
    distance 128), computed from the sequence length, softmax in float32; T5LayerNorm, ReLU FFN 768 ->
    3072 -> 768 without biases; residuals."""

    def __init__(self, d=768, heads=12, d_ff=3072, buckets=32, max_distance=128):
        super().__init__()
        self.heads, self.buckets, self.max_distance = heads, buckets, max_distance
        self.ln1, self.ln2 = T5LayerNorm(d), T5LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.relative_attention_bias = nn.Embedding(buckets, heads)
        self.wi, self.wo = nn.Linear(d, d_ff, bias=False), nn.Linear(d_ff, d, bias=False)

    def _bucket(self, relative):
        """HF's T5Attention._relative_position_bucket, bidirectional."""
        half = self.buckets // 2
        bucket = (relative > 0).long() * half
        distance = relative.abs()
        exact = half // 2
        large = (
            exact
            + (
                torch.log(distance.float().clamp(min=1) / exact)
                / math.log(self.max_distance / exact)
                * (half - exact)
            ).long()
        )
        large = large.clamp(max=half - 1)
        return bucket + torch.where(distance < exact, distance, large)

    def position_bias(self, s, device):
        pos = torch.arange(s, device=device)
        bucket = self._bucket(pos[None, :] - pos[:, None])
        return self.relative_attention_bias(bucket).permute(2, 0, 1)[None]

    def forward(self, x):
        b, s, d = x.shape
        h, hd = self.heads, d // self.heads
        u = self.ln1(x)
        q, k, v = (f(u).view(b, s, h, hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        scores = q @ k.transpose(-1, -2) + self.position_bias(s, x.device)
        att = torch.softmax(scores.to(torch.promote_types(x.dtype, torch.float32)), -1).to(x.dtype)
        x = x + self.o((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.wo(F.relu(self.wi(self.ln2(x))))


def _sinusoids(length, channels, max_timescale=10000):
    """Whisper's sinusoidal positional embedding."""
    increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-increment * torch.arange(channels // 2))
    scaled = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], 1)


class WhisperEncoderStem(nn.Module):
    """Whisper-base's encoder front (Radford et al.; d 512, 8 heads): on an 80-bin log-mel spectrogram,
    Conv1d 80 -> 512 (k 3) + GELU, Conv1d 512 -> 512 (k 3, stride 2) + GELU, the sinusoidal positional
    embedding (1500 positions, sliced to the length so the smaller sizes run), then the first
    pre-LayerNorm encoder layer: attention with a bias-free key projection, GELU MLP 512 -> 2048."""

    def __init__(self, mels=80, d=512, heads=8, ctx=1500):
        super().__init__()
        self.heads = heads
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.register_buffer("positional_embedding", _sinusoids(ctx, d), persistent=False)
        self.attn_ln, self.mlp_ln = nn.LayerNorm(d), nn.LayerNorm(d)
        self.query, self.key = nn.Linear(d, d), nn.Linear(d, d, bias=False)
        self.value, self.out = nn.Linear(d, d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, mel):
        x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
        b, t, d = x.shape
        x = x + self.positional_embedding[:t]
        u = self.attn_ln(x)
        q, k, v = (
            f(u).view(b, t, self.heads, -1).transpose(1, 2) for f in (self.query, self.key, self.value)
        )
        x = x + self.out(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.mlp_ln(x))


class SegformerBlock(nn.Module):
    """SegFormer's MiT-B2 stage-2 block (Xie et al.; dim 128, 2 heads, reduction ratio 4, MLP ratio 4) on
    a channels-last map: efficient self-attention whose keys and values come from a 4x4 stride-4 conv
    of the map + LayerNorm (16x fewer tokens), then the Mix-FFN (linear, depthwise 3x3 conv on the
    map, GELU, linear); pre-LayerNorm (eps 1e-6) residuals."""

    def __init__(self, d=128, heads=2, sr=4, mlp_ratio=4):
        super().__init__()
        self.heads, hidden = heads, d * mlp_ratio
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.q, self.kv, self.proj = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.sr, self.sr_norm = nn.Conv2d(d, d, sr, stride=sr), nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden, d)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, padding=1, groups=hidden)

    def _attention(self, x, h, w):
        b, n, c = x.shape
        heads, hd = self.heads, c // self.heads
        q = self.q(x).view(b, n, heads, hd).transpose(1, 2)
        reduced = self.sr(x.transpose(1, 2).reshape(b, c, h, w)).flatten(2).transpose(1, 2)
        k, v = self.kv(self.sr_norm(reduced)).view(b, -1, 2, heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
        att = torch.softmax((q @ k.transpose(-2, -1)) * hd**-0.5, -1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, n, c))

    def _mix_ffn(self, x, h, w):
        b, n, _ = x.shape
        y = self.fc1(x)
        y = self.dwconv(y.transpose(1, 2).reshape(b, -1, h, w)).flatten(2).transpose(1, 2)
        return self.fc2(F.gelu(y))

    def forward(self, x):
        b, h, w, c = x.shape
        x = x.reshape(b, h * w, c)
        x = x + self._attention(self.norm1(x), h, w)
        x = x + self._mix_ffn(self.norm2(x), h, w)
        return x.view(b, h, w, c)


class RestormerLayerNorm(nn.Module):
    """Restormer's WithBias LayerNorm over the channels of an NCHW map, on the (b, hw, c) view."""

    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = _affine(c)

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)
        mu, var = t.mean(-1, keepdim=True), t.var(-1, keepdim=True, unbiased=False)
        t = (t - mu) / torch.sqrt(var + self.eps) * self.weight + self.bias
        return t.transpose(1, 2).reshape(b, c, h, w)


class RestormerBlock(nn.Module):
    """Restormer's level-2 transformer block (Zamir et al.; dim 96, 2 heads, bias-free convs): LayerNorm,
    multi-Dconv transposed attention (1x1 conv to q, k, v, depthwise 3x3, q and k L2-normalized over the
    pixels, a channels x channels attention per head scaled by a learned temperature); LayerNorm, the
    gated-Dconv FFN (1x1 to 2 x 255, depthwise 3x3, GELU(x1) * x2, 1x1 back); residuals."""

    def __init__(self, d=96, heads=2, ffn_expansion=2.66):
        super().__init__()
        self.heads, hidden = heads, int(d * ffn_expansion)
        self.norm1, self.norm2 = RestormerLayerNorm(d), RestormerLayerNorm(d)
        self.temperature = nn.Parameter(torch.rand(heads, 1, 1) + 0.5)
        self.qkv = nn.Conv2d(d, 3 * d, 1, bias=False)
        self.qkv_dw = nn.Conv2d(3 * d, 3 * d, 3, padding=1, groups=3 * d, bias=False)
        self.attn_out = nn.Conv2d(d, d, 1, bias=False)
        self.ffn_in = nn.Conv2d(d, 2 * hidden, 1, bias=False)
        self.ffn_dw = nn.Conv2d(2 * hidden, 2 * hidden, 3, padding=1, groups=2 * hidden, bias=False)
        self.ffn_out = nn.Conv2d(hidden, d, 1, bias=False)

    def _attention(self, x):
        b, c, h, w = x.shape
        q, k, v = (t.reshape(b, self.heads, -1, h * w) for t in self.qkv_dw(self.qkv(x)).chunk(3, 1))
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
        att = torch.softmax((q @ k.transpose(-2, -1)) * self.temperature, -1)
        return self.attn_out((att @ v).reshape(b, c, h, w))

    def _ffn(self, x):
        x1, x2 = self.ffn_dw(self.ffn_in(x)).chunk(2, 1)
        return self.ffn_out(F.gelu(x1) * x2)

    def forward(self, x):
        x = x + self._attention(self.norm1(x))
        return x + self._ffn(self.norm2(x))


def _tokens(d, cuda, cpu=(2, 64), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    nets = sizes((128, 3, 224, 224), (4, 3, 64, 64), (2, 3, 32, 32))
    return [
        ModelSpec(
            "pplcnet_tail",
            conv,
            PPLCNetTail,
            image(256, cuda_hw=14, cuda_batch=128, cpu_hw=14),
            "PP-LCNet x1.0 last stage: 2 dw 5x5 + SE blocks, 1x1 to 1280, hard-swish, fc",
        ),
        ModelSpec(
            "repvgg_a0_stage",
            conv,
            RepVGGStage,
            image(48, cuda_hw=56, cuda_batch=64),
            "RepVGG-A0 stage 3, training form (3x3 + 1x1 + identity BN), 48 -> 96",
        ),
        ModelSpec(
            "sknet50_unit",
            conv,
            SKNetUnit,
            image(256, cuda_hw=56, cuda_batch=32, cpu_hw=16, cpu_batch=2),
            "256ch, selective kernel (dilation 1/2, 32 groups), softmax over branches",
        ),
        ModelSpec(
            "wav2vec2_feature_encoder",
            conv,
            Wav2Vec2FeatureEncoder,
            sizes((8, 80000), (1, 16000), (2, 720)),
            "raw 16 kHz audio, 7 Conv1d (512ch, 320x down), GroupNorm, GELU, LN + linear",
        ),
        ModelSpec(
            "convnextv2_block",
            norm,
            ConvNeXtV2Block,
            image(192, cuda_hw=28, cuda_batch=64, cpu_hw=14),
            "ConvNeXt-V2-T stage 2, dw 7x7, LayerNorm, GRN",
        ),
        ModelSpec(
            "nafnet_block",
            norm,
            NAFBlock,
            image(32, cuda_hw=256, cuda_batch=16, cpu_hw=64, cpu_batch=2),
            "width 32, LayerNorm2d, SimpleGate, simplified channel attention",
        ),
        ModelSpec(
            "progan_generator_block",
            norm,
            ProGANGeneratorBlock,
            image(512, cuda_hw=32, cuda_batch=16, cpu_hw=8, cpu_batch=2, small_hw=4),
            "32 -> 64, 512 -> 256, equalized LR, pixel norm, toRGB",
        ),
        ModelSpec(
            "stargan2_adain_resblock",
            norm,
            StarGAN2AdaINResBlock,
            sizes([(8, 256, 64, 64), (8, 64)], [(2, 256, 16, 16), (2, 64)], [(2, 256, 9, 9), (2, 64)]),
            "256 -> 128, nearest x2, InstanceNorm AdaIN from a 64-dim style, 1x1 shortcut",
        ),
        ModelSpec(
            "mobilenetv3_small",
            whole,
            MobileNetV3Small,
            nets,
            "width 1.0, hard-swish, hard-sigmoid SE, 1000 classes",
        ),
        ModelSpec(
            "shufflenet_v2_x0_5",
            whole,
            ShuffleNetV2,
            nets,
            "stages 4/8/4 (48/96/192ch), channel split + shuffle, 1000 classes",
        ),
        ModelSpec(
            "peleenet",
            whole,
            PeleeNet,
            sizes((64, 3, 224, 224), (2, 3, 64, 64), (2, 3, 32, 32)),
            "stem block, 21 two-way dense layers (growth 32), 1000 classes",
        ),
        ModelSpec(
            "label_smoothed_cross_entropy",
            memory,
            lambda: Fn(label_smoothed_cross_entropy),
            sizes((8192, 32000), (256, 32000), (7, 32000)),
            "vocabulary 32000, smoothing 0.1, fixed targets, scalar",
        ),
        ModelSpec(
            "llama_rmsnorm",
            memory,
            LlamaRMSNorm,
            _tokens(4096, (8, 2048)),
            "hidden 4096, float32 upcast, weight",
        ),
        ModelSpec(
            "switch_top1_router",
            memory,
            SwitchTop1Router,
            _tokens(768, (32, 2048), cpu=(2, 256)),
            "d 768, 8 experts, float32 softmax, top-1, cumsum capacity, three outputs",
        ),
        ModelSpec(
            "t5_encoder_layer",
            transformer,
            T5EncoderLayer,
            _tokens(768, (16, 512)),
            "T5-base, 12 heads, bucketed relative position bias, ReLU FFN",
        ),
        ModelSpec(
            "whisper_encoder_stem",
            transformer,
            WhisperEncoderStem,
            sizes((8, 80, 3000), (1, 80, 600), (2, 80, 18)),
            "Whisper-base: 2 Conv1d + GELU, sinusoids, 1 encoder layer (d 512, 8 heads)",
        ),
        ModelSpec(
            "segformer_block",
            transformer,
            SegformerBlock,
            sizes((16, 64, 64, 128), (2, 16, 16, 128), (2, 8, 8, 128)),
            "MiT-B2 stage 2, channels-last, spatial-reduction 4 attention, Mix-FFN",
        ),
        ModelSpec(
            "restormer_block",
            transformer,
            RestormerBlock,
            image(96, cuda_hw=128, cuda_batch=8, cpu_hw=32, cpu_batch=2),
            "level 2, dim 96, 2 heads, transposed (channel) attention, gated-Dconv FFN",
        ),
    ]
