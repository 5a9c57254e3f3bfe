"""``python -m neuron_lint``."""

import os
import sys

# `python -m` puts the working directory first on the import path, and neuron-lint runs inside
# checkouts it has never seen: a `json.py` or `typer/` there must not be imported (and so run)
# in place of the real module. Drop that entry before anything else is imported.
if sys.path and not getattr(sys.flags, "safe_path", False) and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from neuron_lint.cli.entry import main  # noqa: E402

if __name__ == "__main__":
    main()
