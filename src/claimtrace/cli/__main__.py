"""``python -m claimtrace.cli``: the ``claimtrace`` command."""

import sys

from claimtrace.cli.main import main

sys.exit(main())
