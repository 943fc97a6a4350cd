"""The hook stores each audited installation in the results database (issue 31), named
after its module, with its toolchain, and compares it with the previous build."""

import re

from eb_torchperf.store import engine as engines
from eb_torchperf.store.query import history


def test_the_hook_stores_the_installation(eb_site, good_install):
    assert good_install.returncode == 0, good_install.stdout[-3000:]
    database = eb_site.root / "results.sqlite"
    audits = history(engines.opened("sqlite:///%s" % database))
    first = audits[0]
    assert (first.source, first.software, first.version, first.build, first.toolchain) == (
        "hook", "PyTorch", "2.13.0", "PyTorch/2.13.0-wheel", "system")
    assert first.results_path.endswith("easybuild/torchperf/torchperf.json")
    assert first.report_path.endswith("easybuild/torchperf/torchperf.html")
    said = _flat(good_install.stdout)  # EasyBuild wraps long lines
    assert _flat("== eb_torchperf: stored as audit %d in sqlite:///%s" % (first.id, database)) in said
    assert _flat("PyTorch/2.13.0-wheel on node type (unknown): no earlier build of PyTorch on "
                 "this node type") in said


def _flat(text):
    return re.sub(r"\s+", "", text)
