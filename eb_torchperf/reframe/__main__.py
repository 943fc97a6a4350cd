"""`python -m eb_torchperf.reframe`: print the path of the ReFrame check file."""

from eb_torchperf.reframe import CHECK_PATH

print(CHECK_PATH)
