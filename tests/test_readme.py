"""README's two commands stay true: CI runs exactly the test command README gives a newcomer."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _commands():
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text(), flags=re.S)


def test_ci_runs_the_readme_test_command():
    commands = _commands()
    test_cmd = next(c for c in commands if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == test_cmd


def test_readme_first_command_checks_the_examples():
    assert _commands()[0].endswith("neuron-lint check examples/")
