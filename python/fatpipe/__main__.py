"""``python -m fatpipe ...`` is the same as the ``fatpipe`` command."""

from .cli import entry

entry()
