"""``neuron-lint server``: a language server (LSP over stdio) for editors.

It checks open Python documents and Jupyter notebooks from the editor's text as it is typed,
publishes the findings as diagnostics, and offers each fix as a quick fix plus a "fix all" source
action. Built on pygls; nothing here is imported by ``neuron-lint check``.
"""

from __future__ import annotations

__all__ = ["serve"]


def serve(verbose: bool = False) -> int:
    """Run the server on stdin and stdout until the client ends the session; the exit code."""
    from .app import run

    return run(verbose=verbose)
