"""Diagnosis rules: modules each exposing `RULES`, a list of functions
`rule(target, reference, comparisons) -> list[Finding]` (see eb_torchperf.diagnose)."""
