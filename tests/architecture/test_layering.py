"""The package's layering, read from its imports (issue 12): data flows one way.

probe -> records -> measure -> analysis -> diagnosis -> present -> workflows + explain_stage -> shells.
A module may import its own layer and the layers to its left, never one to its right;
heavy or host-specific libraries are imported only where docs/architecture.md says.
Imports inside functions count too (a lazy import is still a dependency).  present/
renders records only (issue 25), and an audit's analysis (compare, differences, the
diagnosis, the verdict) is computed in the pipeline's analysis step alone.
"""

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "eb_torchperf"
#: First path component under eb_torchperf/ -> rank; a module may import ranks <= its own.
RANKS = {"errors": 0, "probe": 0, "records": 1, "measure": 2, "analysis": 3,
         "diagnosis": 4, "present": 5, "lint": 5, "store": 5, "workflows": 6, "explain_stage": 6,
         "fleet": 6,
         "cli": 7, "easybuild": 7, "reframe": 7, "easybuild_hooks": 7, "__init__": 8,
         "__version__": 0}
#: present/units.py, the one formatter of numbers (pure functions of records/): a rule's
#: one-line cause (Finding.title) words its figures through it, so analysis/ and diagnosis/
#: may import it (issue 25).
SHARED_FORMATTER = {"eb_torchperf.present.units"}
#: Third-party (or host) module -> the top-level parts of the package (or single files of
#: the side pipelines' own presentation) allowed to import it.
ALLOWED_IMPORTERS = {
    "rich": {"present", "cli", "fleet/render.py", "lint/render.py"},
    "jinja2": {"present"},
    "pandas": {"present"},
    "argparse": {"cli", "probe"},
    "easybuild": {"easybuild", "lint"},
    "reframe": {"reframe"},
    "torch": {"probe"},
    "sqlalchemy": {"store"},
    "alembic": {"store"},
    "psycopg": {"store"},
}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        yield rel, ast.parse(path.read_text(), str(path))


def _part(rel: pathlib.PurePath) -> str:
    return rel.parts[0][:-3] if len(rel.parts) == 1 else rel.parts[0]


def _imports(tree):
    """(module name, line) of every import, relative ones resolved against the package."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # only probe/ uses relative imports: they stay inside probe/
                yield "eb_torchperf.probe." + (node.module or ""), node.lineno
            elif node.module == "eb_torchperf":
                for alias in node.names:
                    yield "eb_torchperf." + alias.name, node.lineno
            else:
                yield node.module, node.lineno


def _violations():
    found = []
    for rel, tree in _modules():
        part = _part(rel)
        for name, line in _imports(tree):
            top = name.split(".")[0]
            where = "%s:%d imports %s" % (rel, line, name)
            if name == "eb_torchperf":  # the package itself: __version__, __file__
                continue
            if top == "eb_torchperf":
                target = name.split(".")[1] if "." in name else "__init__"
                if part == "probe" and target != "probe":
                    found.append(where + " (the probe runs inside the target: probe/ only)")
                elif name in SHARED_FORMATTER and RANKS[part] >= RANKS["analysis"]:
                    continue
                elif RANKS.get(target, 99) > RANKS[part]:
                    found.append(where + " (layer %s may not import %s)" % (part, target))
            elif top in ALLOWED_IMPORTERS and not {part, str(rel)} & ALLOWED_IMPORTERS[top]:
                found.append(where + " (%s is for %s only)"
                             % (top, ", ".join(sorted(ALLOWED_IMPORTERS[top]))))
    return found


#: What present/ may import from the package: the records it renders, the error types,
#: and its own helpers.  Numbers it shows come computed in records.analysis.Analysis.
PRESENT_MAY_IMPORT = {"present", "records", "errors"}
#: The analysis of an audit (issue 25): these functions run in one module only, the
#: pipeline's analysis step, which builds the records.analysis.Analysis all others receive.
ANALYSIS_FUNCTIONS = {"compare", "differences", "assess", "diagnose", "unpaired_comparisons"}
ANALYSIS_STEP = {"workflows/analyse.py"}
#: Names under which their modules are imported (`from eb_torchperf.diagnosis import
#: verdict`); another module's function of the same name (numerics.assess) is not one.
ANALYSIS_MODULES = {"compare", "differences", "verdict", "diagnose", "unpaired"}


def _present_imports():
    return ["%s:%d imports %s" % (rel, line, name)
            for rel, tree in _modules() if _part(rel) == "present"
            for name, line in _imports(tree)
            if name.startswith("eb_torchperf.")
            and name.split(".")[1] not in PRESENT_MAY_IMPORT]


def _analysis_calls():
    found = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute):  # module.compare(): the module is ours
                owner = getattr(func.value, "id", "")
                name = func.attr if owner in ANALYSIS_MODULES else None
            else:
                name = getattr(func, "id", None)
            if name in ANALYSIS_FUNCTIONS and str(rel) not in ANALYSIS_STEP:
                found.append("%s:%d calls %s" % (rel, node.lineno, name))
    return found


def test_present_imports_only_records():
    assert _present_imports() == []


def test_the_analysis_is_computed_only_in_the_pipelines_analysis_step():
    assert _analysis_calls() == []


@pytest.mark.parametrize("path, source, found", [
    ("present/view.py", "from eb_torchperf.analysis.compare import geomean_relative_ops\n",
     "imports eb_torchperf.analysis.compare"),
    ("present/view.py", "from eb_torchperf.diagnosis import verdict\n",
     "imports eb_torchperf.diagnosis"),
    ("cli/report.py", "def f(r):\n    return compare(r)\n", "calls compare"),
    ("present/render.py", "def f(r, c):\n    return verdict.assess(r, c)\n", "calls assess"),
])
def test_the_checks_catch_a_computing_presentation(tmp_path, monkeypatch, path, source, found):
    """The checkers themselves: presentation that imports the analysis, or a shell
    that compares an audit again, is reported."""
    fake = tmp_path / "eb_torchperf"
    (fake / path).parent.mkdir(parents=True)
    (fake / path).write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    reported = _present_imports() + _analysis_calls()
    assert len(reported) == 1 and found in reported[0], reported


def test_every_top_level_entry_has_a_rank():
    entries = {p.name[:-3] if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
               if p.name != "__pycache__" and not p.name.endswith(".egg-info")}
    assert entries - set(RANKS) - {"data"} == set(), "new top-level entry: give it a rank (and a line " \
                                          "in docs/architecture.md)"


def test_no_layer_imports_one_to_its_right():
    assert _violations() == []


@pytest.mark.parametrize("source, message", [
    ("from eb_torchperf.present.findings_view import finding_text\n",
     "layer diagnosis may not import present"),
    ("import rich\n", "rich is for cli, fleet/render.py, lint/render.py, present only"),
])
def test_the_check_catches_an_upward_import(tmp_path, monkeypatch, source, message):
    """The checker itself: a rule module that imports presentation is reported."""
    fake = tmp_path / "eb_torchperf"
    (fake / "diagnosis").mkdir(parents=True)
    (fake / "diagnosis" / "rule.py").write_text(source)
    monkeypatch.setattr(__import__(__name__), "PACKAGE", fake)
    found = _violations()
    assert len(found) == 1 and message in found[0], found
