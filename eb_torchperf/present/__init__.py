"""present stage of eb_torchperf."""
