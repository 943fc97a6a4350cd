"""The explain stage (issue 25): between the diagnosis and the presentation, in one place.

Its plan (which remedy trials: remedies.py, trials.py; which difference trials:
difftrials.py; which profiles: profiling.py), its run (run.py for `eb-torchperf explain`
and `audit --explain`, profiling.py for profiles and trials, confirm.py for the audit's
confirmation step) and its document (explanation.py: the ExplainResult saved next to the
results).  diagnosis/ keeps the rules, the facts and the verdict; present/ renders the
document.
"""
