"""The words of an identifier, and whether it or a string names the GPU: ``DeviceGPU`` -> device, gpu."""

from __future__ import annotations

import re

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|[^A-Za-z]|$)|[A-Z]?[a-z]+")


def name_words(name: str) -> list[str]:
    """An identifier's words, lower case: ``DeviceGPU`` -> device, gpu; ``to_gpu`` -> to, gpu."""
    return [w.lower() for w in _WORDS.findall(name)]


def names_gpu(name: str) -> bool:
    """Does an identifier have GPU as one of its words (``DeviceGPU``, ``to_gpu``, ``GpuTimer``)?"""
    return any(w in ("gpu", "gpus") for w in name_words(name))


#: A package built for CUDA GPUs (``onnxruntime-gpu``, ``cupy-cuda12x``), or ONNX Runtime's CUDA provider.
_GPU_PACKAGE = re.compile(r"[A-Za-z0-9.]{1,40}[-_](gpu|cuda[0-9x]{0,4})|(cuda|tensorrt)ExecutionProvider", re.IGNORECASE)
#: GPU indices as a string (``"0"``, ``"0,1"``): what yolov5/yolov7's ``select_device`` and
#: ``CUDA_VISIBLE_DEVICES`` take; no torch device is spelled so.
_GPU_INDICES = re.compile(r"\d{1,3}(,\s?\d{1,3}){0,15}")


#: The names of CUDA-only machinery a program picks by string: NVIDIA's fuser (lightning-thunder's
#: recipe: ``"nvfuser" if torch.cuda.is_available() else "torch.compile"``, set 57), CUDA graphs
#: (torch.compile's ``"reduce-overhead"`` mode and ``"cudagraphs"`` backend; thunder's
#: ``plugins="reduce-overhead"``), TensorRT.
_CUDA_MACHINERY = frozenset({"nvfuser", "reduce-overhead", "cudagraphs", "tensorrt", "torch_tensorrt"})


def string_picks_gpu(value: str) -> bool:
    """Does a string constant pick the GPU path: ``"gpu"``, a package built for CUDA, GPU indices,
    CUDA-only machinery (``"nvfuser"``, ``"reduce-overhead"``)?"""
    return (value.lower().split(":")[0] in ("gpu", "gpus") or bool(_GPU_PACKAGE.fullmatch(value))
            or bool(_GPU_INDICES.fullmatch(value)) or value.lower() in _CUDA_MACHINERY)


_CUDA_WORD = re.compile(r"(?<![A-Za-z])cuda(?![A-Za-z])", re.IGNORECASE)


def cuda_keyed(value: str, compared: bool = False) -> bool:
    """Is a string CUDA's own name for something, not a device (the profiler's
    ``"self_cuda_time_total"`` column, or a compared ``"Self CUDA time total"``: PyG's profile
    helpers, set 58)? Words with spaces count only where compared: elsewhere they are prose."""
    return bool(_CUDA_WORD.search(value)) and (compared or not any(c.isspace() for c in value))
