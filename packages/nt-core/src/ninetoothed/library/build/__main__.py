"""``python -m ninetoothed.library.build``: see :mod:`ninetoothed.library.build`."""

from ninetoothed.library.build.command import main

__all__: list[str] = []

raise SystemExit(main())
