"""neuron-lint's fixes as a LibCST codemod, for codemod pipelines::

    python -m libcst.tool codemod -x neuron_lint.codemod.DeviceAgnostic --no-format src/
    python -m libcst.tool codemod -x neuron_lint.codemod.DeviceAgnostic --no-format --device neuron --unsafe-fixes src/

``-x`` (``--external``) makes ``libcst.tool`` import the dotted path as given; without it, the
command is looked up under the ``modules`` of a ``.libcst.codemod.yaml`` (``modules: [neuron_lint]``
then ``codemod.DeviceAgnostic``). ``--no-format`` keeps LibCST from piping the result through black
(its default formatter), which would reformat whole files.

It is the same rewrite as ``neuron-lint fix``, not a second implementation: each file goes through
:func:`neuron_lint.fixes.apply.fix_text` with the settings ``neuron-lint fix FILE`` would use there (the
project's ``[tool.neuron-lint]`` configuration, its declared torch for ``--min-torch``), and the
options below override them as on neuron-lint's command line.
"""

from __future__ import annotations

import argparse
import os
from functools import lru_cache

import libcst as cst
from libcst.codemod import CodemodCommand, SkipFile

from .config.files import DEVICES, _min_torch, resolve
from .errors import ParseError

__all__ = ["DeviceAgnostic"]


def _version(value: str) -> str:
    try:
        return _min_torch(value, "--min-torch")
    except Exception as exc:  # ConfigError: argparse shows it as a usage error
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--min-torch: ")) from None


@lru_cache(maxsize=256)
def _settings(directory: str, device: str | None, min_torch: str | None, unsafe_fixes: bool | None):
    """The settings of ``neuron-lint fix`` for files in ``directory`` (one configuration lookup per folder)."""
    return resolve([directory], device=device, min_torch=min_torch, unsafe_fixes=unsafe_fixes).settings


class DeviceAgnostic(CodemodCommand):
    DESCRIPTION = ("neuron-lint's fixes: rewrite CUDA-specific PyTorch into device-agnostic code "
                   "(torch.accelerator), or plain \"neuron\" with --device neuron.")

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument(
            "--device", choices=DEVICES, default=None,
            help="accelerator (default): torch.accelerator code that still runs on GPUs; neuron: plain \"neuron\".")
        arg_parser.add_argument(
            "--unsafe-fixes", action=argparse.BooleanOptionalAction, default=None,
            help="Also apply unsafe fixes (they can change behaviour; review the diff).")
        arg_parser.add_argument(
            "--min-torch", type=_version, default=None, metavar="VERSION",
            help="Oldest PyTorch the fixed code must run on (default: the project's configuration, else the "
                 "oldest torch it declares, at least 2.6); newer APIs stay suggestions.")

    def __init__(self, context, device: str | None = None, unsafe_fixes: bool | None = None,
                 min_torch: str | None = None) -> None:
        super().__init__(context)
        self.device = device
        self.unsafe_fixes = unsafe_fixes
        self.min_torch = _version(min_torch) if min_torch is not None else None

    def settings_for(self, path: str | None):
        directory = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
        return _settings(directory, self.device, self.min_torch, self.unsafe_fixes)

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        from .engine.pipeline import display_path
        from .fixes.apply import fix_text
        from .io.discovery import iter_python_files

        path = self.context.filename
        settings = self.settings_for(path)
        if path and settings.force_exclude and not list(iter_python_files([path], settings)):
            raise SkipFile("excluded by the neuron-lint configuration (force-exclude)")
        try:
            result = fix_text(tree.code, display_path(path) if path else "<stdin>", settings, newline=tree.default_newline)
        except ParseError as exc:
            raise SkipFile(f"neuron-lint cannot read it: {exc}") from None
        for finding in result.rejected:
            self.warn(f"{finding.code} at line {finding.line}: its fix was left out (the result did not parse)")
        if result.text == tree.code:
            raise SkipFile("nothing to fix")
        return cst.parse_module(result.text, config=tree.config_for_parsing)
