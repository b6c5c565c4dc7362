"""``python -m ninetoothed``: the ``ninetoothed`` command (:mod:`ninetoothed.cli`)."""

import sys

from ninetoothed.cli import main

__all__: list[str] = []

if __name__ == "__main__":
    sys.exit(main())
