"""``python -m cudaforge.cli``: the ``cudaforge`` command."""

from cudaforge.cli import main

raise SystemExit(main())
