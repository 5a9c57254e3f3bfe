"""Configuration: `[tool.neuron-lint]` in pyproject.toml or neuron-lint.toml, found by walking up;
`--config`, `--isolated`, command-line overrides, and clear errors (exit 2) for bad files."""

import textwrap

import pytest

from neuron_lint.config.files import ConfigError, find_config, load_config, resolve

TWO_CODES = "import torch\nx = torch.ones(2).cuda()\ny = x.double()\n"  # NRN201, NRN301


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture
def project(tmp_path):
    (tmp_path / ".git").mkdir()  # a repository root, like a real project
    write(tmp_path / "src" / "pkg" / "train.py", TWO_CODES)
    return tmp_path


def reported(r):
    return sorted({line.split()[1] for line in r.stdout.splitlines() if ".py:" in line})


def test_pyproject_section_is_found_from_a_nested_path(cli, project):
    write(project / "pyproject.toml", """
        [project]
        name = "demo"

        [tool.neuron-lint]
        ignore = ["NRN3"]
    """)
    r = cli("check", "src/pkg/train.py", "--output-format", "concise", cwd=project)
    assert r.returncode == 1
    assert reported(r) == ["NRN201"]
    r = cli("check", "train.py", "--output-format", "concise", cwd=project / "src" / "pkg")
    assert reported(r) == ["NRN201"]


def test_pyproject_without_our_section_is_skipped_and_the_search_goes_on(project):
    write(project / "pyproject.toml", '[tool.neuron-lint]\nselect = ["NRN2"]\n')
    write(project / "src" / "pyproject.toml", '[project]\nname = "inner"\n')
    assert find_config([str(project / "src" / "pkg")]) == project / "pyproject.toml"


def test_neuron_lint_toml_wins_over_pyproject_in_the_same_folder(cli, project):
    write(project / "pyproject.toml", '[tool.neuron-lint]\nignore = ["NRN2"]\n')
    write(project / "neuron-lint.toml", 'ignore = ["NRN3"]\n')
    r = cli("check", "src", "--output-format", "concise", cwd=project)
    assert reported(r) == ["NRN201"]


def test_nearest_file_wins(project):
    write(project / "neuron-lint.toml", 'ignore = ["NRN3"]\n')
    inner = write(project / "src" / "neuron-lint.toml", 'ignore = ["NRN2"]\n')
    assert find_config([str(project / "src" / "pkg" / "train.py")]) == inner
    assert resolve([str(project / "src" / "pkg")]).settings.ignore == ("NRN2",)


def test_config_option_overrides_the_search_and_isolated_ignores_files(cli, project):
    write(project / "pyproject.toml", '[tool.neuron-lint]\nignore = ["NRN2"]\n')
    other = write(project / "ci.toml", 'ignore = ["NRN3"]\n')
    r = cli("check", "src", "--output-format", "concise", "--config", str(other), cwd=project)
    assert reported(r) == ["NRN201"]
    r = cli("check", "src", "--output-format", "concise", "--isolated", cwd=project)
    assert reported(r) == ["NRN201", "NRN301"]
    r = cli("check", "src", "--config", str(other), "--isolated", cwd=project)
    assert r.returncode == 2 and "--isolated" in r.stderr
    shared = write(project / "ci-pyproject.toml", '[project]\nname = "x"\n[tool.neuron-lint]\nignore = ["NRN3"]\n')
    r = cli("check", "src", "--output-format", "concise", "--config", str(shared), cwd=project)
    assert reported(r) == ["NRN201"]
    r = cli("check", "src", "--config", "missing.toml", cwd=project)
    assert r.returncode == 2 and "missing.toml" in r.stderr


def test_every_key_maps_to_a_setting(tmp_path):
    cfg = write(tmp_path / "pyproject.toml", """
        [tool.neuron-lint]
        select = ["NRN1", "nrn2"]
        extend-select = ["NRN901"]
        ignore = ["NRN104"]
        exclude = ["generated"]
        extend-exclude = ["legacy/*.py"]
        force-exclude = true
        respect-gitignore = false
        output-format = "concise"
        device = "neuron"
        min-torch = "2.9"
        unsafe-fixes = true

        [tool.neuron-lint.per-file-ignores]
        "tests/*" = ["NRN201"]
    """)
    s = resolve(config=str(cfg)).settings
    assert s.select == ("NRN1", "NRN2") and s.extend_select == ("NRN901",) and s.ignore == ("NRN104",)
    root = tmp_path.resolve().as_posix()
    assert s.exclude == ("generated",) and s.force_exclude
    assert s.extend_exclude == ("legacy/*.py", f"{root}/legacy/*.py")  # path globs also anchored to the file's folder
    assert s.respect_gitignore is False and s.output_format == "concise"
    assert (s.device, s.min_torch, s.unsafe_fixes) == ("neuron", "2.9", True)
    assert s.per_file_ignores == (("tests/*", ("NRN201",)), (f"{root}/tests/*", ("NRN201",)))


def test_command_line_overrides_the_file(tmp_path):
    cfg = str(write(tmp_path / "neuron-lint.toml", """
        select = ["NRN1"]
        ignore = ["NRN104"]
        extend-exclude = ["a"]
        output-format = "concise"
        device = "neuron"
    """))
    s = resolve(config=cfg, ignore=("NRN105",), extend_exclude=("b",), output_format="json", device="accelerator").settings
    assert s.select == ("NRN1",) and s.ignore == ("NRN104", "NRN105")
    assert s.extend_exclude == ("a", "b") and s.output_format == "json" and s.device == "accelerator"
    s = resolve(config=cfg, select=("NRN2",)).settings  # a new selection starts afresh
    assert s.select == ("NRN2",) and s.ignore == ()


def test_per_file_ignores_and_output_format_from_the_file_apply(cli, project):
    write(project / "pyproject.toml", """
        [tool.neuron-lint]
        output-format = "concise"
        [tool.neuron-lint.per-file-ignores]
        "src/pkg/*.py" = ["NRN201"]
    """)
    r = cli("check", ".", cwd=project)
    assert r.stdout.startswith("src/pkg/train.py:3:")  # concise, NRN301 only
    assert reported(r) == ["NRN301"]
    r = cli("check", ".", "--output-format", "json", cwd=project)
    assert r.stdout.lstrip().startswith("[")


def test_path_globs_are_anchored_to_the_config_folder(cli, project):
    write(project / "pyproject.toml", """
        [tool.neuron-lint]
        extend-exclude = ["src/gen"]
        [tool.neuron-lint.per-file-ignores]
        "src/pkg/*.py" = ["NRN201"]
    """)
    write(project / "src" / "gen" / "out.py", TWO_CODES)
    for cwd in (project, project / "src", project / "src" / "pkg"):
        r = cli("check", ".", "--output-format", "concise", cwd=cwd)
        assert reported(r) == ["NRN301"], (cwd, r.stdout)  # gen/ excluded, NRN201 ignored in pkg/
        assert "out.py" not in r.stdout


def test_exclude_and_force_exclude(cli, project):
    write(project / "gen" / "out.py", TWO_CODES)
    write(project / "pyproject.toml", '[tool.neuron-lint]\nextend-exclude = ["gen"]\n')
    r = cli("check", ".", "--output-format", "concise", cwd=project)
    assert "gen/out.py" not in r.stdout and "train.py" in r.stdout
    r = cli("check", "gen/out.py", "--output-format", "concise", cwd=project)
    assert "gen/out.py" in r.stdout  # a file named explicitly is checked...
    r = cli("check", "gen/out.py", "--force-exclude", cwd=project)
    assert r.returncode == 0 and "gen/out.py" not in r.stdout  # ...unless --force-exclude


def test_respect_gitignore_false_checks_ignored_files(cli, project):
    (project / ".gitignore").write_text("src/\n")
    assert cli("check", ".", cwd=project).returncode == 0
    write(project / "neuron-lint.toml", "respect-gitignore = false\n")
    assert cli("check", ".", cwd=project).returncode == 1
    assert cli("check", ".", "--respect-gitignore", cwd=project).returncode == 0


@pytest.mark.parametrize("body,key,words", [
    ("selec = [\"NRN1\"]", "selec", "unknown key"),
    ("extend_select = [\"NRN1\"]", "extend_select", "did you mean 'extend-select'"),
    ("select = [\"NRN777\"]", "select", "unknown rule code"),
    ("ignore = \"NRN2\"", "ignore", "must be a list"),
    ("respect-gitignore = \"yes\"", "respect-gitignore", "true or false"),
    ("output-format = \"xml\"", "output-format", "must be one of"),
    ("device = \"cuda\"", "device", "must be one of"),
    ("min-torch = 2.6", "min-torch", "quoted version"),
    ("per-file-ignores = [\"tests\"]", "per-file-ignores", "table"),
    ("per-file-ignores = { \"tests/*\" = [\"NRN0\"] }", "per-file-ignores", "unknown rule code"),
])
def test_bad_config_is_a_clear_error_naming_file_and_key(cli, project, body, key, words):
    write(project / "pyproject.toml", "[tool.neuron-lint]\n" + body + "\n")
    r = cli("check", "src", cwd=project)
    assert r.returncode == 2
    assert "pyproject.toml" in r.stderr and f"'{key}'" in r.stderr and words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    with pytest.raises(ConfigError):
        load_config(project / "pyproject.toml")


def test_invalid_toml_names_the_file(cli, project):
    write(project / "neuron-lint.toml", "select = [\n")
    r = cli("check", "src", cwd=project)
    assert r.returncode == 2 and "neuron-lint.toml" in r.stderr and "TOML" in r.stderr


def test_bad_command_line_values_exit_2(cli, project):
    for args in (["--select", "NRN777"], ["--per-file-ignores", "nocolon"], ["--output-format", "xml"]):
        r = cli("check", "src", *args, cwd=project)
        assert r.returncode == 2 and "Traceback" not in r.stderr, args
