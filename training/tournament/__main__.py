"""``python -m training.tournament``: the ``burako-tournament`` command."""

from training.tournament.cli import main

raise SystemExit(main())
