"""diagnosis stage of eb_torchperf."""
