"""``# noqa``: one dialect for Python files and manifests, and ``--add-noqa``."""
