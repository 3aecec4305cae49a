#!/usr/bin/python3
"""testdata/onnx/make_torch.py: small networks exported by PyTorch 1.13
(Debian's python3-torch), for what torch.onnx.export writes that make.py's
hand-made graphs do not: a LLaMA-style block (RMSNorm, rotary embedding
tables computed from constants, a causal mask by Trilu, SiLU-gated MLP).
Each case is written as make.py writes its own (model.onnx, inputs);
reference.js adds ONNX Runtime's outputs. `make onnx-testdata` runs it when
PyTorch is installed.
"""
import math, os, shutil
import numpy as np
import torch
import torch.nn as nn
from onnx import numpy_helper as nh

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(20261128)


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.w = nn.Parameter(torch.rand(d) + 0.5)

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w


def rope(x, pos):
    d = x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
    f = pos[:, None].float() * inv[None, :]
    cos, sin = f.cos(), f.sin()
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


class LlamaBlock(nn.Module):
    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.q, self.k, self.v, self.o = [nn.Linear(d, d, bias=False) for _ in range(4)]
        self.gate, self.up, self.down = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, 3 * d, bias=False), nn.Linear(3 * d, d, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        pos = torch.arange(t)
        y = self.n1(x)
        q, k, v = [m(y).view(b, t, self.heads, d // self.heads).transpose(1, 2) for m in (self.q, self.k, self.v)]
        q, k = rope(q, pos), rope(k, pos)
        mask = torch.full((t, t), float("-inf")).triu(1)
        a = (q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + mask).softmax(-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        y = self.n2(x)
        return x + self.down(nn.functional.silu(self.gate(y)) * self.up(y))


class SmallResNet(nn.Module):
    """A torchvision-style stem and one BasicBlock with a strided
    projection; exported with a dynamic batch."""
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        self.a = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                               nn.Conv2d(16, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16))
        self.proj = nn.Sequential(nn.Conv2d(8, 16, 1, 2, bias=False), nn.BatchNorm2d(16))
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.stem(x)
        x = torch.relu(self.a(x) + self.proj(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def randomize_bn(model):
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.5, 0.5)
    return model


class TinyGPT(nn.Module):
    """Position embeddings of arange(t) and a causal mask of triu, at a
    sequence length known at run time (Range and Trilu on symbolic sizes)."""
    def __init__(self, vocab=11, ctx=32, d=8):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(ctx, d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
        mask = torch.full((t, t), float("-inf")).triu(1)
        a = (q @ k.transpose(-1, -2) / math.sqrt(x.shape[-1]) + mask).softmax(-1) @ v
        return self.out(x + a)


class MaskedGPT(TinyGPT):
    """GPT-2's causal mask as Hugging Face writes it: a constant buffer cut
    to the sequence's length (a Slice to a run-time size), then where."""
    def __init__(self):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(32, 32, dtype=torch.bool)))

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
        att = q @ k.transpose(-1, -2) / math.sqrt(x.shape[-1])
        att = torch.where(self.bias[:t, :t], att, torch.tensor(-1e4))
        return self.out(x + att.softmax(-1) @ v)


def save(name, model, x, dynamic=None):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    torch.onnx.export(model.eval(), (x,), os.path.join(d, "model.onnx"), opset_version=14,
                      input_names=["x"], output_names=["y"], dynamic_axes=dynamic)
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(nh.from_array(x.numpy(), "x").SerializeToString())


save("net_llama_block", LlamaBlock(), torch.randn(1, 6, 16))
save("net_resnet_dynamic_batch", randomize_bn(SmallResNet()), torch.randn(3, 3, 20, 20),
     {"x": {0: "batch"}, "y": {0: "batch"}})
save("net_gpt_dynamic_seq", TinyGPT(), torch.randint(0, 11, (2, 7)), {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
save("net_gpt_buffer_mask_dynamic_seq", MaskedGPT(), torch.randint(0, 11, (2, 7)), {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
save("net_encoder_dynamic_seq", nn.TransformerEncoderLayer(16, 2, 32, activation="gelu", batch_first=True),
     torch.randn(2, 9, 16), {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}})
print("wrote the PyTorch cases under", HERE)
