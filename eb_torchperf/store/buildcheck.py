"""After an unattended audit (EasyBuild hook, sanity-check, CLI): store it and compare
it with the previous build on this node type, in one call that never fails the audit.

EB_TORCHPERF_REGRESSION (site policy) says what a build significantly slower than the
previous one (regress.py: a row's whole 95 % interval of new / previous below 95 %)
does: `warn` (default) prints a warning, `fail` fails the EasyBuild installation,
`off` does not compare.  The comparison is also written as `regressions.json` beside
the results JSON, for the build's own report folder.
"""

import dataclasses
import os
from typing import Mapping, Optional, Tuple

from eb_torchperf.errors import TorchPerfError
from eb_torchperf.present.units import format_ratio
from eb_torchperf.records import safe_write
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import BuildContext
from eb_torchperf.store.location import StoreError, database_url
from eb_torchperf.store.query import Filters, history, rows_of
from eb_torchperf.store.regress import BuildComparison, compare_builds, previous_build
from eb_torchperf.store.quiet import record_quietly

ENV_REGRESSION = "EB_TORCHPERF_REGRESSION"
REGRESSION_MODES = ("off", "warn", "fail")
#: File written beside the results JSON of a build check.
REGRESSIONS_NAME = "regressions.json"


@dataclasses.dataclass(frozen=True)
class BuildNote:
    """What storing and comparing said.

    Attributes:
        lines: lines for the user (stored where; slower than which build, which rows).
        regressed: the build is significantly slower than the previous one.
        fail: `regressed` and the site policy says fail.
        comparison: the comparison made, None when none could be.
    """

    lines: Tuple[str, ...] = ()
    regressed: bool = False
    fail: bool = False
    comparison: Optional[BuildComparison] = None


def regression_mode(env: Optional[Mapping[str, str]] = None) -> str:
    """EB_TORCHPERF_REGRESSION: off, warn (default) or fail.

    Raises:
        StoreError: another value (the message lists the valid ones).
    """
    env = os.environ if env is None else env
    mode = (env.get(ENV_REGRESSION) or "warn").strip().lower()
    if mode not in REGRESSION_MODES:
        raise StoreError("%s=%s: use one of %s" % (ENV_REGRESSION, mode,
                                                   ", ".join(REGRESSION_MODES)))
    return mode


def row_text(change) -> str:
    """'matmul_fp32 at 45.0 % [40.1–50.2 %] of the previous build'."""
    return "%s at %s [%s–%s] of the previous build" % (
        change.bench, format_ratio(change.ratio), format_ratio(change.low),
        format_ratio(change.high))


def summary(comparison: BuildComparison) -> str:
    """One line: slower / not slower / not compared, naming both builds."""
    audit, previous = comparison.audit, comparison.previous
    if previous is None or comparison.reason:
        return "%s on node type %s: %s" % (audit.build, audit.node_type or "(unknown)",
                                           comparison.reason)
    slower = comparison.slower_rows
    head = "%s is %s than the previous build %s on node type %s" % (
        audit.build, "significantly slower" if slower else "not significantly slower",
        previous.build, audit.node_type or "(unknown)")
    if not slower:
        return head
    return "%s: %d of %d rows: %s" % (head, len(slower), len(comparison.rows),
                                      "; ".join(row_text(r) for r in slower))


def _compare(url: str, audit_id: int) -> BuildComparison:
    engine = engines.opened(url)
    stored = history(engine)
    index = next(i for i, a in enumerate(stored) if a.id == audit_id)
    audit = stored[index]
    earlier = [a for a in stored[:index] if a.software == audit.software]
    previous = previous_build(audit, earlier)
    ids = [audit.id] + ([previous.id] if previous else [])
    return compare_builds(audit, previous, rows_of(engine, ids))


def _write(results_path: str, comparison: BuildComparison, line: str) -> None:
    document = {"audit_id": comparison.audit.id, "build": comparison.audit.build,
                "previous_audit_id": comparison.previous.id if comparison.previous else None,
                "previous_build": comparison.previous.build if comparison.previous else None,
                "reason": comparison.reason, "summary": line,
                "rows": [dataclasses.asdict(r) for r in comparison.rows]}
    safe_write.write_json(os.path.join(os.path.dirname(results_path), REGRESSIONS_NAME),
                          document)


def store_and_compare(results_path: str, context: BuildContext, report_path: str = "",
                      env: Optional[Mapping[str, str]] = None) -> BuildNote:
    """Store `results_path` and compare it with the previous build; never raises for a
    database problem (a line says what was not stored or compared)."""
    audit_id, stored_line = record_quietly(results_path, context, report_path)
    lines = tuple(l for l in (stored_line,) if l)
    try:
        mode = regression_mode(env)
        if audit_id is None or mode == "off":
            return BuildNote(lines)
        comparison = _compare(database_url(), audit_id)
        line = summary(comparison)
        if comparison.previous is not None and not comparison.reason:
            _write(results_path, comparison, line)
    except (TorchPerfError, OSError) as exc:
        return BuildNote(lines + ("not compared with the previous build: %s" % exc,))
    regressed = bool(comparison.slower_rows)
    return BuildNote(lines + (line,), regressed, regressed and mode == "fail", comparison)
