"""``python -m fatpipe.cli``: the ``fatpipe`` command."""

from .app import entry

if __name__ == "__main__":  # pragma: no cover
    entry()
