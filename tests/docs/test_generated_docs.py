"""docs/findings.md, docs/cli.md and the README's sample verdict are generated
(scripts/gen_docs.py): each test regenerates one in memory and compares it with the
committed file, so a rule, an option or a wording changed without regenerating fails."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_docs()


@pytest.mark.parametrize("path, render", [
    ("docs/findings.md", GEN.findings_md),
    ("docs/cli.md", GEN.cli_md),
    ("README.md", lambda: GEN.readme_md((ROOT / "README.md").read_text(encoding="utf-8"))),
])
def test_generated_file_is_current(path, render):
    committed = (ROOT / path).read_text(encoding="utf-8")
    if path == "docs/cli.md" and "argparse of %s)" % GEN.python_version() not in committed:
        pytest.skip("docs/cli.md was generated with another Python's argparse (its help "
                    "layout differs); regenerate with %s" % GEN.REGENERATE)
    assert committed == render(), "%s is stale: regenerate it with %s" % (path, GEN.REGENERATE)


def test_the_catalogue_lists_every_registered_audit_rule_with_level_and_source():
    from eb_torchperf.diagnosis.diagnose import load_rules
    entries = GEN.docgen_findings.catalogue()
    reached = {e.rule for e in entries if e.rule is not None}
    assert set(load_rules()) <= reached       # every registered rule emits a listed id
    for entry in entries:
        if entry.rule is not None:
            assert entry.levels and entry.sources, entry.rule_id
    by_id = {(e.where.split("/")[1], e.rule_id): e for e in entries}
    blas = by_id[("diagnosis", "blas-not-mkl")]
    assert blas.levels == {"error", "warning", "info"} and blas.graded
    assert blas.sources == {"https://github.com/easybuilders/easybuild/issues/931"}
    assert by_id[("diagnosis", "gpu-arch-missing")].levels == {"error"}
    assert by_id[("diagnosis", "gpu-arch-ptx-only")].levels == {"warning"}
    assert by_id[("diagnosis", "gpu-launch-blocking")].rule.__name__ == "rule_launch_blocking"
    assert by_id[("diagnosis", "gpu-caching-allocator-disabled")].rule.__name__ == \
        "rule_caching_allocator"
    assert ("lint", "blas-not-mkl") in by_id and ("diagnosis", "unexplained-slowdown") in by_id


def test_the_sample_keeps_headlines_verdict_and_reports():
    lines = GEN._report_output()
    sample = GEN.sample_lines(lines)
    assert sample[0].strip("─ ") == "Findings" and len(sample[0]) == GEN.WIDTH
    assert sample[1].startswith("ERROR blas-not-mkl ")
    assert any(line.lstrip().startswith("remedy: ") for line in sample)
    assert sample[-2:] == ["html report: reports/debian-python3-torch-vs-wheel-2.13.0.html",
                           "md report: reports/debian-python3-torch-vs-wheel-2.13.0.md"]
    assert all(len(line) <= GEN.WIDTH for line in sample)
