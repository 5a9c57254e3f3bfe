"""Issue 15, part 2: `--help`, the rule catalog piped, rule sources, the readiness report, the
progress estimate and which files the pre-commit hooks pass (pre-commit's own selection logic).

In-process (typer's CliRunner): standard output is not a terminal there, as in `| grep` or `| cat`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from neuron_lint.catalog.loading import load_catalog
from neuron_lint.cli import app

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def run(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "60")  # a narrow terminal: nothing piped may depend on it
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args), catch_exceptions=False)


# ---------------------------------------------------------------- --help
@pytest.mark.parametrize("command", ["check", "fix", "report", "rules", "rule", "clean", "server"])
def test_help_names_values_and_shows_no_python_types(run, command):
    r = run(command, "--help")
    assert r.exit_code == 0
    for typer_type in ("<bool>", "<list[str]>", "<str>", "<int", "{code}", "{paths}"):
        assert typer_type not in r.stdout, (command, typer_type)


def test_output_format_lists_its_choices(run):
    monkey = run("check", "--help").stdout
    text = " ".join(monkey.split())
    assert "FORMAT" in text and "full, concise, json, sarif, github, junit" in text.replace("│ ", "")


# ---------------------------------------------------------------- the catalog, piped
def test_rules_piped_is_plain_text_that_grep_finds(run):
    r = run("rules")
    lines = r.stdout.splitlines()
    assert not any(ch in r.stdout for ch in "┃│━…")  # no box drawing, nothing cut
    hits = [line for line in lines if "cuda-only-package" in line]
    assert len(hits) == sum(1 for rule in load_catalog().rules if rule.category == "cuda-only-package")
    longest = max(load_catalog().rules, key=lambda rule: len(rule.name))
    assert any(line.startswith(longest.code) and longest.name in line for line in lines)


def test_rule_piped_prints_the_whole_page_with_its_examples(run):
    rule = load_catalog().get("NRN201")
    r = run("rule", "NRN201")
    assert r.exit_code == 0
    for text in (rule.bad[0], rule.fixed[0], rule.good[0]):
        assert text.strip("\n") in r.stdout  # whole, whatever the width
    assert r.stdout.startswith("# NRN201 cuda-call\n")
    assert run("rule", "cuda-call").stdout == r.stdout


def test_rule_all_and_json(run):
    catalog = load_catalog()
    r = run("rule", "--all")
    assert r.exit_code == 0 and r.stdout.count("\n# NRN") + 1 == len(catalog.rules)
    page = json.loads(run("rule", "NRN201", "--output-format", "json").stdout)
    assert page["code"] == "NRN201" and page["examples"]["bad"] == list(catalog.get("NRN201").bad)
    assert all(url.startswith("https://") for url in page["references"])
    pages = json.loads(run("rule", "--all", "--output-format", "json").stdout)
    assert [p["code"] for p in pages] == list(catalog.codes)
    assert run("rule").exit_code == 2 and run("rule", "NRN999").exit_code == 2


def test_rule_pages_cite_public_urls_not_the_unshipped_digests(run):
    from neuron_lint.model import CheckResult
    from neuron_lint.output.sarif import sarif_log

    for rule in load_catalog().rules:
        page = run("rule", rule.code).stdout
        assert "torchneuron-facts.md" not in page and "xla-to-native.md" not in page, rule.code
        sources = page.split("## Sources\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
        if rule.code != "NRN901":  # neuron-lint's own check rests on no fact
            assert sources and all(re.match(r"- https://\S+$", s) for s in sources), (rule.code, sources)
    rules = sarif_log(CheckResult())["runs"][0]["tool"]["driver"]["rules"]
    assert not any("torchneuron-facts.md" in r["help"]["text"] for r in rules)
    assert "https://awsdocs-neuron.readthedocs-hosted.com/" in next(r for r in rules if r["id"] == "NRN201")["help"]["text"]


# ---------------------------------------------------------------- the readiness report
def report(run, *paths):
    r = run("report", "--format", "json", "--no-cache", *paths)
    return r, json.loads(r.stdout)


def test_report_on_an_empty_ignored_or_missing_path_is_never_ready(run, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / ".gitignore").write_text("vendored/\n")
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "v.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    for paths in (["empty"], ["nothere"]):
        r, data = report(run, *paths)
        assert data["verdict"] == "nothing-checked" and "Ready" not in data["verdict_text"], paths
        text = run("report", *paths).stdout
        assert "Ready" not in text and "Nothing checked" in text
    assert report(run, ".")[1]["verdict"] == "nothing-checked"  # everything in it is ignored
    assert report(run, "vendored")[1]["summary"]["findings"] == 1  # named: checked, as `check` does


def test_ready_with_unreadable_files_says_so(run, tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    (tmp_path / "bad.py").write_text("def f(:\n")
    r, data = report(run, ".")
    assert r.exit_code == 2 and data["verdict"] == "ready"
    assert data["verdict_text"].startswith("Ready as far as it could see") and "1 could not be checked" in data["verdict_text"]


def test_report_is_titled_with_the_project_name(run, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "trainer"\n')
    (tmp_path / "m.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    assert report(run, ".")[1]["project"] == "trainer"
    html = run("report", "--format", "html", ".").stdout
    assert "<title>Trainium migration readiness: trainer</title>" in html
    assert run("report", "--format", "markdown", ".").stdout.splitlines()[2].startswith("`trainer`: **1** findings")
    assert "trainer: 1 finding in 1 of" in " ".join(run("report", ".").stdout.split())
    (tmp_path / "pyproject.toml").unlink()
    assert report(run, ".")[1]["project"] == tmp_path.name  # the folder's name, never "."


def test_a_src_layout_package_is_named_after_itself(run, tmp_path):
    (tmp_path / "src" / "trainer").mkdir(parents=True)
    (tmp_path / "src" / "trainer" / "loop.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_loop.py").write_text("import torch\n")
    names = {p["name"] for p in report(run, ".")[1]["packages"]}
    assert names == {"trainer", "tests"}


def test_report_shares_add_up_to_100(run, tmp_path):
    (tmp_path / "m.py").write_text(  # one safe fix, one unsafe, one manual: 33.3% each
        "import torch\nx = torch.ones(2).cuda()\ntorch.backends.cudnn.allow_tf32 = True\nimport flash_attn\n")
    data = report(run, ".")[1]
    assert sum(data["shares"].values()) == 100 and sorted(data["shares"].values()) == [33, 33, 34]
    md = run("report", "--format", "markdown", ".").stdout
    shown = [int(m) for m in re.findall(r"\| (\d+)% \|", md)]
    assert sum(shown) == 100


def test_a_skipped_named_file_is_no_package_of_the_report(run, tmp_path):
    (tmp_path / "README.md").write_text("model.cuda()\n")
    (tmp_path / "m.py").write_text("x = 1\n")
    names = {p["name"] for p in report(run, "README.md", "m.py")[1]["packages"]}
    assert names == {"(top level)"}


def test_the_progress_estimate_waits_for_the_bytes_to_say_something():
    from neuron_lint.cli.progress import estimate

    assert estimate(15.0, 50, 10_000) is None  # largest files first: 0.5% of the bytes says nothing yet
    assert estimate(1.0, 5_000, 10_000) is None  # nor does the first second
    assert estimate(15.0, 5_000, 10_000) == pytest.approx(15.0)


# ---------------------------------------------------------------- pre-commit's file selection
def selected(hook: dict, paths: list[str]) -> list[str]:
    """The files pre-commit passes to ``hook`` (its own filter: ``files`` AND ``types_or``)."""
    from identify import identify

    files, types_or = re.compile(hook.get("files", "")), set(hook["types_or"])
    return [p for p in paths if files.search(p) and identify.tags_from_path(p) & types_or]


def test_the_hooks_pass_python_notebooks_and_manifests_and_no_other_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    wanted = ["a.py", "b.pyi", "n.ipynb", "bin/train", "requirements.txt", "dev-requirements.txt",
              "requirements/gpu.txt", "pyproject.toml", "setup.cfg", "environment.yml", "environment-gpu.yaml"]
    unwanted = ["README.md", "LICENSE", "README", "notes.txt", "ci.yml", "ruff.toml", "Makefile", "run.sh", "bin/run"]
    for name in wanted + unwanted:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text({"bin/train": "#!/usr/bin/env python\n", "bin/run": "#!/bin/sh\n", "n.ipynb": "{}"}.get(name, "x\n"))
    (tmp_path / "bin" / "train").chmod(0o755)
    (tmp_path / "bin" / "run").chmod(0o755)
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["neuron-lint", "neuron-lint-fix"]
    for hook in hooks:
        assert {"python", "pyi", "jupyter"} <= set(hook["types_or"])
        assert selected(hook, wanted + unwanted) == wanted, hook["id"]
        assert "--force-exclude" in hook["entry"]
