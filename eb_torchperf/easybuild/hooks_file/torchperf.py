"""eb_torchperf hooks for EasyBuild 5: `eb --hooks="$(eb-torchperf hooks-path)"` (this file,
installed with the package; hooks/torchperf.py in a clone links here), or $EASYBUILD_HOOKS.

Every PyTorch easyconfig is linted when parsed, and every PyTorch installation is
audited against a reference after its sanity check, before its module file is
written.  Settings: EB_TORCHPERF_* variables (`eb-torchperf sanity-check --help`).
The logic lives in the eb_torchperf package (eb_torchperf.easybuild.hooks), which the
Python running `eb` must import: `module load eb_torchperf`, or pip install it there.
Other software is left alone.
"""

from eb_torchperf.easybuild.hooks import parse_hook, post_sanitycheck_hook  # noqa: F401
