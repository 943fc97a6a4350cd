"""`python -m eb_torchperf.reframe`: print the path of the ReFrame check file."""

from . import CHECK_PATH

print(CHECK_PATH)
