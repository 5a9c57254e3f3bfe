"""Output formats (json, sarif, github, junit), --statistics, --exit-zero, --quiet, --show-source and
the progress bar."""

import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import jsonschema
import pytest

from neuron_lint.model import CheckResult, Edit, FileError, Finding, Fix
from neuron_lint.output import FORMATS, MACHINE_FORMATS, RenderOptions, get_renderer

DATA = Path(__file__).parent / "data"
SOURCE = (
    "import torch\n"
    "x = torch.ones(2).cuda()\n"
    "y = x.double()\n"
    "z = x.double()  # noqa: NRN201\n"  # NRN301 reported; with NRN901 the unused NRN201 too, with a fix
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


def run(cli, project, *args):
    return cli("check", ".", "--extend-select", "NRN901", *args, cwd=project)


def test_json_follows_the_documented_schema(cli, project):
    r = run(cli, project, "--output-format", "json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    jsonschema.validate(data, json.loads((DATA / "neuron-lint-json.schema.json").read_text()))
    assert [(d["code"], d["location"]["row"]) for d in data] == [("NRN201", 2), ("NRN301", 3), ("NRN301", 4), ("NRN901", 4)]
    first = data[0]
    assert first["filename"] == "train.py" and first["name"] == "cuda-call" and first["category"] == "cuda-specific"
    assert first["location"] == {"row": 2, "column": 19} and first["end_location"]["row"] == 2
    assert first["url"].startswith("https://")
    fix = data[-1]["fix"]
    assert fix["applicability"] == "safe"
    assert fix["edits"][0]["content"] == "" and fix["edits"][0]["location"]["row"] == 4


def test_json_and_sarif_say_why_a_finding_has_no_fix(cli, tmp_path):
    # a guard left because the code it guards stays CUDA-only: `full` shows a note, and so must the
    # machine formats, or a CI script cannot tell "no fix exists" from "neuron-lint declined"
    (tmp_path / "train.py").write_text(
        "import torch\n"
        "if torch.cuda.is_available():\n"
        "    torch.cuda.nvtx.range_push('step')\n"
    )
    data = json.loads(cli("check", ".", "--output-format", "json", cwd=tmp_path).stdout)
    guard = next(d for d in data if d["location"]["row"] == 2)
    assert guard["fix"] is None and guard["fix_note"].startswith("not rewritten:")
    assert "torch.cuda.nvtx" in guard["fix_note"]
    sarif = json.loads(cli("check", ".", "--output-format", "sarif", cwd=tmp_path).stdout)
    result = next(r for r in sarif["runs"][0]["results"] if r["locations"][0]["physicalLocation"]["region"]["startLine"] == 2)
    assert result["properties"]["fixNote"] == guard["fix_note"]
    assert next(d for d in data if d["location"]["row"] == 3)["fix_note"] is None  # nothing to say there


def test_json_with_no_findings_is_an_empty_array(cli, project):
    r = cli("check", "clean.py", "--output-format", "json", cwd=project)
    assert r.returncode == 0 and json.loads(r.stdout) == []


def test_sarif_validates_against_the_official_schema(cli, project):
    (project / "broken.py").write_text("def f(:\n")
    r = run(cli, project, "--output-format", "sarif")
    assert r.returncode == 2  # the broken file; the others are still reported
    log = json.loads(r.stdout)
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)

    run_ = log["runs"][0]
    assert log["version"] == "2.1.0"
    rules = run_["tool"]["driver"]["rules"]
    from neuron_lint.catalog.loading import load_catalog

    assert [r["id"] for r in rules] == list(load_catalog().codes)
    cuda = next(r for r in rules if r["id"] == "NRN201")
    assert cuda["name"] == "cuda-call" and cuda["help"]["text"] and cuda["helpUri"].startswith("https://")
    assert "Trainium" in cuda["help"]["markdown"]
    results = run_["results"]
    assert [res["ruleId"] for res in results] == ["NRN201", "NRN301", "NRN301", "NRN901"]
    for res in results:
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"]
    loc = results[0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "train.py" and loc["region"]["startLine"] == 2
    (fix,) = results[-1]["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["replacements"][0]["insertedContent"]["text"] == ""
    notes = run_["invocations"][0]["toolExecutionNotifications"]
    assert run_["invocations"][0]["executionSuccessful"] is False
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "broken.py"


def test_github_annotations(cli, project):
    r = run(cli, project, "--output-format", "github")
    lines = r.stdout.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith("::warning file=train.py,line=2,col=19,endLine=2,endColumn=")
    assert "title=neuron-lint (NRN201 cuda-call)::NRN201 " in lines[0]


def test_github_escapes_what_workflow_commands_reserve():
    f = Finding("dir,1/a:b.py", 3, 1, 3, 5, "NRN101", "torch-sparse", "unsupported", "50% of\nit", "s")
    out = io.StringIO()
    get_renderer("github")(CheckResult(findings=[f], errors=[FileError("x.py", "syntax error", 2, 1)]), out, RenderOptions())
    finding, error = out.getvalue().splitlines()
    assert finding.startswith("::error file=dir%2C1/a%3Ab.py,line=3,")
    assert finding.endswith("::NRN101 50%25 of%0Ait")
    assert error == "::error file=x.py,line=2,col=1,title=neuron-lint::syntax error"


def test_junit_is_xml_with_one_failure_per_finding(cli, project):
    r = run(cli, project, "--output-format", "junit")
    root = ET.fromstring(r.stdout)
    assert root.tag == "testsuites" and root.get("failures") == "4"
    failures = root.findall(".//failure")
    assert [f.get("type") for f in failures] == ["NRN201", "NRN301", "NRN301", "NRN901"]
    r = cli("check", "clean.py", "--output-format", "junit", cwd=project)
    root = ET.fromstring(r.stdout)
    assert root.get("tests") == "1" and root.get("failures") == "0" and not root.findall(".//failure")


def test_junit_survives_control_characters():
    f = Finding("a.py", 1, 1, 1, 2, "NRN101", "torch-sparse", "unsupported", "bad \x01 byte", "s")
    out = io.StringIO()
    get_renderer("junit")(CheckResult(findings=[f]), out, RenderOptions())
    ET.fromstring(out.getvalue())


@pytest.mark.parametrize("fmt", sorted(MACHINE_FORMATS))
def test_machine_formats_keep_errors_and_summaries_out_of_stdout(cli, project, fmt):
    (project / "broken.py").write_text("def f(:\n")
    r = run(cli, project, "--output-format", fmt)
    assert r.returncode == 2
    assert "broken.py" in r.stderr
    assert not [line for line in r.stdout.splitlines() if line.startswith(("Found ", "No findings", "error:"))]


def test_every_format_is_documented_in_the_help(cli):
    r = cli("check", "--help")
    for fmt in FORMATS:
        assert fmt in r.stdout


def test_statistics(cli, project):
    findings = json.loads(run(cli, project, "--output-format", "json").stdout)
    fixable = {d["code"] for d in findings if d["fix"] and d["fix"]["applicability"] == "safe"}  # what `fix` applies
    assert "NRN901" in fixable
    r = run(cli, project, "--statistics")
    assert r.returncode == 1
    rows = [line.split(None, 3) for line in r.stdout.splitlines() if "\t" in line]
    assert [row[:2] for row in rows] == [["2", "NRN301"], ["1", "NRN201"], ["1", "NRN901"]]  # most frequent first
    assert r.stdout.splitlines()[3].startswith("Found 4 findings in 1 file")  # then the total
    for count, code, mark, name in rows:
        assert mark == ("[*]" if code in fixable else "[") and name.endswith(("float64", "cuda-call", "unused-noqa"))
    r = run(cli, project, "--statistics", "--output-format", "json")
    stats = json.loads(r.stdout)
    assert {s["code"]: s["count"] for s in stats} == {"NRN301": 2, "NRN201": 1, "NRN901": 1}
    assert {s["code"] for s in stats if s["fixable"]} == fixable


def test_exit_zero(cli, project):
    assert run(cli, project, "--exit-zero").returncode == 0
    (project / "broken.py").write_text("def f(:\n")
    assert run(cli, project, "--exit-zero").returncode == 2  # errors still fail


def test_quiet_drops_the_summary(cli, project):
    loud = run(cli, project, "--output-format", "concise")
    quiet = run(cli, project, "--output-format", "concise", "--quiet")
    assert "Found 4 findings" in loud.stdout
    assert "Found" not in quiet.stdout and quiet.stdout.count("train.py:") == 4


def test_show_source(cli, project):
    shown = run(cli, project)
    hidden = run(cli, project, "--no-show-source")
    assert "x = torch.ones(2).cuda()" in shown.stdout
    assert "x = torch.ones(2).cuda()" not in hidden.stdout


def _run_on_a_terminal(args, cwd):
    """Run the CLI with stderr on a pseudo-terminal and stdout to a file; return (rc, stdout, stderr)."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm", "COLUMNS": "120", "NEURON_LINT_NO_CACHE": "1"}
    env.pop("NO_COLOR", None)
    out_path = Path(cwd) / "stdout.txt"
    with open(out_path, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "neuron_lint", *args], cwd=cwd, stdout=out, stderr=slave, env=env)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        err += chunk
    os.close(master)
    rc = proc.wait(timeout=300)
    return rc, out_path.read_text(), err.decode(errors="replace")


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_progress_bar_only_on_a_terminal_for_big_scans_and_never_with_json(tmp_path):
    from neuron_lint.cli.progress import MIN_FILES

    src = tmp_path / "src"
    src.mkdir()
    for i in range(MIN_FILES + 20):
        (src / f"m{i}.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    rc, out, err = _run_on_a_terminal(["check", "src", "--output-format", "concise", "-j", "1"], tmp_path)
    assert rc == 1
    assert f"/{MIN_FILES + 20}" in err  # the bar counted files on stderr
    assert "\x1b" not in out and out.count("NRN201") == MIN_FILES + 20

    rc, out, err = _run_on_a_terminal(["check", "src", "--output-format", "json", "-j", "1"], tmp_path)
    assert f"/{MIN_FILES + 20}" not in err
    assert len(json.loads(out)) == MIN_FILES + 20

    few = tmp_path / "few"
    few.mkdir()
    (few / "a.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    rc, out, err = _run_on_a_terminal(["check", "few", "--output-format", "concise"], tmp_path)
    assert "/1" not in err and "checking" not in err


def test_progress_is_never_shown_when_stderr_is_not_a_terminal(cli, tmp_path):
    from neuron_lint.cli.progress import MIN_FILES, wanted

    for i in range(MIN_FILES + 5):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
    r = cli("check", ".", cwd=tmp_path)
    assert r.stderr == ""
    assert not wanted("full", False, io.StringIO())


def test_fix_edits_in_sarif_are_regions():
    f = Finding("a.py", 1, 1, 1, 9, "NRN201", "cuda-call", "cuda-specific", "m", "s",
                fix=Fix("safe", (Edit(1, 1, 1, 9, "x.to(device)"), Edit(1, 1, 1, 1, "import torch\n"))))
    from neuron_lint.output.sarif import sarif_log

    log = sarif_log(CheckResult(findings=[f]))
    reps = log["runs"][0]["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"]
    assert reps[0]["deletedRegion"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 9}
    assert reps[1]["deletedRegion"]["startColumn"] == reps[1]["deletedRegion"]["endColumn"]  # an insertion
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
