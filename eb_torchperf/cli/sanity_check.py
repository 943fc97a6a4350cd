"""Audit an installed PyTorch and exit with the verdict: for `sanity_check_commands`.

For sites that prefer no hooks: in a PyTorch easyconfig

    sanity_check_commands = ['module load eb_torchperf && eb-torchperf sanity-check']
    enhance_sanity_check = True

runs the audit inside EasyBuild's sanity check, with the installation's module loaded
($EBROOTPYTORCH tells where reports go and where torch must come from).  Mind
`enhance_sanity_check = True`: a non-empty `sanity_check_commands` otherwise REPLACES
the easyblock's own sanity check commands (for PyTorch: its import checks).
The reference runs without the installation's paths ($EBROOTPYTORCH), but other
variables the module sets (e.g. OMP_NUM_THREADS) reach it too: only the hook can
separate them, since it knows the environment `eb` started in.

Exit status: 0 the verdict passes (or EB_TORCHPERF_MODE=warn|off); 1 it fails: a
finding at the fail level, relative OPS below the minimum, or an incomplete audit;
2 a usage or tool error.  Unlike the hook, the default mode here is `fail`.
Options override the EB_TORCHPERF_* variables listed below.
"""

import argparse
import dataclasses
import os
import sys

from eb_torchperf.cli.audit import only_help
from eb_torchperf.records.findings import sort_findings
from eb_torchperf.workflows.sitecheck import run_check
from eb_torchperf.diagnosis.sitepolicy import (FAIL_LEVELS, MODES, default_target_python,
                                               parse_percent, policy_from_env, variables_help)
from eb_torchperf.measure.environ import env_diff, without_root
from eb_torchperf.present.site_verdict import finding_line
from eb_torchperf.probe.registry import SUITES

#: Where reports go inside an installation ($EBROOTPYTORCH), as with the hook.
INSTALL_REPORT_SUBDIR = os.path.join("easybuild", "torchperf")
DEFAULT_OUT_DIR = os.path.join("reports", "sanity-check")


def add_arguments(parser) -> None:
    parser.epilog = variables_help({"EB_TORCHPERF_MODE": "fail here (the hook: warn)"})
    parser.add_argument("--python", metavar="TARGET",
                        help="interpreter to audit (default: $EBROOTPYTHON/bin/python, else python3)")
    parser.add_argument("--reference", metavar="REF",
                        help="interpreter, wheel, wheel==X.Y.Z, FILE.whl, results JSON or none")
    parser.add_argument("--suite", choices=SUITES)
    parser.add_argument("--only", action="append", metavar="BENCH", help=only_help())
    parser.add_argument("--pairs", type=int, help="fresh worker pairs (default by suite)")
    parser.add_argument("--mode", choices=MODES,
                        help="fail: exit 1 on a failing verdict (default unless "
                             "EB_TORCHPERF_MODE says otherwise); warn: report only")
    parser.add_argument("--min-relative-ops", metavar="PERCENT",
                        help="fail below this geometric mean of relative OPS, e.g. 80")
    parser.add_argument("--fail-on", dest="fail_level", choices=FAIL_LEVELS,
                        help="fail on a finding at or above this severity "
                             "(default: $EB_TORCHPERF_FAIL_LEVEL, else error)")
    # the spelling of earlier releases, kept working but no longer shown
    parser.add_argument("--fail-level", dest="fail_level", choices=FAIL_LEVELS,
                        help=argparse.SUPPRESS)
    parser.add_argument("--installdir", default=os.environ.get("EBROOTPYTORCH"),
                        help="installation whose torch must be the audited one "
                             "(default: $EBROOTPYTORCH)")
    parser.add_argument("--out-dir", help="report folder (default: INSTALLDIR/%s, else %s)"
                                          % (INSTALL_REPORT_SUBDIR, DEFAULT_OUT_DIR))
    parser.add_argument("--report-dir", help="extra site report folder")
    parser.add_argument("--allow-same-torch", action="store_true", default=None,
                        help="an A/A check: the reference may load the same torch build "
                             "(EB_TORCHPERF_ALLOW_SAME_TORCH=1)")


def _policy(args):
    environ = dict(os.environ)
    environ.setdefault("EB_TORCHPERF_MODE", "fail")
    policy = policy_from_env(environ)
    changes = {key: getattr(args, key) for key in ("reference", "suite", "pairs", "mode",
                                                   "fail_level", "report_dir", "python",
                                                   "allow_same_torch")
               if getattr(args, key) is not None}
    if args.only:
        changes["only"] = tuple(args.only)
    if args.min_relative_ops is not None:
        changes["min_relative_ops"] = parse_percent("--min-relative-ops", args.min_relative_ops)
    return dataclasses.replace(policy, **changes)


def _out_dirs(args, policy):
    if args.out_dir:
        main = args.out_dir
    elif args.installdir:
        main = os.path.join(args.installdir, INSTALL_REPORT_SUBDIR)
    else:
        main = DEFAULT_OUT_DIR
    return [main] + ([policy.report_dir] if policy.report_dir else [])


def run(args) -> int:
    policy = _policy(args)
    if policy.mode == "off":
        print("eb-torchperf sanity-check: EB_TORCHPERF_MODE=off: nothing done")
        return 0
    target = default_target_python(policy)
    # the reference must not import the installation that the loaded module points at
    reference_env = (env_diff(without_root(os.environ, args.installdir), os.environ)
                     if args.installdir else None)
    outcome = run_check(target, policy, _out_dirs(args, policy), reference_env=reference_env,
                        log=lambda msg: print(msg, file=sys.stderr),
                        installdir=args.installdir)
    for finding in sort_findings(outcome.result.findings):
        print(finding_line(finding))
    print("torchperf %s" % outcome.verdict.summary)
    print("report: %s (%.0f s)" % (outcome.main_report, outcome.wall_s))
    for line in outcome.stored.lines if outcome.stored else ():
        print(line)
    return int(outcome.verdict.status == "fail" and policy.mode == "fail")
