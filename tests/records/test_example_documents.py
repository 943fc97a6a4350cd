"""Every explain document shipped in reports/examples loads: the validator had refused
the difference trials' nested `expect` ({"env": {VAR: null}}) of issue 15."""

import pathlib

import pytest

from eb_torchperf.explain_stage.run import load_explain

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.explain.json")), ids=lambda p: p.name)
def test_example_explain_documents_load(path):
    explained = load_explain(str(path))
    assert explained.target and explained.reference
