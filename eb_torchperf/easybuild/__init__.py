"""easybuild stage of eb_torchperf."""
