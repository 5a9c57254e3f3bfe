"""Dependency manifests: find CUDA-only packages and CUDA-pinned PyTorch builds.

Reads ``requirements*.txt``, ``pyproject.toml``, ``setup.py`` (with ``ast``, never executed),
``setup.cfg`` and conda ``environment*.yml``, and turns every dependency and package-index URL into
an :class:`Entry` with its exact line and columns. Rules with ``manifest = [...]`` matches (NRN68x)
fire on those entries; the findings look like any other finding.

A ``manifest`` pattern is one of:

- ``flash-attn``, ``nvidia-*``: a requirement whose normalized name (PEP 503) matches the glob;
- ``torch+cu*``: such a requirement whose local version label (``2.1.0+cu121``) or conda build
  string (``py3.10_cuda12.1_cudnn8_0``) matches the glob after ``+``;
- ``url:*download.pytorch.org/whl/cu*``: a package index, find-links or direct-download URL.

A manifest line ending in ``# noqa`` or ``# noqa: NRN680`` is not reported.

The package, by job:

- :mod:`.entries`: :class:`Entry` and the requirement-string grammar every parser shares;
- :mod:`.requirements`, :mod:`.pyproject`, :mod:`.setup_files` (``setup.py``, ``setup.cfg``),
  :mod:`.conda`: one parser per manifest format;
- :mod:`.kinds`: which files are manifests, and the parser for each kind;
- :mod:`.checks`: rules fired on entries, a file's findings and errors;
- :mod:`.suppression`: ``# noqa`` on a manifest line (the syntax of :mod:`neuron_lint.suppress.noqa`);
- :mod:`.add_noqa`: ``--add-noqa`` for manifests;
- :mod:`.torch_version`: the oldest torch a project declares.
"""

from __future__ import annotations

from .checks import check_manifest, check_manifest_text
from .entries import Entry
from .kinds import manifest_files, manifest_kind, scan_text
from .torch_version import declared_torch

__all__ = ["Entry", "manifest_kind", "scan_text", "check_manifest_text", "check_manifest", "manifest_files",
           "declared_torch"]
