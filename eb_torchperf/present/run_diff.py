"""What differs between two stored runs compared with `eb-torchperf compare`.

Two runs of one build usually differ by one deliberate change (a `--target-env`, a
module setting, another node); the comparison is only readable with that change in
sight.  Lines name the configuration rows (configdiff) and the performance-relevant
environment variables (the probe's "env" facts) that differ, and each run's own wall
time (they are never added).
"""

from typing import List

from eb_torchperf.present.configdiff import config_rows
from eb_torchperf.present.units import UNSET
from eb_torchperf.records.measurements import AuditResult


def env_differences(before: dict, after: dict) -> List[str]:
    """`VAR: A value → B value` for every variable set differently (or only in one)."""
    lines = []
    for name in sorted(set(before) | set(after)):
        if before.get(name) != after.get(name):
            lines.append("%s: %s → %s" % (name, before.get(name, UNSET), after.get(name, UNSET)))
    return lines


def run_differences(before: AuditResult, after: AuditResult) -> List[str]:
    """Display lines: what differs between run A (`before`, the reference) and run B."""
    lines = []
    if before.target is not None and after.target is not None:
        for row in config_rows(after.target, before.target):
            if row.differs:
                lines.append("%s: %s → %s" % (row.label, row.reference, row.target))
        lines += ["environment " + line for line in env_differences(
            before.target.facts.get("env") or {}, after.target.facts.get("env") or {})]
    if before.host != after.host:
        lines.append("host: %s → %s" % (before.host or UNSET, after.host or UNSET))
    lines.append("wall time of each run: A %.0f s, B %.0f s" % (before.wall_s, after.wall_s))
    return lines
