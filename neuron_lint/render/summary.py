"""The one-line summary shared by the human-readable formats."""

from __future__ import annotations

from ..model import CheckResult


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def fix_counts(result: CheckResult) -> tuple[int, int]:
    safe = sum(1 for f in result.findings if f.fix and f.fix.applicability == "safe")
    unsafe = sum(1 for f in result.findings if f.fix and f.fix.applicability == "unsafe")
    return safe, unsafe


def summary_lines(result: CheckResult, unsafe_fixes: bool = False) -> list[str]:
    n = len(result.findings)
    files = len({f.path for f in result.findings})
    lines = []
    if n:
        lines.append(f"Found {plural(n, 'finding')} in {plural(files, 'file')} ({plural(result.files_checked, 'file')} checked).")
        safe, unsafe = fix_counts(result)
        if unsafe_fixes and (safe or unsafe):
            lines.append(f"{safe + unsafe} fixable with `neuron-lint fix --unsafe-fixes`.")
        elif safe or unsafe:
            text = f"{safe} fixable with `neuron-lint fix`"
            if unsafe:
                text += f" ({unsafe} more with `--unsafe-fixes`)"
            lines.append(text + ".")
    else:
        lines.append(f"No findings ({plural(result.files_checked, 'file')} checked).")
    if result.errors:
        lines.append(f"{plural(len(result.errors), 'file')} could not be checked (see the errors above).")
    return lines
