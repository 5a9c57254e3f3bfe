"""A tiny transformer encoder for sequence classification."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotary_frequencies(dim: int, seq_len: int, theta: float = 10000.0) -> torch.Tensor:
    """Complex rotary position embeddings (RoPE), as many LLM codebases write them."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
    t = torch.arange(seq_len)
    angles = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(angles), angles)


def apply_rotary(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    out = torch.view_as_real(x_c * freqs[: x.shape[-2]]).flatten(-2)
    return out.type_as(x)


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        q, k = apply_rotary(q, freqs), apply_rotary(k, freqs)
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


class TinyClassifier(nn.Module):
    def __init__(self, vocab: int = 512, dim: int = 64, heads: int = 4, depth: int = 2, classes: int = 4, max_len: int = 32):
        super().__init__()
        # Sparse gradients save memory for large vocabularies on GPUs.
        self.embed = nn.Embedding(vocab, dim, sparse=True)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(depth))
        self.head = nn.Linear(dim, classes)
        self.register_buffer("freqs", rotary_frequencies(dim // heads, max_len), persistent=False)
        nn.init.normal_(self.embed.weight, std=1 / math.sqrt(dim))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, self.freqs)
        return self.head(x.mean(dim=1))
