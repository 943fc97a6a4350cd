"""Issue 27 item 14: every field of a real results file, retyped, through `report`.

A deterministic sweep (the seeded fuzz of test_fuzz_results.py samples; this one
visits every field once): each object, list and value of a real schema-2 results
file (Debian's torch 1.13 against the 2.13 wheel, with the schema-2 facts sections)
is replaced by a value of another type ("x", 7) and every number also by 1e308.  The
command then reads the file (exit 0 or 1) or refuses it with exit 2 and one line;
never exit 3 (an internal error) for bad input.  The `analysis` section is recomputed
on load and never read back, so it is not visited; of each library or environment
map, the first three entries are.
"""

import copy
import io
import json
import pathlib
from contextlib import redirect_stderr, redirect_stdout

from eb_torchperf import cli

DATA = pathlib.Path(__file__).parent.parent / "data"
RESULTS = DATA / "results-debian-vs-venv-v2.json"
#: Maps whose entries are alike (one library, one variable): the first few are enough.
ALIKE = ("libraries", "env", "rlimits")


def _paths(value, path=()):
    """Every field (objects, lists and values) below `value`, depth first."""
    if path:
        yield path
    if isinstance(value, dict):
        items = list(value.items())[:3 if path and path[-1] in ALIKE else None]
        for key, item in items:
            if path or key != "analysis":
                yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            yield from _paths(item, path + (index,))


def _retyped(value):
    if isinstance(value, bool) or isinstance(value, (dict, list)):
        return ("x", 7)
    if isinstance(value, (int, float)):
        return ("x", 1e308)
    return (7,) if isinstance(value, str) else ("x",)


def _cases(document):
    for path in _paths(document):
        node = document
        for key in path:
            node = node[key]
        for value in _retyped(node):
            yield path, value


def _run(document, path, value, folder: pathlib.Path):
    doc = copy.deepcopy(document)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    stored = folder / "run.json"
    stored.write_text(json.dumps(doc))
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = cli.main(["report", str(stored), "--format", "json", "--out-dir",
                         str(folder / "out"), "--fail-on", "never"])
    return code, err.getvalue()


def test_every_field_retyped_is_read_or_refused_in_one_line(tmp_path):
    document = json.loads(RESULTS.read_text())
    assert document["target"]["facts"]["math"]  # the schema-2 sections are there
    crashes = []
    for path, value in _cases(document):
        code, err = _run(document, path, value, tmp_path)
        if code not in (0, 2) or "Traceback" in err or (code == 2 and err.count("\n") != 1):
            crashes.append("%s = %r: exit %d: %s" % (".".join(map(str, path)), value, code,
                                                     err.strip()[:160]))
    assert crashes == []
