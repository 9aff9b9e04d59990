"""A sixth set of held-out models for bench/models.py (`--zoo heldout6`):
blocks and small whole nets of well-known architectures picked as a user
would pick them, none of them in the suite or the first five held-out sets,
written after the compiler's tuning and never used for it (nor looked at with
it), so that its figures can be checked on programs no one tuned for. Same
conventions as model_zoo.py."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, Fire, Fn, ModelSpec, conv_bn, image, sizes


def _affine(*shape):
    """A norm's weight and bias drawn as model_zoo.randomize_affine draws them (for norms written by hand)."""
    return nn.Parameter(torch.rand(shape) + 0.5), nn.Parameter(torch.rand(shape) * 0.4 - 0.2)


def _layer_scale(*shape):
    """A trained layer scale (initialized at 1e-5 or 1e-6 in the papers; a trained net's are not)."""
    return nn.Parameter(torch.rand(shape) * 0.5 + 0.1)


def _bn_eps(model: nn.Module, eps: float) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.eps = eps
    return model


# --- conv-graph ----------------------------------------------------------------------------------------


class Res2NetBottleneck(nn.Module):
    """Res2Net-50 26w x 4s's stage-1 bottleneck (Gao et al., the reference Bottle2neck, stype "normal"):
    1x1 conv + BN + ReLU to 4 x 26 channels, split into four; the first three go through a 3x3 conv +
    BN + ReLU each, every one after the first on the sum of its split and the previous output (the
    hierarchical residual), the fourth passes through; concat, 1x1 conv + BN to 256, identity
    shortcut, ReLU."""

    def __init__(self, c=256, width=26, scale=4):
        super().__init__()
        self.width = width
        self.reduce = conv_bn(c, width * scale, 1)
        self.convs = nn.ModuleList(conv_bn(width, width, 3) for _ in range(scale - 1))
        self.expand = conv_bn(width * scale, c, 1, act=None)

    def forward(self, x):
        splits = self.reduce(x).split(self.width, 1)
        outs, sp = [], None
        for i, conv in enumerate(self.convs):
            sp = conv(splits[i] if i == 0 else sp + splits[i])
            outs.append(sp)
        return torch.relu(x + self.expand(torch.cat([*outs, splits[-1]], 1)))


class FusedMBConv(nn.Module):
    """EfficientNetV2's fused-MBConv (torchvision's): a 3x3 conv + BN + SiLU to the expanded width in
    place of MBConv's 1x1 expand and depthwise conv, then a 1x1 conv + BN; residual where the shape is
    kept (stochastic depth is the identity in eval)."""

    def __init__(self, cin, cout, stride, expand=4):
        super().__init__()
        self.body = nn.Sequential(
            conv_bn(cin, cin * expand, 3, stride, act=nn.SiLU), conv_bn(cin * expand, cout, 1, act=None)
        )
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class EfficientNetV2Stage(nn.Module):
    """EfficientNetV2-S's third stage (Tan & Le; torchvision's FusedMBConvConfig(4, 3, 2, 48, 64, 4)):
    four fused-MBConv blocks of expansion 4, 48 -> 64 with stride 2 first; BN eps 1e-3. At the
    384-pixel evaluation size its input is 96 x 96."""

    def __init__(self, cin=48, cout=64, blocks=4):
        super().__init__()
        self.blocks = nn.Sequential(
            FusedMBConv(cin, cout, 2), *(FusedMBConv(cout, cout, 1) for _ in range(blocks - 1))
        )
        _bn_eps(self, 1e-3)

    def forward(self, x):
        return self.blocks(x)


class YOLOv5Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = conv_bn(c, c, 1, act=nn.SiLU), conv_bn(c, c, 3, act=nn.SiLU)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class C3(nn.Module):
    """YOLOv5's CSP bottleneck with three convs: two 1x1 convs to half the width, bottlenecks on the
    first, concat with the second, a 1x1 conv back."""

    def __init__(self, cin, cout, n=1):
        super().__init__()
        c = cout // 2
        self.cv1, self.cv2 = conv_bn(cin, c, 1, act=nn.SiLU), conv_bn(cin, c, 1, act=nn.SiLU)
        self.cv3 = conv_bn(2 * c, cout, 1, act=nn.SiLU)
        self.m = nn.Sequential(*(YOLOv5Bottleneck(c) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat([self.m(self.cv1(x)), self.cv2(x)], 1))


class SPPF(nn.Module):
    """YOLOv5's fast spatial pyramid pooling: a 1x1 conv to half the width, three chained 5x5 stride-1
    max pools, the four maps concatenated, a 1x1 conv."""

    def __init__(self, cin, cout, k=5):
        super().__init__()
        c = cin // 2
        self.cv1, self.cv2 = conv_bn(cin, c, 1, act=nn.SiLU), conv_bn(4 * c, cout, 1, act=nn.SiLU)
        self.pool = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.pool(x)
        y2 = self.pool(y1)
        return self.cv2(torch.cat([x, y1, y2, self.pool(y2)], 1))


class YOLOv5BackboneTail(nn.Module):
    """YOLOv5s v6's last backbone layers (Ultralytics; layers 7-9): a 3x3 stride-2 conv 256 -> 512,
    C3(512, n=1, shortcut) and SPPF(512, k=5); every conv is conv + BN (eps 1e-3) + SiLU. At 640
    pixels its input is the stride-16 map, 40 x 40."""

    def __init__(self, cin=256, c=512):
        super().__init__()
        self.down, self.c3, self.sppf = conv_bn(cin, c, 3, 2, act=nn.SiLU), C3(c, c), SPPF(c, c)
        _bn_eps(self, 1e-3)

    def forward(self, x):
        return self.sppf(self.c3(self.down(x)))


class PSPHead(nn.Module):
    """PSPNet's pyramid pooling module and head (Zhao et al., as the semseg reference code, ResNet-50
    dilated to output stride 8, VOC's 21 classes): adaptive average pools to 1, 2, 3 and 6 bins, each a
    1x1 conv 2048 -> 512 + BN + ReLU upsampled bilinearly (align_corners) to the map, concatenated with
    it (4096 channels), a 3x3 conv to 512 + BN + ReLU, dropout, a 1x1 conv to the classes, then the
    bilinear (align_corners) zoom by 8 to the crop (60 x 60 -> 473 x 473)."""

    def __init__(self, c=2048, bins=(1, 2, 3, 6), classes=21, zoom=8):
        super().__init__()
        r = c // len(bins)
        self.bins, self.zoom = bins, zoom
        self.stages = nn.ModuleList(conv_bn(c, r, 1) for _ in bins)
        self.bottleneck = conv_bn(2 * c, 512, 3)
        self.dropout, self.cls = nn.Dropout2d(0.1), nn.Conv2d(512, classes, 1)

    def forward(self, x):
        h, w = x.shape[2:]
        pyramid = [
            F.interpolate(stage(F.adaptive_avg_pool2d(x, b)), (h, w), mode="bilinear", align_corners=True)
            for b, stage in zip(self.bins, self.stages)
        ]
        y = self.cls(self.dropout(self.bottleneck(torch.cat([x, *pyramid], 1))))
        size = ((h - 1) * self.zoom + 1, (w - 1) * self.zoom + 1)
        return F.interpolate(y, size, mode="bilinear", align_corners=True)


# --- norm ----------------------------------------------------------------------------------------------


class DDPMResnetBlock(nn.Module):
    """DDPM's residual block (Ho et al.): GroupNorm(32, eps 1e-6) + SiLU + 3x3 conv, plus a linear of
    the SiLU'd time embedding per channel, GroupNorm + SiLU + (dropout) + 3x3 conv; a 1x1 conv on the
    shortcut where the width changes."""

    def __init__(self, cin, cout, temb=512):
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(32, cin, eps=1e-6), nn.GroupNorm(32, cout, eps=1e-6)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.temb_proj, self.dropout = nn.Linear(temb, cout), nn.Dropout(0.1)
        self.nin_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x))) + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.dropout(F.silu(self.norm2(h))))
        return self.nin_shortcut(x) + h


class DDPMAttnBlock(nn.Module):
    """DDPM's spatial self-attention: GroupNorm, 1x1 convs to q, k, v, one head over the H x W pixels
    (bmm, C^-1/2, softmax), a 1x1 conv out, residual."""

    def __init__(self, c):
        super().__init__()
        self.norm = nn.GroupNorm(32, c, eps=1e-6)
        self.q, self.k, self.v = nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1), nn.Conv2d(c, c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        b, c, h, w = x.shape
        y = self.norm(x)
        q = self.q(y).reshape(b, c, h * w).transpose(1, 2)
        k, v = self.k(y).reshape(b, c, h * w), self.v(y).reshape(b, c, h * w)
        att = torch.softmax(torch.bmm(q, k) * c**-0.5, -1)
        return x + self.proj_out(torch.bmm(v, att.transpose(1, 2)).reshape(b, c, h, w))


class DDPMAttnDownLevel(nn.Module):
    """DDPM CIFAR-10's second U-Net level (ch 128, ch_mult (1, 2, 2, 2), attention at 16 x 16): two
    residual blocks (128 -> 256, 256 -> 256), each followed by spatial attention, then the 3x3
    stride-2 downsampling conv (padded right and bottom). Inputs: the 16 x 16 features and the
    512-dim time embedding; outputs: the three maps the decoder takes as skips."""

    def __init__(self, cin=128, c=256, temb=512):
        super().__init__()
        self.res1, self.res2 = DDPMResnetBlock(cin, c, temb), DDPMResnetBlock(c, c, temb)
        self.attn1, self.attn2 = DDPMAttnBlock(c), DDPMAttnBlock(c)
        self.down = nn.Conv2d(c, c, 3, stride=2)

    def forward(self, x, temb):
        h1 = self.attn1(self.res1(x, temb))
        h2 = self.attn2(self.res2(h1, temb))
        return h1, h2, self.down(F.pad(h2, (0, 1, 0, 1)))


class ConditionalBatchNorm(nn.Module):
    """BigGAN's ccbn: batch norm without affine (stored statistics), then a per-sample gain (1 + linear)
    and bias (linear), both bias-free linears of the conditioning vector."""

    def __init__(self, c, cond):
        super().__init__()
        self.bn = nn.BatchNorm2d(c, affine=False)
        self.gain, self.bias = nn.Linear(cond, c, bias=False), nn.Linear(cond, c, bias=False)

    def forward(self, x, y):
        return self.bn(x) * (1 + self.gain(y))[:, :, None, None] + self.bias(y)[:, :, None, None]


class BigGANGBlock(nn.Module):
    """BigGAN-128's third generator block (Brock et al., BigGAN-PyTorch's GBlock, ch 96: 768 -> 384,
    16 -> 32): conditional BN + ReLU, nearest x2, 3x3 conv, conditional BN + ReLU, 3x3 conv; the
    shortcut is upsampled and a 1x1 conv. Spectral norm's weights are taken as trained. Inputs: the
    features and the 148-dim conditioning (128-dim shared class embedding and a 20-dim z chunk)."""

    def __init__(self, cin=768, cout=384, cond=148):
        super().__init__()
        self.bn1, self.bn2 = ConditionalBatchNorm(cin, cond), ConditionalBatchNorm(cout, cond)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_sc = nn.Conv2d(cin, cout, 1)

    def forward(self, x, y):
        h = F.interpolate(torch.relu(self.bn1(x, y)), scale_factor=2, mode="nearest")
        h = self.conv2(torch.relu(self.bn2(self.conv1(h), y)))
        return h + self.conv_sc(F.interpolate(x, scale_factor=2, mode="nearest"))


class PoolFormerBlock(nn.Module):
    """PoolFormer's block (Yu et al., "MetaFormer is Actually What You Need for Vision"; timm's):
    GroupNorm with one group, the pooling token mixer (3x3 stride-1 average pool without the padding
    counted, minus its input), layer scale, residual; GroupNorm(1), a 1x1-conv GELU MLP of ratio 4,
    layer scale, residual."""

    def __init__(self, d, mlp_ratio=4):
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(1, d), nn.GroupNorm(1, d)
        self.pool = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.mlp = nn.Sequential(nn.Conv2d(d, mlp_ratio * d, 1), nn.GELU(), nn.Conv2d(mlp_ratio * d, d, 1))
        self.scale1, self.scale2 = _layer_scale(d, 1, 1), _layer_scale(d, 1, 1)

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.scale1 * (self.pool(y) - y)
        return x + self.scale2 * self.mlp(self.norm2(x))


class PoolFormerStage(nn.Module):
    """PoolFormer-S12's first stage: two blocks of dim 64 on the stride-4 map (56 x 56 at 224)."""

    def __init__(self, d=64, blocks=2):
        super().__init__()
        self.blocks = nn.Sequential(*(PoolFormerBlock(d) for _ in range(blocks)))

    def forward(self, x):
        return self.blocks(x)


class GlobalLayerNorm(nn.Module):
    """Conv-TasNet's global layer norm (gLN): each sample normalized over its channels and frames
    together (biased variance, eps 1e-8), per-channel gamma and beta."""

    def __init__(self, c, eps=1e-8):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = _affine(1, c, 1)

    def forward(self, x):
        mu = x.mean((1, 2), keepdim=True)
        var = (x - mu).pow(2).mean((1, 2), keepdim=True)
        return self.weight * (x - mu) / torch.sqrt(var + self.eps) + self.bias


class TasNetConv1DBlock(nn.Module):
    """Conv-TasNet's 1-D conv block: 1x1 conv B -> H, PReLU, gLN, dilated depthwise conv (kernel 3),
    PReLU, gLN, then a 1x1 conv back to B (the residual) and one to Sc (the skip)."""

    def __init__(self, c, hidden, skip, dilation):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(c, hidden, 1),
            nn.PReLU(),
            GlobalLayerNorm(hidden),
            nn.Conv1d(hidden, hidden, 3, padding=dilation, dilation=dilation, groups=hidden),
            nn.PReLU(),
            GlobalLayerNorm(hidden),
        )
        self.res, self.skip = nn.Conv1d(hidden, c, 1), nn.Conv1d(hidden, skip, 1)

    def forward(self, x):
        y = self.body(x)
        return self.res(y), self.skip(y)


class ConvTasNetSeparator(nn.Module):
    """Conv-TasNet's separator (Luo & Mesgarani; N 512, B 128, H 512, Sc 128, P 3, X 8, two speakers;
    as asteroid's TDConvNet) with one of its R = 3 repeats: gLN on the encoder's 512-channel frames, a
    1x1 conv to 128, eight conv blocks of dilations 1 to 128 (residuals added, skips summed), then
    PReLU, a 1x1 conv to 2 x 512 and sigmoid masks (batch, 2, 512, frames)."""

    def __init__(self, n=512, c=128, hidden=512, skip=128, blocks=8, speakers=2):
        super().__init__()
        self.speakers = speakers
        self.norm, self.bottleneck = GlobalLayerNorm(n), nn.Conv1d(n, c, 1)
        self.blocks = nn.ModuleList(TasNetConv1DBlock(c, hidden, skip, 2**i) for i in range(blocks))
        self.mask = nn.Sequential(nn.PReLU(), nn.Conv1d(skip, speakers * n, 1))

    def forward(self, w):
        x, skips = self.bottleneck(self.norm(w)), 0
        for block in self.blocks:
            res, skip = block(x)
            x, skips = x + res, skips + skip
        b, n, t = w.shape
        return torch.sigmoid(self.mask(skips).view(b, self.speakers, n, t))


# --- whole-cnn -----------------------------------------------------------------------------------------


class SqueezeNet11(nn.Module):
    """SqueezeNet 1.1 (Iandola et al., torchvision's squeezenet1_1): a 3x3 stride-2 conv to 64, three
    3x3 stride-2 max pools in ceil mode between eight fire modules (squeeze 16/16/32/32/48/48/64/64),
    then dropout, a 1x1 conv to the 1000 classes, ReLU, global average pool."""

    def __init__(self, classes=1000):
        super().__init__()
        pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2),
            nn.ReLU(),
            pool(),
            Fire(64, 16, 64),
            Fire(128, 16, 64),
            pool(),
            Fire(128, 32, 128),
            Fire(256, 32, 128),
            pool(),
            Fire(256, 48, 192),
            Fire(384, 48, 192),
            Fire(384, 64, 256),
            Fire(512, 64, 256),
        )
        self.classifier = nn.Sequential(nn.Dropout(0.5), nn.Conv2d(512, classes, 1), nn.ReLU())

    def forward(self, x):
        return torch.flatten(F.adaptive_avg_pool2d(self.classifier(self.features(x)), 1), 1)


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class ConvMixer(nn.Module):
    """ConvMixer-256/8 for CIFAR-10 (Trockman & Kolter, the convmixer-cifar10 defaults: patch 2, kernel
    5): a 2x2 stride-2 patch embedding + GELU + BN, eight layers of (depthwise 5x5 "same" conv + GELU +
    BN, residual) then (1x1 conv + GELU + BN), global average pool, a 10-class linear."""

    def __init__(self, dim=256, depth=8, kernel=5, patch=2, classes=10):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, dim, patch, stride=patch),
            nn.GELU(),
            nn.BatchNorm2d(dim),
            *(
                nn.Sequential(
                    Residual(
                        nn.Sequential(
                            nn.Conv2d(dim, dim, kernel, groups=dim, padding="same"),
                            nn.GELU(),
                            nn.BatchNorm2d(dim),
                        )
                    ),
                    nn.Conv2d(dim, dim, 1),
                    nn.GELU(),
                    nn.BatchNorm2d(dim),
                )
                for _ in range(depth)
            ),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(dim, classes),
        )

    def forward(self, x):
        return self.net(x)


class FSRCNN(nn.Module):
    """FSRCNN x2 (Dong et al., "Accelerating the Super-Resolution CNN"; d 56, s 12, m 4) on the
    luminance channel: 5x5 conv to 56 + PReLU, 1x1 shrink to 12 + PReLU, four 3x3 mapping convs +
    PReLU, 1x1 expand to 56 + PReLU, a 9x9 stride-2 transposed conv to the 2x image."""

    def __init__(self, d=56, s=12, m=4, scale=2):
        super().__init__()
        layers = [nn.Conv2d(1, d, 5, padding=2), nn.PReLU(d), nn.Conv2d(d, s, 1), nn.PReLU(s)]
        for _ in range(m):
            layers += [nn.Conv2d(s, s, 3, padding=1), nn.PReLU(s)]
        layers += [nn.Conv2d(s, d, 1), nn.PReLU(d)]
        self.body = nn.Sequential(*layers)
        self.deconv = nn.ConvTranspose2d(d, 1, 9, stride=scale, padding=4, output_padding=scale - 1)

    def forward(self, x):
        return self.deconv(self.body(x))


# --- memory-bound --------------------------------------------------------------------------------------


def retinanet_focal_loss(logits, draw, alpha=0.25, gamma=2.0):
    """RetinaNet's classification loss (Lin et al., torchvision's sigmoid_focal_loss summed and divided
    by the number of foreground anchors) over 80 COCO classes per anchor. The bench gives float
    inputs only, so the one-hot targets are where the second input exceeds 2 (about 2% of them)."""
    targets = (draw > 2.0).to(logits.dtype)
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    loss = alpha_t * ce * (1 - p_t) ** gamma
    return loss.sum() / targets.sum().clamp(min=1)


def soft_dice_loss(logits, smooth=1e-5):
    """The multi-class soft Dice loss of a segmentation net (as MONAI's DiceLoss(softmax=True,
    to_onehot_y=True), background included): softmax over the classes, each (sample, class)'s
    intersection with the one-hot labels and their sums over the pixels, 1 - Dice averaged. The bench
    gives float inputs only, so the label map is a fixed pattern of 8 x 8 blocks, computed from the
    shape."""
    b, classes, h, w = logits.shape
    dev = logits.device
    rows, cols = torch.arange(h, device=dev) // 8, torch.arange(w, device=dev) // 8
    labels = (torch.arange(b, device=dev)[:, None, None] + 3 * rows[:, None] + 5 * cols) % classes
    onehot = F.one_hot(labels, classes).permute(0, 3, 1, 2).to(logits.dtype)
    probs = torch.softmax(logits, 1)
    intersection = (probs * onehot).sum((2, 3))
    denominator = probs.sum((2, 3)) + onehot.sum((2, 3))
    return (1 - (2 * intersection + smooth) / (denominator + smooth)).mean()


def top_k_sampling_probs(logits, temperature=0.7, k=50):
    """A language model's next-token distribution as HF generate's sampling makes it: the last logits in
    float32, TemperatureLogitsWarper (0.7), TopKLogitsWarper (50: every score below the 50th largest
    set to -inf), softmax; over LLaMA-3's 128256-word vocabulary."""
    scores = logits.to(torch.promote_types(logits.dtype, torch.float32)) / temperature
    kth = torch.topk(scores, k, dim=-1).values[..., -1:]
    return torch.softmax(scores.masked_fill(scores < kth, float("-inf")), -1)


# --- transformer ---------------------------------------------------------------------------------------


class RWKV4ChannelMix(nn.Module):
    """RWKV-4 169M's channel-mix sublayer (Peng et al., the RWKV-LM v4 code; d 768, hidden 3072):
    LayerNorm, the token shift (ZeroPad2d((0, 0, 1, -1)): each token paired with the one before),
    learned mixes of the two for the key and the receptance, squared-ReLU key 768 -> 3072, value
    3072 -> 768, gated by the sigmoid of the receptance; residual."""

    def __init__(self, d=768, hidden=3072):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.time_shift = nn.ZeroPad2d((0, 0, 1, -1))
        self.time_mix_k = nn.Parameter(torch.rand(1, 1, d))
        self.time_mix_r = nn.Parameter(torch.rand(1, 1, d))
        self.key, self.value = nn.Linear(d, hidden, bias=False), nn.Linear(hidden, d, bias=False)
        self.receptance = nn.Linear(d, d, bias=False)

    def forward(self, x):
        y = self.ln(x)
        shifted = self.time_shift(y)
        yk = y * self.time_mix_k + shifted * (1 - self.time_mix_k)
        yr = y * self.time_mix_r + shifted * (1 - self.time_mix_r)
        kv = self.value(torch.square(torch.relu(self.key(yk))))
        return x + torch.sigmoid(self.receptance(yr)) * kv


class GMLPBlock(nn.Module):
    """gMLP-S's block (Liu et al., "Pay Attention to MLPs"; timm's gmlp_s16_224: d 256, hidden 1536,
    196 patches): LayerNorm (eps 1e-6), linear 256 -> 1536, GELU, the spatial gating unit (split in
    halves, LayerNorm on the second, a linear across the 196 tokens on the transposed half, times the
    first), linear 768 -> 256, residual."""

    def __init__(self, d=256, hidden=1536, tokens=196):
        super().__init__()
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(d, hidden), nn.Linear(hidden // 2, d)
        self.gate_norm, self.gate_proj = nn.LayerNorm(hidden // 2, eps=1e-6), nn.Linear(tokens, tokens)

    def forward(self, x):
        u, v = F.gelu(self.fc1(self.norm(x))).chunk(2, -1)
        v = self.gate_proj(self.gate_norm(v).transpose(-1, -2)).transpose(-1, -2)
        return x + self.fc2(u * v)


class ViTLayer(nn.Module):
    """A pre-LayerNorm transformer layer with fused qkv and torch's scaled_dot_product_attention."""

    def __init__(self, d, heads, hidden, act=nn.GELU):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), act(), nn.Linear(hidden, d))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


class MobileViTBlock(nn.Module):
    """MobileViT-S's third-stage block (Mehta & Rastegari; timm's MobileVitBlock: 96 channels,
    transformer dim 144, 2 layers of 4 heads, MLP 288 with SiLU, 2x2 patches): 3x3 conv + BN + SiLU,
    1x1 conv to 144; unfold into the 4 pixel positions of the 2x2 patches (each a sequence over the
    patches), the transformer layers, LayerNorm, fold back; 1x1 conv + BN + SiLU to 96, concat with
    the input, 3x3 conv + BN + SiLU fusion. At 256 pixels its map is 32 x 32."""

    def __init__(self, c=96, d=144, depth=2, heads=4, patch=2):
        super().__init__()
        self.patch = patch
        self.conv_kxk, self.conv_1x1 = conv_bn(c, c, 3, act=nn.SiLU), nn.Conv2d(c, d, 1, bias=False)
        self.transformer = nn.Sequential(*(ViTLayer(d, heads, 2 * d, nn.SiLU) for _ in range(depth)))
        self.norm = nn.LayerNorm(d)
        self.conv_proj, self.conv_fusion = conv_bn(d, c, 1, act=nn.SiLU), conv_bn(2 * c, c, 3, act=nn.SiLU)

    def forward(self, x):
        shortcut = x
        y = self.conv_1x1(self.conv_kxk(x))
        b, d, h, w = y.shape
        p, nh, nw = self.patch, h // self.patch, w // self.patch
        y = y.reshape(b * d * nh, p, nw, p).transpose(1, 2)
        y = y.reshape(b, d, nh * nw, p * p).transpose(1, 3).reshape(b * p * p, nh * nw, d)
        y = self.norm(self.transformer(y))
        y = y.reshape(b, p * p, nh * nw, d).transpose(1, 3).reshape(b * d * nh, nw, p, p)
        y = y.transpose(1, 2).reshape(b, d, h, w)
        return self.conv_fusion(torch.cat([shortcut, self.conv_proj(y)], 1))


class MultiheadAttention(nn.Module):
    """nn.MultiheadAttention's computation written out (batch first): q, k, v projections with biases,
    softmax(q k^T / sqrt(head dim)) v per head, an output projection."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, query, key, value):
        b, n, d = query.shape
        split = lambda t: t.view(b, -1, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(query)), split(self.k(key)), split(self.v(value))
        att = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, -1)
        return self.out((att @ v).transpose(1, 2).reshape(b, n, d))


class DETRDecoderLayer(nn.Module):
    """DETR-R50's decoder layer (Carion et al., forward_post; d 256, 8 heads, FFN 2048, 100 object
    queries): self-attention of the queries with the query positions added to q and k, add +
    LayerNorm; cross-attention to the encoder memory (positions added to the keys), add + LayerNorm;
    ReLU FFN, add + LayerNorm (post-norm, dropout off). Inputs: the queries, the memory (25 x 34
    pixels of an 800 x 1066 image), the memory's positional encoding and the query embeddings."""

    def __init__(self, d=256, heads=8, hidden=2048):
        super().__init__()
        self.self_attn, self.cross_attn = MultiheadAttention(d, heads), MultiheadAttention(d, heads)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.linear1, self.linear2 = nn.Linear(d, hidden), nn.Linear(hidden, d)

    def forward(self, tgt, memory, pos, query_pos):
        q = tgt + query_pos
        tgt = self.norm1(tgt + self.self_attn(q, q, tgt))
        tgt = self.norm2(tgt + self.cross_attn(tgt + query_pos, memory + pos, memory))
        return self.norm3(tgt + self.linear2(torch.relu(self.linear1(tgt))))


def _tokens(d, cuda, cpu=(2, 64), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec(
            "res2net50_bottleneck",
            conv,
            Res2NetBottleneck,
            image(256, cuda_hw=56, cuda_batch=32, cpu_hw=32, cpu_batch=2),
            "Res2Net-50 26w4s stage 1, 256ch, hierarchical 3x3 splits",
        ),
        ModelSpec(
            "efficientnetv2_s_stage3",
            conv,
            EfficientNetV2Stage,
            image(48, cuda_hw=96, cuda_batch=32, cpu_hw=32, cpu_batch=2),
            "4 fused-MBConv (3x3 expand x4 + SiLU, 1x1 project), 48 -> 64, stride 2",
        ),
        ModelSpec(
            "yolov5s_backbone_tail",
            conv,
            YOLOv5BackboneTail,
            image(256, cuda_hw=40, cuda_batch=32, cpu_hw=16, cpu_batch=2),
            "3x3 s2 256 -> 512, C3 (CSP), SPPF (3 chained 5x5 max pools), SiLU",
        ),
        ModelSpec(
            "pspnet_head",
            conv,
            PSPHead,
            sizes((8, 2048, 60, 60), (2, 2048, 6, 6), (2, 2048, 6, 6)),
            "adaptive pools 1/2/3/6, bilinear up, concat 4096, 3x3 to 512, 21 classes, x8 zoom",
        ),
        ModelSpec(
            "ddpm_attn_down_level",
            norm,
            DDPMAttnDownLevel,
            sizes([(64, 128, 16, 16), (64, 512)], [(1, 128, 8, 8), (1, 512)], [(2, 128, 4, 4), (2, 512)]),
            "GroupNorm(32) res blocks + time embedding, spatial attention, s2 conv, 3 outputs",
        ),
        ModelSpec(
            "biggan_gblock",
            norm,
            BigGANGBlock,
            sizes([(32, 768, 16, 16), (32, 148)], [(2, 768, 4, 4), (2, 148)], [(2, 768, 3, 3), (2, 148)]),
            "768 -> 384, conditional BN (gain/bias from a 148-dim vector), nearest x2",
        ),
        ModelSpec(
            "poolformer_s12_stage1",
            norm,
            PoolFormerStage,
            image(64, cuda_hw=56, cuda_batch=64, cpu_hw=32, cpu_batch=2),
            "2 blocks, GroupNorm(1), avg pool - x mixer, layer scale, 1x1-conv MLP",
        ),
        ModelSpec(
            "convtasnet_separator",
            norm,
            ConvTasNetSeparator,
            sizes((16, 512, 3999), (1, 512, 200), (2, 512, 9)),
            "gLN, 8 blocks (dilations 1..128, PReLU, dw Conv1d), 2 sigmoid masks",
        ),
        ModelSpec(
            "squeezenet1_1",
            whole,
            SqueezeNet11,
            sizes((64, 3, 224, 224), (4, 3, 64, 64), (2, 3, 32, 32)),
            "8 fire modules, ceil-mode max pools, conv classifier, 1000 classes",
        ),
        ModelSpec(
            "convmixer_256_8",
            whole,
            ConvMixer,
            sizes((128, 3, 32, 32), (4, 3, 32, 32), (2, 3, 8, 8)),
            "CIFAR-10, patch 2, depthwise 5x5 'same', GELU + BN, 10 classes",
        ),
        ModelSpec(
            "fsrcnn_x2",
            whole,
            FSRCNN,
            sizes((16, 1, 270, 480), (1, 1, 64, 64), (2, 1, 8, 8)),
            "d 56, s 12, m 4, PReLU, 9x9 stride-2 ConvTranspose2d",
        ),
        ModelSpec(
            "retinanet_focal_loss",
            memory,
            lambda: Fn(retinanet_focal_loss),
            sizes([(8, 76725, 80)] * 2, [(2, 8000, 80)] * 2, [(2, 9, 80)] * 2),
            "sigmoid focal loss (0.25, 2), 80 classes, targets from input 2, scalar",
        ),
        ModelSpec(
            "soft_dice_loss",
            memory,
            lambda: Fn(soft_dice_loss),
            sizes((8, 19, 512, 1024), (2, 19, 128, 128), (2, 19, 9, 9)),
            "19 classes, softmax, fixed one-hot labels, per-class sums, scalar",
        ),
        ModelSpec(
            "top_k_sampling_probs",
            memory,
            lambda: Fn(top_k_sampling_probs),
            sizes((128, 128256), (8, 128256), (3, 4096)),
            "float32, temperature 0.7, top-k 50 mask, softmax",
        ),
        ModelSpec(
            "rwkv4_channel_mix",
            transformer,
            RWKV4ChannelMix,
            _tokens(768, (16, 1024)),
            "RWKV-4 169M, LayerNorm, token shift, squared ReLU, sigmoid gate",
        ),
        ModelSpec(
            "gmlp_s_block",
            transformer,
            GMLPBlock,
            sizes((64, 196, 256), (2, 196, 256), (2, 196, 256)),
            "gMLP-S, 196 tokens (fixed), spatial gating unit",
        ),
        ModelSpec(
            "mobilevit_s_block",
            transformer,
            MobileViTBlock,
            image(96, cuda_hw=32, cuda_batch=128, cpu_hw=16, cpu_batch=2, small_hw=8),
            "unfold 2x2 patches, 2 layers d 144 (4 heads, SDPA), fold, conv fusion",
        ),
        ModelSpec(
            "detr_decoder_layer",
            transformer,
            DETRDecoderLayer,
            sizes(
                [(32, 100, 256), (32, 850, 256), (32, 850, 256), (32, 100, 256)],
                [(2, 100, 256), (2, 240, 256), (2, 240, 256), (2, 100, 256)],
                [(2, 9, 256), (2, 12, 256), (2, 12, 256), (2, 9, 256)],
            ),
            "d 256, 8 heads, self + cross attention with positions, post-norm",
        ),
    ]
