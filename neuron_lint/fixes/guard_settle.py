"""After every finding of a file is planned: a guard's fix (a plan with a ``region``) stays only
when each CUDA-specific site of what it decides has a fix at least as safe (:func:`settle`, for
``check`` and for each ``fix`` pass), and only applied together with those fixes (:func:`unsupported`).
The regions are found on the ast by :mod:`.guards`.
"""

from __future__ import annotations

import re
from dataclasses import replace

#: Findings that never block a guard: setting a cuDNN/CUDA backend flag is harmless elsewhere.
HARMLESS = frozenset({"NRN209"})
#: Findings of these families inside decided code block a guard unless they are fixed too.
BLOCKING_FAMILIES = ("NRN1", "NRN2", "NRN6")


def _inside(g, area) -> bool:
    return (area[0], area[1]) <= (g.line, g.col) and (g.end_line, g.end_col) <= (area[2], area[3])


def _overlap(a, b) -> bool:
    return (a[0], a[1]) < (b[2], b[3]) and (b[0], b[1]) < (a[2], a[3])


_FSTRING = re.compile(r"[rRbBuU]?[fF][rR]?['\"]")


def _covering(f, site, findings) -> tuple[list, list]:
    """The findings that cover one site of guard ``f``'s region (none: nothing there blocks it), and
    the site as the note names it."""
    covering = [g for g in findings if g is not f and _overlap((g.line, g.col, g.end_line, g.end_col), site[:4])]
    if len(site) > 4 and _FSTRING.match(site[4]):
        # `f"cuda:{torch.cuda.device_count() - 1}"`: a finding inside the braces does not fix the string
        covering = [g for g in covering if (g.line, g.col) <= (site[0], site[1])]
    if any(g.code in HARMLESS for g in covering):
        return [], site
    if len(site) > 4 and site[4] == "":  # an area: only the CUDA-specific findings inside it count
        covering = [g for g in covering if g.code[:4] in BLOCKING_FAMILIES and _inside(g, site)]
        if not covering:
            return [], site
        site = [covering[0].line, covering[0].col, covering[0].end_line, covering[0].end_col, covering[0].code]
    elif not covering:
        return [None], site  # a CUDA site no finding covers: nothing fixes it
    return covering, site


def is_guard(f) -> bool:
    return f.fix is not None and any(k == "region" for k, _ in f.fix.data)


def depends_on(guard, findings: list) -> list:
    """The findings among ``findings`` whose fixes ``guard``'s fix needs (those in what it decides)."""
    out: dict[int, object] = {}
    for site in dict(guard.fix.data)["region"]:
        out.update((id(g), g) for g in _covering(guard, site, findings)[0] if g is not None)
    return list(out.values())


def settle(findings: list) -> list:
    """Drop the fix of every guard whose decided CUDA sites are not all fixed as safely (see module doc)."""
    guards = [i for i, f in enumerate(findings) if is_guard(f)]
    if not guards:
        return findings
    out, placing = list(findings), None
    while True:  # the tests `_agreeing` keeps may be what other guards go with: settle again
        out, placing = _settled(out, guards, placing)
        agreed = _agreeing(out, guards, placing)
        if all(a is b for a, b in zip(agreed, out)):
            return out
        out = agreed


def _settled(out: list, guards: list[int], placing):
    changed = True
    while changed:  # a guard that loses its fix may be what another one decides: again, until none does
        changed = False
        for i in guards:
            f = out[i]
            if f.fix is None:
                continue
            for site in dict(f.fix.data)["region"]:
                covering, site = _covering(f, site, out)
                left = [g for g in covering if g is None or g.fix is None]
                if left:
                    out[i] = replace(f, fix=None, fix_note=_kept_note(f, site))
                    if placing is None and any(g is not None and g.code in _PLACES for g in left):
                        placing = out[i]
                    changed = True
                    break
                if f.fix.applicability != "unsafe" and any(g.fix.applicability != "safe" for g in covering):
                    # what it decides is fixed, but not safely: the guard goes with it, as unsafe as it
                    # (nnU-Net's `if device.type == 'cuda': torch.cuda.empty_cache()` under torch 2.1)
                    f = out[i] = replace(f, fix=replace(f.fix, applicability="unsafe"))
                    changed = True
    return out, placing


def _kept_note(f, site) -> str:
    what = f"`{site[4]}`" if len(site) > 4 and site[4] else "CUDA-only code"
    if f.code == "NRN201" and "torch.cuda.device(" in what:
        return (f"not rewritten: it runs inside `with {what[1:-1]}:` (line {site[0]}), which stays CUDA's and raises "
                "where CUDA is absent: rewritten alone it would change nothing. Port the two together")
    if f.code == "NRN205" or f.code == "NRN211" and "GradScaler" in what:
        # a float16 autocast (or the comparison deciding one) tied to the module's CUDA loss scalers (loss_scalers)
        return (f"not rewritten: the loss scaler {what} (line {site[0]}) stays CUDA's, and switches itself off "
                "without CUDA: moved alone, float16 autocast would run on Trainium with no loss scaling. Port the "
                "scaler and autocast together")
    if f.code == "NRN202" and "is_available" in what:  # a device string a flag of that test picks
        return (f"not rewritten: it is used only where {what} (line {site[0]}) holds, directly or through a "
                "flag, and that test stays as it is, so Trainium never gets here: rewritten alone it would "
                "change nothing. Port the test and the string together")
    if f.code == "NRN202":  # a device string stored where the module compares it with CUDA's name
        return (f"not rewritten: {what} (line {site[0]}) asks whether this device is CUDA's and stays as it is; "
                "with the current device here, Trainium would take the path that test keeps for the CPU. "
                "Port the string and its tests together")
    return (f"not rewritten: the code it guards still has {what} (line {site[0]}), which this fix run does not "
            "rewrite; on Trainium the guard would let it run. Make that code device-agnostic first")


_AVAILABLE = "`torch.cuda.is_available`"
_PLACES = frozenset({"NRN201", "NRN202", "NRN210"})  # `.cuda()`, a CUDA device, DataParallel: placement


def _agreeing(findings: list, guards: list[int], placing) -> list:
    """Where a module keeps a ``torch.cuda.is_available()`` test over code that places things on
    CUDA, its other tests stay too: on Trainium they would disagree (moco-v3: the model stayed on
    the CPU, its test kept for DataParallel, while rewritten tests sent the targets to neuron)."""
    if placing is None or not placing.message.startswith(_AVAILABLE):
        return findings
    out = list(findings)
    for i in guards:
        f = out[i]
        if f.fix is not None and f.message.startswith(_AVAILABLE):
            out[i] = replace(f, fix=None, fix_note=(
                f"not rewritten: the CUDA test on line {placing.line} stays, so on Trainium the code it decides "
                "keeps its CPU path; rewritten, this test would send other code to the accelerator beside it. "
                "Rewrite them together, by hand"))
    return out


def unsupported(used: list, everything: list) -> list:
    """The guards among ``used`` (fixes applied together) whose decided code needs a fix among
    ``everything`` (the file's findings) that is not in ``used``: applied without it, the guard
    would let CUDA-only code run on Trainium."""
    guards = [f for f in used if is_guard(f)]
    if not guards:
        return []
    applied = {id(f) for f in used}
    return [f for f in guards if any(id(g) not in applied for g in depends_on(f, everything))]
