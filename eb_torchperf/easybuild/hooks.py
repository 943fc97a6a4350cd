"""EasyBuild 5 hooks: lint PyTorch easyconfigs at parse time, audit installations.

`hooks/torchperf.py` (for `eb --hooks`) re-exports `parse_hook` and
`post_sanitycheck_hook`; a site with its own hooks file calls them in one line each:

    from eb_torchperf.easybuild import hooks as torchperf

    def post_sanitycheck_hook(self, *args, **kwargs):
        torchperf.post_sanitycheck_hook(self, *args, **kwargs)
        ...  # the site's own work

(import the module under a name that does not end in `_hook`: EasyBuild takes every
callable whose name ends in `_hook` as a hook).  `eb_torchperf.easybuild.entrypoints`
registers the same two functions as `easybuild.hooks` entry points (`eb --use-entrypoints`).

Both return at once for software other than PyTorch.  Settings come from
`EB_TORCHPERF_*` variables (`eb_torchperf.diagnosis.sitepolicy`).  In fail mode a finding at the
fail level (or relative OPS below the minimum) raises EasyBuildError: the installation
FAILS before its module file is written.  Other errors become a warning (warn mode) or
an EasyBuildError (fail mode); they never crash EasyBuild.  Helpers start with `_` and
never end in `_hook`.
"""

import glob
import os
import sys

from easybuild.tools.build_log import EasyBuildError, print_msg, print_warning
from easybuild.tools.environment import ORIG_OS_ENVIRON

from eb_torchperf.errors import ConfigError, TorchPerfError
from eb_torchperf.records.findings import at_or_above, sort_findings
from eb_torchperf.measure.reference import default_cache_dir
from eb_torchperf.store.context import from_easyblock
from eb_torchperf.workflows.sitecheck import run_check
from eb_torchperf.diagnosis.sitepolicy import default_target_python, policy_from_env, stops_build
from eb_torchperf.measure.environ import env_diff, without_root
from eb_torchperf.present.site_verdict import finding_line

#: `self.name` / `ec.name` of the software this hook looks at.
SOFTWARE = "PyTorch"
#: Reports folder inside the installation, kept with it.
INSTALL_REPORT_SUBDIR = os.path.join("easybuild", "torchperf")
#: Attribute set on the EasyBlock once audited, so that a hooks file and the entry
#: point registered for the same run do not audit twice.
_DONE_ATTR = "_eb_torchperf_audited"
#: (name, version, versionsuffix, toolchain) already linted in this `eb` process:
#: EasyBuild parses each easyconfig several times (copies), the findings are shown once.
_LINTED = set()


def parse_hook(ec, *args, **kwargs):
    """Lint a PyTorch easyconfig before anything is built (EasyBuild `parse` hook).

    Prints each finding; with EB_TORCHPERF_LINT=fail a finding at the fail level
    stops `eb` here.

    Raises:
        EasyBuildError: fail mode and a finding at the fail level, or a bad setting.
    """
    if getattr(ec, "name", None) != SOFTWARE:
        return
    policy = _policy()
    if policy.lint == "off":
        return
    key = _ec_key(ec)
    if key in _LINTED:
        return
    _LINTED.add(key)
    log = getattr(ec, "log", None)
    _guarded("easyconfig check", policy.lint, log, lambda: _lint(ec, policy, log))


def post_sanitycheck_hook(self, *args, **kwargs):
    """Audit the installed PyTorch against the reference (EasyBuild post-sanitycheck hook).

    Runs with the installation's environment (fake module) loaded, writes the reports
    into `<installdir>/easybuild/torchperf/` (and EB_TORCHPERF_REPORT_DIR), and prints
    the verdict and the report path.  Works with `eb --sanity-check-only`.

    Raises:
        EasyBuildError: fail mode and a failing verdict (one-line summary and report
            path), or a bad setting, or (fail mode) the audit could not run.
    """
    if getattr(self, "name", None) != SOFTWARE or getattr(self, _DONE_ATTR, False):
        return
    policy = _policy()
    if policy.mode == "off":
        return
    log = getattr(self, "log", None)  # an EasyBlock made by hand may lack any of these
    if getattr(self, "dry_run", False):
        _guarded("dry run", policy.mode, log, lambda: print_msg(
            "eb_torchperf: would audit %s (dry run)", getattr(self, "installdir", "?"),
            log=log))
        return
    _guarded("audit", policy.mode, log, lambda: _audit_once(self, policy))


def _log(self):
    """The EasyBlock's log, None where it has none (print_msg then prints only)."""
    return getattr(self, "log", None)


def _audit_once(self, policy):
    """Mark the EasyBlock audited, then audit it.

    Raises:
        ConfigError: the EasyBlock has no installdir (nothing to audit).
    """
    if not getattr(self, "installdir", None):
        raise ConfigError("the EasyBlock has no installdir: nothing to audit")
    setattr(self, _DONE_ATTR, True)
    return _audit(self, policy)


def _ec_key(ec):
    try:
        extra = (str(ec["versionsuffix"]), str(ec["toolchain"]))
    except (KeyError, TypeError, EasyBuildError):
        extra = (getattr(ec, "path", None) or "",)
    return (ec.name, getattr(ec, "version", "")) + extra


def _policy():
    try:
        return policy_from_env()
    except ConfigError as exc:
        raise EasyBuildError("eb_torchperf: %s", exc) from None


def _guarded(what, mode, log, action):
    """Run `action`; turn any error but EasyBuildError into a warning or EasyBuildError."""
    try:
        return action()
    except EasyBuildError:
        raise
    except Exception as exc:  # the shell: a tool error must never crash EasyBuild
        kind = "" if isinstance(exc, TorchPerfError) else type(exc).__name__ + ": "
        if mode == "fail":
            raise EasyBuildError("eb_torchperf: %s failed: %s%s", what, kind, exc) from exc
        message = ("eb_torchperf: %s failed: %s%s (the installation goes on: "
                   "EB_TORCHPERF_MODE=warn)" % (what, kind, exc))
        try:
            print_warning(message, log=log)
        except Exception:  # noqa: BLE001  print_warning itself needs a log or a setup
            print("WARNING: " + message, file=sys.stderr)
        return None


def lint_easyconfig(ec):
    """Findings of the easyconfig linter (`eb_torchperf.lint`) for the EasyConfig `ec`,
    most severe first."""
    from eb_torchperf.lint import lint_easyconfig_object
    return sort_findings(lint_easyconfig_object(ec))


def _lint(ec, policy, log):
    findings = lint_easyconfig(ec)
    name = os.path.basename(getattr(ec, "path", "") or "") or SOFTWARE
    for finding in findings:
        print_msg("eb_torchperf: %s: %s", name, finding_line(finding), log=log)
    blocking = at_or_above(findings, policy.fail_level)
    if not findings:
        print_msg("eb_torchperf: %s: easyconfig check clean", name, log=log)
    elif blocking and policy.lint == "fail":
        raise EasyBuildError("eb_torchperf: easyconfig %s: %s (%d finding(s) at or above %s; "
                             "EB_TORCHPERF_LINT=warn to build anyway)", name,
                             finding_line(blocking[0]), len(blocking), policy.fail_level)


def _target_python(self, policy):
    """EB_TORCHPERF_PYTHON, else the installation's own interpreter when it is a venv
    (`bin/python`, `bin/python3` or `bin/python-*` beside a pyvenv.cfg, as
    easyconfigs/PyTorch-*-wheel.eb makes), else the PythonPackage easyblock's `python_cmd`
    (set by its sanity check), else $EBROOTPYTHON/bin/python or python3 of the loaded
    environment."""
    own = []
    if os.path.isfile(os.path.join(self.installdir, "pyvenv.cfg")):
        bindir = os.path.join(self.installdir, "bin")
        own = [os.path.join(bindir, name) for name in ("python", "python3")]
        own += sorted(glob.glob(os.path.join(bindir, "python-*")))
        own = [path for path in own if os.path.isfile(path)][:1]
    return default_target_python(policy, own + [getattr(self, "python_cmd", None)])


def _out_dirs(self, policy):
    dirs = [os.path.join(self.installdir, INSTALL_REPORT_SUBDIR)]
    if policy.report_dir:
        module = (getattr(self, "full_mod_name", None) or os.path.basename(self.installdir))
        dirs.append(os.path.join(os.path.expanduser(policy.report_dir),
                                 module.replace(os.sep, "-")))
    return dirs


def _reference_env(self):
    """Overrides giving the reference the environment `eb` started in (EasyBuild's
    ORIG_OS_ENVIRON), without this installation: no module settings, no paths into it."""
    return env_diff(without_root(ORIG_OS_ENVIRON, self.installdir), os.environ)


def _audit(self, policy):
    print_msg("eb_torchperf: auditing %s (reference: %s, suite: %s%s)...", self.installdir,
              policy.reference, policy.suite,
              ", only " + ",".join(policy.only) if policy.only else "", log=_log(self))
    fake_mod_data = self.load_fake_module(purge=True)
    try:
        target = _target_python(self, policy)
        if _log(self) is not None:
            _log(self).info("eb_torchperf: target interpreter %s", target)
        outcome = run_check(target, policy, _out_dirs(self, policy),
                            reference_env=_reference_env(self),
                            log=lambda msg: print_msg("eb_torchperf: %s", msg, log=_log(self)),
                            installdir=self.installdir,
                            cache_dir=default_cache_dir(ORIG_OS_ENVIRON),
                            build=from_easyblock(self))
    finally:
        self.clean_up_fake_module(fake_mod_data)
    _report(self, outcome, policy)


def _report(self, outcome, policy):
    """Print the verdict; raise in fail mode (and on wrong results in any mode:
    sitepolicy.stops_build), warn otherwise."""
    for finding in sort_findings(outcome.result.findings):
        print_msg("eb_torchperf: %s", finding_line(finding), log=_log(self))
    verdict = outcome.verdict
    print_msg("eb_torchperf: %s", verdict.summary, log=_log(self))
    print_msg("eb_torchperf: report: %s (audit took %.0f s)", outcome.main_report,
              outcome.wall_s, log=_log(self))
    _regression(self, outcome.stored)
    if stops_build(verdict, policy):
        raise EasyBuildError("eb_torchperf: %s %s: %s; report: %s", self.name, self.version,
                             verdict.summary, outcome.main_report)
    if verdict.status != "ok":
        print_warning("eb_torchperf: %s %s: %s; report: %s" % (
            self.name, self.version, verdict.summary, outcome.main_report), log=_log(self))


def _regression(self, stored):
    """Where the audit was stored; the previous build's comparison, a warning when this
    build is slower, an EasyBuildError with EB_TORCHPERF_REGRESSION=fail."""
    for line in stored.lines if stored else ():
        print_msg("eb_torchperf: %s", line, log=_log(self))
    if stored and stored.fail:
        raise EasyBuildError("eb_torchperf: %s %s: %s (EB_TORCHPERF_REGRESSION=fail)",
                             self.name, self.version, stored.lines[-1])
    if stored and stored.regressed:
        print_warning("eb_torchperf: %s" % stored.lines[-1], log=_log(self))


__all__ = ["parse_hook", "post_sanitycheck_hook"]
