"""A ``torch.cuda`` function the project's own tests replace is left where the code calls it.

litgpt's and peft's tests patch ``torch.cuda.is_available``/``device_count``/``empty_cache`` to
drive their device helpers on a machine without a GPU; rewritten to ``torch.accelerator``, the
helpers stop calling what the tests replace, and those tests fail on every machine.
"""

from __future__ import annotations

from neuron_lint.api import check_source
from neuron_lint.config.settings import Settings
from neuron_lint.fixes.apply import fix_text

LIBRARY = (
    "import torch\n\n\n"
    "def count():\n"
    "    if torch.cuda.is_available():\n"
    "        return torch.cuda.device_count()\n"
    "    return 0\n\n\n"
    "def wait():\n"
    "    torch.cuda.synchronize()\n"
)
TESTS = (
    "from unittest import mock\n\n"
    "from pkg.utils import count\n\n\n"
    '@mock.patch("torch.cuda.device_count", return_value=3)\n'
    '@mock.patch("torch.cuda.is_available", return_value=True)\n'
    "def test_count(*_):\n"
    "    assert count() == 3\n"
)
SETTINGS = Settings(select=("NRN203",))


def _project(tmp_path, tests: str | None):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    library = tmp_path / "pkg" / "utils.py"
    library.write_text(LIBRARY)
    if tests is not None:
        (tmp_path / "tests").mkdir()
        (tmp_path / "tests" / "test_utils.py").write_text(tests)
    return str(library)


def test_what_the_tests_replace_stays_and_says_why(tmp_path):
    path = _project(tmp_path, TESTS)
    fixed = fix_text(LIBRARY, path, SETTINGS).text
    assert "if torch.cuda.is_available():\n        return torch.cuda.device_count()" in fixed
    assert "torch.accelerator.synchronize()" in fixed  # not replaced by the tests: rewritten
    notes = {f.line: f.fix_note for f in check_source(LIBRARY, path, SETTINGS)}
    assert "tests replace `torch.cuda.is_available`" in notes[5]


def test_without_such_tests_the_same_code_is_rewritten(tmp_path):
    path = _project(tmp_path, TESTS.replace("mock.patch", "mock.sentinel").replace("torch.cuda.", "x."))
    fixed = fix_text(LIBRARY, path, SETTINGS).text
    assert "torch.accelerator.is_available()" in fixed and "torch.accelerator.device_count()" in fixed


def test_monkeypatch_on_the_module_counts_too(tmp_path):
    tests = ("import torch\n\nfrom pkg import utils\n\n\ndef test_count(monkeypatch):\n"
             "    monkeypatch.setattr(torch.cuda, \"is_available\", lambda: False)\n    assert utils.count() == 0\n")
    path = _project(tmp_path, tests)
    assert "if torch.cuda.is_available():" in fix_text(LIBRARY, path, SETTINGS).text


def test_a_function_the_tests_do_not_use_is_rewritten(tmp_path):
    library = LIBRARY + "\n\ndef other():\n    print(torch.cuda.device_count())\n"
    path = _project(tmp_path, TESTS)
    fixed = fix_text(library, path, SETTINGS).text
    assert "if torch.cuda.is_available():" in fixed
    assert "def other():\n    print(torch.accelerator.device_count())" in fixed


WRAPPER = (
    "from torch.nn.parallel import DistributedDataParallel as DDP\n\n\n"
    "def wrap(model, local_rank, backend):\n"
    "    if backend != \"gloo\":\n"
    "        return DDP(model, device_ids=[local_rank], output_device=local_rank)\n"
    "    return DDP(model)\n"
)


def test_a_call_the_tests_replace_by_its_dotted_name_keeps_its_arguments(tmp_path):
    # distributed_shampoo (modded-nanogpt, set 44): the tests patch the module's `DDP` and assert the
    # arguments it gets; `device_ids=[...] if ... else None` without `output_device` failed them everywhere
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    path = tmp_path / "pkg" / "parallelism.py"
    path.write_text(WRAPPER)
    settings = Settings(select=("NRN206",))
    assert "device_ids=[local_rank] if torch.accelerator" in fix_text(WRAPPER, str(path), settings).text  # no test
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_parallelism.py").write_text(
        "from unittest.mock import patch\n\nfrom pkg.parallelism import wrap\n\n\n"
        "@patch(\n    \"pkg.parallelism.DDP\"\n)\ndef test_wrap(ddp):\n    wrap(\"m\", 2, \"nccl\")\n"
        "    ddp.assert_called_once_with(\"m\", device_ids=[2], output_device=2)\n")
    from neuron_lint.fixes.mocked import _read_tests
    from neuron_lint.fixes.project_scan import forget_project_reads

    _read_tests.cache_clear()
    forget_project_reads()
    assert fix_text(WRAPPER, str(path), settings).text == WRAPPER
    (note,) = [f.fix_note for f in check_source(WRAPPER, str(path), settings)]
    assert "tests replace `DDP`" in note


HOOK = (
    "import torch\n\n\n"
    "class EmptyCacheHook:\n"
    "    def after_epoch(self):\n"
    "        if torch.cuda.is_available():\n"
    "            torch.cuda.empty_cache()\n\n\n"
    "class OtherHook:\n"
    "    def after_epoch(self):\n"
    "        torch.cuda.empty_cache()\n"
)
HOOK_TESTS = (
    "from unittest.mock import patch\n\n\n"
    "def test_hook(runner_factory):\n"
    "    with patch('torch.cuda.empty_cache') as empty:\n"
    "        runner_factory(custom_hooks=[dict(type='EmptyCacheHook')]).train()\n"
    "        assert empty.call_count == 3\n"
)


def test_a_class_the_tests_build_from_a_config_keeps_the_calls_they_replace(tmp_path):
    # mmengine (read set 65): its hook tests build `dict(type='EmptyCacheHook')` and count the calls
    # of a patched `torch.cuda.empty_cache`; rewritten, they counted 0 on a CUDA host
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "tests").mkdir()
    hooks = tmp_path / "pkg" / "hooks.py"
    hooks.write_text(HOOK)
    (tmp_path / "tests" / "test_hooks.py").write_text(HOOK_TESTS)
    from neuron_lint.fixes.mocked import _read_tests
    from neuron_lint.fixes.project_scan import forget_project_reads

    _read_tests.cache_clear()
    forget_project_reads()
    fixed = fix_text(HOOK, str(hooks), Settings(select=("NRN203",), min_torch="2.9")).text
    kept, other = fixed.split("class OtherHook")
    assert "torch.cuda.empty_cache()" in kept and "torch.cuda.is_available()" in kept
    assert "torch.cuda" not in other
