"""One pass of ``fix``: the joint rewrite of a file's applicable fixes, less those it must drop.

A fix is dropped when the result would not parse, when it would push a line past the project's
line length (in a file that keeps to it, after :mod:`neuron_lint.fixes.wrap` tried to break the
line; a file whose code runs past it has the lines a fix makes longer than its longest broken at
that length, and nothing dropped), or when it is a device guard whose decided code keeps a fix dropped (or not applied) in
the pass: alone, the guard would let CUDA-only code run on Trainium. :func:`advertised` runs the
same pass for ``check``, so that a fix ``check`` spells out is one ``fix`` applies.
:mod:`neuron_lint.fixes.apply` repeats the pass to a fixed point.
"""

from __future__ import annotations

import difflib
import functools
import io
import os
import re
import tokenize
from dataclasses import dataclass, field, replace

from ..config.settings import Settings
from ..engine.parsing import parse
from ..errors import ParseError
from ..io.positions import split_lines
from ..model import Finding
from .edits import apply_edits
from .guard_settle import settle, unsupported


@dataclass
class Dropped:
    """What a pass left out, and why."""
    rejected: list[Finding] = field(default_factory=list)  # fixes dropped: the result did not parse, or
    too_long: list[Finding] = field(default_factory=list)  # ... it made a line longer than the project allows
    tied: dict[int, tuple] = field(default_factory=dict)  # id of a placement kept with one too long -> (its
    # line's text, the line of the one too long)


def applicable(finding: Finding, settings: Settings) -> bool:
    fix = finding.fix
    return fix is not None and (fix.applicability == "safe" or settings.unsafe_fixes)


def _parses(text: str, path: str) -> bool:
    """Whether ``text`` is valid Python (its tree is kept for the next question about it)."""
    try:
        parse(text, path)
    except ParseError:
        return False
    return True


def _apply(text: str, wanted: list[Finding], settings: Settings, newline: str) -> tuple[str, list[Finding]]:
    """One pass: the LibCST rewrites, then the plain text edits that do not touch them."""
    from .rewrite import rewrite

    planned = [f for f in wanted if f.fix.fixer]
    plain = [f for f in wanted if not f.fix.fixer and f.fix.edits]
    used: list[Finding] = []
    if planned:
        done = rewrite(text, planned, settings)
        text, used = done.text, list(done.applied)
    if plain and not used:
        text, more = apply_edits(text, plain, newline)
        used += more
    return text, used


def _long_lines(text: str, limit: int) -> int:
    return sum(1 for line in split_lines(text) if len(line) > limit)


def one_pass(current: str, wanted: list[Finding], settings: Settings, newline: str, path: str, limit: int,
             result: Dropped, everything: list[Finding] | None = None) -> tuple[str, list[Finding]]:
    """One pass: apply ``wanted``; drop the fixes that break the code or make lines too long, and the
    guards whose decided code keeps a fix of ``everything`` (the file's findings) not applied."""
    everything = wanted if everything is None else everything
    skip: list[Finding] = []
    while True:
        attempt = Dropped()
        new, used = _one_pass(current, [f for f in wanted if f not in skip], settings, newline, path, limit, attempt)
        alone = unsupported(used, everything)
        if not alone:
            result.rejected.extend(attempt.rejected)
            result.too_long.extend(attempt.too_long)
            result.tied.update(attempt.tied)
            return new, used
        skip += alone  # not rejected: retried on the next pass, when what they decide may be fixed


def _one_pass(current: str, wanted: list[Finding], settings: Settings, newline: str, path: str, limit: int,
              result: Dropped) -> tuple[str, list[Finding]]:
    # the lines of ``current`` long because of their code: it tokenizes the text, so asked only once a
    # line grew. None of them: the file keeps to the line length.
    long_code = functools.cache(lambda: _long_code_line_numbers(current, limit))

    def keeps_length() -> bool:
        return not long_code()

    def apply(fixes):
        text, kept = _apply(current, fixes, settings, newline)
        grown = _grown(current, text, limit) if kept else None
        if grown and keeps_length():
            text = _wrapped(current, text, limit, path, grown)
        elif grown:
            # A file with long code lines is not held to the project's length, but a fix does not
            # write a line longer than its longest (dust3r's 130-column `autocast` call in a file
            # whose code stops at 120): such a line is broken at that length, as a formatter would.
            text = _wrapped(current, text, max(long_code().values()), path)
        if kept and text != current:
            text = _rejoined(current, text, limit, path, keeps_length)
        return text, kept

    new, used = apply(wanted)
    if new == current:
        return new, used
    if not _parses(new, path):
        # Find the culprit(s): add one fix at a time, keeping those that leave valid code.
        new, used = current, []
        for f in wanted:
            candidate, kept = apply(used + [f])
            if f in kept and _parses(candidate, path):
                new, used = candidate, kept
            else:
                result.rejected.append(f)
    before = _long_lines(current, limit)
    if used and _long_lines(new, limit) > before and keeps_length():
        # A file whose code keeps within the project's line length (its long lines, if any, are
        # comments and strings no formatter can break) stays so: no fix adds a line past it (ruff
        # E501; `ruff format` would break it up). The fixes on lines grown too long are dropped and
        # left to a person. (A file with long code lines is not held to a length it does not keep.)
        def fits(text: str) -> bool:
            return _long_lines(text, limit) <= before and _parses(text, path)

        culprits = _on_long_lines(current, new, used, limit)
        kept = [f for f in used if f not in culprits]
        candidate, applied = apply(kept) if kept else (current, [])
        if not (fits(candidate) and len(applied) == len(kept)):  # rare: fall back to one fix at a time
            from .rewrite import rewrite_greedily

            done = rewrite_greedily(current, used, settings, fits)
            candidate, applied = done.text, list(done.applied)
        # The safe fixes dropped with an unsafe one on their line are tried again without it, as a
        # plain `fix` applies them: `--unsafe-fixes` must not lose the safe fix inside a call an unsafe
        # fix writes out at length (LeViT's `get_device_name(torch.cuda.current_device())`). (Not one
        # at a time: half the sites of a line rewritten is not a port.)
        dropped = [f for f in used if f not in applied]
        safe = [f for f in dropped if f.fix.applicability == "safe"]
        if safe and len(safe) < len(dropped):
            more, kept = apply(applied + safe)
            if len(kept) == len(applied) + len(safe) and fits(more):
                candidate, applied = more, kept
        tied = _tied_placements(current, path, [f for f in used if f not in applied], applied)
        if tied:  # a function half moved to the accelerator mixes devices: none of its placements go
            keep = [f for f in applied if id(f) not in tied]
            more, kept = apply(keep) if keep else (current, [])
            if len(kept) == len(keep) and fits(more):
                candidate, applied = more, kept
                result.tied.update(tied)
        too_long = [f for f in used if f not in applied]
        result.rejected.extend(too_long)
        result.too_long.extend(too_long)
        new, used = candidate, list(applied)
    return new, used


#: Fixes that decide where tensors and modules live (`.cuda()`, a CUDA device).
_PLACEMENTS = ("NRN201", "NRN202")
#: ... and the device tests that choose between them (pyannote's `get_devices()`: a count
#: rewritten while the `f"cuda:{index:d}"` it decides was too long left CUDA devices on Trainium).
_DECIDING = ("`torch.cuda.is_available`", "`torch.cuda.device_count`")


def _moves_or_decides(f: Finding) -> bool:
    return f.code in (*_PLACEMENTS, "NRN208", "NRN211") or (f.code == "NRN203" and f.message.startswith(_DECIDING))


#: The memory statistics a program reads and resets as a pair (lightning-thunder's benchmark timer:
#: ``max_memory_allocated()`` read, then ``reset_peak_memory_stats()``; set 57).
_MEMORY = tuple(f"`torch.cuda.{name}`" for name in (
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "memory_cached", "max_memory_cached", "reset_max_memory_cached"))


def _memory_statistic(f: Finding) -> bool:
    return f.code in ("NRN203", "NRN212") and f.message.startswith(_MEMORY)


#: What a memory measurement does around its statistics (FastVideo's VAE benchmark: `synchronize`,
#: `empty_cache`, then `memory_allocated` and `reset_peak_memory_stats` of the same device; read set 112).
_AROUND_MEASURING = ("`torch.cuda.synchronize`", "`torch.cuda.empty_cache`")


def _measuring(f: Finding) -> bool:
    return _memory_statistic(f) or (f.code == "NRN203" and f.message.startswith(_AROUND_MEASURING))


def _tied_placements(current: str, path: str, dropped: list[Finding], applied: list[Finding]) -> dict[int, tuple]:
    """The applied placements (and device tests) in a function where a placement was dropped for the
    line length, each with the line of one dropped (InternImage's ``collect_results_gpu``: two of its three
    ``device='cuda'`` moved, the third too long, and the copy between them mixed devices); and the
    applied memory statistics of a function where one was dropped, and the synchronisations and cache
    releases around them (a peak read left on CUDA while its reset moved would measure nothing on
    Trainium). Each: (its line's text, (the line held, kind))."""
    groups = [(kind, [f for f in dropped if is_left(f)], [f for f in applied if goes(f)]) for kind, is_left, goes in (
        ("placement", lambda f: f.code in _PLACEMENTS, _moves_or_decides),
        ("memory", _memory_statistic, _measuring))]
    groups = [g for g in groups if g[1] and g[2]]
    if not groups:
        return {}
    import ast

    from .module_kind import is_main_guard

    tree = parse(current, path)
    # a function, or a script's `if __name__ == "__main__":` block (Metric3D's loss self-tests: one
    # tensor of two moved, set 116)
    functions = [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    functions += [(n.lineno, n.end_lineno or n.lineno) for n in tree.body if is_main_guard(n)]

    def innermost(line: int):
        around = [span for span in functions if span[0] <= line <= span[1]]
        return max(around) if around else None

    statistics = [f.line for f in (*dropped, *applied) if _memory_statistic(f)]

    def with_them(f, span) -> bool:
        # a synchronisation or cache release belongs to the measurement in a function made for it
        # (FastVideo's `_measure`), or right beside a statistic; not in a whole training `main()`
        # that logs one (diffusers' colossalai DreamBooth)
        return _memory_statistic(f) or span[1] - span[0] <= _MEASURING_FUNCTION or any(
            abs(f.line - line) <= 3 for line in statistics)

    lines = split_lines(current)
    out: dict[int, tuple] = {}
    for kind, left, moved in groups:
        held = {innermost(f.line): f.line for f in left}
        held.pop(None, None)
        out.update({id(f): (lines[f.line - 1].strip(), (held[innermost(f.line)], kind))
                    for f in moved if innermost(f.line) in held and (kind != "memory" or with_them(f, innermost(f.line)))})
    return out


#: The longest function (in lines) taken as made for a measurement whole.
_MEASURING_FUNCTION = 60


def _grown(current: str, new: str, limit: int) -> set[int]:
    """The lines of ``new`` longer than ``limit`` that ``current`` does not have, outside the code a
    formatter leaves as written (whisper keeps its one-line `add_argument` calls under `# fmt: off`)."""
    old_long = {line for line in split_lines(current) if len(line) > limit}
    lines = split_lines(new)
    grown = {n for n, line in enumerate(lines, 1) if len(line) > limit and line not in old_long}
    return grown - _unformatted(lines) if grown and "fmt:" in new else grown


def _unformatted(lines: list[str]) -> set[int]:
    """The lines (1-based) between ``# fmt: off`` and ``# fmt: on`` (or the end), and ``# fmt: skip`` lines."""
    out: set[int] = set()
    off = 0
    for n, line in enumerate(lines, 1):
        found = _FMT.search(line) if "fmt:" in line else None
        word = found.group(1) if found else ""
        if word == "off" and line.lstrip().startswith("#") and not off:
            off = n
        elif word == "on" and off:
            out.update(range(off, n + 1))
            off = 0
        elif word == "skip":
            out.add(n)
    if off:
        out.update(range(off, len(lines) + 1))
    return out


def _wrapped(current: str, new: str, limit: int, path: str, grown: set[int] | None = None) -> str:
    """``new`` with the statements whose lines a fix pushed past ``limit`` broken as a formatter
    would (see :mod:`neuron_lint.fixes.wrap`); ``new`` itself when there are none or it fails.
    ``grown``: those lines (:func:`_grown`), when the caller has them."""
    if grown is None:
        grown = _grown(current, new, limit)
    if not grown:
        return new
    from .wrap import wrap_lines

    wrapped = wrap_lines(new, grown, limit, path)
    return wrapped if wrapped != new and _parses(wrapped, path) else new


def _rejoined(current: str, new: str, limit: int, path: str, keeps_length) -> str:
    """``new`` with the statements a fix shrank joined onto one line where they fit ``limit``, and,
    in a file that keeps to ``limit``, the call chains a fix gave arguments at the end laid out as
    ``ruff format`` would (see :mod:`neuron_lint.fixes.rejoin`)."""
    from .rejoin import join_shrunk, rejoin

    # A statement a fix shrank back onto one line is joined whatever the file's other lines (boltz's
    # `return torch.tensor(` / `0.0, device=...` / `)`); chains are laid out anew only in a file
    # that keeps to the length.
    rejoined = join_shrunk(current, rejoin(current, new, limit, path) if keeps_length() else new, limit, path)
    if rejoined == new:
        return new
    return rejoined if _parses(rejoined, path) else new


def _long_code_lines(text: str, limit: int) -> int:
    """How many lines :func:`_long_code_line_numbers` finds."""
    return len(_long_code_line_numbers(text, limit))


def _long_code_line_numbers(text: str, limit: int) -> dict[int, int]:
    """The lines (1-based) past ``limit`` that are long because of their code, not of a comment or a
    string, nor split as far as a formatter can: a line that ends in an opening bracket (lm-eval's
    ``from megatron.core.models.gpt.heterogeneous.heterogeneous_layer_specs import (``), nor left to
    the author by ``# fmt: off``/``# fmt: skip`` (pytorch3d's tables of points). Each with the
    length of its code (the line without a trailing comment)."""
    lines = split_lines(text)
    long = {n: len(line) for n, line in enumerate(lines, 1) if len(line) > limit}
    if not long:
        return long
    if "fmt:" in text:  # ruff format leaves `# fmt: off` regions and `# fmt: skip` lines alone
        for n in _unformatted(lines):
            long.pop(n, None)
        if not long:
            return long
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            (row, col), (end_row, end_col) = tok.start, tok.end
            if tok.type == tokenize.STRING and (end_row > row or end_col - col >= 20):
                for n in range(row, end_row + 1):
                    long.pop(n, None)
            elif row not in long:
                continue
            elif tok.type == tokenize.OP and tok.string in "([{" and _last_on_line(tok):
                del long[row]
            elif tok.type == tokenize.COMMENT:
                code = len(tok.line[:col].rstrip())
                if col <= limit or (_PRAGMA.match(tok.string) and code <= limit):
                    del long[row]  # a formatter measures a line without its pragma (`# noqa: E741`)
                else:
                    long[row] = code
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    for n in [n for n in long if _UNSPLITTABLE.match(lines[n - 1])]:
        del long[n]  # boltz's `start_decay_after_n_steps=self.training_args.lr_start_decay_after_n_steps,`
    return long


#: A bracket's element that is a name or an attribute chain alone (as a keyword's value, too): no
#: formatter can split it, so a file with one past the length still keeps to it.
_UNSPLITTABLE = re.compile(r"\s*(?:\w+\s*=\s*)?[\w.]+,?\s*(?:#.*)?$")
_FMT = re.compile(r"#\s*fmt:\s*(off|on|skip)\b")
#: Trailing comments that ruff's formatter and E501 leave out of a line's length.
_PRAGMA = re.compile(r"#\s*(noqa|type:|pyright:|pylint:|nosec|isort:|mypy:|ruff:)", re.IGNORECASE)


def _last_on_line(tok: tokenize.TokenInfo) -> bool:
    """Is ``tok`` the last thing on its line but for a comment?"""
    rest = tok.line[tok.end[1]:].strip()
    return not rest or rest.startswith("#")


def _on_long_lines(current: str, new: str, fixes: list[Finding], limit: int) -> list[Finding]:
    """The fixes whose target lies on lines that became longer than ``limit``."""
    a, b = split_lines(current), split_lines(new)
    grown: set[int] = set()  # 1-based lines of ``current``
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "replace" and i2 - i1 == j2 - j1:  # line for line
            grown.update(i + 1 for i, j in zip(range(i1, i2), range(j1, j2)) if len(b[j]) > limit)
        elif tag != "equal" and any(len(b[j]) > limit for j in range(j1, j2)):
            grown.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return [f for f in fixes if any(line in grown for line in range(f.fix.target[0], f.fix.target[2] + 1))]


def advertised(text: str, findings: list[Finding], settings: Settings, path: str, limit: int | None = None) -> list[Finding]:
    """``findings`` less the fixes ``fix`` would drop in its first pass (each gets a note saying
    why), so that ``check`` does not offer a fix ``fix`` leaves. ``limit``: the project's line length
    (found from ``path``'s folder when not given).

    Without ``--unsafe-fixes`` the unsafe fixes are still offered (as ``[*]`` needing the option), so
    they are vetted too, by the pass ``fix --unsafe-fixes`` runs; only their own verdicts are taken
    from it (the safe fixes keep those of the safe pass, the one a plain ``fix`` runs)."""
    if limit is None:
        from .line_length import line_length_of

        limit = line_length_of(os.path.dirname(os.path.abspath(path)))
    out = _vetted(text, findings, settings, path, limit)
    if settings.unsafe_fixes or not any(f.fix is not None and f.fix.fixer and f.fix.applicability != "safe"
                                        for f in out):
        return out
    wider = _vetted(text, out, replace(settings, unsafe_fixes=True), path, limit)
    if len(wider) != len(out):
        return out
    return [w if f.fix is not None and f.fix.applicability != "safe" and w.fix is None else f
            for f, w in zip(out, wider)]


def too_long_note(limit: int, tied_to: tuple[int, str] | None = None) -> str:
    """Why a fix dropped for the line length was not applied; ``tied_to``: the line of the placement
    (or memory statistic) of the same function that was too long, when this one was held back with it."""
    if tied_to is not None and tied_to[1] == "memory":
        return (f"not rewritten: a memory statistic of the same function (line {tied_to[0]}) would grow past "
                f"{limit} characters, and a peak read on one device while reset on another measures nothing; "
                "rewrite them together by hand")
    if tied_to is not None:
        return (f"not rewritten: a device placement of the same function or `__main__` block (line {tied_to[0]}) "
                f"would grow past {limit} characters, and code half moved to the accelerator mixes devices; "
                "rewrite them together by hand")
    return f"not rewritten: the line would grow past {limit} characters (the project's line length); rewrite it by hand"


def _vetted(text: str, findings: list[Finding], settings: Settings, path: str, limit: int) -> list[Finding]:
    """:func:`advertised` for the fixes ``settings`` applies."""
    wanted = [f for f in findings if applicable(f, settings) and f.fix.fixer]
    if not wanted:
        return findings
    if all(f.fix.edits for f in wanted):  # the cheap test first: every fix's own edits, as text
        joint, done = apply_edits(text, wanted)
        if len(done) == len(wanted) and _parses(joint, path) and (_long_code_lines(text, limit) or _long_lines(
                _wrapped(text, joint, limit, path), limit) <= _long_lines(text, limit)):
            return findings  # together they parse and grow no line too long: fix drops none
    dropped = Dropped()
    one_pass(text, wanted, settings, "\n", path, limit, dropped, findings)
    if not dropped.rejected:
        return findings
    long = [id(f) for f in dropped.too_long]
    notes = {id(f): too_long_note(limit, dropped.tied.get(id(f), (None, None))[1]) if id(f) in long
             else "not rewritten: the result would not parse" for f in dropped.rejected}
    out = [replace(f, fix=None, fix_note=notes[id(f)]) if id(f) in notes else f for f in findings]
    return settle(out)  # a guard whose decided code lost its fix loses its own
