"""Shell: the `eb-torchperf` command.  `main.py` parses and dispatches; one module per
sub-command exposes `add_arguments(parser)` and `run(args) -> int`."""

from eb_torchperf.cli.dispatch import console_main, main  # noqa: F401
