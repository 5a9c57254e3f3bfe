"""The ``neuron-lint`` command line: parse arguments, call the library, render, set the exit code.

Exit codes: 0 no findings, 1 findings, 2 usage or configuration error, or a file that could not
be read or parsed (the other files are still checked and reported).

``entry`` is the console script (tiny, for ``--version``); ``commands`` assembles the app from
``typer_app`` (the app; check, fix, clean, server), ``rules`` and ``report``; ``check`` and ``fix`` run the
parsed commands; ``options`` declares the shared options once.
"""

__all__ = ["app", "main"]


def __getattr__(name):  # PEP 562: `neuron-lint --version` imports `cli.entry` without typer or rich
    if name in __all__:
        from . import commands

        return getattr(commands, name)
    raise AttributeError(name)
