"""The words of an identifier, and whether it names the GPU: ``DeviceGPU`` -> device, gpu."""

from __future__ import annotations

import re

_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z]|[^A-Za-z]|$)|[A-Z]?[a-z]+")


def name_words(name: str) -> list[str]:
    """An identifier's words, lower case: ``DeviceGPU`` -> device, gpu; ``to_gpu`` -> to, gpu."""
    return [w.lower() for w in _WORDS.findall(name)]


def names_gpu(name: str) -> bool:
    """Does an identifier have GPU as one of its words (``DeviceGPU``, ``to_gpu``, ``GpuTimer``)?"""
    return any(w in ("gpu", "gpus") for w in name_words(name))
