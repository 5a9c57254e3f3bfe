"""Settings that shape a run: which rules, which files, how fixes are written.

The CLI and configuration files fill a :class:`Settings`; the engine only reads it. What is
derived from it (the enabled codes, the compiled exclude and per-file-ignores globs) is computed
once per Settings object, not once per file: a configuration with 50,000 codes or 10,000 globs
costs one pass over them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..catalog.loading import Catalog
from .globs import GlobSet

#: Rules that only run when selected explicitly (like ruff's RUF100).
OPT_IN_PREFIXES = ("NRN9",)


def _prefix_hit(code: str, prefixes: frozenset[str]) -> bool:
    """Whether ``code`` starts with one of ``prefixes``: ``len(code)`` set lookups, whatever their number."""
    return any(code[:i] in prefixes for i in range(len(code) + 1))


def _upper(prefixes: Iterable[str]) -> frozenset[str]:
    return frozenset(p.upper() for p in prefixes)


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

    def _memo(self, key: tuple, make: Callable[[], object]):
        """``make()``, computed once per Settings object (and per key)."""
        memo = self.__dict__.get("_derived")
        if memo is None:
            memo = {}
            object.__setattr__(self, "_derived", memo)  # frozen: not a field, not compared, not pickled
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_derived", None)  # compiled patterns are rebuilt where they are needed
        return state

    def enabled_codes(self, catalog: Catalog) -> frozenset[str]:
        codes = catalog.codes
        return self._memo(("enabled", codes), lambda: self._enabled(codes))

    def _enabled(self, all_codes: tuple[str, ...]) -> frozenset[str]:
        select, extend, ignore = _upper(self.select), _upper(self.extend_select), _upper(self.ignore)
        opt_in = _upper(OPT_IN_PREFIXES)
        codes = set()
        for code in all_codes:
            if self.select:
                chosen = _prefix_hit(code, select)
            else:
                chosen = not _prefix_hit(code, opt_in)
            if _prefix_hit(code, extend):
                chosen = True
            if _prefix_hit(code, ignore):
                chosen = False
            if chosen:
                codes.add(code)
        return frozenset(codes)

    def exclude_globs(self) -> GlobSet:
        """``exclude`` and ``extend-exclude``, compiled once."""
        return self._memo(("exclude",), lambda: GlobSet(self.exclude + self.extend_exclude))

    def codes_for(self, path: str, catalog: Catalog) -> frozenset[str]:
        """The enabled codes, less those ``per-file-ignores`` turns off for ``path``."""
        codes = self.enabled_codes(catalog)
        ignored = self.ignored_for(path)
        if not ignored:
            return codes
        off = _upper(ignored)
        return frozenset(c for c in codes if not _prefix_hit(c, off))

    def _per_file_globs(self) -> tuple[GlobSet, dict[str, list[tuple[int, tuple[str, ...]]]]]:
        """``per-file-ignores`` compiled once: the glob set, and for each glob its (position, codes)."""
        def make():
            codes: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
            for i, (pattern, ignore) in enumerate(self.per_file_ignores):
                codes.setdefault(pattern, []).append((i, tuple(ignore)))
            return GlobSet(codes), codes
        return self._memo(("per-file-ignores",), make)

    def ignored_for(self, path: str) -> tuple[str, ...]:
        """The codes ``per-file-ignores`` lists for ``path`` (in the order of the table)."""
        if not self.per_file_ignores:
            return ()
        globs, codes = self._per_file_globs()
        hits = sorted(entry for pattern in globs.matching(path) for entry in codes[pattern])
        return tuple(c for _, ignore in hits for c in ignore)
