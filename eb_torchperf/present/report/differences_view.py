"""Display rows of the differences between the two sides (eb_torchperf.differences).

One list serves the HTML and Markdown reports and the terminal: each difference once,
with its group, both values, what it does ("explained by <rule>" where that rule's
finding fired, else its documented effect, "no finding from <rule>" or "unknown
effect") and whether a trial can change it at run time.
"""

from typing import List, Sequence

from eb_torchperf.present.units import value_text


def differences_rows(diffs: Sequence, fired: Sequence[str] = ()) -> List[dict]:
    """{group, key, target, reference, effect, run_time} per difference.

    Args:
        diffs: diagnosis.differences.Difference list (Analysis.differences).
        fired: rule ids of the audit's findings: a rule that fired explains its rows.
    """
    rows = []
    for d in diffs:
        hit = [r for r in d.known_effect if r in fired]
        # a rule that did not fire explains nothing here: the documented effect instead
        effect = ("explained by %s" % ", ".join(hit) if hit
                  else d.effect or ("no finding from %s" % ", ".join(
                      d.known_effect) if d.known_effect else "unknown effect"))
        rows.append({"group": d.group, "key": d.key, "target": value_text(d.target),
                     "reference": value_text(d.reference), "effect": effect,
                     "run_time": ("yes: " if d.changeable else "no: ") + d.how})
    return rows
