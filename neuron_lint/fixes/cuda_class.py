"""The class (or function) holding a site that the project named for CUDA, the GPU or TensorRT, or
built on a CUDA-only library: its CUDA implementation, which no fix converts (:mod:`.withheld`)."""

from __future__ import annotations

import ast

from .cuda_only import CUDA_LIBRARY_ROOTS, dotted
from .name_words import name_words


def cuda_class(ctx, node: ast.AST) -> str:
    """The name of the class holding ``node`` when it is named for CUDA, the GPU or TensorRT (composer's
    ``DeviceGPU``, beside its ``DeviceCPU``/``DeviceMPS``/``DeviceNeuron``; ``CudaTimer``, ``TrtEvitSam``)
    or derives from a class of a CUDA-only library (bitsandbytes, apex, xformers, flash-attn),
    or of the function named for TensorRT, or ``""``."""
    method = "cuda" if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "cuda" else ""
    for p in ctx.ancestors(node):
        if isinstance(p, ast.ClassDef) and {"gpu", "gpus", "cuda", "trt", "tensorrt"} & set(name_words(p.name)):
            return p.name
        if isinstance(p, ast.ClassDef) and any(dotted(b)[:1] and dotted(b)[0] in CUDA_LIBRARY_ROOTS for b in p.bases):
            return p.name  # lit-llama's `Linear8bitLt(bnb.nn.Linear8bitLt)`: bitsandbytes' CUDA kernels
        if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and {"trt", "tensorrt"} & set(name_words(p.name)):
            return p.name  # efficientvit's `run_yolo_model_tensorrt`: its model is a TensorRT engine
        if isinstance(p, ast.ClassDef) and method:
            return f"{p.name}.{method}"
        method = p.name if isinstance(p, (ast.FunctionDef, ast.AsyncFunctionDef)) and p.name == "cuda" else ""
    return ""
