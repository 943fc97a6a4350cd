"""`python -m eb_torchperf.cli`: the `eb-torchperf` command."""

import sys

from eb_torchperf.cli.dispatch import main

sys.exit(main())
