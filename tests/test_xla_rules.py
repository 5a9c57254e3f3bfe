"""The legacy-XLA rules (NRN7xx, NRN110): a finding per use, one rule per use, the fact's confidence
in the text, the rewrites' rank semantics, and the report's legacy-XLA section."""

import re
import subprocess
import sys

import pytest

from neuron_lint.api import check_source
from neuron_lint.catalog.loading import load_catalog
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text
from neuron_lint.model import CheckResult
from neuron_lint.report import build_report

CATALOG = load_catalog()
XLA_RULES = [r for r in CATALOG.rules if r.category == "legacy-xla"]

SCRIPT = '''import torch
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

def train(model, opt, batches):
    device = xm.xla_device()
    for x in batches:
        loss = model(x.to(device)).sum()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
    xm.master_print(xr.global_ordinal(), xr.world_size())
    return device.type == "xla"
'''


def _codes(src, **kw):
    return [(f.line, f.code) for f in check_source(src, "m.py", Settings(**kw))]


def test_a_finding_at_every_use_not_one_per_file():
    found = _codes(SCRIPT)
    lines = {line for line, code in found if code.startswith("NRN7")}
    assert lines == {2, 3, 6, 10, 11, 12, 13}
    assert sum(1 for line, _ in found if line == 12) == 3  # master_print, global_ordinal, world_size


def test_one_rule_per_use():
    findings = check_source(SCRIPT, "m.py", Settings())
    spans = [(f.line, f.col) for f in findings]
    assert len(spans) == len(set(spans)), findings


def test_every_legacy_message_names_its_confidence():
    for rule in XLA_RULES:
        if rule.manifest_only:
            continue
        for m in rule.matches:
            text = m.message or rule.message
            official = "official" in text
            weaker = " may " in f" {text} " and ("inferred" in text or "secondary" in text)
            assert official or weaker, f"{rule.code}: {text}"
            if rule.confidence == "likely" and not weaker:
                assert "official" in text


def test_every_rule_cites_a_public_source():
    for rule in XLA_RULES:
        assert re.search(r"https://\S+", rule.source), rule.code
        assert rule.suggestion


@pytest.mark.slow
def test_rule_command_shows_replacement_confidence_and_source():
    out = subprocess.run([sys.executable, "-m", "neuron_lint", "rule", "NRN706"], capture_output=True, text=True).stdout
    assert "What to write instead" in out and "Source" in out and "https://" in out
    assert "likely" in out and "neuron" in out


def test_mixed_workload():
    src = "import torch\nimport torch_xla.core.xla_model as xm\nx = torch.ones(2, device='neuron')\n"
    assert (3, "NRN110") in _codes(src)
    guarded = "try:\n    import torch_xla\nexcept ImportError:\n    pass\nimport torch\nx = torch.ones(2, device='neuron')\n"
    assert not [c for _, c in _codes(guarded) if c == "NRN110"]


def _fix(src, **kw):
    return fix_text(src, "m.py", Settings(unsafe_fixes=True, **kw)).text


def test_rank_semantics_are_kept():
    src = ("import torch_xla.core.xla_model as xm\n\ndef f(x):\n    if xm.is_master_ordinal():\n        pass\n"
           "    if xm.is_master_ordinal(local=False):\n        pass\n    xm.master_print(x)\n")
    out = _fix(src)
    assert out.count('int(os.environ.get("LOCAL_RANK", 0)) == 0') == 1
    assert out.count('int(os.environ.get("RANK", 0)) == 0') == 2  # local=False, and master_print
    assert "import os" in out and "torch_xla" not in out


def test_optimizer_step_without_ddp_is_unsafe_and_spells_out_the_all_reduce():
    src = "import torch_xla.core.xla_model as xm\n\ndef f(opt):\n    xm.optimizer_step(opt)\n"
    (finding,) = [f for f in check_source(src, "m.py", Settings()) if f.code == "NRN706"]
    assert finding.fix.applicability == "unsafe"
    assert "all_reduce" in finding.fix.message and "all_reduce" in finding.fix_note
    with_ddp = src.replace("xm.optimizer_step(opt)", "model = DDP(model)\n    xm.optimizer_step(opt)")
    with_ddp = "from torch.nn.parallel import DistributedDataParallel as DDP\n" + with_ddp
    (finding,) = [f for f in check_source(with_ddp, "m.py", Settings()) if f.code == "NRN706"]
    assert finding.fix.applicability == "safe"


def test_mark_step_never_leaves_an_empty_block():
    src = "import torch_xla.core.xla_model as xm\n\nfor i in range(2):\n    xm.mark_step()\n"
    assert _fix(src).lstrip("\n") == "for i in range(2):\n    pass\n"


def test_rewrites_inside_f_strings_keep_valid_quotes():
    src = 'import torch_xla.runtime as xr\n\ndef f():\n    print(f"rank {xr.global_ordinal()}")\n'
    out = _fix(src)
    compile(out, "m.py", "exec")
    assert "os.environ.get('RANK', 0)" in out


def test_report_has_a_legacy_xla_section():
    findings = check_source(SCRIPT, "m.py", Settings())
    report = build_report(CheckResult(findings=findings, files_checked=2), roots=["."])
    legacy = report["legacy_xla"]
    assert legacy["files"] == 1 and legacy["files_checked"] == 2
    assert legacy["findings"] == sum(1 for f in findings if f.code.startswith("NRN7"))
    assert legacy["safe_fixable"] + legacy["unsafe_fixable"] + legacy["manual"] == legacy["findings"]
    assert legacy["lines"] == 7
    import io

    from neuron_lint.report.markdown import render
    buf = io.StringIO()
    render(report, buf)
    assert "Legacy PyTorch/XLA path" in buf.getvalue()


# ------------------------------------------------- projects that already reach Trainium natively
XLA_BRANCH = """\
import torch_xla.core.xla_model as xm


def device(use_xla):
    if use_xla:
        return xm.xla_device()
    return None
"""


def _project(root, evidence: str | None):
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "lib"\n')
    if evidence:
        (root / "detect.py").write_text(f"def {evidence}():\n    return False\n")
    (root / "xla.py").write_text(XLA_BRANCH)
    return root / "xla.py"


def test_torch_xla_code_of_a_project_with_its_own_neuron_path_is_left_for_its_other_devices(tmp_path):
    """accelerate asks whether Neuron is available and has its own native path; its torch_xla
    branches serve TPUs, and rewriting them would send TPU runs to the Neuron device."""
    name = "is_" + "neuron_available"  # spelt apart: this file is in neuron-lint's own project
    native = _project(tmp_path / "multi", name)
    result = fix_text(XLA_BRANCH, str(native), Settings(unsafe_fixes=True, min_torch="2.13"))
    assert result.text == XLA_BRANCH
    notes = [f.fix_note for f in result.remaining if f.code == "NRN702"]
    assert notes and f"`{name}` in detect.py:1" in notes[0] and "TPU" in notes[0]
    # `--device neuron`: the user says the code is meant for Trainium
    forced = fix_text(XLA_BRANCH, str(native), Settings(unsafe_fixes=True, min_torch="2.13", device="neuron"))
    assert "xm.xla_device()" not in forced.text
    # a project without a native Neuron path: its torch_xla code is its Trainium path, rewritten
    plain = _project(tmp_path / "trn", None)
    assert "xm.xla_device()" not in fix_text(XLA_BRANCH, str(plain), Settings(unsafe_fixes=True, min_torch="2.13")).text
