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


def save(name, model, x):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "test_data_set_0"))
    torch.onnx.export(model.eval(), (x,), os.path.join(d, "model.onnx"), opset_version=14,
                      input_names=["x"], output_names=["y"])
    with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
        f.write(nh.from_array(x.numpy(), "x").SerializeToString())


save("net_llama_block", LlamaBlock(), torch.randn(1, 6, 16))
print("wrote the PyTorch cases under", HERE)
