"""A seventh set of held-out models for bench/models.py (`--zoo heldout7`):
blocks and small whole nets of well-known architectures picked as a user
would pick them, none of them in the suite or the first six held-out sets,
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


def _wide(dtype):
    """float32, or the input's dtype where it is wider (the float64 reference run stays float64)."""
    return torch.promote_types(dtype, torch.float32)


# --- conv-graph ----------------------------------------------------------------------------------------


def _round_width(width, multiplier, min_width=8, divisor=8):
    """pytorchvideo's round_width."""
    width *= multiplier
    out = max(min_width, int(width + divisor / 2) // divisor * divisor)
    return out + divisor if out < 0.9 * width else out


class X3DBottleneck(nn.Module):
    """X3D's bottleneck (Feichtenhofer, "X3D: Expanding Architectures for Efficient Video Recognition";
    pytorchvideo's create_x3d_bottleneck_block): 1x1x1 conv + BN + ReLU to the inner width, a depthwise
    3x3x3 conv (spatial stride 2 on a stage's first block) + BN, squeeze-excitation (reduced to 1/16,
    rounded to 8) on every other block, Swish, 1x1x1 conv + BN; a 1x1x1 conv + BN on the shortcut where
    the shape changes; ReLU after the sum."""

    def __init__(self, cin, cout, inner, stride, se):
        super().__init__()
        s = (1, stride, stride)
        self.conv_a = conv_bn(cin, inner, 1, dims=3)
        self.conv_b = conv_bn(inner, inner, 3, s, groups=inner, act=None, dims=3)
        reduced = _round_width(inner, 0.0625)
        self.se = (
            nn.Sequential(
                nn.AdaptiveAvgPool3d(1),
                nn.Conv3d(inner, reduced, 1),
                nn.ReLU(),
                nn.Conv3d(reduced, inner, 1),
                nn.Sigmoid(),
            )
            if se
            else None
        )
        self.conv_c = conv_bn(inner, cout, 1, act=None, dims=3)
        self.branch1 = conv_bn(cin, cout, 1, s, act=None, dims=3) if cin != cout or stride != 1 else None

    def forward(self, x):
        y = self.conv_b(self.conv_a(x))
        if self.se is not None:
            y = y * self.se(y)
        y = self.conv_c(F.silu(y))
        return torch.relu((x if self.branch1 is None else self.branch1(x)) + y)


class X3DStage(nn.Module):
    """X3D-M's res3 stage (width factor 2, depth factor 2.2, bottleneck factor 2.25): five bottlenecks,
    24 -> 48 channels with inner width 108, SE on blocks 1, 3 and 5. At X3D-M's 16 x 224 x 224 clips
    its input is the 16 x 56 x 56 map."""

    def __init__(self, cin=24, cout=48, inner=108, depth=5):
        super().__init__()
        self.blocks = nn.Sequential(
            *(
                X3DBottleneck(cin if i == 0 else cout, cout, inner, 2 if i == 0 else 1, se=i % 2 == 0)
                for i in range(depth)
            )
        )

    def forward(self, x):
        return self.blocks(x)


class ESPModule(nn.Module):
    """ESPNet's efficient spatial pyramid (Mehta et al.; the reference DilatedParllelResidualBlockB and
    DownSamplerB): a bias-free conv to n = C/5 channels (1x1, or 3x3 stride 2 when downsampling), five
    parallel 3x3 convs of dilation 1, 2, 4, 8 and 16 on it (the first to C - 4n), the hierarchical
    feature fusion (each dilated output added to the sum of the smaller-dilation ones), concat, the
    input added where the shape is kept, BN (eps 1e-3) + PReLU."""

    def __init__(self, cin, cout, down=False):
        super().__init__()
        n = cout // 5
        n1 = cout - 4 * n
        self.c1 = nn.Conv2d(cin, n, 3, 2, 1, bias=False) if down else nn.Conv2d(cin, n, 1, bias=False)
        self.dilated = nn.ModuleList(
            nn.Conv2d(n, n1 if d == 1 else n, 3, padding=d, dilation=d, bias=False) for d in (1, 2, 4, 8, 16)
        )
        self.add = not down and cin == cout
        self.bn, self.act = nn.BatchNorm2d(cout, eps=1e-3), nn.PReLU(cout)

    def forward(self, x):
        y = self.c1(x)
        d1, *rest = (conv(y) for conv in self.dilated)
        fused = [rest[0]]
        for r in rest[1:]:
            fused.append(fused[-1] + r)
        combine = torch.cat([d1, *fused], 1)
        if self.add:
            combine = x + combine
        return self.act(self.bn(combine))


class ESPNetLevel3(nn.Module):
    """ESPNet-C's third level and classifier (p = 2, q = 8, Cityscapes' 20 classes): the downsampling
    ESP module 131 -> 128 (the level-2 features concatenated with the quarter-size image), eight
    residual ESP modules, concat with the downsampler's output, BN + PReLU, a bias-free 1x1 conv to
    the classes. At 1024 x 512 its input is 256 x 128."""

    def __init__(self, cin=131, c=128, q=8, classes=20):
        super().__init__()
        self.level3_0 = ESPModule(cin, c, down=True)
        self.level3 = nn.Sequential(*(ESPModule(c, c) for _ in range(q)))
        self.b3 = nn.Sequential(nn.BatchNorm2d(2 * c, eps=1e-3), nn.PReLU(2 * c))
        self.classifier = nn.Conv2d(2 * c, classes, 1, bias=False)

    def forward(self, x):
        down = self.level3_0(x)
        return self.classifier(self.b3(torch.cat([down, self.level3(down)], 1)))


class ResidualDenseBlock(nn.Module):
    """ESRGAN's residual dense block (ResidualDenseBlock_5C: 64 features, growth 32): five 3x3 convs,
    each on the concat of the input and all earlier outputs, LeakyReLU(0.2) after the first four, the
    last back to 64 channels, scaled by 0.2 and added to the input."""

    def __init__(self, nf=64, gc=32):
        super().__init__()
        self.convs = nn.ModuleList(
            nn.Conv2d(nf + i * gc, gc if i < 4 else nf, 3, padding=1) for i in range(5)
        )

    def forward(self, x):
        features = [x]
        for conv in self.convs[:-1]:
            features.append(F.leaky_relu(conv(torch.cat(features, 1)), 0.2))
        return self.convs[-1](torch.cat(features, 1)) * 0.2 + x


class RRDB(nn.Module):
    """ESRGAN's residual-in-residual dense block (Wang et al., the xinntao RRDBNet code): three residual
    dense blocks in a row, scaled by 0.2 and added to the input. Input: 64-channel features of 128 x 128
    low-resolution tiles (a x4 upscale to 512 x 512)."""

    def __init__(self, nf=64, gc=32):
        super().__init__()
        self.rdbs = nn.Sequential(*(ResidualDenseBlock(nf, gc) for _ in range(3)))

    def forward(self, x):
        return self.rdbs(x) * 0.2 + x


class DLABasicBlock(nn.Module):
    """DLA's BasicBlock: ResNet's, with the residual passed in by the tree."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3, stride), conv_bn(cout, cout, 3, act=None))

    def forward(self, x, residual=None):
        return torch.relu(self.body(x) + (x if residual is None else residual))


class DLARoot(nn.Module):
    """DLA's aggregation node: a 1x1 conv + BN on the concat of the children, ReLU."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = conv_bn(cin, cout, 1)

    def forward(self, *children):
        return self.conv(torch.cat(children, 1))


class DLATree(nn.Module):
    """DLA's hierarchical deep aggregation tree (Yu et al., "Deep Layer Aggregation"; the ucbdrive/dla
    Tree): at level 1 two blocks aggregated by a root, deeper levels two subtrees, the second one's
    root also taking the first's output and (level_root) the stage's downsampled input; max pool and a
    1x1 conv + BN for the shortcut where the stride or the width changes."""

    def __init__(self, levels, cin, cout, stride=1, level_root=False, root_dim=0):
        super().__init__()
        root_dim = (root_dim or 2 * cout) + (cin if level_root else 0)
        if levels == 1:
            self.tree1, self.tree2 = DLABasicBlock(cin, cout, stride), DLABasicBlock(cout, cout)
            self.root = DLARoot(root_dim, cout)
        else:
            self.tree1 = DLATree(levels - 1, cin, cout, stride)
            self.tree2 = DLATree(levels - 1, cout, cout, root_dim=root_dim + cout)
        self.levels, self.level_root = levels, level_root
        self.downsample = nn.MaxPool2d(stride, stride) if stride > 1 else None
        self.project = conv_bn(cin, cout, 1, act=None) if cin != cout else None

    def forward(self, x, residual=None, children=None):
        children = [] if children is None else children
        bottom = self.downsample(x) if self.downsample is not None else x
        residual = self.project(bottom) if self.project is not None else bottom
        if self.level_root:
            children.append(bottom)
        if self.levels == 1:
            x1 = self.tree1(x, residual)
            return self.root(self.tree2(x1), x1, *children)
        x1 = self.tree1(x, residual)
        children.append(x1)
        return self.tree2(x1, children=children)


class DLA34Level3(nn.Module):
    """DLA-34's level 3: a two-level tree, 64 -> 128 channels at stride 2, level root (its last root
    aggregates 448 channels). As in the reference, the outer tree's shortcut projection is computed and
    passed to its first subtree, which computes its own. At 224 pixels its input is 56 x 56."""

    def __init__(self, cin=64, cout=128):
        super().__init__()
        self.tree = DLATree(2, cin, cout, 2, level_root=True)

    def forward(self, x):
        return self.tree(x)


# --- norm ----------------------------------------------------------------------------------------------


class FCOSHead(nn.Module):
    """FCOS's head (Tian et al.; torchvision's FCOSHead for fcos_resnet50_fpn, COCO's 91 classes),
    shared over the five FPN levels: a classification tower and a regression tower of four 3x3 conv +
    GroupNorm(32) + ReLU each, 3x3 convs to the class logits, to the 4 box distances (ReLU) and to the
    centerness; each level's maps flattened to (N, HW, K) and the levels concatenated. Inputs: P3-P7
    of an 800 x 1088 batch."""

    def __init__(self, c=256, classes=91, convs=4):
        super().__init__()

        def tower():
            layers = []
            for _ in range(convs):
                layers += [nn.Conv2d(c, c, 3, padding=1), nn.GroupNorm(32, c), nn.ReLU()]
            return nn.Sequential(*layers)

        self.cls_tower, self.bbox_tower = tower(), tower()
        self.cls_logits = nn.Conv2d(c, classes, 3, padding=1)
        self.bbox_reg, self.bbox_ctrness = nn.Conv2d(c, 4, 3, padding=1), nn.Conv2d(c, 1, 3, padding=1)

    @staticmethod
    def _flatten(t):
        n, k, h, w = t.shape
        return t.view(n, -1, k, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, k)

    def forward(self, *features):
        logits, boxes, centerness = [], [], []
        for x in features:
            logits.append(self._flatten(self.cls_logits(self.cls_tower(x))))
            y = self.bbox_tower(x)
            boxes.append(self._flatten(torch.relu(self.bbox_reg(y))))
            centerness.append(self._flatten(self.bbox_ctrness(y)))
        return torch.cat(logits, 1), torch.cat(boxes, 1), torch.cat(centerness, 1)


class IBN(nn.Module):
    """IBN-Net's IBN-a norm: the first half of the channels instance-normalized (affine), the rest
    batch-normalized, concatenated back."""

    def __init__(self, c, ratio=0.5):
        super().__init__()
        self.half = int(c * ratio)
        self.IN, self.BN = nn.InstanceNorm2d(self.half, affine=True), nn.BatchNorm2d(c - self.half)

    def forward(self, x):
        a, b = torch.split(x, self.half, 1)
        return torch.cat([self.IN(a.contiguous()), self.BN(b.contiguous())], 1)


class IBNBottleneck(nn.Module):
    """ResNet-50-IBN-a's bottleneck (Pan et al., "Two at Once", the IBN-Net reference code): ResNet's
    with the first 1x1 conv's BN replaced by IBN-a."""

    def __init__(self, cin, width, stride=1):
        super().__init__()
        cout = 4 * width
        self.body = nn.Sequential(
            nn.Conv2d(cin, width, 1, bias=False),
            IBN(width),
            nn.ReLU(),
            conv_bn(width, width, 3, stride),
            conv_bn(width, cout, 1, act=None),
        )
        self.downsample = conv_bn(cin, cout, 1, stride, act=None) if cin != cout or stride != 1 else None

    def forward(self, x):
        return torch.relu(self.body(x) + (x if self.downsample is None else self.downsample(x)))


class IBNResNetLayer1(nn.Module):
    """ResNet-50-IBN-a's layer1: three IBN-a bottlenecks, 64 -> 256 channels at width 64 (the
    instance norm on 32 channels of each), on the 56 x 56 map of a 224-pixel image."""

    def __init__(self, cin=64, width=64, blocks=3):
        super().__init__()
        self.blocks = nn.Sequential(
            *(IBNBottleneck(cin if i == 0 else 4 * width, width) for i in range(blocks))
        )

    def forward(self, x):
        return self.blocks(x)


class NNUNetEncoder(nn.Module):
    """The first three stages of nnU-Net's 3d_fullres encoder (Isensee et al.; the dynamic-network-
    architectures PlainConvEncoder as nnU-Net plans it for BraTS: four MRI modalities, 128^3 patches,
    batch 2): per stage two 3x3x3 convs (with bias; the first of stride 2 from the second stage on) +
    InstanceNorm3d (affine, eps 1e-5) + LeakyReLU(0.01), 32, 64 and 128 features; returns the three
    stages' maps (the decoder's skips). The instance norms run over few long rows: 2 x 32 of 2M voxels
    in the first stage."""

    def __init__(self, cin=4, features=(32, 64, 128)):
        super().__init__()
        stages, c = [], cin
        for i, f in enumerate(features):
            stages.append(
                nn.Sequential(
                    nn.Conv3d(c, f, 3, 1 if i == 0 else 2, 1),
                    nn.InstanceNorm3d(f, eps=1e-5, affine=True),
                    nn.LeakyReLU(0.01),
                    nn.Conv3d(f, f, 3, 1, 1),
                    nn.InstanceNorm3d(f, eps=1e-5, affine=True),
                    nn.LeakyReLU(0.01),
                )
            )
            c = f
        self.stages = nn.ModuleList(stages)

    def forward(self, x):
        skips = []
        for stage in self.stages:
            x = stage(x)
            skips.append(x)
        return tuple(skips)


class LayerNorm2d(nn.Module):
    """Segment Anything's LayerNorm2d: each pixel normalized over its channels (eps 1e-6)."""

    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = _affine(c)

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class SAMMLP(nn.Module):
    """Segment Anything's MLP: linears with ReLU between."""

    def __init__(self, cin, hidden, cout, layers):
        super().__init__()
        dims = [cin] + [hidden] * (layers - 1)
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims, dims[1:] + [cout]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < len(self.layers) - 1 else layer(x)
        return x


class SAMMaskHead(nn.Module):
    """Segment Anything's mask decoder after its two-way transformer (Kirillov et al.,
    MaskDecoder.predict_masks, ViT-H's 256-dim embedding of 64 x 64): the image embedding upscaled x4
    by a 2x2 stride-2 ConvTranspose2d 256 -> 64 + LayerNorm2d + GELU and a second 64 -> 32 + GELU; each
    of the 4 mask tokens through its own 3-layer hypernetwork MLP to 32 values, dotted with every pixel
    (masks at 256 x 256); the IoU token through the 3-layer IoU head; multimask output (masks 1-3).
    Inputs: the transformer's image tokens (64 prompts, as the automatic mask generator batches them)
    and its 7 output tokens (IoU, 4 masks, a point and its padding)."""

    def __init__(self, d=256, masks=4):
        super().__init__()
        self.masks = masks
        self.output_upscaling = nn.Sequential(
            nn.ConvTranspose2d(d, d // 4, 2, stride=2),
            LayerNorm2d(d // 4),
            nn.GELU(),
            nn.ConvTranspose2d(d // 4, d // 8, 2, stride=2),
            nn.GELU(),
        )
        self.output_hypernetworks_mlps = nn.ModuleList(SAMMLP(d, d, d // 8, 3) for _ in range(masks))
        self.iou_prediction_head = SAMMLP(d, 256, masks, 3)

    def forward(self, src, hs):
        b, n, c = src.shape
        h = w = math.isqrt(n)
        iou_token_out, mask_tokens_out = hs[:, 0, :], hs[:, 1 : 1 + self.masks, :]
        upscaled = self.output_upscaling(src.transpose(1, 2).reshape(b, c, h, w))
        hyper_in = torch.stack(
            [mlp(mask_tokens_out[:, i, :]) for i, mlp in enumerate(self.output_hypernetworks_mlps)], 1
        )
        b, c, h, w = upscaled.shape
        masks = (hyper_in @ upscaled.reshape(b, c, h * w)).view(b, -1, h, w)
        iou_pred = self.iou_prediction_head(iou_token_out)
        return masks[:, 1:], iou_pred[:, 1:]


# --- whole-cnn -----------------------------------------------------------------------------------------


class ESPCN(nn.Module):
    """ESPCN x3 (Shi et al., "Real-Time Single Image and Video Super-Resolution Using an Efficient
    Sub-Pixel CNN"; l = 3, (5, 64), (3, 32), 3) on the luminance channel: 5x5 conv to 64 + tanh, 3x3
    conv to 32 + tanh, 3x3 conv to 9, the periodic shuffle (PixelShuffle(3)): 360p frames to 1080p."""

    def __init__(self, scale=3):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 64, 5, padding=2),
            nn.Tanh(),
            nn.Conv2d(64, 32, 3, padding=1),
            nn.Tanh(),
            nn.Conv2d(32, scale**2, 3, padding=1),
            nn.PixelShuffle(scale),
        )

    def forward(self, x):
        return self.body(x)


class PointNetTNet(nn.Module):
    """PointNet's transform net (STN3d / STNkd of the pointnet.pytorch code): shared 1x1 Conv1d MLP
    k -> 64 -> 128 -> 1024 + BN + ReLU, max over the points, FC 512 -> 256 + BN + ReLU, FC to k x k,
    plus the identity, as a (batch, k, k) transform."""

    def __init__(self, k):
        super().__init__()
        self.k = k
        self.convs = nn.Sequential(
            nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
            nn.Conv1d(128, 1024, 1), nn.BatchNorm1d(1024), nn.ReLU(),
        )  # fmt: skip
        self.fcs = nn.Sequential(
            nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU(),
            nn.Linear(512, 256), nn.BatchNorm1d(256), nn.ReLU(),
            nn.Linear(256, k * k),
        )  # fmt: skip
        # A trained T-net is near orthogonal (the regularizer, the original's zero init of the last FC):
        # small weights, so that the transform is the identity plus a perturbation of about 0.1.
        nn.init.normal_(self.fcs[-1].weight, std=0.01)

    def forward(self, x):
        y = self.fcs(torch.max(self.convs(x), 2)[0])
        iden = torch.eye(self.k, dtype=x.dtype, device=x.device).flatten()
        return (y + iden).view(-1, self.k, self.k)


class PointNetCls(nn.Module):
    """PointNet's classifier with the feature transform (Qi et al.; the pointnet.pytorch PointNetCls,
    ModelNet40's 40 classes, 1024 points): the input transform applied (bmm), Conv1d 3 -> 64 + BN +
    ReLU, the 64 x 64 feature transform applied, Conv1d 64 -> 128 + BN + ReLU, 128 -> 1024 + BN, max
    over the points; FC 512 + BN + ReLU, FC 256 + (dropout) + BN + ReLU, FC to the classes,
    log-softmax. Returns the log-probabilities and both transforms (the latter for the
    regularizer)."""

    def __init__(self, classes=40):
        super().__init__()
        self.stn, self.fstn = PointNetTNet(3), PointNetTNet(64)
        self.conv1 = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU())
        self.conv2 = nn.Sequential(nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU())
        self.conv3 = nn.Sequential(nn.Conv1d(128, 1024, 1), nn.BatchNorm1d(1024))
        self.fc1 = nn.Sequential(nn.Linear(1024, 512), nn.BatchNorm1d(512), nn.ReLU())
        self.fc2 = nn.Sequential(nn.Linear(512, 256), nn.Dropout(0.3), nn.BatchNorm1d(256), nn.ReLU())
        self.fc3 = nn.Linear(256, classes)

    def forward(self, x):
        trans = self.stn(x)
        x = self.conv1(torch.bmm(x.transpose(2, 1), trans).transpose(2, 1))
        trans_feat = self.fstn(x)
        x = torch.bmm(x.transpose(2, 1), trans_feat).transpose(2, 1)
        x = torch.max(self.conv3(self.conv2(x)), 2)[0]
        return F.log_softmax(self.fc3(self.fc2(self.fc1(x))), 1), trans, trans_feat


class QuartzNetBlock(nn.Module):
    """A QuartzNet block (NeMo's JasperBlock, separable): R sub-blocks of a depthwise Conv1d (kernel k,
    'same' padding), a pointwise conv and BN (eps 1e-3), ReLU between; with a residual, a 1x1 conv + BN
    of the block input added before the last ReLU."""

    def __init__(self, cin, cout, k, repeat=5, stride=1, dilation=1, residual=True, separable=True):
        super().__init__()
        subs = []
        for i in range(repeat):
            c = cin if i == 0 else cout
            pad = dilation * (k // 2)
            conv = (
                [
                    nn.Conv1d(c, c, k, stride, pad, dilation, groups=c, bias=False),
                    nn.Conv1d(c, cout, 1, bias=False),
                ]
                if separable
                else [nn.Conv1d(c, cout, k, stride, pad, dilation, bias=False)]
            )
            subs.append(nn.Sequential(*conv, nn.BatchNorm1d(cout, eps=1e-3)))
        self.subs = nn.ModuleList(subs)
        self.res = (
            nn.Sequential(nn.Conv1d(cin, cout, 1, bias=False), nn.BatchNorm1d(cout, eps=1e-3))
            if residual
            else None
        )

    def forward(self, x):
        y = x
        for i, sub in enumerate(self.subs):
            y = sub(y)
            if i < len(self.subs) - 1:
                y = torch.relu(y)
        return torch.relu(y if self.res is None else y + self.res(x))


class QuartzNet(nn.Module):
    """QuartzNet 5x5 (Kriman et al.; NeMo's config, 6.7M parameters) on 64 mel features: C1 (k 33, 256,
    stride 2), blocks B1-B5 of five sub-blocks (k 33/39/51/63/75, 256/256/512/512/512), C2 (k 87,
    dilation 2, 512), C3 (1x1, 1024), all separable but C3; the CTC decoder's 1x1 conv to the 29
    characters and log-softmax. Input: about 10 s of audio (1024 frames)."""

    def __init__(self, feats=64, classes=29):
        super().__init__()
        cfg = [(256, 33), (256, 39), (512, 51), (512, 63), (512, 75)]
        layers = [QuartzNetBlock(feats, 256, 33, 1, stride=2, residual=False)]
        c = 256
        for cout, k in cfg:
            layers.append(QuartzNetBlock(c, cout, k))
            c = cout
        layers += [
            QuartzNetBlock(512, 512, 87, 1, dilation=2, residual=False),
            QuartzNetBlock(512, 1024, 1, 1, residual=False, separable=False),
        ]
        self.encoder = nn.Sequential(*layers)
        self.decoder = nn.Conv1d(1024, classes, 1)

    def forward(self, x):
        return F.log_softmax(self.decoder(self.encoder(x)).transpose(1, 2), -1)


class CNN14ConvBlock(nn.Module):
    def __init__(self, cin, cout, pool):
        super().__init__()
        self.body = nn.Sequential(conv_bn(cin, cout, 3), conv_bn(cout, cout, 3))
        self.pool = pool

    def forward(self, x):
        return F.avg_pool2d(self.body(x), self.pool)


class CNN14(nn.Module):
    """PANNs' Cnn14 audio tagger (Kong et al., the audioset_tagging_cnn code) on a 10-s clip's log-mel
    spectrogram (1001 frames x 64 mel bins, after the STFT front end): BN over the mel bins, six blocks
    of two 3x3 conv + BN + ReLU (64 to 2048 channels) with 2x2 average pools (none after the last),
    dropout, mean over the mel axis, max plus mean over time, FC 2048 + ReLU, a sigmoid FC to
    AudioSet's 527 classes. Returns the clip-wise output and the embedding."""

    def __init__(self, mels=64, classes=527):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(mels)
        widths = [1, 64, 128, 256, 512, 1024, 2048]
        self.blocks = nn.Sequential(
            *(CNN14ConvBlock(widths[i], widths[i + 1], (2, 2) if i < 5 else (1, 1)) for i in range(6))
        )
        self.dropout, self.dropout_fc = nn.Dropout(0.2), nn.Dropout(0.5)
        self.fc1, self.fc_audioset = nn.Linear(2048, 2048), nn.Linear(2048, classes)

    def forward(self, x):
        x = self.bn0(x.transpose(1, 3)).transpose(1, 3)
        x = torch.mean(self.dropout(self.blocks(x)), 3)
        x = torch.max(x, 2)[0] + torch.mean(x, 2)
        embedding = F.relu(self.fc1(self.dropout_fc(x)))
        return torch.sigmoid(self.fc_audioset(self.dropout_fc(embedding))), embedding


# --- memory-bound --------------------------------------------------------------------------------------


def clip_grad_norm(*grads, max_norm=1.0):
    """torch.nn.utils.clip_grad_norm_ (norm 2, max norm 1, the per-tensor path) written out of place:
    each gradient's whole-tensor L2 norm, the norm of the norms, the clip coefficient clamped at 1,
    every gradient scaled by it. Inputs: the weight gradients of one Llama-2-7B decoder layer (q, k, v,
    o, gate, up, down and the two RMSNorms); returns the total norm and the scaled gradients."""
    norms = [torch.linalg.vector_norm(g, 2.0) for g in grads]
    total_norm = torch.linalg.vector_norm(torch.stack(norms), 2.0)
    clip_coef_clamped = torch.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    return total_norm, [g * clip_coef_clamped for g in grads]


def lamb_step(p, grad, exp_avg, exp_avg_sq_root, lr=2e-3, betas=(0.9, 0.999), eps=1e-6, wd=0.01, step=1000):
    """One LAMB update of one parameter (You et al.; timm's Lamb.step without global gradient
    clipping, as for BERT pretraining: weight decay 0.01, step 1000): the moment updates, the
    bias-corrected Adam direction plus weight decay, the layer-wise trust ratio ||p|| / ||update||
    (1 where either is zero) of two whole-tensor norms, the step. Inputs: BERT-large's word embedding
    (30522 x 1024), its gradient and the two moments; the bench gives normal inputs, so the second
    moment is the square of the fourth. Returns the new parameter and moments."""
    beta1, beta2 = betas
    exp_avg_sq = exp_avg_sq_root.square()
    bias_correction1, bias_correction2 = 1 - beta1**step, 1 - beta2**step
    exp_avg = exp_avg * beta1 + grad * (1 - beta1)
    exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1 - beta2)
    denom = exp_avg_sq.sqrt() / math.sqrt(bias_correction2) + eps
    update = (exp_avg / bias_correction1) / denom + p * wd
    w_norm, g_norm = p.norm(2.0), update.norm(2.0)
    trust_ratio = torch.where(w_norm > 0, torch.where(g_norm > 0, w_norm / g_norm, 1.0), 1.0)
    return p - lr * (update * trust_ratio), exp_avg, exp_avg_sq


def _slaney_mel_filters(sr=16000, n_fft=400, n_mels=80):
    """librosa.filters.mel(sr, n_fft, n_mels) (Slaney scale and norm), Whisper's mel_filters.npz."""
    f_sp, min_log_hz, min_log_mel, logstep = 200.0 / 3, 1000.0, 15.0, math.log(6.4) / 27.0

    def hz_to_mel(f):
        return f / f_sp if f < min_log_hz else min_log_mel + math.log(f / min_log_hz) / logstep

    mels = torch.linspace(hz_to_mel(0.0), hz_to_mel(sr / 2), n_mels + 2, dtype=torch.float64)
    mel_f = torch.where(
        mels < min_log_mel, f_sp * mels, min_log_hz * torch.exp(logstep * (mels - min_log_mel))
    )
    fftfreqs = torch.linspace(0, sr / 2, 1 + n_fft // 2, dtype=torch.float64)
    fdiff, ramps = mel_f.diff(), mel_f[:, None] - fftfreqs[None, :]
    lower, upper = -ramps[:-2] / fdiff[:-1, None], ramps[2:] / fdiff[1:, None]
    weights = torch.clamp(torch.minimum(lower, upper), min=0)
    return (weights * (2.0 / (mel_f[2:] - mel_f[:-2]))[:, None]).float()


class WhisperLogMel(nn.Module):
    """Whisper's log-mel features after the STFT (HF WhisperFeatureExtractor's torch path, batched;
    n_fft 400, 80 mels, 30-s windows): |STFT|^2 without the last frame, the 80 x 201 Slaney mel
    filterbank applied, log10 of it clamped at 1e-10, floored at each clip's maximum minus 8 (a max
    over 80 x 3000 values per clip: few long rows), (x + 4) / 4. Inputs: the real and imaginary parts
    of a batch of 64 clips' STFTs (201 bins x 3001 frames)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mel_filters", _slaney_mel_filters())

    def forward(self, re, im):
        magnitudes = (re.square() + im.square())[..., :-1]
        log_spec = torch.clamp(self.mel_filters @ magnitudes, min=1e-10).log10()
        max_val = log_spec.max(dim=2, keepdim=True)[0].max(dim=1, keepdim=True)[0]
        log_spec = torch.maximum(log_spec, max_val - 8.0)
        return (log_spec + 4.0) / 4.0


def chamfer_distance(x, y):
    """The symmetric Chamfer distance between point clouds (PyTorch3D's chamfer_distance with mean
    point and batch reductions; squared distances from the dense pairwise matrix, as the pure-PyTorch
    implementations compute it): ||x||^2 + ||y||^2 - 2 x y^T, the nearest neighbour of each point both
    ways (min over either axis), means. Inputs: two batches of 2048-point clouds (ShapeNet
    auto-encoding)."""
    pairwise = x.square().sum(-1)[:, :, None] + y.square().sum(-1)[:, None, :] - 2 * x @ y.transpose(1, 2)
    cham_x, cham_y = pairwise.min(2)[0], pairwise.min(1)[0]
    return (cham_x.mean(1) + cham_y.mean(1)).mean()


# --- transformer ---------------------------------------------------------------------------------------


class Gemma2RMSNorm(nn.Module):
    """Gemma's RMSNorm: in float32, scaled by (1 + weight) (eps 1e-6), cast back."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.rand(d) - 0.5)  # trained (1 + w) around 1

    def forward(self, x):
        y = x.to(_wide(x.dtype))
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.to(y.dtype))).to(x.dtype)


class Gemma2DecoderLayer(nn.Module):
    """Gemma-2 2B's decoder layer (Gemma Team 2024; HF's Gemma2DecoderLayer, eager attention: d 2304,
    8 query heads and 4 key-value heads of 256, scaling 256^-1/2, MLP 9216): sandwich RMSNorms (before
    and after both the attention and the MLP); q, k, v without biases, rotary embeddings (theta 1e4)
    computed from the length, keys and values repeated, scores soft-capped (tanh(s / 50) x 50), the
    additive causal mask, softmax in float32, o projection; a GeGLU MLP (tanh GELU); residuals."""

    def __init__(self, d=2304, heads=8, kv_heads=4, head_dim=256, hidden=9216, softcap=50.0, base=10000.0):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.scaling, self.softcap, self.base = head_dim**-0.5, softcap, base
        self.input_layernorm, self.post_attention_layernorm = Gemma2RMSNorm(d), Gemma2RMSNorm(d)
        self.pre_feedforward_layernorm, self.post_feedforward_layernorm = Gemma2RMSNorm(d), Gemma2RMSNorm(d)
        self.q_proj = nn.Linear(d, heads * head_dim, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * head_dim, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * head_dim, bias=False)
        self.o_proj = nn.Linear(heads * head_dim, d, bias=False)
        self.gate_proj, self.up_proj = nn.Linear(d, hidden, bias=False), nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def _rotary(self, s, x):
        hd = self.head_dim
        inv_freq = 1.0 / self.base ** (torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)
        freqs = torch.outer(torch.arange(s, device=x.device, dtype=torch.float32), inv_freq)
        emb = torch.cat([freqs, freqs], -1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    @staticmethod
    def _rotate_half(t):
        a, b = t.chunk(2, -1)
        return torch.cat([-b, a], -1)

    def _attention(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.head_dim).transpose(1, 2)
        cos, sin = self._rotary(s, x)
        q, k = q * cos + self._rotate_half(q) * sin, k * cos + self._rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k, v = (
            t[:, :, None].expand(b, self.kv_heads, rep, s, self.head_dim).reshape(b, -1, s, self.head_dim)
            for t in (k, v)
        )
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        scores = torch.tanh(scores / self.softcap) * self.softcap
        mask = torch.full((s, s), torch.finfo(x.dtype).min, device=x.device, dtype=x.dtype).triu(1)
        weights = torch.softmax(scores + mask, -1, dtype=_wide(x.dtype)).to(q.dtype)
        out = torch.matmul(weights, v).transpose(1, 2).reshape(b, s, -1)
        return self.o_proj(out)

    def forward(self, x):
        x = x + self.post_attention_layernorm(self._attention(self.input_layernorm(x)))
        h = self.pre_feedforward_layernorm(x)
        h = self.down_proj(F.gelu(self.gate_proj(h), approximate="tanh") * self.up_proj(h))
        return x + self.post_feedforward_layernorm(h)


class LinearNorm(nn.Module):
    """LeViT's linear + BatchNorm1d over the tokens (timm's LinearNorm, no bias)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.linear, self.bn = nn.Linear(cin, cout, bias=False), nn.BatchNorm1d(cout)

    def forward(self, x):
        x = self.linear(x)
        return self.bn(x.flatten(0, 1)).reshape_as(x)


class LeViTAttention(nn.Module):
    """LeViT's attention (timm's Attention): a LinearNorm to per-head q, k (key dim 16) and v (ratio 2),
    softmax(q k^T / 4 + the learned per-head bias of each |dy|, |dx| offset), Hardswish, a LinearNorm
    projection."""

    def __init__(self, d, key_dim, heads, attn_ratio, resolution):
        super().__init__()
        self.heads, self.key_dim, self.val_dim = heads, key_dim, int(attn_ratio * key_dim)
        self.scale = key_dim**-0.5
        self.qkv = LinearNorm(d, heads * (2 * key_dim + self.val_dim))
        self.proj = nn.Sequential(nn.Hardswish(), LinearNorm(heads * self.val_dim, d))
        self.attention_biases = nn.Parameter(torch.randn(heads, resolution * resolution) * 0.5)
        pos = torch.stack(torch.meshgrid(torch.arange(resolution), torch.arange(resolution), indexing="ij"))
        rel = (pos.flatten(1)[..., :, None] - pos.flatten(1)[..., None, :]).abs()
        self.register_buffer("attention_bias_idxs", rel[0] * resolution + rel[1], persistent=False)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(x).view(b, n, self.heads, -1).split([self.key_dim, self.key_dim, self.val_dim], 3)
        q, k, v = q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1), v.permute(0, 2, 1, 3)
        attn = q @ k * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        x = (attn.softmax(-1) @ v).transpose(1, 2).reshape(b, n, -1)
        return self.proj(x)


class LeViTBlock(nn.Module):
    """LeViT's block: attention and a LinearNorm MLP (ratio 2, Hardswish), each residual."""

    def __init__(self, d, key_dim, heads, attn_ratio=2.0, mlp_ratio=2.0, resolution=14):
        super().__init__()
        self.attn = LeViTAttention(d, key_dim, heads, attn_ratio, resolution)
        hidden = int(d * mlp_ratio)
        self.mlp = nn.Sequential(LinearNorm(d, hidden), nn.Hardswish(), LinearNorm(hidden, d))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.mlp(x)


class LeViTStage(nn.Module):
    """LeViT-128S's first stage (Graham et al.; timm's levit_128s: dim 128, 4 heads, key dim 16,
    depth 2) on the 14 x 14 tokens of a 224-pixel image; batch 512, as LeViT is measured at large
    inference batches."""

    def __init__(self, d=128, key_dim=16, heads=4, depth=2, resolution=14):
        super().__init__()
        self.blocks = nn.Sequential(
            *(LeViTBlock(d, key_dim, heads, resolution=resolution) for _ in range(depth))
        )

    def forward(self, x):
        return self.blocks(x)


class LDMCrossAttention(nn.Module):
    """The latent-diffusion CrossAttention: bias-free q, k, v (k and v of the context), per-head
    softmax(q k^T / sqrt(d_head)) v written out, an output linear with bias."""

    def __init__(self, d, heads, d_head, context_dim=None):
        super().__init__()
        inner, context_dim = heads * d_head, context_dim or d
        self.heads, self.scale = heads, d_head**-0.5
        self.to_q = nn.Linear(d, inner, bias=False)
        self.to_k, self.to_v = nn.Linear(context_dim, inner, bias=False), nn.Linear(
            context_dim, inner, bias=False
        )
        self.to_out = nn.Linear(inner, d)

    def forward(self, x, context=None):
        context = x if context is None else context
        b, h = x.shape[0], self.heads
        split = lambda t: t.view(b, t.shape[1], h, -1).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.to_q(x)), split(self.to_k(context)), split(self.to_v(context))
        attn = (q @ k.transpose(-1, -2) * self.scale).softmax(-1)
        return self.to_out((attn @ v).transpose(1, 2).reshape(b, x.shape[1], -1))


class SpatialTransformer(nn.Module):
    """Stable Diffusion v1.5's SpatialTransformer at the U-Net's first level (the CompVis ldm code: 320
    channels, 8 heads of 40, CLIP ViT-L's 768-dim context, depth 1): GroupNorm(32, eps 1e-6), a 1x1
    conv in, the 64 x 64 latent's pixels as tokens through BasicTransformerBlock (LayerNorm +
    self-attention, LayerNorm + cross-attention to the 77 text tokens, LayerNorm + GEGLU feed-forward
    320 -> 2 x 1280 -> 320, each residual), back to the map, a 1x1 conv out, residual. Inputs: the
    latents of one 512 x 512 image with classifier-free guidance (batch 2) and the text embedding."""

    def __init__(self, c=320, heads=8, d_head=40, context_dim=768, mult=4):
        super().__init__()
        inner = heads * d_head
        self.norm = nn.GroupNorm(32, c, eps=1e-6)
        self.proj_in, self.proj_out = nn.Conv2d(c, inner, 1), nn.Conv2d(inner, c, 1)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(inner), nn.LayerNorm(inner), nn.LayerNorm(inner)
        self.attn1 = LDMCrossAttention(inner, heads, d_head)
        self.attn2 = LDMCrossAttention(inner, heads, d_head, context_dim)
        self.ff_proj, self.ff_out = nn.Linear(inner, 2 * mult * inner), nn.Linear(mult * inner, inner)

    def forward(self, x, context):
        b, c, h, w = x.shape
        y = self.proj_in(self.norm(x))
        y = y.permute(0, 2, 3, 1).reshape(b, h * w, -1)
        y = self.attn1(self.norm1(y)) + y
        y = self.attn2(self.norm2(y), context) + y
        u, gate = self.ff_proj(self.norm3(y)).chunk(2, -1)
        y = self.ff_out(u * F.gelu(gate)) + y
        return self.proj_out(y.reshape(b, h, w, -1).permute(0, 3, 1, 2)) + x


class TimmAttention(nn.Module):
    """The ViT attention of TimeSformer's vit.py: fused qkv (with bias), softmax(q k^T / sqrt(d_head)) v
    written out, an output projection."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.scale = heads, (d // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q @ k.transpose(-2, -1) * self.scale).softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))


class TimeSformerBlock(nn.Module):
    """TimeSformer-Base's divided space-time block (Bertasius et al., the facebookresearch code: d 768,
    12 heads, MLP 3072, LayerNorm eps 1e-6; 8 frames of 14 x 14 patches plus a class token, tokens in
    (h w t) order): temporal attention over each patch's 8 frames, a linear, residual; spatial attention
    over each frame's 196 patches with the class token copied in, its 8 outputs averaged back into one;
    a GELU MLP; residuals, with every rearrangement between the two token orders."""

    def __init__(self, d=768, heads=12, hidden=3072, frames=8):
        super().__init__()
        self.t = frames
        self.temporal_norm1, self.norm1, self.norm2 = (nn.LayerNorm(d, eps=1e-6) for _ in range(3))
        self.temporal_attn, self.attn = TimmAttention(d, heads), TimmAttention(d, heads)
        self.temporal_fc = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d))

    def forward(self, x):
        b, n, m = x.shape
        t = self.t
        hw = (n - 1) // t
        # temporal: b (h w t) m -> (b h w) t m
        xt = x[:, 1:, :]
        res_temporal = self.temporal_attn(self.temporal_norm1(xt.reshape(b * hw, t, m)))
        xt = x[:, 1:, :] + self.temporal_fc(res_temporal.reshape(b, hw * t, m))
        # spatial: b (h w t) m -> (b t) (h w) m, with the class token per frame
        init_cls_token = x[:, :1, :]
        cls_token = init_cls_token.repeat(1, t, 1).reshape(b * t, m).unsqueeze(1)
        xs = xt.reshape(b, hw, t, m).transpose(1, 2).reshape(b * t, hw, m)
        res_spatial = self.attn(self.norm1(torch.cat([cls_token, xs], 1)))
        cls_token = res_spatial[:, 0, :].reshape(b, t, m).mean(1, keepdim=True)
        res = res_spatial[:, 1:, :].reshape(b, t, hw, m).transpose(1, 2).reshape(b, hw * t, m)
        x = torch.cat([init_cls_token, xt], 1) + torch.cat([cls_token, res], 1)
        return x + self.mlp(self.norm2(x))


def _llama2_7b_layer_grads(d, hidden):
    return [(d, d)] * 4 + [(hidden, d), (hidden, d), (d, hidden), (d,), (d,)]


def _fpn(batch, hw):
    return [(batch, 256, h, w) for h, w in hw]


def suite() -> list[ModelSpec]:
    conv, norm, whole, memory, transformer = GROUPS
    return [
        ModelSpec(
            "x3d_m_res3",
            conv,
            X3DStage,
            sizes((8, 24, 16, 56, 56), (2, 24, 4, 16, 16), (2, 24, 2, 6, 6)),
            "5 bottlenecks 24 -> 48 (inner 108), depthwise 3x3x3, SE every other, Swish",
        ),
        ModelSpec(
            "espnet_level3",
            conv,
            ESPNetLevel3,
            sizes((16, 131, 128, 256), (2, 131, 32, 64), (2, 131, 6, 6)),
            "ESP modules: 5 dilated 3x3 (1..16), hierarchical sums, concat, BN + PReLU",
        ),
        ModelSpec(
            "esrgan_rrdb",
            conv,
            RRDB,
            image(64, cuda_hw=128, cuda_batch=8, cpu_hw=32, cpu_batch=2),
            "3 dense blocks (growth 32, LeakyReLU 0.2), residual scaling 0.2",
        ),
        ModelSpec(
            "dla34_level3",
            conv,
            DLA34Level3,
            image(64, cuda_hw=56, cuda_batch=32, cpu_hw=32, cpu_batch=2, small_hw=8),
            "2-level aggregation tree, 64 -> 128 s2, roots over concats, level root",
        ),
        ModelSpec(
            "fcos_head",
            norm,
            FCOSHead,
            sizes(
                _fpn(4, [(100, 136), (50, 68), (25, 34), (13, 17), (7, 9)]),
                _fpn(1, [(16, 24), (8, 12), (4, 6), (2, 3), (1, 2)]),
                _fpn(2, [(4, 4), (2, 2), (1, 1), (1, 1), (1, 1)]),
            ),
            "5 FPN levels, 2 towers of 4 conv + GroupNorm(32) + ReLU, 91 classes, flatten + cat",
        ),
        ModelSpec(
            "ibn_a_resnet50_layer1",
            norm,
            IBNResNetLayer1,
            image(64, cuda_hw=56, cuda_batch=32, cpu_hw=32, cpu_batch=2),
            "3 bottlenecks, first BN half InstanceNorm half BatchNorm, 64 -> 256",
        ),
        ModelSpec(
            "nnunet_3d_encoder",
            norm,
            NNUNetEncoder,
            sizes((2, 4, 128, 128, 128), (1, 4, 32, 32, 32), (2, 4, 8, 8, 8)),
            "3 stages (32, 64, 128), Conv3d + InstanceNorm3d + LeakyReLU, 3 outputs",
        ),
        ModelSpec(
            "sam_mask_head",
            norm,
            SAMMaskHead,
            sizes(
                [(64, 4096, 256), (64, 7, 256)], [(1, 4096, 256), (1, 7, 256)], [(2, 16, 256), (2, 7, 256)]
            ),
            "ConvTranspose2d + LayerNorm2d + GELU, ConvT + GELU, hypernetwork MLPs, mask dot products",
        ),
        ModelSpec(
            "espcn_x3",
            whole,
            ESPCN,
            sizes((16, 1, 360, 640), (2, 1, 64, 64), (2, 1, 8, 8)),
            "5x5 64 tanh, 3x3 32 tanh, 3x3 9, PixelShuffle(3), 360p -> 1080p",
        ),
        ModelSpec(
            "pointnet_cls",
            whole,
            PointNetCls,
            sizes((32, 3, 1024), (8, 3, 256), (2, 3, 16)),
            "input + feature T-nets, shared Conv1d MLPs + BN, max over points, 40 classes",
        ),
        ModelSpec(
            "quartznet_5x5",
            whole,
            QuartzNet,
            sizes((32, 64, 1024), (1, 64, 256), (2, 64, 16)),
            "depthwise Conv1d k 33..87 + pointwise + BN, residual blocks, CTC log-softmax",
        ),
        ModelSpec(
            "panns_cnn14",
            whole,
            CNN14,
            sizes((16, 1, 1001, 64), (1, 1, 32, 64), (2, 1, 32, 64)),
            "log-mel in, 6 double-conv blocks 64..2048, avg pools, max+mean over time, 527 sigmoid",
        ),
        ModelSpec(
            "clip_grad_norm",
            memory,
            lambda: Fn(clip_grad_norm),
            sizes(
                _llama2_7b_layer_grads(4096, 11008),
                _llama2_7b_layer_grads(1024, 2752),
                _llama2_7b_layer_grads(16, 44),
            ),
            "9 whole-tensor L2 norms (one Llama-2-7B layer's grads), clip coefficient, scale all",
        ),
        ModelSpec(
            "lamb_step",
            memory,
            lambda: Fn(lamb_step),
            sizes([(30522, 1024)] * 4, [(4096, 256)] * 4, [(9, 16)] * 4),
            "moments, Adam direction + weight decay, trust ratio of 2 whole-tensor norms",
        ),
        ModelSpec(
            "whisper_log_mel",
            memory,
            WhisperLogMel,
            sizes([(64, 201, 3001)] * 2, [(2, 201, 3001)] * 2, [(2, 201, 9)] * 2),
            "|STFT|^2, 80-mel filterbank matmul, log10, per-clip max - 8 floor, scale",
        ),
        ModelSpec(
            "chamfer_distance",
            memory,
            lambda: Fn(chamfer_distance),
            sizes([(32, 2048, 3)] * 2, [(2, 1024, 3)] * 2, [(2, 9, 3), (2, 12, 3)]),
            "dense pairwise squared distances (K=3 bmm), min both ways, means, scalar",
        ),
        ModelSpec(
            "gemma2_2b_decoder_layer",
            transformer,
            Gemma2DecoderLayer,
            sizes((2, 2048, 2304), (1, 16, 2304), (2, 9, 2304)),
            "causal, GQA 8/4 heads of 256, RoPE, tanh soft-cap 50, sandwich RMSNorms, GeGLU 9216",
        ),
        ModelSpec(
            "levit_128s_stage1",
            transformer,
            LeViTStage,
            sizes((512, 196, 128), (2, 196, 128), (2, 196, 128)),
            "2 blocks, Linear + BatchNorm1d, key dim 16, attention biases, Hardswish",
        ),
        ModelSpec(
            "sd15_spatial_transformer",
            transformer,
            SpatialTransformer,
            sizes(
                [(2, 320, 64, 64), (2, 77, 768)],
                [(1, 320, 16, 16), (1, 77, 768)],
                [(2, 320, 4, 4), (2, 5, 768)],
            ),
            "GroupNorm, 4096-token self-attention, cross-attention to 77 tokens, GEGLU",
        ),
        ModelSpec(
            "timesformer_block",
            transformer,
            TimeSformerBlock,
            sizes((8, 1569, 768), (1, 73, 768), (2, 33, 768)),
            "divided space-time: temporal attention (8), spatial (197) with cls averaging, MLP",
        ),
    ]
