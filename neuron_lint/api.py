"""The library API: check source text or paths and get findings back. Re-exports only.

    from neuron_lint.api import Settings, check_paths, check_source

    result = check_paths(["src/"], Settings(select=("NRN2",)))
    for finding in result.findings:
        print(finding.path, finding.line, finding.code, finding.message)

The CLI is a thin layer over these functions, and the tests call them directly. Where each one
lives: :mod:`neuron_lint.engine.pipeline` (one file or text), :mod:`neuron_lint.engine.runner` (many files,
across processes, with the cache), :mod:`neuron_lint.config.settings` and :mod:`neuron_lint.catalog.loading`.
"""

from __future__ import annotations

from .catalog.loading import Catalog, load_catalog
from .config.settings import Settings
from .engine.pipeline import (
    analyze_source,
    check_file,
    check_source,
    display_path,
    read_file,
)
from .engine.runner import check_paths, iter_files
from .model import CheckResult, Edit, FileError, Finding, Fix

__all__ = [
    "Settings", "check_source", "check_file", "check_paths", "analyze_source", "iter_files",
    "read_file", "display_path", "load_catalog", "Catalog", "CheckResult", "Finding", "Fix", "Edit",
    "FileError",
]
