"""Shell: the `eb-torchperf` command.  `main.py` parses and dispatches; one module per
sub-command exposes `add_arguments(parser)` and `run(args) -> int`."""

from eb_torchperf.cli.dispatch import main  # noqa: F401
