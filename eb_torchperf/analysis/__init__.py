"""analysis stage of eb_torchperf."""
