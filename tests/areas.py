"""Per-area bookkeeping of a pytest run (area = the tests/ subfolder of a test).

- `summary_lines`: the closing table (area, passed, skipped, failed, seconds), so a
  long run ends with where its time went and what did not run.
- Strict areas (the EasyBuild integration and the install route: the product's main
  use) must not skip under CI=true: such a skip is turned into a failure that names
  its reason (`strict_failure`), and a whole file skipped at collection fails the run.
"""

import collections
import os

#: Areas whose skips are failures under CI=true.
STRICT_AREAS = ("easybuild", "install")
TOP = "(top)"


def running_in_ci(environ=os.environ) -> bool:
    """True when CI is set to a true value (GitHub Actions, GitLab and .ci/run set CI=true)."""
    return environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def area_of(nodeid: str) -> str:
    """`tests/easybuild/test_x.py::test_y` -> `easybuild`; a file directly in tests/ -> TOP."""
    parts = nodeid.split("::")[0].split("/")
    if "tests" in parts:
        parts = parts[parts.index("tests") + 1:]
    return parts[0] if len(parts) > 1 else TOP


def strict_failure(report, environ=os.environ):
    """The failure text for a skipped report of a strict area under CI, else None."""
    if not (report.skipped and running_in_ci(environ) and not hasattr(report, "wasxfail")):
        return None
    if area_of(report.nodeid) not in STRICT_AREAS:
        return None
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return ("CI=true: tests/%s must run, but was skipped: %s"
            % (area_of(report.nodeid), reason.replace("Skipped: ", "", 1)))


class AreaTally:
    """Counts and seconds per area, fed with every test report."""

    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)
        self.seconds = collections.Counter()

    def add(self, report) -> None:
        area = area_of(report.nodeid)
        self.seconds[area] += getattr(report, "duration", 0.0)
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.counts[area]["passed" if report.passed else
                              "skipped" if report.skipped else "failed"] += 1
        elif report.when == "teardown" and report.failed:
            self.counts[area]["failed"] += 1

    def summary_lines(self):
        """The table, one line per area (alphabetical), then the total."""
        rows = [(area, self.counts[area], self.seconds[area]) for area in sorted(self.counts)]
        total = sum((c for _, c, _ in rows), collections.Counter())
        rows.append(("total", total, sum(self.seconds.values())))
        lines = ["%-14s %7s %7s %7s %8s" % ("area", "passed", "skipped", "failed", "seconds")]
        for area, counts, seconds in rows:
            lines.append("%-14s %7d %7d %7d %8.1f" % (area, counts["passed"], counts["skipped"],
                                                      counts["failed"], seconds))
        return lines
