#!/usr/bin/python3
"""tools/modelbench/export.py OUTDIR [NAME...]: exports the models of
`make modelbench` to ONNX with PyTorch 1.13 (Debian's python3-torch and
python3-torchvision; random weights, fixed seed, eval mode, opset 13 unless
the model needs more), each as OUTDIR/NAME.onnx. tools/modelbench/torch_time.py builds the
same models (same seed) to time PyTorch on them.

  resnet50, mobilenet_v2, efficientnet_b0, vit_b_16   torchvision, 1x3x224x224
  bert_layer     nn.TransformerEncoderLayer(768, 12, 3072, gelu, batch_first), 1x128x768
  bert12         12 of them (nn.TransformerEncoder), 1x128x768
  gpt2_prefill   GPT-2 small (124M) written here: token embedding, 12 pre-norm
                 blocks with causal attention and tanh-GELU, 128 tokens in, logits out

Any other name of a torchvision model (regnet_y_400mf, resnext50_32x4d,
densenet121, squeezenet1_1, googlenet, inception_v3, swin_t, convnext_tiny,
..., and deeplabv3_mobilenet_v3_large, its "out" map) is exported the same
way at 1x3x224x224: the models no issue names, which loom is checked on
beside ONNX Runtime (loomtime, then ort_time.js).
"""
import math, os, sys
import numpy as np
import torch
import torch.nn as nn
import torchvision

torch.manual_seed(0)


class GPT2Block(nn.Module):
    def __init__(self, d=768, heads=12):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x, mask):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        def heads(t):
            return t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = heads(q), heads(k), heads(v)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads) + mask
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, s, d)
        x = x + self.proj(y)
        h = self.fc(self.ln2(x))
        h = 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3)))
        return x + self.out(h)


class GPT2(nn.Module):
    def __init__(self, vocab=50257, ctx=1024, d=768, layers=12, tokens=128):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(GPT2Block(d) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        mask = torch.full((tokens, tokens), float("-inf")).triu(1)
        self.register_buffer("mask", mask)
        self.register_buffer("pos", torch.arange(tokens))

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(self.pos)
        for blk in self.blocks:
            x = blk(x, self.mask)
        return self.ln(x) @ self.wte.weight.t()


def distinct_layers(enc):
    """nn.TransformerEncoder deep-copies one layer: give every copy its own
    weights, or the exporter shares one set among all twelve."""
    for layer in enc.layers:
        for p in layer.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
    return enc


def random_head(vit):
    """torchvision's ViT starts its classification head at zero, which makes
    every output 0: give it weights so that outputs can be compared."""
    nn.init.normal_(vit.heads.head.weight, std=0.02)
    return vit


def models():
    img = torch.randn(1, 3, 224, 224)
    seq = torch.randn(1, 128, 768)
    layer = lambda: nn.TransformerEncoderLayer(768, 12, 3072, activation="gelu", batch_first=True)
    return {
        "resnet50": (lambda: torchvision.models.resnet50(), img),
        "mobilenet_v2": (lambda: torchvision.models.mobilenet_v2(), img),
        "efficientnet_b0": (lambda: torchvision.models.efficientnet_b0(), img),
        "vit_b_16": (lambda: random_head(torchvision.models.vit_b_16()), img),
        "bert_layer": (layer, seq),
        "bert12": (lambda: distinct_layers(nn.TransformerEncoder(layer(), 12, enable_nested_tensor=False)), seq),
        "gpt2_prefill": (lambda: GPT2(), torch.randint(0, 50257, (1, 128))),
    }


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's "out" map alone (the models return
    a dict)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def torchvision_model(name):
    """The maker of torchvision's model NAME (classification, or
    segmentation), with the arguments that make it exportable."""
    if hasattr(torchvision.models.segmentation, name):
        seg = getattr(torchvision.models.segmentation, name)
        return lambda: SegmentationOut(seg(weights_backbone=None, aux_loss=False))
    make = getattr(torchvision.models, name, None)
    if make is None:
        sys.exit(f"export.py: no model {name!r}: neither loom's table nor torchvision has it")
    if name in ("inception_v3", "googlenet"):
        return lambda: make(init_weights=False, aux_logits=False)
    return make


def build(make):
    """The model in eval mode, its random weights from a fixed seed: the
    same whichever models are exported with it (torch_time.py builds it
    again this way)."""
    torch.manual_seed(0)
    return make().eval()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    table = models()
    names = sys.argv[2:] or list(table)
    for name in names:
        make, x = table.get(name) or (torchvision_model(name), torch.randn(1, 3, 224, 224))
        path = os.path.join(out, name + ".onnx")
        if os.path.exists(path):
            continue
        m = build(make)
        # With gradients on, nn.TransformerEncoderLayer takes its exportable
        # path (its inference fast path is not exportable).
        torch.onnx.export(m, (x,), path + ".tmp", opset_version=13, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
        os.rename(path + ".tmp", path)
        print(f"exported {name}: {os.path.getsize(path) / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
