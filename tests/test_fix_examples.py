"""Every fixable rule's own examples are fix tests: `bad` -> exactly `fixed`, valid, and stable.

`fix_cases` cover settings (`--device neuron`, `--min-torch`, `--unsafe-fixes` off). The docs
(`neuron-lint rule CODE`) show the same snippets, so the documented rewrite is the tested one.
"""

import ast

import pytest

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

CATALOG = load_catalog()


def _settings(rule, overrides=None) -> Settings:
    # A rule alone; neuron-lint's own checks (NRN9xx, e.g. unused noqa) judge the other rules' findings.
    scope = {"extend_select": (rule.code,)} if rule.code.startswith("NRN9") else {"select": (rule.code,)}
    values = {**scope, "unsafe_fixes": True}
    for key, value in (overrides or {}).items():
        values[key] = tuple(value) if isinstance(value, list) else value
    return Settings(**values)


def _pairs():
    for rule in CATALOG.rules:
        if getattr(rule, "manifest_only", False):
            continue
        for i, (bad, fixed) in enumerate(zip(rule.bad, rule.fixed)):
            yield pytest.param(rule, bad, fixed, {}, id=f"{rule.code}-fixed-{i}")
        for i, case in enumerate(rule.fix_cases):
            yield pytest.param(rule, case["before"], case["after"], case.get("settings", {}), id=f"{rule.code}-case-{i}")


@pytest.mark.parametrize("rule,before,after,overrides", list(_pairs()))
def test_fix_gives_the_documented_text(rule, before, after, overrides):
    settings = _settings(rule, overrides)
    result = fix_text(before, "example.py", settings)
    assert result.text == after, f"{rule.file}: fix of\n{before}\ngave\n{result.text}\nexpected\n{after}"
    ast.parse(result.text)  # the output is valid Python
    again = fix_text(result.text, "example.py", settings)
    assert again.text == result.text, f"{rule.file}: a second fix changed the text again:\n{again.text}"
    assert not again.applied


def test_fixable_rules_say_how_safe_their_fix_is(catalog):
    fixable = [r for r in catalog.rules if r.fix]
    assert any(r.fix.safety == "safe" for r in fixable) and any(r.fix.safety == "unsafe" for r in fixable)
    for r in fixable:
        assert r.fix.note, f"{r.file}: [fix] needs a note explaining what the rewrite does"


def test_min_torch_gate_leaves_a_note_instead_of_a_fix():
    from neuron_lint.api import check_source

    src = "import torch\nfree, total = torch.cuda.mem_get_info()\n"
    (finding,) = check_source(src, "m.py", Settings(select=("NRN203",)))
    assert finding.fix is None
    assert "2.10" in finding.fix_note and "--min-torch" in finding.fix_note
    (finding,) = check_source(src, "m.py", Settings(select=("NRN203",), min_torch="2.10"))
    assert finding.fix is not None and finding.fix_note == ""


def test_below_the_accelerator_memory_api_the_device_module_serves_unsafely():
    """peft declares torch>=1.13: before 2.9 `torch.accelerator` has no memory calls, so the same
    call on `torch.get_device_module()` (torch.cuda itself on CUDA), under an availability test."""
    from neuron_lint.api import check_source
    from neuron_lint.fixes.apply import fix_text

    src = "import torch\ntorch.cuda.empty_cache()\nused = torch.cuda.memory_allocated()\n"
    old = Settings(select=("NRN203",))
    assert {f.fix.applicability for f in check_source(src, "m.py", old)} == {"unsafe"}
    assert fix_text(src, "m.py", old).text == src
    fixed = fix_text(src, "m.py", Settings(select=("NRN203",), unsafe_fixes=True)).text
    assert fixed == (
        "import torch\n"
        "if torch.accelerator.is_available():\n"
        "    torch.get_device_module().empty_cache()\n"
        "used = (\n"
        "    torch.get_device_module().memory_allocated()\n"
        "    if torch.accelerator.is_available()\n"
        "    else 0\n"
        ")\n"
    )
    new = fix_text(src, "m.py", Settings(select=("NRN203",), min_torch="2.9")).text
    assert "torch.accelerator.empty_cache()" in new and "get_device_module" not in new


def test_a_guard_is_kept_while_it_protects_cuda_only_code():
    from neuron_lint.api import check_source

    src = "import torch\nif torch.cuda.is_available():\n    cap = torch.cuda.get_device_capability(0)\n"
    guard = next(f for f in check_source(src, "m.py") if f.code == "NRN203")
    assert guard.fix is None
    assert "torch.cuda.get_device_capability" in guard.fix_note
    assert "keeps the CUDA path working" in guard.suggestion or "CUDA path still runs" in guard.suggestion


def test_a_safe_guard_over_code_fixed_only_unsafely_goes_with_it_as_unsafe():
    # nnU-Net (set 81): `if device.type == 'cuda': torch.cuda.empty_cache()` under a project torch
    # older than torch.accelerator's memory API: the call's fix is unsafe; the guard's fix, safe on its
    # own, was dropped, and `--unsafe-fixes` then rewrote the call under a test still asking for CUDA
    from neuron_lint.api import check_source

    src = "import torch\nif torch.cuda.is_available():\n    name = torch.cuda.get_device_name(0)\n"
    found = {f.code: f for f in check_source(src, "m.py")}
    assert found["NRN203"].fix is not None and found["NRN203"].fix.applicability == "unsafe"
    assert found["NRN204"].fix.applicability == "unsafe"
    assert fix_text(src, "m.py", Settings()).text == src  # the safe run leaves both
    both = fix_text(src, "m.py", Settings(unsafe_fixes=True)).text
    assert "torch.accelerator.is_available()" in both and "torch.cuda" not in both
