"""measure stage of eb_torchperf."""
