"""Diagnosis rules: each module exposes `RULES`, a list of functions
`rule(target, reference, comparisons) -> list[Finding]`; `eb_torchperf.diagnosis.diagnose`
collects them from the modules named in its `RULE_MODULES`."""
