"""A third set of held-out models for bench/models.py (`--zoo heldout3`):
blocks and whole nets of well-known architectures picked as a user would pick
them, written after the compiler's tuning and never used for it (nor looked at
with it), so that its figures can be checked on programs no one tuned for.
Same conventions as model_zoo.py."""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, BasicBlock, Fn, ModelSpec, conv_bn, image, sizes

# --- conv-graph ----------------------------------------------------------------------------------------


class ResNeXtBottleneck(nn.Module):
    """ResNeXt-50 (32x4d)'s stage-1 bottleneck: 1x1, grouped 3x3 with 32 groups, 1x1, residual."""

    def __init__(self, c=256, width=128, groups=32):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(c, width, 1), conv_bn(width, width, 3, groups=groups), conv_bn(width, c, 1, act=None)
        )

    def forward(self, x):
        return torch.relu(x + self.body(x))


class SeparableConv2d(nn.Sequential):
    """Xception's separable convolution: depthwise 3x3, then pointwise 1x1, no biases."""

    def __init__(self, cin, cout):
        super().__init__(
            nn.Conv2d(cin, cin, 3, padding=1, groups=cin, bias=False), nn.Conv2d(cin, cout, 1, bias=False)
        )


class XceptionEntryBlock(nn.Module):
    """Xception's second entry-flow block: (ReLU, separable conv, BN) twice, 3x3 stride-2 max pool,
    and a strided 1x1 conv + BN on the shortcut, taken before the first ReLU."""

    def __init__(self, cin=128, cout=256):
        super().__init__()
        self.body = nn.Sequential(
            nn.ReLU(),
            SeparableConv2d(cin, cout),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            SeparableConv2d(cout, cout),
            nn.BatchNorm2d(cout),
            nn.MaxPool2d(3, 2, 1),
        )
        self.skip = conv_bn(cin, cout, 1, 2, act=None)

    def forward(self, x):
        return self.body(x) + self.skip(x)


class ASPP(nn.Module):
    """DeepLabV3's atrous spatial pyramid pooling on a ResNet-50 output-stride-16 map: a 1x1 conv,
    three dilated 3x3 convs (rates 6, 12, 18), image pooling upsampled bilinearly, concat, 1x1."""

    def __init__(self, cin=2048, c=256, rates=(6, 12, 18)):
        super().__init__()
        self.branches = nn.ModuleList([conv_bn(cin, c, 1)])
        for r in rates:
            self.branches.append(
                nn.Sequential(
                    nn.Conv2d(cin, c, 3, padding=r, dilation=r, bias=False), nn.BatchNorm2d(c), nn.ReLU()
                )
            )
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), conv_bn(cin, c, 1))
        self.project = nn.Sequential(conv_bn((len(rates) + 2) * c, c, 1), nn.Dropout(0.5))

    def forward(self, x):
        pooled = F.interpolate(self.pool(x), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.project(torch.cat([b(x) for b in self.branches] + [pooled], 1))


class HRNetExchange(nn.Module):
    """HRNet-W32's stage-2 exchange unit: a basic block on each of two resolutions, then the fuse
    (1x1 conv + BN + nearest x2 upsample into the fine branch, strided 3x3 conv + BN into the coarse)."""

    def __init__(self, c=32):
        super().__init__()
        self.fine, self.coarse = BasicBlock(c, c), BasicBlock(2 * c, 2 * c)
        self.up = nn.Sequential(conv_bn(2 * c, c, 1, act=None), nn.Upsample(scale_factor=2, mode="nearest"))
        self.down = conv_bn(c, 2 * c, 3, 2, act=None)

    def forward(self, fine, coarse):
        fine, coarse = self.fine(fine), self.coarse(coarse)
        return torch.relu(fine + self.up(coarse)), torch.relu(coarse + self.down(fine))


# --- norm ----------------------------------------------------------------------------------------------


class StdConv2d(nn.Conv2d):
    """BiT's weight-standardized convolution: each filter is normalized to zero mean, unit variance."""

    def forward(self, x):
        v, m = torch.var_mean(self.weight, dim=(1, 2, 3), keepdim=True, unbiased=False)
        w = (self.weight - m) / torch.sqrt(v + 1e-10)
        return F.conv2d(x, w, self.bias, self.stride, self.padding, self.dilation, self.groups)


class BiTBottleneck(nn.Module):
    """BiT-M R50x1's pre-activation bottleneck: GroupNorm(32) + ReLU before each weight-standardized
    conv (1x1, 3x3, 1x1), identity shortcut."""

    def __init__(self, c=256, mid=64):
        super().__init__()
        self.gn1, self.conv1 = nn.GroupNorm(32, c), StdConv2d(c, mid, 1, bias=False)
        self.gn2, self.conv2 = nn.GroupNorm(32, mid), StdConv2d(mid, mid, 3, padding=1, bias=False)
        self.gn3, self.conv3 = nn.GroupNorm(32, mid), StdConv2d(mid, c, 1, bias=False)

    def forward(self, x):
        y = self.conv1(F.relu(self.gn1(x)))
        y = self.conv2(F.relu(self.gn2(y)))
        return x + self.conv3(F.relu(self.gn3(y)))


class SwinPatchMerging(nn.Module):
    """Swin Transformer's patch merging on a channels-last map: concat each 2x2 neighbourhood,
    LayerNorm over the 4C channels, linear 4C -> 2C without bias."""

    def __init__(self, c=96):
        super().__init__()
        self.norm = nn.LayerNorm(4 * c)
        self.reduction = nn.Linear(4 * c, 2 * c, bias=False)

    def forward(self, x):
        parts = [x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]]
        return self.reduction(self.norm(torch.cat(parts, -1)))


class AdaINDecoderHead(nn.Module):
    """AdaIN style transfer (Huang & Belongie): the content features take the style features'
    per-channel mean and std, then the decoder's first layer (reflection pad, 3x3 conv, ReLU, x2 up)."""

    def __init__(self, c=512, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.decode = nn.Sequential(
            nn.ReflectionPad2d(1),
            nn.Conv2d(c, c // 2, 3),
            nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"),
        )

    def _stats(self, x):
        flat = x.flatten(2)
        return flat.mean(2)[..., None, None], (flat.var(2) + self.eps).sqrt()[..., None, None]

    def forward(self, content, style):
        (cm, cs), (sm, ss) = self._stats(content), self._stats(style)
        return self.decode((content - cm) / cs * ss + sm)


# --- whole-cnn -----------------------------------------------------------------------------------------


class EDSRBaseline(nn.Module):
    """EDSR-baseline super-resolution (x2): mean shift, 16 residual blocks of 64 channels without
    batch norm, a global residual, a conv + PixelShuffle upsampler."""

    def __init__(self, c=64, blocks=16, scale=2):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.4488, 0.4371, 0.4040]).view(1, 3, 1, 1))
        self.head = nn.Conv2d(3, c, 3, padding=1)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1))
            for _ in range(blocks)
        )
        self.body_end = nn.Conv2d(c, c, 3, padding=1)
        self.tail = nn.Sequential(
            nn.Conv2d(c, c * scale * scale, 3, padding=1),
            nn.PixelShuffle(scale),
            nn.Conv2d(c, 3, 3, padding=1),
        )

    def forward(self, x):
        x = self.head(x - self.mean)
        y = x
        for block in self.blocks:
            y = y + block(y)
        return self.tail(x + self.body_end(y)) + self.mean


class WideBasic(nn.Module):
    """Wide ResNet's pre-activation block: BN + ReLU before each 3x3 conv, 1x1 conv shortcut on a change."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn2, self.conv2 = nn.BatchNorm2d(cout), nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        same = cin == cout and stride == 1
        self.shortcut = None if same else nn.Conv2d(cin, cout, 1, stride, bias=False)

    def forward(self, x):
        o = F.relu(self.bn1(x))
        y = self.conv2(F.relu(self.bn2(self.conv1(o))))
        return y + (x if self.shortcut is None else self.shortcut(o))


class WideResNet(nn.Module):
    """Wide ResNet WRN-16-4 for CIFAR (Zagoruyko & Komodakis): three groups of two wide blocks."""

    def __init__(self, depth=16, k=4, classes=100):
        super().__init__()
        n = (depth - 4) // 6
        widths = (16 * k, 32 * k, 64 * k)
        layers, cin = [nn.Conv2d(3, 16, 3, padding=1, bias=False)], 16
        for g, w in enumerate(widths):
            for j in range(n):
                layers.append(WideBasic(cin, w, 2 if j == 0 and g > 0 else 1))
                cin = w
        self.features = nn.Sequential(*layers, nn.BatchNorm2d(cin), nn.ReLU())
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


class TinyYOLOv2(nn.Module):
    """Tiny YOLOv2 (VOC): 3x3 conv + BN + LeakyReLU(0.1) with 2x2 max pools, the last one stride 1,
    and a 1x1 detection conv to 5 anchors x (20 classes + 5)."""

    def __init__(self, outputs=125):
        super().__init__()
        leaky = partial(nn.LeakyReLU, 0.1)
        layers, cin = [], 3
        for c in (16, 32, 64, 128, 256):
            layers += [conv_bn(cin, c, 3, act=leaky), nn.MaxPool2d(2, 2)]
            cin = c
        self.features = nn.Sequential(*layers, conv_bn(256, 512, 3, act=leaky))
        self.tail = nn.Sequential(
            conv_bn(512, 1024, 3, act=leaky),
            conv_bn(1024, 1024, 3, act=leaky),
            nn.Conv2d(1024, outputs, 1),
        )

    def forward(self, x):
        # Darknet's stride-1 max pool looks past the edge only at padding it ignores: replicate it.
        y = F.max_pool2d(F.pad(self.features(x), (0, 1, 0, 1), mode="replicate"), 2, 1)
        return self.tail(y)


# --- memory-bound --------------------------------------------------------------------------------------


def cosine_similarity_maps(a, b):
    """Per-pixel cosine similarity of two feature maps along the channels (as in feature matching)."""
    return F.cosine_similarity(a, b, dim=1)


def lm_log_softmax(logits):
    """GPT-2's log-probabilities: log-softmax of each token's logits over the 50257-word vocabulary."""
    return torch.log_softmax(logits, dim=-1)


def batch_standardize(x):
    """Batch norm's training-mode normalization: each channel by its mean and variance over N, H, W."""
    var, mean = torch.var_mean(x, dim=(0, 2, 3), keepdim=True, unbiased=False)
    return (x - mean) * torch.rsqrt(var + 1e-5)


# --- transformer ---------------------------------------------------------------------------------------


class NeoXParallelBlock(nn.Module):
    """GPT-NeoX / Pythia-410M's layer: attention and MLP in parallel on two LayerNorms of the input,
    fused per-head qkv, rotary embeddings on a quarter of each head, causal attention, GELU MLP."""

    def __init__(self, d=1024, heads=16, rotary_pct=0.25, base=10000.0):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.rot, self.base = int(self.head_dim * rotary_pct), base
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.dense = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def _rotary(self, t, s):
        r = self.rot
        inv_freq = 1.0 / self.base ** (torch.arange(0, r, 2, device=t.device, dtype=torch.float32) / r)
        freqs = torch.outer(torch.arange(s, device=t.device, dtype=torch.float32), inv_freq)
        angles = torch.cat([freqs, freqs], -1)
        cos, sin = angles.cos().to(t.dtype), angles.sin().to(t.dtype)
        t_rot, t_pass = t[..., :r], t[..., r:]
        a, b = t_rot.chunk(2, -1)
        return torch.cat([t_rot * cos + torch.cat([-b, a], -1) * sin, t_pass], -1)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, s, self.heads, 3 * self.head_dim).transpose(1, 2)
        q, k, v = qkv.chunk(3, -1)
        q, k = self._rotary(q, s), self._rotary(k, s)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d)
        return x + self.dense(a) + self.down(F.gelu(self.up(self.ln2(x))))


class ConformerConvModule(nn.Module):
    """Conformer's convolution module: LayerNorm, pointwise conv to 2d + GLU, depthwise Conv1d
    (kernel 31), BatchNorm1d, SiLU, pointwise conv, residual."""

    def __init__(self, d=256, kernel=31):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.body = nn.Sequential(
            nn.Conv1d(d, 2 * d, 1),
            nn.GLU(dim=1),
            nn.Conv1d(d, d, kernel, padding=(kernel - 1) // 2, groups=d),
            nn.BatchNorm1d(d),
            nn.SiLU(),
            nn.Conv1d(d, d, 1),
            nn.Dropout(0.1),
        )

    def forward(self, x):
        return x + self.body(self.norm(x).transpose(1, 2)).transpose(1, 2)


class MixerBlock(nn.Module):
    """MLP-Mixer-S/16's block: a token-mixing MLP across the 196 patches (on the transposed map),
    then a channel-mixing MLP, each pre-LayerNorm with GELU and a residual."""

    def __init__(self, d=512, tokens=196, token_hidden=256, channel_hidden=2048):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.token_mlp = nn.Sequential(
            nn.Linear(tokens, token_hidden), nn.GELU(), nn.Linear(token_hidden, tokens)
        )
        self.channel_mlp = nn.Sequential(
            nn.Linear(d, channel_hidden), nn.GELU(), nn.Linear(channel_hidden, d)
        )

    def forward(self, x):
        x = x + self.token_mlp(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.n2(x))


def _tokens(d, cuda, cpu=(2, 32), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def _pair(shapes):
    return [shapes, shapes]


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec(
            "resnext_bottleneck", conv, ResNeXtBottleneck, image(256), "ResNeXt-50 32x4d, 256ch, width 128"
        ),
        ModelSpec(
            "xception_entry_block",
            conv,
            XceptionEntryBlock,
            image(128, cuda_hw=74),
            "128 -> 256, separable convs, maxpool s2, 1x1 s2 shortcut",
        ),
        ModelSpec(
            "deeplabv3_aspp",
            conv,
            ASPP,
            sizes((8, 2048, 33, 33), (2, 2048, 6, 6), (2, 2048, 5, 5)),
            "2048 -> 5x256, rates 6/12/18, image pooling",
        ),
        ModelSpec(
            "hrnet_exchange",
            conv,
            HRNetExchange,
            sizes(
                [(32, 32, 56, 56), (32, 64, 28, 28)],
                [(4, 32, 32, 32), (4, 64, 16, 16)],
                [(2, 32, 8, 8), (2, 64, 4, 4)],
            ),
            "W32 stage 2, two outputs",
        ),
        ModelSpec(
            "bit_bottleneck", norm, BiTBottleneck, image(256), "GroupNorm(32), weight-standardized convs"
        ),
        ModelSpec(
            "swin_patch_merging",
            norm,
            SwinPatchMerging,
            sizes((32, 56, 56, 96), (4, 32, 32, 96), (2, 8, 8, 96)),
            "channels-last, LayerNorm(384), 384 -> 192",
        ),
        ModelSpec(
            "adain_decoder_head",
            norm,
            AdaINDecoderHead,
            sizes(_pair((8, 512, 64, 64)), _pair((1, 512, 16, 16)), _pair((2, 512, 5, 5))),
            "instance mean/std by hand, reflect pad, 512 -> 256, nearest x2",
        ),
        ModelSpec(
            "edsr_baseline_x2",
            whole,
            EDSRBaseline,
            sizes((8, 3, 96, 96), (1, 3, 16, 16), (2, 3, 6, 6)),
            "16 blocks, 64ch, no BN, PixelShuffle x2",
        ),
        ModelSpec(
            "wide_resnet16_4",
            whole,
            WideResNet,
            sizes((128, 3, 32, 32), (1, 3, 32, 32), (2, 3, 8, 8)),
            "pre-activation, 100 classes",
        ),
        ModelSpec(
            "tiny_yolov2",
            whole,
            TinyYOLOv2,
            sizes((16, 3, 416, 416), (2, 3, 64, 64), (2, 3, 32, 32)),
            "VOC, LeakyReLU(0.1), stride-1 max pool",
        ),
        ModelSpec(
            "cosine_similarity_maps",
            memory,
            lambda: Fn(cosine_similarity_maps),
            sizes(_pair((32, 256, 56, 56)), _pair((4, 256, 32, 32)), _pair((2, 256, 9, 9))),
            "along C",
        ),
        ModelSpec(
            "lm_log_softmax",
            memory,
            lambda: Fn(lm_log_softmax),
            sizes((8, 512, 50257), (2, 16, 50257), (2, 5, 50257)),
            "vocabulary 50257",
        ),
        ModelSpec(
            "batch_standardize",
            memory,
            lambda: Fn(batch_standardize),
            image(128),
            "per channel over N, H, W",
        ),
        ModelSpec(
            "neox_parallel_block",
            transformer,
            NeoXParallelBlock,
            _tokens(1024, (8, 512), cpu=(1, 32)),
            "d 1024, 16 heads, rotary 25%, parallel residual",
        ),
        ModelSpec(
            "conformer_conv_module",
            transformer,
            ConformerConvModule,
            _tokens(256, (32, 512), cpu=(2, 64)),
            "d 256, GLU, depthwise k31, BatchNorm1d, SiLU",
        ),
        ModelSpec(
            "mlp_mixer_block",
            transformer,
            MixerBlock,
            sizes((64, 196, 512), (1, 196, 512), (2, 196, 512)),
            "Mixer-S/16, 196 tokens (fixed), d 512",
        ),
    ]
