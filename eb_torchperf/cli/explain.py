"""Explain a gap: profile both builds per operator, and try run-time remedies.

First a baseline audit (as `eb-torchperf audit`; or --results FILE of an earlier one),
then:
  profile   a BERT-like layer (eval, and one training step), a ResNet-like block and
            a DLRM-like model run under torch.profiler in the target and the
            reference; self CPU time per ATen operator is aligned and the operators
            that hold the extra time are named with their backend (BLAS, oneDNN, ...)
  remedies  for each run-time remedy the target's facts call for (another BLAS
            provider or FlexiBLAS backend, OMP_NUM_THREADS, OMP_WAIT_POLICY, BLAS
            threads, ATEN_CPU_CAPABILITY, a preloaded second OpenMP runtime), only the
            affected benchmarks are re-run with that environment in a fresh target
            process, interleaved with the reference; the report says what each one
            recovered and what needs a rebuild.  Nothing is changed in the installation.

The baseline's findings (the diagnosis) gain the profile's evidence, e.g. a BLAS
finding "aten::addmm accounts for 96 % of the gap"; the results JSON is (re)written
with them, the explain JSON beside it (<stem>.explain.json), and the reports
(--format) with an "Explain" section.  Exit status as `audit`: --fail-on over the
findings, 2 when the baseline audit was cut short.
"""

import dataclasses
import os
import pathlib

from rich.console import Console

from eb_torchperf.cli import audit as audit_cli
from eb_torchperf.analysis import compare as compare_mod
from eb_torchperf.measure.interleave import SUITE_OPTIONS, AuditRun
from eb_torchperf.diagnosis.diagnose import with_findings
from eb_torchperf.errors import ConfigError
from eb_torchperf.workflows.explain import ProfileOptions, explain, explain_path, with_profile_evidence
from eb_torchperf.records.findings import exit_status
from eb_torchperf.records.measurements import load_results
from eb_torchperf.probe.profile import WORKLOADS
from eb_torchperf.measure.reference import resolve_interpreter, resolve_reference
from eb_torchperf.present.report import parse_formats, write_reports
from eb_torchperf.cli.report import print_outcome
from eb_torchperf.present.terminal import AuditProgress, make_console, ops_table
from eb_torchperf.present.terminal_explain import ExplainProgress, print_explain


def add_arguments(parser) -> None:
    audit_cli.add_audit_arguments(parser)
    parser.set_defaults(python=None, reference=None)
    parser.add_argument("--results", metavar="FILE",
                        help="use this audit results JSON as the baseline (its target and "
                             "reference interpreters) instead of running an audit")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="profile only this workload (repeatable; default: all)")
    parser.add_argument("--no-profile", action="store_true", help="skip the profile diff")
    parser.add_argument("--try-remedies", dest="try_remedies", action="store_true",
                        default=True, help="run the remedy trials (the default)")
    parser.add_argument("--no-remedies", dest="try_remedies", action="store_false",
                        help="skip the remedy trials")
    parser.add_argument("--trial-pairs", type=int, default=1,
                        help="fresh worker pairs per remedy trial (default 1)")
    parser.add_argument("--profile-rounds", type=int, default=2,
                        help="profile requests per side and workload, alternating (default 2)")
    parser.add_argument("--explain-out", metavar="FILE",
                        help="explain JSON (default: the results path with .explain.json)")


def _baseline(args, err: Console):
    """(AuditResult with findings, its path): loaded from --results, or measured and saved.

    A stored baseline without findings gets them (diagnose.with_findings).
    """
    if args.results:
        if args.python or args.reference:
            raise ConfigError("--results takes the interpreters from the file; "
                              "leave out --python and --reference")
        result = load_results(args.results)
        return (result if result.findings else with_findings(result)), args.results
    target = resolve_interpreter(args.python or "python3", "target")
    reference = resolve_reference(args.reference or "wheel", target, args.pip_option,
                                  args.cache_dir and pathlib.Path(args.cache_dir),
                                  log=lambda msg: err.print(msg, highlight=False))
    if reference is None:
        raise ConfigError("explain needs a reference (an interpreter, wheel or wheel==X.Y.Z)")
    options = _runner_options(args.suite, args, args.pairs)
    try:
        run = AuditRun(target, reference, args.suite, options, only=args.only,
                       reference_env_extra=audit_cli.parse_env(args.reference_env,
                                                               "--reference-env"))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.quiet:
        result = run.run()
    else:
        with AuditProgress(err, len(run.plan) * options.pairs) as progress:
            run.progress = progress
            result = run.run()
    path = args.out or audit_cli.default_out_path()
    result = with_findings(result)
    result.save(path)
    return result, path


def _runner_options(suite: str, args, pairs):
    """The suite's runner settings with --timeout and `pairs` (None: the suite's)."""
    if args.timeout <= 0:
        raise ConfigError("--timeout must be > 0 seconds, not %g" % args.timeout)
    if pairs is not None and pairs < 1:
        raise ConfigError("--pairs / --trial-pairs must be at least 1, not %d" % pairs)
    changes = {"request_timeout_s": args.timeout, "start_timeout_s": args.timeout,
               "allow_same_torch": args.allow_same_torch,
               "keep_reference_env": args.keep_reference_env}
    if pairs is not None:
        changes["pairs"] = pairs
    try:
        return dataclasses.replace(SUITE_OPTIONS[suite], **changes)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _profile_options(args) -> ProfileOptions:
    try:
        return ProfileOptions(rounds=args.profile_rounds, request_timeout_s=args.timeout)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _save(baseline, result, paths, formats) -> dict:
    """Write the explain JSON, the results JSON again and the reports; {format: path}.

    Args:
        paths: (results JSON, explain JSON).
    """
    results_path, explain_file = paths
    result.save(explain_file)
    baseline.save(results_path)
    folder, name = os.path.split(results_path)
    stem = name[:-5] if name.endswith(".json") else name
    return write_reports(baseline, folder or ".", formats, stem=stem,
                         explain=result) if formats else {}


def run(args) -> int:
    formats = tuple(f for f in parse_formats(args.format) if f != "json")
    profile_options = _profile_options(args)
    err, out = make_console(stderr=True), make_console()
    baseline, results_path = _baseline(args, err)
    out.print(ops_table(compare_mod.compare(baseline), baseline.reference is not None))
    kwargs = dict(results_file=os.path.abspath(results_path), profile_options=profile_options,
                  workloads=() if args.no_profile else tuple(args.workload or WORKLOADS),
                  trial_options=_runner_options(baseline.suite, args, args.trial_pairs),
                  try_remedies=args.try_remedies)
    if args.quiet:
        result = explain(baseline, **kwargs)
    else:
        with ExplainProgress(err) as progress:
            result = explain(baseline, progress=progress, **kwargs)
    baseline = with_profile_evidence(baseline, result)
    explain_file = args.explain_out or explain_path(results_path)
    written = _save(baseline, result, (results_path, explain_file), formats)
    print_explain(out, result)
    print_outcome(out, baseline, compare_mod.compare(baseline), written)
    out.print("results: %s\nexplain: %s  (baseline %.0f s, profiles %.0f s, trials %.0f s)"
              % (results_path, explain_file, baseline.wall_s, result.profile_s,
                 result.wall_s - result.profile_s), highlight=False, soft_wrap=True)
    return exit_status(baseline.findings, args.fail_on) if baseline.complete else 2
