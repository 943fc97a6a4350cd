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

import sys

from eb_torchperf.cli import audit as audit_cli
from eb_torchperf.workflows import pipeline
from eb_torchperf.workflows.request import ExplainOptions
from eb_torchperf.analysis.profile_diff import MEDIAN_POOLING, PROFILE_AGREEMENT
from eb_torchperf.probe.profile import DEFAULT_ROUNDS, WORKLOADS
from eb_torchperf.present.formats import parse_formats
from eb_torchperf.cli.report import print_outcome
from eb_torchperf.present.terminal import make_console, ops_table
from eb_torchperf.present.terminal_explain import print_explain


def add_arguments(parser) -> None:
    audit_cli.add_audit_arguments(parser)
    parser.set_defaults(python=None, reference=None)
    parser.add_argument("--results", metavar="FILE",
                        help="use this audit results JSON as the baseline (its target and "
                             "reference interpreters) instead of running an audit")
    parser.add_argument("--workload", action="append", choices=sorted(WORKLOADS),
                        help="profile only this workload (repeatable; default: the micro workloads; "
                             "the models suite's CPU rows are workloads too, e.g. resnet50_train)")
    parser.add_argument("--no-profile", action="store_true", help="skip the profile diff")
    parser.add_argument("--try-remedies", dest="try_remedies", action="store_true",
                        default=True, help="run the remedy trials (the default)")
    parser.add_argument("--no-remedies", dest="try_remedies", action="store_false",
                        help="skip the remedy trials")
    parser.add_argument("--trial-pairs", type=int, default=1,
                        help="fresh worker pairs per remedy trial (default 1)")
    parser.add_argument("--profile-rounds", type=int, default=DEFAULT_ROUNDS,
                        help="profile requests per side and workload, alternating; from %d on "
                             "pooled by their median per operator (default %d); a model whose "
                             "profile's own relative OPS is more than %.2fx off the audit's is "
                             "profiled as many rounds again"
                             % (MEDIAN_POOLING, DEFAULT_ROUNDS, PROFILE_AGREEMENT))
    parser.add_argument("--explain-out", metavar="FILE",
                        help="explain JSON (default: the results path with .explain.json)")


def request_of(args, formats=()):
    """The pipeline request of `explain`: the audit's, plus the explain step.

    The baseline audit runs on the CPU benchmarks without --target-env, as before
    the pipeline (the remedy trials set the target's environment themselves).
    """
    explain = ExplainOptions(
        workloads=() if args.no_profile else (tuple(args.workload) if args.workload else None),
        try_remedies=args.try_remedies, trial_pairs=args.trial_pairs,
        profile_rounds=args.profile_rounds, out=args.explain_out)
    if args.results:
        return audit_cli.request_of(args, formats, target=args.python,
                                    reference=args.reference, results=args.results, out=None,
                                    keep_findings=True, explain=explain, devices=("cpu",),
                                    target_env=())
    return audit_cli.request_of(args, formats, target=args.python or "python3",
                                reference=args.reference or "wheel", explain=explain,
                                devices=("cpu",), target_env=())


def run(args) -> int:
    formats = tuple(f for f in parse_formats(args.format) if f != "json")
    err, out = make_console(stderr=True), make_console()
    outcome = pipeline.run(request_of(args, formats), audit_cli.display_of(err, args.quiet))
    baseline, explained = outcome.result, outcome.explained
    out.print(ops_table(outcome.comparisons, baseline.reference is not None,
                        outcome.analysis.geomeans.get("all")))
    if explained is not None:
        print_explain(out, explained)
    print_outcome(out, baseline, outcome.analysis, outcome.written)
    if explained is not None:
        out.print("results: %s\nexplain: %s  (baseline %.0f s, profiles %.0f s, trials %.0f s)"
                  % (outcome.results_path, outcome.explain_path, baseline.wall_s,
                     explained.profile_s, explained.wall_s - explained.profile_s),
                  highlight=False, soft_wrap=True, markup=False)
    else:
        out.print("results: %s  (%.0f s)" % (outcome.results_path, baseline.wall_s),
                  highlight=False, markup=False)
    if not baseline.complete:
        print(audit_cli.stopped_line(outcome), file=sys.stderr)
    return outcome.status
