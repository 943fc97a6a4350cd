"""`python -m eb_torchperf.cli`: the `eb-torchperf` command."""

import sys

from eb_torchperf.cli.dispatch import console_main

sys.exit(console_main())
