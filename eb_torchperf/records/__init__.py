"""records stage of eb_torchperf."""
