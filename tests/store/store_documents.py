"""Results documents for the store tests (a module of its own: `from conftest import`
picks whichever tests/*/conftest.py was imported first in a whole-suite run)."""

import copy
import json
import pathlib

EXAMPLE = (pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"
           / "debian-python3-torch-vs-wheel-2.13.0.json")


def example_document() -> dict:
    """A real results document (Debian's torch 1.13 against the 2.13.0 wheel, with its
    analysis section)."""
    return json.loads(EXAMPLE.read_text())


def variant(created: str, python: str = "/opt/torch/bin/python", scale=None, env=None) -> dict:
    """The example audit as another build: start time, target interpreter, target
    environment, and each named row's relative OPS and interval multiplied by a factor."""
    document = copy.deepcopy(example_document())
    document["created_utc"] = created
    document["target"]["python"] = python
    document["options"]["target_env"] = dict(env or {})
    for row in document["analysis"]["rows"]:
        factor = (scale or {}).get(row["bench"])
        if factor:
            for key in ("relative_ops", "ci_low", "ci_high", "estimate"):
                if row.get(key) is not None:
                    row[key] *= factor
    return document


def write(path: pathlib.Path, document: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return str(path)
