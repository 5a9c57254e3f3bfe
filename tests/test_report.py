"""`neuron-lint report`: its numbers are `check`'s findings, counted; markdown and json have their shape."""

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import jsonschema

from neuron_lint.api import check_paths
from neuron_lint.config.settings import Settings
from neuron_lint.report import build_report
from neuron_lint.report.schema import SCHEMA

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PAYLOAD = "</script><img src=x onerror=alert(1)>"


def make_project(tmp_path: Path) -> Path:
    """A small project with every kind of finding: unsupported API, fixable CUDA code, manifests."""
    proj = tmp_path / "proj"
    shutil.copytree(EXAMPLES / "cuda_project", proj / "trainer")
    (proj / "kernels").mkdir()
    (proj / "kernels" / "ops.py").write_text(f"import torch\ny = torch.sparse.mm(a, b)  # {PAYLOAD}\n")
    (proj / "clean").mkdir()
    (proj / "clean" / "util.py").write_text("def add(a, b):\n    return a + b\n")
    (proj / "requirements.txt").write_text(
        "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121\ntriton==2.3.1\n")
    return proj


def report_json(cli, *args):
    proc = cli("report", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_report_counts_equal_check_findings(tmp_path, cli):
    proj = make_project(tmp_path)
    data = report_json(cli, str(proj))
    check = cli("check", "--output-format", "concise", str(proj))
    lines = [l for l in check.stdout.splitlines() if re.search(r":\d+:\d+: NRN\d{3} ", l)]
    by_code = Counter(re.search(r": (NRN\d{3}) ", l).group(1) for l in lines)
    assert data["summary"]["findings"] == len(lines) > 0
    assert {r["code"]: r["findings"] for r in data["rules"]} == dict(by_code)
    assert sum(data["summary"]["families"].values()) == len(lines)
    assert data["files_with_findings"] == len({l.split(":")[0] for l in lines})
    s = data["summary"]
    assert s["safe_fixable"] + s["unsafe_fixable"] + s["manual"] == s["findings"]
    assert sum(level["findings"] for level in s["effort"]["by_level"].values()) == s["findings"]
    assert sum(p["findings"] for p in data["packages"]) == s["findings"]
    assert sum(d["findings"] for d in data["directories"]) == s["findings"]


def test_fixability_and_effort_come_from_findings_and_catalog(tmp_path, catalog):
    proj = make_project(tmp_path)
    result = check_paths([str(proj)], Settings())
    data = build_report(result, [str(proj)], catalog)
    fixes = Counter(f.fix.applicability if f.fix else "manual" for f in result.findings)
    s = data["summary"]
    assert (s["safe_fixable"], s["unsafe_fixable"], s["manual"]) == (fixes["safe"], fixes["unsafe"], fixes["manual"])
    points = {"auto": 0, "low": 1, "medium": 3, "high": 8}
    expected = 0
    for f in result.findings:
        if f.fix and f.fix.applicability == "safe":
            continue  # `neuron-lint fix` does it: no effort
        effort = catalog.get(f.code).effort
        expected += points["low" if effort == "auto" else effort]  # an auto rule whose fix was not offered
    assert s["effort"]["points"] == expected
    # the rules behind each level add up to the level's findings
    for level in s["effort"]["by_level"].values():
        assert sum(level["rules"].values()) == level["findings"]


def test_verdicts_blockers_first_and_packages(tmp_path, cli):
    proj = make_project(tmp_path)
    data = report_json(cli, str(proj))
    assert data["verdict"] == "blocked"
    codes = [b["code"] for b in data["blockers"]]
    assert "NRN681" in codes and "NRN101" in codes  # triton (high effort) and torch.sparse (unsupported)
    assert data["blockers"][0]["effort"] == "high"  # the hardest first
    sparse = next(b for b in data["blockers"] if b["path"].endswith("ops.py"))
    assert [x["line"] for x in sparse["excerpt"]] == [1, 2] and PAYLOAD in sparse["excerpt"][1]["text"]
    packages = {p["name"]: p for p in data["packages"]}
    assert packages["clean"]["verdict"] == "ready" and packages["clean"]["findings"] == 0
    assert packages["kernels"]["verdict"] == "blocked"
    assert packages["(top level)"]["families"]["cuda-only-package"] == 3
    assert data["packages"][-1]["name"] == "clean"  # blockers first, ready last
    assert data["files"][0]["effort"]["points"] >= data["files"][-1]["effort"]["points"]


def test_verdict_ready_and_fixable(tmp_path, cli):
    (tmp_path / "a.py").write_text("x = 1\n")
    assert report_json(cli, str(tmp_path))["verdict"] == "ready"
    safe = tmp_path / "b.py"
    safe.write_text("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n")
    data = report_json(cli, str(tmp_path))
    if data["summary"]["safe_fixable"] == data["summary"]["findings"]:
        assert data["verdict"] == "fixable"
    else:  # no fixer for .cuda() in this tree yet: a person has to do it
        assert data["verdict"] == "needs-work"


def test_json_matches_documented_schema(tmp_path, cli):
    data = report_json(cli, str(make_project(tmp_path)))
    jsonschema.validate(data, SCHEMA)
    readme = (ROOT / "README.md").read_text()
    for key in SCHEMA["required"]:
        assert f"`{key}`" in readme, f"README does not document the report's {key!r}"


def test_markdown_shape_and_escaping(tmp_path, cli):
    proj = make_project(tmp_path)
    proc = cli("report", "--format", "markdown", str(proj))
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.startswith("## Trainium migration readiness: ⛔ Blocked")
    data = report_json(cli, str(proj))
    assert f"**{data['summary']['findings']}** findings" in md
    for heading in ("### Effort", "### Per top-level package", "### Blockers", "### Files that need most work"):
        assert heading in md
    assert "| family | findings |\n|---|---:|" in md
    # every table row has as many cells as its header
    for block in re.findall(r"(\|.*\|\n\|[-:|]+\|\n(?:\|.*\|\n)*)", md):
        rows = block.strip().splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", r)) for r in rows}
        assert len(widths) == 1, block
    # the payload appears only inside fenced code, never as live HTML
    outside_fences = re.sub(r"```.*?```", "", md, flags=re.S)
    assert "<img" not in outside_fences and "</script>" not in outside_fences
    assert PAYLOAD in md  # shown verbatim in the blocker's code excerpt


def test_report_writes_file_and_reports_unreadable_files(tmp_path, cli):
    (tmp_path / "bad.py").write_text("def broken(:\n")
    (tmp_path / "ok.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    out = tmp_path / "r.json"
    proc = cli("report", "--format", "json", "-o", str(out), str(tmp_path))
    assert proc.returncode == 2
    assert "bad.py" in proc.stderr
    data = json.loads(out.read_text())
    assert [e["path"].endswith("bad.py") for e in data["errors"]] == [True]
    assert data["summary"]["findings"] >= 1


def test_terminal_report_on_examples(cli):
    proc = cli("report", str(EXAMPLES))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("Migration readiness: ")
    data = report_json(cli, str(EXAMPLES))
    assert f"{data['summary']['findings']} findings in" in out
    for words in ("Findings per family", "Who fixes it", "Effort", "Per top-level package", "Files that need most work"):
        assert words in out
    if data["blockers"]:
        first = data["blockers"][0]
        assert f"{first['path']}:{first['line']}:{first['column']}: {first['code']}" in out


def test_unknown_format_is_a_usage_error(cli):
    proc = cli("report", "--format", "pdf", str(EXAMPLES))
    assert proc.returncode == 2
    assert "unknown report format 'pdf'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_report_reads_the_project_configuration_like_check(tmp_path, cli):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.neuron-lint]\nignore = ["NRN681"]\n')
    (tmp_path / "requirements.txt").write_text("triton\nxformers\n")
    data = report_json(cli, str(tmp_path))
    assert [r["code"] for r in data["rules"]] == ["NRN680"]
    assert report_json(cli, "--isolated", str(tmp_path))["summary"]["findings"] == 2
