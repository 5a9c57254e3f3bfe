"""The one-line summary shared by the human-readable formats."""

from __future__ import annotations

from ..model import CheckResult


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def fixable(finding, unsafe_fixes: bool = False) -> bool:
    """What ``[*]`` marks: a safe fix, or an unsafe one when ``--unsafe-fixes`` is on."""
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or (unsafe_fixes and fix.applicability == "unsafe"))


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
        elif safe:
            text = f"{safe} fixable with `neuron-lint fix`"
            if unsafe:
                text += f" ({unsafe} more with `--unsafe-fixes`)"
            lines.append(text + ".")
        elif unsafe:
            lines.append(f"None fixable with `neuron-lint fix` alone; {unsafe} more with `--unsafe-fixes` (review the diff).")
    else:
        lines.append(f"No findings ({plural(result.files_checked, 'file')} checked).")
    if result.errors:
        lines.append(f"{plural(len(result.errors), 'file')} could not be checked (see the errors above).")
    return lines
