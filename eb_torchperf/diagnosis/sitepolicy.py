"""Site policy for unattended audits (EasyBuild hook, `eb-torchperf sanity-check`).

The policy comes from `EB_TORCHPERF_*` environment variables, because EasyBuild
hooks cannot add `eb` options; `POLICY_VARIABLES` is the one table of them (name,
default, meaning) that the README, `--help` and the parser all use.  The policy's
reading of an audit (present.site_verdict.judge) and the isolation of the audited
interpreters from the installing environment (measure.environ) live apart, one job
each.

No EasyBuild import here: this module is shared by the hook and the CLI.
"""

import dataclasses
import os
import shutil
from typing import Mapping, Optional, Sequence, Tuple

from eb_torchperf.errors import ConfigError
from eb_torchperf.measure.environ import (  # noqa: F401  (re-exported: hooks file API)
    env_diff, own_site_overrides, without_root)
from eb_torchperf.records.findings import FAIL_LEVELS as FINDING_FAIL_LEVELS, NEVER
from eb_torchperf.probe.registry import SUITES

MODES = ("off", "warn", "fail")
#: Levels a site may fail on, of records.findings.FAIL_LEVELS: not "info" (it would fail
#: every build that has a note) nor "never" (that is EB_TORCHPERF_MODE=warn).
FAIL_LEVELS = tuple(level for level in FINDING_FAIL_LEVELS if level not in ("info", NEVER))
#: Upper bound of EB_TORCHPERF_MIN_RELATIVE_OPS, percent: above it the variable is a typo.
MAX_MIN_RELATIVE_OPS_PCT = 10000.0

#: name -> (default, meaning); order is the order of the README table and --help.
POLICY_VARIABLES = {
    "EB_TORCHPERF_MODE": ("warn", "off | warn | fail: fail stops the installation (no module file)"),
    "EB_TORCHPERF_LINT": ("= MODE", "off | warn | fail for the easyconfig check at parse time"),
    "EB_TORCHPERF_REFERENCE": ("wheel", "interpreter path, wheel, wheel==X.Y.Z, FILE.whl, a stored "
                                        "results JSON (its target side is the baseline), or none"),
    "EB_TORCHPERF_SUITE": ("quick", "quick | full"),
    "EB_TORCHPERF_ONLY": ("", "comma-separated benchmark names to run (default: the whole suite)"),
    "EB_TORCHPERF_PAIRS": ("", "fresh worker pairs (default: by suite)"),
    "EB_TORCHPERF_MIN_RELATIVE_OPS": ("", "fail below this geometric mean of relative OPS, in % of "
                                          "the reference (e.g. 80; default: no minimum)"),
    "EB_TORCHPERF_FAIL_LEVEL": ("error", "warning | error: lowest finding severity that fails"),
    "EB_TORCHPERF_REPORT_DIR": ("", "site folder that also receives every report"),
    "EB_TORCHPERF_PYTHON": ("", "interpreter to audit (default: the installation's python)"),
    "EB_TORCHPERF_CACHE": ("~/.cache/eb_torchperf", "where `wheel` reference venvs are kept"),
    "EB_TORCHPERF_ALLOW_SAME_TORCH": ("", "1: an A/A check: the reference may be the same torch "
                                          "build (otherwise the audit stops before measuring)"),
    # read by the easyconfig check (eb_torchperf.lint.options), listed here for one table
    "EB_TORCHPERF_HETEROGENEOUS": ("", "1: the site builds once for several CPU types "
                                       "(easyconfig check)"),
    "EB_TORCHPERF_SITE_GPUS": ("", "compute capabilities of the site's GPUs, e.g. 8.0,9.0 "
                                   "(easyconfig check)"),
}


@dataclasses.dataclass(frozen=True)
class Policy:
    """What an unattended audit does and when it fails.

    Attributes:
        mode: "off", "warn" or "fail" (the audit after installation).
        lint: "off", "warn" or "fail" (the easyconfig check before the build).
        reference: reference spec (see POLICY_VARIABLES), "none" for no reference.
        suite: "quick" or "full".
        only: benchmark names to run; empty: the whole suite.
        pairs: fresh worker pairs, None: the suite's default.
        min_relative_ops: minimum geometric mean of relative OPS as a fraction
            (0.8 = 80 % of the reference), None: no minimum.
        fail_level: "warning" or "error".
        report_dir: extra folder for reports, None: none.
        python: interpreter to audit, None: the installation's own.
        allow_same_torch: the reference may load the same torch build (an A/A check).
    """

    mode: str = "warn"
    lint: str = "warn"
    reference: str = "wheel"
    suite: str = "quick"
    only: Tuple[str, ...] = ()
    pairs: Optional[int] = None
    min_relative_ops: Optional[float] = None
    fail_level: str = "error"
    report_dir: Optional[str] = None
    python: Optional[str] = None
    allow_same_torch: bool = False

    def __post_init__(self):
        for name, value, allowed in (("mode", self.mode, MODES), ("lint", self.lint, MODES),
                                     ("suite", self.suite, SUITES),
                                     ("fail_level", self.fail_level, FAIL_LEVELS)):
            if value not in allowed:
                raise ConfigError("%s must be one of %s, not %r" % (name, " | ".join(allowed), value))
        if self.pairs is not None and self.pairs < 1:
            raise ConfigError("pairs must be >= 1, not %d" % self.pairs)


def _choice(environ: Mapping[str, str], name: str, allowed: Sequence[str], default: str) -> str:
    value = environ.get(name, "").strip().lower() or default
    if value not in allowed:
        raise ConfigError("%s=%s: choose one of %s" % (name, value, " | ".join(allowed)))
    return value


def parse_percent(name: str, text: str) -> Optional[float]:
    """A percentage such as "80" or "80%" as a fraction (0.8); empty gives None.

    Raises:
        ConfigError: not a number, or outside (0, MAX_MIN_RELATIVE_OPS_PCT].
    """
    text = text.strip().rstrip("%").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ConfigError("%s=%s: give a percentage, e.g. 80" % (name, text)) from None
    if not 0 < value <= MAX_MIN_RELATIVE_OPS_PCT:
        raise ConfigError("%s=%s: must be > 0 and <= %g (percent of the reference)"
                          % (name, text, MAX_MIN_RELATIVE_OPS_PCT))
    return value / 100.0


def _pairs(environ: Mapping[str, str]) -> Optional[int]:
    text = environ.get("EB_TORCHPERF_PAIRS", "").strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < 1:
        raise ConfigError("EB_TORCHPERF_PAIRS=%s: give a whole number >= 1" % text)
    return int(text)


def policy_from_env(environ: Mapping[str, str] = os.environ) -> Policy:
    """Read the EB_TORCHPERF_* variables (see POLICY_VARIABLES).

    Raises:
        ConfigError: a variable has a value it cannot take (the message names it).
    """
    mode = _choice(environ, "EB_TORCHPERF_MODE", MODES, "warn")
    only = tuple(n.strip() for n in environ.get("EB_TORCHPERF_ONLY", "").split(",") if n.strip())
    return Policy(
        mode=mode, lint=_choice(environ, "EB_TORCHPERF_LINT", MODES, mode),
        reference=environ.get("EB_TORCHPERF_REFERENCE", "").strip() or "wheel",
        suite=_choice(environ, "EB_TORCHPERF_SUITE", SUITES, "quick"), only=only,
        pairs=_pairs(environ),
        min_relative_ops=parse_percent("EB_TORCHPERF_MIN_RELATIVE_OPS",
                                       environ.get("EB_TORCHPERF_MIN_RELATIVE_OPS", "")),
        fail_level=_choice(environ, "EB_TORCHPERF_FAIL_LEVEL", FAIL_LEVELS, "error"),
        report_dir=environ.get("EB_TORCHPERF_REPORT_DIR", "").strip() or None,
        python=environ.get("EB_TORCHPERF_PYTHON", "").strip() or None,
        allow_same_torch=_flag(environ, "EB_TORCHPERF_ALLOW_SAME_TORCH"))


def _flag(environ: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: 1/yes/true or 0/no/false/empty.

    Raises:
        ConfigError: any other value.
    """
    text = environ.get(name, "").strip().lower()
    if text in ("", "0", "no", "false"):
        return False
    if text in ("1", "yes", "true"):
        return True
    raise ConfigError("%s=%s: give 1 or 0" % (name, environ[name]))


def default_target_python(policy: Policy, first: Sequence[Optional[str]] = (),
                          environ: Mapping[str, str] = os.environ) -> str:
    """The interpreter to audit: EB_TORCHPERF_PYTHON, else the first of `first`,
    $EBROOTPYTHON/bin/python, python3, python that exists (on PATH for bare names).

    Raises:
        ConfigError: none of them exists.
    """
    if policy.python:
        return policy.python
    candidates = list(first)
    if environ.get("EBROOTPYTHON"):
        candidates.append(os.path.join(environ["EBROOTPYTHON"], "bin", "python"))
    for candidate in filter(None, candidates + ["python3", "python"]):
        path = shutil.which(candidate, path=environ.get("PATH"))
        if path:
            return path
    raise ConfigError("no python found to audit: set EB_TORCHPERF_PYTHON or --python")


def variables_help(defaults: Optional[Mapping[str, str]] = None) -> str:
    """The POLICY_VARIABLES table as plain text, for `--help` epilogs.

    Args:
        defaults: name -> default shown instead of the table's (`sanity-check` defaults
            to fail mode, the hook to warn).
    """
    width = max(len(name) for name in POLICY_VARIABLES)
    lines = ["environment (EasyBuild hook and sanity-check; options override them):"]
    for name, (default, meaning) in POLICY_VARIABLES.items():
        default = (defaults or {}).get(name, default)
        lines.append("  %-*s  %s%s" % (width, name, meaning,
                                       " [default: %s]" % default if default else ""))
    return "\n".join(lines)


#: Rules whose findings stop an installation in warn mode too (mode "off" runs no
#: audit): a build that computes wrong results must not be installed silently
#: (issue 30); a reduced precision only warns.
ALWAYS_FAIL_RULES = ("numerics-wrong-result",)


def stops_build(verdict, policy: Policy) -> bool:
    """True when the installation must fail: a failing verdict (present.site_verdict
    .Verdict) in fail mode, or in any mode a blocking finding of ALWAYS_FAIL_RULES (at
    or above the fail level)."""
    if verdict.status != "fail":
        return False
    return policy.mode == "fail" or any(f.rule_id in ALWAYS_FAIL_RULES for f in verdict.blocking)
