"""A fourth set of held-out models for bench/models.py (`--zoo heldout4`):
blocks and small whole nets of well-known architectures picked as a user
would pick them, none of them in the suite or the first three held-out sets,
written after the compiler's tuning and never used for it (nor looked at with
it), so that its figures can be checked on programs no one tuned for. Same
conventions as model_zoo.py."""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from model_zoo import GROUPS, Fn, ModelSpec, conv_bn, image, sizes

# --- conv-graph ----------------------------------------------------------------------------------------


class GhostModule(nn.Module):
    """GhostNet's ghost module: a 1x1 conv makes half the channels, a cheap depthwise 3x3 on them the rest."""

    def __init__(self, cin, cout, relu=True):
        super().__init__()
        init = math.ceil(cout / 2)
        act = nn.ReLU if relu else None
        self.cout = cout
        self.primary = conv_bn(cin, init, 1, act=act)
        self.cheap = conv_bn(init, init, 3, groups=init, act=act)

    def forward(self, x):
        y = self.primary(x)
        return torch.cat([y, self.cheap(y)], 1)[:, : self.cout]


class GhostBottleneck(nn.Module):
    """GhostNet 1.0's 80 -> 112 bottleneck (expansion 480): ghost module, squeeze-excite gated by
    hard-sigmoid, ghost module without ReLU, and a depthwise 3x3 + 1x1 conv shortcut."""

    def __init__(self, cin=80, mid=480, cout=112, se_ratio=0.25):
        super().__init__()
        reduced = int(mid * se_ratio) // 4 * 4
        self.ghost1, self.ghost2 = GhostModule(cin, mid), GhostModule(mid, cout, relu=False)
        self.se_reduce, self.se_expand = nn.Conv2d(mid, reduced, 1), nn.Conv2d(reduced, mid, 1)
        self.shortcut = nn.Sequential(
            conv_bn(cin, cin, 3, groups=cin, act=None), conv_bn(cin, cout, 1, act=None)
        )

    def forward(self, x):
        y = self.ghost1(x)
        y = y * F.hardsigmoid(self.se_expand(F.relu(self.se_reduce(y.mean((2, 3), keepdim=True)))))
        return self.ghost2(y) + self.shortcut(x)


class CBAMBasicBlock(nn.Module):
    """ResNet-18's 128-channel basic block with CBAM (Woo et al.): channel attention from average- and
    max-pooled features through a shared MLP, then spatial attention from a 7x7 conv over the channel
    mean and max, before the residual add."""

    def __init__(self, c=128, reduction=16):
        super().__init__()
        self.body = nn.Sequential(conv_bn(c, c, 3), conv_bn(c, c, 3, act=None))
        self.mlp = nn.Sequential(nn.Linear(c, c // reduction), nn.ReLU(), nn.Linear(c // reduction, c))
        self.spatial = conv_bn(2, 1, 7, act=None)

    def forward(self, x):
        y = self.body(x)
        gate = torch.sigmoid(self.mlp(y.mean((2, 3))) + self.mlp(y.amax((2, 3))))
        y = y * gate[:, :, None, None]
        pooled = torch.cat([y.amax(1, keepdim=True), y.mean(1, keepdim=True)], 1)
        return torch.relu(x + y * torch.sigmoid(self.spatial(pooled)))


class WaveNetStack(nn.Module):
    """WaveNet's residual stack (van den Oord et al.): ten dilated causal Conv1d layers (kernel 2,
    dilation 1 to 512), tanh x sigmoid gate, 1x1 residual and skip convs; two outputs, the residual
    stream and the summed skips."""

    def __init__(self, c=64, gate=64, skip=256, layers=10, kernel=2):
        super().__init__()
        self.kernel = kernel
        self.dilated = nn.ModuleList(nn.Conv1d(c, 2 * gate, kernel, dilation=2**i) for i in range(layers))
        self.res = nn.ModuleList(nn.Conv1d(gate, c, 1) for _ in range(layers))
        self.skip = nn.ModuleList(nn.Conv1d(gate, skip, 1) for _ in range(layers))

    def forward(self, x):
        skips = 0
        for i, (dilated, res, skip) in enumerate(zip(self.dilated, self.res, self.skip)):
            filt, gate = dilated(F.pad(x, ((self.kernel - 1) * 2**i, 0))).chunk(2, 1)
            z = torch.tanh(filt) * torch.sigmoid(gate)
            skips = skips + skip(z)
            x = x + res(z)
        return x, skips


class UNet3DUpBlock(nn.Module):
    """3D U-Net's (Cicek et al.) top decoder step: a 2x2x2 stride-2 ConvTranspose3d of the coarse map,
    concat with the encoder's skip features, two 3x3x3 conv + BN + ReLU (128 + 64 -> 64)."""

    def __init__(self, cin=128, cskip=64, cout=64):
        super().__init__()
        self.up = nn.ConvTranspose3d(cin, cin, 2, stride=2)
        self.convs = nn.Sequential(conv_bn(cin + cskip, cout, 3, dims=3), conv_bn(cout, cout, 3, dims=3))

    def forward(self, coarse, skip):
        return self.convs(torch.cat([self.up(coarse), skip], 1))


# --- norm ----------------------------------------------------------------------------------------------


class StyleGAN2ModulatedConv(nn.Module):
    """StyleGAN2's synthesis layer: the latent's affine style scales the 3x3 weights per sample, weight
    demodulation renormalizes each output filter, one grouped conv applies them (groups = batch), then
    bias and LeakyReLU(0.2) x sqrt(2)."""

    def __init__(self, cin=512, cout=512, wdim=512, k=3):
        super().__init__()
        self.affine = nn.Linear(wdim, cin)
        nn.init.ones_(self.affine.bias)
        self.weight = nn.Parameter(torch.randn(cout, cin, k, k))
        self.bias = nn.Parameter(torch.randn(cout) * 0.1)
        self.scale = 1 / math.sqrt(cin * k * k)

    def forward(self, x, w):
        b, c, h, wd = x.shape
        k = self.weight.shape[-1]
        style = self.affine(w)
        weight = self.weight[None] * self.scale * style[:, None, :, None, None]
        weight = weight * torch.rsqrt(weight.pow(2).sum((2, 3, 4), keepdim=True) + 1e-8)
        out = F.conv2d(x.reshape(1, b * c, h, wd), weight.reshape(-1, c, k, k), padding=k // 2, groups=b)
        return F.leaky_relu(out.reshape(b, -1, h, wd) + self.bias[:, None, None], 0.2) * math.sqrt(2)


class SPADE(nn.Module):
    """GauGAN's spatially-adaptive normalization: parameter-free batch norm, then a per-pixel scale and
    shift predicted by convs from the segmentation map resized (nearest) to the features."""

    def __init__(self, c, labels=35, hidden=128):
        super().__init__()
        self.norm = nn.BatchNorm2d(c, affine=False)
        self.shared = nn.Sequential(nn.Conv2d(labels, hidden, 3, padding=1), nn.ReLU())
        self.gamma = nn.Conv2d(hidden, c, 3, padding=1)
        self.beta = nn.Conv2d(hidden, c, 3, padding=1)

    def forward(self, x, seg):
        a = self.shared(F.interpolate(seg, size=x.shape[-2:], mode="nearest"))
        return self.norm(x) * (1 + self.gamma(a)) + self.beta(a)


class SPADEResBlock(nn.Module):
    """GauGAN's middle SPADE residual block (1024 channels, no learned shortcut): (SPADE, LeakyReLU(0.2),
    3x3 conv) twice, residual; two inputs, the features and the segmentation map."""

    def __init__(self, c=1024, labels=35):
        super().__init__()
        self.norm0, self.conv0 = SPADE(c, labels), nn.Conv2d(c, c, 3, padding=1)
        self.norm1, self.conv1 = SPADE(c, labels), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x, seg):
        dx = self.conv0(F.leaky_relu(self.norm0(x, seg), 0.2))
        return x + self.conv1(F.leaky_relu(self.norm1(dx, seg), 0.2))


class TabularResNet(nn.Module):
    """The tabular ResNet of Gorishniy et al. ("Revisiting Deep Learning Models for Tabular Data") on
    Covertype's 54 features: a linear stem, blocks of BatchNorm1d, linear, ReLU, dropout, linear with a
    residual, then BatchNorm1d + ReLU + a 7-class linear head."""

    def __init__(self, features=54, d=256, hidden=512, blocks=4, classes=7):
        super().__init__()
        self.stem = nn.Linear(features, d)
        self.blocks = nn.ModuleList(
            nn.Sequential(
                nn.BatchNorm1d(d), nn.Linear(d, hidden), nn.ReLU(), nn.Dropout(0.2), nn.Linear(hidden, d)
            )
            for _ in range(blocks)
        )
        self.head = nn.Sequential(nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, classes))

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


class EvoNormS0(nn.Module):
    """EvoNorm-S0 (Liu et al., 2020): x * sigmoid(v * x) over the group standard deviation (no mean
    subtracted), then a per-channel affine; without the activation, only the division and the affine."""

    def __init__(self, c, groups=32, act=True, eps=1e-5):
        super().__init__()
        self.groups, self.act, self.eps = groups, act, eps
        self.weight = nn.Parameter(torch.rand(1, c, 1, 1) + 0.5)
        self.bias = nn.Parameter(torch.rand(1, c, 1, 1) * 0.4 - 0.2)
        self.v = nn.Parameter(torch.rand(1, c, 1, 1) + 0.5) if act else None

    def forward(self, x):
        b, c, h, w = x.shape
        grouped = x.reshape(b, self.groups, -1)
        std = (grouped.var(-1, unbiased=False, keepdim=True) + self.eps).sqrt()
        y = x * torch.sigmoid(self.v * x) if self.act else x
        return (y.reshape(b, self.groups, -1) / std).reshape(b, c, h, w) * self.weight + self.bias


class EvoNormBasicBlock(nn.Module):
    """A ResNet basic block with EvoNorm-S0 in place of BN + ReLU (as the EvoNorm paper's ResNets):
    3x3 conv, EvoNorm-S0, 3x3 conv, EvoNorm-S0 without the activation, identity residual, ReLU."""

    def __init__(self, c=128):
        super().__init__()
        self.conv1, self.norm1 = nn.Conv2d(c, c, 3, padding=1, bias=False), EvoNormS0(c)
        self.conv2, self.norm2 = nn.Conv2d(c, c, 3, padding=1, bias=False), EvoNormS0(c, act=False)

    def forward(self, x):
        return torch.relu(x + self.norm2(self.conv2(self.norm1(self.conv1(x)))))


# --- whole-cnn -----------------------------------------------------------------------------------------


class CifarBasicBlock(nn.Module):
    """The CIFAR ResNets' basic block (He et al.) with option-A shortcuts: subsample by 2 and zero-pad
    the new channels, no parameters on the shortcut."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, act=None))
        self.stride, self.pad = stride, (cout - cin) // 2

    def forward(self, x):
        s = x[:, :, :: self.stride, :: self.stride]
        if self.pad:
            s = F.pad(s, (0, 0, 0, 0, self.pad, self.pad))
        return torch.relu(self.body(x) + s)


class ResNet20(nn.Module):
    """ResNet-20 for CIFAR-10 (He et al.): a 3x3 stem, three stages of three basic blocks (16, 32, 64
    channels), global average pool, linear."""

    def __init__(self, classes=10, n=3):
        super().__init__()
        layers, cin = [conv_bn(3, 16, 3)], 16
        for g, c in enumerate((16, 32, 64)):
            for j in range(n):
                layers.append(CifarBasicBlock(cin, c, 2 if j == 0 and g > 0 else 1))
                cin = c
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.features(x).mean((2, 3)))


class DCGANDiscriminator(nn.Module):
    """DCGAN's 64x64 discriminator (Radford et al., ndf 64): 4x4 stride-2 convs with BN and
    LeakyReLU(0.2) from 64 to 512 channels, a 4x4 valid conv to one logit, sigmoid."""

    def __init__(self, ndf=64):
        super().__init__()
        leaky = lambda: nn.LeakyReLU(0.2)  # noqa: E731
        layers = [nn.Conv2d(3, ndf, 4, 2, 1, bias=False), leaky()]
        for k in range(3):
            cin, cout = ndf * 2**k, ndf * 2 ** (k + 1)
            layers += [nn.Conv2d(cin, cout, 4, 2, 1, bias=False), nn.BatchNorm2d(cout), leaky()]
        self.body = nn.Sequential(*layers, nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False))

    def forward(self, x):
        return torch.sigmoid(self.body(x)).flatten(1)


class ERFNetDownsampler(nn.Module):
    """ERFNet's downsampler: a 3x3 stride-2 conv concatenated with a 2x2 max pool, BN, ReLU."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout - cin, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(cout, eps=1e-3)

    def forward(self, x):
        return F.relu(self.bn(torch.cat([self.conv(x), F.max_pool2d(x, 2)], 1)))


class NonBottleneck1D(nn.Module):
    """ERFNet's non-bottleneck-1D block: factorized 3x1 and 1x3 convs twice, the second pair dilated."""

    def __init__(self, c, dilation):
        super().__init__()
        d = dilation
        self.conv3x1_1 = nn.Conv2d(c, c, (3, 1), padding=(1, 0))
        self.conv1x3_1 = nn.Conv2d(c, c, (1, 3), padding=(0, 1))
        self.bn1 = nn.BatchNorm2d(c, eps=1e-3)
        self.conv3x1_2 = nn.Conv2d(c, c, (3, 1), padding=(d, 0), dilation=(d, 1))
        self.conv1x3_2 = nn.Conv2d(c, c, (1, 3), padding=(0, d), dilation=(1, d))
        self.bn2 = nn.BatchNorm2d(c, eps=1e-3)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1x3_1(F.relu(self.conv3x1_1(x)))))
        y = self.bn2(self.conv1x3_2(F.relu(self.conv3x1_2(y))))
        return F.relu(y + x)


class ERFNet(nn.Module):
    """ERFNet (Romera et al.) for Cityscapes' 20 classes: downsamplers and non-bottleneck-1D blocks
    (dilations up to 16) to 1/8, a decoder of stride-2 ConvTranspose2d upsamplers, a 2x2 transposed
    output conv."""

    def __init__(self, classes=20):
        super().__init__()
        enc = [ERFNetDownsampler(3, 16), ERFNetDownsampler(16, 64)]
        enc += [NonBottleneck1D(64, 1) for _ in range(5)]
        enc.append(ERFNetDownsampler(64, 128))
        enc += [NonBottleneck1D(128, d) for _ in range(2) for d in (2, 4, 8, 16)]
        dec = []
        for cin, cout in ((128, 64), (64, 16)):
            dec += [
                nn.ConvTranspose2d(cin, cout, 3, stride=2, padding=1, output_padding=1),
                nn.BatchNorm2d(cout, eps=1e-3),
                nn.ReLU(),
                NonBottleneck1D(cout, 1),
                NonBottleneck1D(cout, 1),
            ]
        self.encoder, self.decoder = nn.Sequential(*enc), nn.Sequential(*dec)
        self.output = nn.ConvTranspose2d(16, classes, 2, stride=2)

    def forward(self, x):
        return self.output(self.decoder(self.encoder(x)))


# --- memory-bound --------------------------------------------------------------------------------------


def l2_normalize_rows(x):
    """Each row of an embedding table scaled to unit L2 norm (as for cosine retrieval, e.g. CLIP, FaceNet)."""
    return F.normalize(x, dim=-1)


def distillation_kl(student, teacher, temperature=2.0):
    """Hinton et al.'s distillation loss (as DistilBERT's): the KL divergence between the
    temperature-softened teacher and student distributions over BERT's 30522-word vocabulary,
    averaged over the rows and scaled by T^2."""
    s = F.log_softmax(student / temperature, dim=-1)
    t = F.log_softmax(teacher / temperature, dim=-1)
    return F.kl_div(s, t, reduction="batchmean", log_target=True) * temperature**2


def swiglu(x):
    """LLaMA's SwiGLU activation on the fused gate/up projection's output: SiLU of one half times the other."""
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up


# --- transformer ---------------------------------------------------------------------------------------


class PerceiverCrossAttention(nn.Module):
    """Perceiver's (Jaegle et al.) encoder step: a learned latent array (256 x 512) cross-attends to the
    flattened input array (LayerNorm on both, 8 heads), then an MLP on the latents; residuals."""

    def __init__(self, latents=256, d=512, cin=256, heads=8):
        super().__init__()
        self.heads = heads
        self.latents = nn.Parameter(torch.randn(latents, d))
        self.nq, self.nkv, self.nmlp = nn.LayerNorm(d), nn.LayerNorm(cin), nn.LayerNorm(d)
        self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(cin, 2 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))

    def forward(self, x):
        b, m, _ = x.shape
        n, d = self.latents.shape
        hd = d // self.heads
        lat = self.latents.expand(b, n, d)
        q = self.q(self.nq(lat)).view(b, n, self.heads, hd).transpose(1, 2)
        k, v = self.kv(self.nkv(x)).view(b, m, 2, self.heads, hd).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d)
        lat = lat + self.o(a)
        return lat + self.mlp(self.nmlp(lat))


class SwinBlock(nn.Module):
    """Swin-T's stage-1 shifted-window block on a channels-last map: cyclic shift by torch.roll, 7x7
    window partition (permuted views), window attention with a learned relative position bias and the
    shifted-window mask, window reverse, GELU MLP, pre-LayerNorm residuals."""

    def __init__(self, d=96, heads=3, window=7, shift=3):
        super().__init__()
        self.heads, self.window, self.shift = heads, window, shift
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        ij = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        rel = ij[:, :, None] - ij[:, None, :] + window - 1
        self.register_buffer("index", (rel[0] * (2 * window - 1) + rel[1]).flatten(), persistent=False)

    def _partition(self, x):
        b, h, w, c = x.shape
        ws = self.window
        return x.view(b, h // ws, ws, w // ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)

    def _mask(self, h, w, x):
        """-100 between tokens of a window that came from different regions before the shift."""
        ws, s = self.window, self.shift

        def region(n):
            i = torch.arange(n, device=x.device)
            return (i >= n - ws).long() + (i >= n - s).long()

        ids = (region(h)[:, None] * 3 + region(w)[None, :])[None, :, :, None]
        win = self._partition(ids).squeeze(-1)
        return (win[:, :, None] != win[:, None, :]).to(x.dtype) * -100.0

    def forward(self, x):
        b, h, w, c = x.shape
        ws, s, heads = self.window, self.shift, self.heads
        n = ws * ws
        win = self._partition(torch.roll(self.n1(x), (-s, -s), (1, 2)))
        q, k, v = self.qkv(win).reshape(-1, n, 3, heads, c // heads).permute(2, 0, 3, 1, 4).unbind(0)
        att = (q * (c // heads) ** -0.5) @ k.transpose(-2, -1)
        bias = self.table[self.index].view(n, n, heads).permute(2, 0, 1)
        windows = (h // ws) * (w // ws)
        att = att.view(b, windows, heads, n, n) + bias + self._mask(h, w, x)[:, None]
        out = (torch.softmax(att, -1).view(-1, heads, n, n) @ v).transpose(1, 2).reshape(-1, n, c)
        out = (
            self.proj(out).view(b, h // ws, w // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        )
        x = x + torch.roll(out, (s, s), (1, 2))
        return x + self.mlp(self.n2(x))


class BloomBlock(nn.Module):
    """BLOOM-560m's layer: pre-LayerNorm, fused per-head qkv, ALiBi biases (per-head slope times key
    position) with a causal mask, softmax upcast to float32, tanh-GELU MLP, residuals."""

    def __init__(self, d=1024, heads=16):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.dense = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        heads, hd = self.heads, d // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, s, heads, 3, hd).unbind(3)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        wide = torch.promote_types(x.dtype, torch.float32)
        slopes = torch.pow(2.0, torch.arange(1, heads + 1, device=x.device, dtype=wide) * (-8.0 / heads))
        alibi = slopes[:, None, None] * torch.arange(s, device=x.device, dtype=wide)
        scores = (q @ k.transpose(-1, -2)) * hd**-0.5 + alibi.to(x.dtype)
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        scores = scores.to(wide).masked_fill(~causal, torch.finfo(torch.float32).min)
        att = torch.softmax(scores, -1).to(x.dtype)
        x = x + self.dense((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))


class ClassAttention(nn.Module):
    """CaiT's class-attention layer: only the class token queries (itself and the patch tokens),
    LayerScale on both residual branches, GELU MLP on the class token."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.q, self.k, self.v, self.proj = (nn.Linear(d, d) for _ in range(4))
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.gamma1 = nn.Parameter((torch.rand(d) + 0.5) * 0.1)
        self.gamma2 = nn.Parameter((torch.rand(d) + 0.5) * 0.1)

    def forward(self, cls, x):
        b, n, d = x.shape
        hd = d // self.heads
        u = self.n1(torch.cat([cls, x], 1))
        q = self.q(u[:, :1]).view(b, 1, self.heads, hd).transpose(1, 2) * hd**-0.5
        k, v = (f(u).view(b, n + 1, self.heads, hd).transpose(1, 2) for f in (self.k, self.v))
        att = torch.softmax(q @ k.transpose(-1, -2), -1)
        cls = cls + self.gamma1 * self.proj((att @ v).transpose(1, 2).reshape(b, 1, d))
        return cls + self.gamma2 * self.mlp(self.n2(cls))


class CaiTClassHead(nn.Module):
    """CaiT-S24's head: a learned class token through two class-attention layers over the 196 patch
    tokens, final LayerNorm, 1000-class linear."""

    def __init__(self, d=384, heads=8, layers=2, classes=1000):
        super().__init__()
        self.cls = nn.Parameter(torch.randn(1, 1, d))
        self.blocks = nn.ModuleList(ClassAttention(d, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, classes)

    def forward(self, x):
        cls = self.cls.expand(x.shape[0], -1, -1)
        for block in self.blocks:
            cls = block(cls, x)
        return self.head(self.norm(cls)[:, 0])


def _tokens(d, cuda, cpu=(2, 32), small=(2, 9)):
    return sizes((*cuda, d), (*cpu, d), (*small, d))


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec(
            "ghost_bottleneck",
            conv,
            GhostBottleneck,
            image(80, cuda_hw=14, cuda_batch=128, cpu_hw=14),
            "GhostNet 80 -> 480 -> 112, hard-sigmoid SE, dw + 1x1 shortcut",
        ),
        ModelSpec(
            "cbam_basic_block",
            conv,
            CBAMBasicBlock,
            image(128, cuda_hw=28, cuda_batch=64, cpu_hw=16),
            "128ch, channel (avg + max MLP) and 7x7 spatial attention",
        ),
        ModelSpec(
            "wavenet_stack",
            conv,
            WaveNetStack,
            sizes((16, 64, 16384), (1, 64, 2048), (2, 64, 9)),
            "Conv1d k2, dilations 1..512, gated tanh/sigmoid, two outputs",
        ),
        ModelSpec(
            "unet3d_up_block",
            conv,
            UNet3DUpBlock,
            sizes(
                [(2, 128, 16, 48, 48), (2, 64, 32, 96, 96)],
                [(1, 128, 4, 6, 6), (1, 64, 8, 12, 12)],
                [(2, 128, 2, 3, 3), (2, 64, 4, 6, 6)],
            ),
            "ConvTranspose3d x2, concat skip, 2x (3x3x3 conv + BN + ReLU)",
        ),
        ModelSpec(
            "stylegan2_modulated_conv",
            norm,
            StyleGAN2ModulatedConv,
            sizes([(16, 512, 64, 64), (16, 512)], [(2, 512, 8, 8), (2, 512)], [(2, 512, 4, 4), (2, 512)]),
            "512 -> 512 3x3, weight demodulation, grouped conv per sample",
        ),
        ModelSpec(
            "spade_resblock",
            norm,
            SPADEResBlock,
            sizes(
                [(16, 1024, 16, 16), (16, 35, 256, 256)],
                [(1, 1024, 4, 4), (1, 35, 64, 64)],
                [(2, 1024, 2, 2), (2, 35, 8, 8)],
            ),
            "1024ch, param-free BN, nearest-resized 35-label map",
        ),
        ModelSpec(
            "tabular_resnet",
            norm,
            TabularResNet,
            sizes((32768, 54), (512, 54), (4, 54)),
            "54 features, d 256, 4 BatchNorm1d blocks, 7 classes",
        ),
        ModelSpec(
            "evonorm_s0_block",
            norm,
            EvoNormBasicBlock,
            image(128, cuda_hw=56, cpu_hw=16),
            "128ch, EvoNorm-S0 (32 groups) twice",
        ),
        ModelSpec(
            "resnet20_cifar",
            whole,
            ResNet20,
            sizes((256, 3, 32, 32), (4, 3, 32, 32), (2, 3, 8, 8)),
            "option-A shortcuts (subsample + zero pad), 10 classes",
        ),
        ModelSpec(
            "dcgan_discriminator",
            whole,
            DCGANDiscriminator,
            sizes((256, 3, 64, 64), (4, 3, 64, 64), (2, 3, 64, 64)),
            "64x64, ndf 64, LeakyReLU(0.2), sigmoid",
        ),
        ModelSpec(
            "erfnet",
            whole,
            ERFNet,
            sizes((4, 3, 512, 1024), (1, 3, 64, 128), (2, 3, 16, 32)),
            "20 classes, factorized dilated convs, ConvTranspose2d decoder",
        ),
        ModelSpec(
            "l2_normalize_rows",
            memory,
            lambda: Fn(l2_normalize_rows),
            sizes((1048576, 256), (32768, 256), (7, 256)),
            "F.normalize of an embedding table's rows",
        ),
        ModelSpec(
            "distillation_kl",
            memory,
            lambda: Fn(distillation_kl),
            sizes([(4096, 30522)] * 2, [(32, 30522)] * 2, [(3, 30522)] * 2),
            "two inputs, T = 2, vocabulary 30522, scalar",
        ),
        ModelSpec(
            "swiglu_activation",
            memory,
            lambda: Fn(swiglu),
            sizes((8, 2048, 22016), (2, 64, 22016), (2, 9, 64)),
            "LLaMA-7B hidden 11008, silu(gate) * up on chunked halves",
        ),
        ModelSpec(
            "perceiver_cross_attention",
            transformer,
            PerceiverCrossAttention,
            sizes((16, 8192, 256), (1, 1024, 256), (2, 9, 256)),
            "256 latents x 512 over 256-channel inputs, 8 heads",
        ),
        ModelSpec(
            "swin_block",
            transformer,
            SwinBlock,
            sizes((32, 56, 56, 96), (2, 28, 28, 96), (2, 14, 14, 96)),
            "Swin-T stage 1, channels-last, window 7, shift 3, relative bias",
        ),
        ModelSpec(
            "bloom_block",
            transformer,
            BloomBlock,
            _tokens(1024, (8, 1024), cpu=(1, 32)),
            "d 1024, 16 heads, ALiBi, causal, float32 softmax",
        ),
        ModelSpec(
            "cait_class_head",
            transformer,
            CaiTClassHead,
            sizes((128, 196, 384), (2, 196, 384), (2, 9, 384)),
            "CaiT-S24, 2 class-attention layers, LayerScale",
        ),
    ]
