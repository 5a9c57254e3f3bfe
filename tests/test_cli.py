"""The command line as a user meets it: exit codes, formats, bad input, help."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_lint import __version__

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def write(tmp_path, name, content, mode="w"):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


def test_version(cli):
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"neuron-lint {__version__}"


@pytest.mark.parametrize("args", [["--help"], ["check", "--help"], ["rules", "--help"], ["rule", "--help"]])
def test_help_everywhere(cli, args):
    r = cli(*args)
    assert r.returncode == 0 and "Usage" in r.stdout


def test_clean_file_exits_zero(cli, tmp_path):
    write(tmp_path, "ok.py", "import torch\nx = torch.ones(2)\n")
    r = cli("check", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "No findings" in r.stdout


def test_findings_exit_one_and_concise_lines(cli, tmp_path):
    f = write(tmp_path, "bad.py", "import torch\nx = torch.ones(2).cuda()\ny = torch.sparse.mm(a, b)\n")
    r = cli("check", "--output-format", "concise", str(f))
    assert r.returncode == 1
    lines = [l for l in r.stdout.splitlines() if l.startswith(str(f))]
    assert lines == [
        f"{f}:2:19: NRN201 [*] `.cuda()` moves to a CUDA GPU; on Trainium there is none",
        f"{f}:3:5: NRN101 `torch.sparse.mm` uses sparse tensors, which TorchNeuron does not support",
    ]
    assert "Found 2 findings in 1 file" in r.stdout


def test_full_output_shows_source_and_help(cli, tmp_path):
    f = write(tmp_path, "bad.py", "import torch\nx = torch.ones(2).double()\n")
    r = cli("check", str(f))
    assert r.returncode == 1
    assert "x = torch.ones(2).double()" in r.stdout
    assert "^^^^^^^^" in r.stdout
    assert "help: Use `torch.float32`" in r.stdout
    assert "\x1b[" not in r.stdout  # not a terminal: no colour codes


def test_bad_input_is_one_line_each_and_scan_continues(cli, tmp_path):
    write(tmp_path, "a_syntax.py", "def f(:\n    pass\n")
    write(tmp_path, "b_bytes.py", b"x = '\xff\xfe'\n")
    write(tmp_path, "c_real.py", "import torch\ntorch.vmap(f)\n")
    r = cli("check", "--output-format", "concise", str(tmp_path))
    assert r.returncode == 2
    err = r.stderr.strip().splitlines()
    assert len(err) == 2, r.stderr
    assert "a_syntax.py:1" in err[0] and "syntax error" in err[0]
    assert "b_bytes.py" in err[1] and "cannot be decoded as utf-8" in err[1]
    assert "Traceback" not in r.stderr
    assert "c_real.py:2:1: NRN102" in r.stdout


def test_missing_path_is_reported(cli, tmp_path):
    r = cli("check", str(tmp_path / "nope.py"))
    assert r.returncode == 2
    assert "nope.py: no such file or directory" in r.stderr


def test_unknown_code_is_a_usage_error(cli, tmp_path):
    r = cli("check", "--select", "NRN999X", str(tmp_path))
    assert r.returncode == 2
    assert "unknown rule code" in r.stderr


def test_select_and_ignore(cli, tmp_path):
    f = write(tmp_path, "bad.py", "import torch\nx = torch.ones(2).cuda().double()\n")
    only = cli("check", "--output-format", "concise", "--select", "NRN3", str(f))
    assert " NRN301 " in only.stdout and " NRN201 " not in only.stdout
    ignored = cli("check", "--output-format", "concise", "--ignore", "NRN301,NRN201", str(f))
    assert ignored.returncode == 0


def test_directory_walk_skips_venvs_gitignored_and_build(cli, tmp_path):
    bad = "import torch\ntorch.vmap(f)\n"
    write(tmp_path, "pkg/mod.py", bad)
    write(tmp_path, "venv/pyvenv.cfg", "home = /usr\n")
    write(tmp_path, "venv/lib/x.py", bad)
    write(tmp_path, "build/lib/x.py", bad)
    write(tmp_path, "node_modules/x.py", bad)
    write(tmp_path, "generated/x.py", bad)
    write(tmp_path, "keep/x.py", bad)
    write(tmp_path, ".gitignore", "generated/\n")
    (tmp_path / ".git").mkdir()
    r = cli("check", "--output-format", "concise", str(tmp_path))
    flagged = sorted(Path(l.split(":")[0]).relative_to(tmp_path).as_posix() for l in r.stdout.splitlines() if ": NRN" in l)
    assert flagged == ["keep/x.py", "pkg/mod.py"]
    # a file named explicitly is always checked, even when ignored
    r = cli("check", "--output-format", "concise", str(tmp_path / "generated" / "x.py"))
    assert r.returncode == 1


def test_rules_table_and_rule_explanation(cli, catalog):
    r = cli("rules")
    assert r.returncode == 0
    for rule in catalog.rules:
        assert rule.code in r.stdout and rule.name in r.stdout
    r = cli("rule", "NRN301")
    assert r.returncode == 0
    for heading in ("What it flags", "Why it matters on Trainium", "What to write instead", "Source", "Example"):
        assert heading in r.stdout
    assert cli("rule", "float64").returncode == 0
    assert cli("rule", "NRN000").returncode == 2


def test_examples_show_at_least_five_rules(cli):
    r = cli("check", "--output-format", "concise", str(EXAMPLES))
    assert r.returncode == 1
    found = {l.split(": ")[1].split()[0] for l in r.stdout.splitlines() if ": NRN" in l}
    assert len(found) >= 5, found


def test_colour_on_a_terminal_unless_no_color(tmp_path):
    """Colour only on a terminal; NO_COLOR turns it off there too."""
    import io

    from neuron_lint.api import check_paths
    from neuron_lint.output import RenderOptions, get_renderer

    f = write(tmp_path, "bad.py", "import torch\nx = torch.ones(2).double()\n")
    result = check_paths([str(f)])
    out = io.StringIO()
    get_renderer("full")(result, out, RenderOptions(color=True))
    assert "\x1b[" in out.getvalue()
    out = io.StringIO()
    get_renderer("full")(result, out, RenderOptions(color=False))
    assert "\x1b[" not in out.getvalue()


def test_python_dash_m_and_console_script_agree(cli):
    import shutil
    import subprocess

    exe = shutil.which("neuron-lint")
    if exe is None:
        pytest.skip("console script not on PATH")
    r = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert r.stdout == cli("--version").stdout


def test_a_ctrl_c_lost_in_a_weakref_callback_is_delivered_again(monkeypatch):
    """A KeyboardInterrupt raised inside a weak reference's callback (during a garbage collection)
    cannot propagate: Python prints it with a traceback and goes on. The command line's hook prints
    nothing and interrupts the run again from outside the callback (a `fix` run stopped with Ctrl-C
    printed a traceback, and could have gone on)."""
    import signal
    import sys
    import time
    import weakref

    from neuron_lint.cli.commands import _interrupt_again

    monkeypatch.setattr(sys, "unraisablehook", _interrupt_again)
    # Python's own Ctrl-C handler, as a terminal's run has it: a run started in the background
    # (`cmd &`, nohup) ignores SIGINT, and then nothing, not even interrupt_main, raises it
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    class Thing:
        pass

    def callback(_ref):
        raise KeyboardInterrupt

    thing = Thing()
    ref = weakref.ref(thing, callback)  # noqa: F841  (kept alive so that its callback runs)
    try:
        with pytest.raises(KeyboardInterrupt):
            del thing
            time.sleep(2)
    finally:
        signal.signal(signal.SIGINT, previous)


_BROKEN_ANALYSIS = """
import sys
from neuron_lint.engine import pipeline

real = pipeline.analyze_source


def broken(text, path="<string>", *args, **kwargs):
    if path.endswith("boom.py"):
        raise KeyError("simulated bug")
    return real(text, path, *args, **kwargs)


pipeline.analyze_source = broken
sys.argv = ["neuron-lint", *sys.argv[1:]]
from neuron_lint.cli.entry import main

main()
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_an_internal_error_shows_its_traceback_only_with_verbose(tmp_path, verbose):
    write(tmp_path, "boom.py", "import torch\nx = torch.ones(2).cuda()\n")
    write(tmp_path, "fine.py", "import torch\nx = torch.ones(2).cuda()\n")
    args = ["check", "--no-cache", "-j", "1", *(["--verbose"] if verbose else []), str(tmp_path)]
    r = subprocess.run([sys.executable, "-c", _BROKEN_ANALYSIS, *args], capture_output=True, text=True,
                       env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "boom.py: internal error: KeyError: 'simulated bug' (please report this file)" in r.stderr
    assert "fine.py:2:" in r.stdout  # the other file is still checked
    assert ("Traceback (most recent call last)" in r.stderr) is verbose
    assert (", in broken" in r.stderr) is verbose  # the function that raised, in the traceback
