"""Paths of real test inputs (importable from any test: pytest puts tests/ on sys.path)."""

import pathlib

DATA = pathlib.Path(__file__).parent / "data"
CONFIG_DIR = DATA / "config"
DEBIAN_PYTHON = "/usr/bin/python3"


def read_config(name):
    """Text of a real config file in tests/data/config (sources: its README.md)."""
    return (CONFIG_DIR / name).read_text()


def diagnose(result, comparisons=None, rules=None, unexplained_step=False):
    """diagnosis.diagnose.diagnose with the comparisons and differences the pipeline
    would hand it (analysis.compare, diagnosis.differences) when not given."""
    from eb_torchperf.analysis.compare import compare
    from eb_torchperf.diagnosis.diagnose import diagnose as run
    from eb_torchperf.diagnosis.differences import differences
    return run(result, compare(result) if comparisons is None else comparisons, rules,
               unexplained_step, diffs=differences(result.target, result.reference))


def analysed(result, **options):
    """(result with its findings, its records.analysis.Analysis): the pipeline's
    analysis step (workflows.analyse.analyse, keyword options passed on)."""
    import dataclasses
    from eb_torchperf.workflows.analyse import analyse
    analysis = analyse(result, **options)
    return dataclasses.replace(result, findings=analysis.findings), analysis


def with_findings(result, **options):
    """`result` with the findings of the pipeline's analysis step."""
    return analysed(result, **options)[0]


def record(result):
    """The records.analysis.Analysis of `result` as the pipeline hands it on: its own
    findings kept (none: no rule runs)."""
    from eb_torchperf.workflows.analyse import analyse
    if result.findings:
        return analyse(result, keep_findings=True)
    return analyse(result, rules=[])


def view(result, **options):
    """present.report.build_view of `result` and its record()."""
    from eb_torchperf.present.report import build_view
    return build_view(result, record(result), **options)
