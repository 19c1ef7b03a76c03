"""``python -m fatpipe ...`` is the same as the ``fatpipe`` command."""

import sys

from .cli import main

sys.exit(main())
