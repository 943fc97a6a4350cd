"""workflows stage of eb_torchperf."""
