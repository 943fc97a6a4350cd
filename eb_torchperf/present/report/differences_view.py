"""Display rows of the differences between the two sides (eb_torchperf.differences).

One list serves the HTML and Markdown reports and the terminal: each difference once,
with its group, both values, "known effect (rule ids)" or "unknown effect", and
whether a trial can change it at run time.
"""

from typing import List, Sequence

from eb_torchperf.diagnosis.differences import Difference, value_text

def differences_rows(diffs: Sequence[Difference], fired: Sequence[str] = ()) -> List[dict]:
    """{group, key, target, reference, effect, run_time} per difference.

    Args:
        diffs: differences.differences(target, reference).
        fired: rule ids of the audit's findings: a known effect whose rule fired says so.
    """
    rows = []
    for d in diffs:
        if d.known_effect:
            hit = [r for r in d.known_effect if r in fired]
            effect = "known effect (%s%s)" % (", ".join(d.known_effect),
                                               "; fired" if hit else "")
        else:
            effect = "unknown effect"
        rows.append({"group": d.group, "key": d.key, "target": value_text(d.target),
                     "reference": value_text(d.reference), "effect": effect,
                     "run_time": ("yes: " if d.changeable else "no: ") + d.how})
    return rows
