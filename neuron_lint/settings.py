"""Settings that shape a run: which rules, which files, how fixes are written.

The CLI and configuration files fill a :class:`Settings`; the engine only reads it.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import Catalog

#: Rules that only run when selected explicitly (like ruff's RUF100).
OPT_IN_PREFIXES = ("NRN9",)


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()  # codes or prefixes; empty means every default rule
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes)
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    force_exclude: bool = False  # apply exclude patterns to files named explicitly too (pre-commit)
    follow_symlinks: bool = False
    output_format: str = "full"
    # fix options
    device: str = "accelerator"  # "accelerator" | "neuron"
    min_torch: str = "2.6"
    unsafe_fixes: bool = False
    # Spell out each fix's text edits (JSON and SARIF show them); else fixes are only planned.
    fix_edits: bool = False
    # engine
    prefilter: bool = True
    # Python's ast takes about 220 bytes of memory per byte of source (measured: a 10 MB file
    # needs 2.2 GB), so this bounds the memory one file can take; bigger files are reported, not read.
    max_file_bytes: int = 10 * 1024 * 1024
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def enabled_codes(self, catalog: Catalog) -> frozenset[str]:
        def hits(code: str, prefixes) -> bool:
            return any(code.startswith(p.upper()) for p in prefixes)

        codes = set()
        for code in catalog.codes:
            if self.select:
                chosen = hits(code, self.select)
            else:
                chosen = not hits(code, OPT_IN_PREFIXES)
            if hits(code, self.extend_select):
                chosen = True
            if hits(code, self.ignore):
                chosen = False
            if chosen:
                codes.add(code)
        return frozenset(codes)

    def codes_for(self, path: str, catalog: Catalog) -> frozenset[str]:
        """The enabled codes, less those ``per-file-ignores`` turns off for ``path``."""
        codes = self.enabled_codes(catalog)
        ignored = self.ignored_for(path)
        if not ignored:
            return codes
        return frozenset(c for c in codes if not any(c.startswith(p.upper()) for p in ignored))

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """The codes ``per-file-ignores`` lists for ``path``."""
        if not self.per_file_ignores:
            return ()
        posix = Path(path).as_posix()
        codes: list[str] = []
        for pattern, ignore in self.per_file_ignores:
            if fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(posix, f"*/{pattern}") or fnmatch.fnmatchcase(Path(path).name, pattern):
                codes.extend(ignore)
            elif os.path.isabs(pattern) and fnmatch.fnmatchcase(Path(os.path.abspath(path)).as_posix(), pattern):
                codes.extend(ignore)  # anchored to the configuration file's folder
        return tuple(codes)
