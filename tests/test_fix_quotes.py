"""The string literals a fix adds use the quotes the project's formatter would leave them in.

ignite (set 49) configures `quote-style = "double"` for ruff format, and its docstrings are full of
`'x', 'y'`: counted as literals, they made the module look single-quoted, the helper a fix added
returned `torch.device('cpu')`, and `ruff format --check` failed on the fixed file.
"""

import subprocess
import sys
import textwrap

from neuron_lint.config.settings import Settings
from neuron_lint.fixes.files import fix_file
from neuron_lint.fixes.quotes import preferred_quote

# a library module (a helper function is added) whose code writes double quotes, while its
# docstrings and messages quote in single ones
LIBRARY = textwrap.dedent('''\
    """Steps.

    output_transform: receives 'x', 'y', 'y_pred', 'loss' and returns 'loss'.
    Example: step(model, 'cuda'), step(model, 'cpu'), step(model, 'xla')
    """

    import torch


    def step(model, amp_mode=None):
        """Use amp_mode='amp' or amp_mode='apex' or 'none'."""
        if amp_mode == "apex":
            raise ValueError("amp_mode='apex' needs 'apex' installed, see 'docs'")
        with torch.autocast("cuda", enabled=True):
            return model("x")
''')


# the same module with its code in single quotes
SINGLE = LIBRARY.replace('"apex"', "'apex'").replace('"x"', "'x'").replace("import torch\n", "import torch\n\nNAMES = ['a', 'b']\n")


def _fix(tmp_path, pyproject: str | None, source: str) -> str:
    if pyproject is not None:
        (tmp_path / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    path = tmp_path / "lib" / "steps.py"
    path.parent.mkdir()
    path.write_text(source)
    assert fix_file(path, Settings(select=("NRN2",))).written
    return path.read_text()


def test_quotes_inside_docstrings_literals_and_comments_do_not_count():
    # one single-quoted literal against two double-quoted ones, whatever the docstring, the
    # message and the comment hold
    text = 'x = "a"  # \'b\' \'c\' \'d\'\n"""\'e\' \'f\'"""\ny = "it\'s \'g\'"\nz = \'h\'\n'
    assert preferred_quote(text) == '"'
    assert preferred_quote("a = 'x'\nb = 'y'\nc = \"z\"  # \"w\"\n") == "'"
    assert preferred_quote(LIBRARY) == '"'


def test_a_module_whose_docstrings_quote_in_single_quotes_gets_double_quoted_literals(tmp_path):
    fixed = _fix(tmp_path, None, LIBRARY)
    assert 'return torch.device("cpu")' in fixed, fixed


def test_the_formatters_configured_quote_style_decides(tmp_path):
    # code written in single quotes, in a project whose ruff format writes double ones: ruff would
    # turn them round, and a single-quoted addition would fail `ruff format --check`
    source = SINGLE
    assert preferred_quote(source) == "'"
    fixed = _fix(tmp_path, '[tool.ruff.format]\nquote-style = "double"\n', source)
    assert 'return torch.device("cpu")' in fixed, fixed


def test_a_single_quote_style_and_blacks_string_normalisation(tmp_path):
    for name in "abc":
        (tmp_path / name).mkdir()
    fixed = _fix(tmp_path / "a", "[tool.ruff.format]\nquote-style = 'single'\n", LIBRARY)
    assert "return torch.device('cpu')" in fixed, fixed
    # black normalises to double quotes unless told to keep them; kept, the module decides
    source = SINGLE
    fixed = _fix(tmp_path / "b", "[tool.black]\nline-length = 88\n", source)
    assert 'return torch.device("cpu")' in fixed, fixed
    fixed = _fix(tmp_path / "c", "[tool.black]\nskip-string-normalization = true\n", source)
    assert "return torch.device('cpu')" in fixed, fixed


def test_fixed_file_passes_ruff_format_with_the_projects_quote_style(tmp_path):
    ruff = [sys.executable, "-m", "ruff"]
    (tmp_path / "pyproject.toml").write_text('[tool.ruff]\nline-length = 120\n[tool.ruff.format]\nquote-style = "double"\n')
    path = tmp_path / "steps.py"
    path.write_text(LIBRARY)
    before = subprocess.run([*ruff, "format", "--check", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert before.returncode == 0, before.stdout + before.stderr
    assert fix_file(path, Settings(select=("NRN2",))).written
    after = subprocess.run([*ruff, "format", "--check", str(path)], capture_output=True, text=True, cwd=tmp_path)
    assert after.returncode == 0, after.stdout + after.stderr
