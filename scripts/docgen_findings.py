"""The findings catalogue (docs/findings.md), read from the code: every rule id the package
can emit, its level(s), the benchmark families it explains, its source URL, its rule.

Two registries name the rules: `diagnosis.diagnose.load_rules()` (audit rules, each with
`affects`, rules/scope.py) and `lint.rules.RULES` (easyconfig rules).  A rule's ids,
levels and sources are read from the source text (ast) of the `Finding(...)` /
lint `finding(...)` calls and the `dataclasses.replace(..., rule_id=...)` calls of every
package module: a literal, a module constant, an `a if c else b`, a parameter filled in
by the module's own call sites, a local assigned from those, or a same-module helper's
returned value.  Run by scripts/gen_docs.py.
"""

import ast
import dataclasses
import importlib
import inspect
import pathlib
import re
from typing import Dict, List, Optional, Set

from eb_torchperf.records.findings import SEVERITIES, Finding

PACKAGE = pathlib.Path(importlib.import_module("eb_torchperf").__file__).parent
RULE_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")
_FIELDS = {"rule_id", "severity", "source"}


@dataclasses.dataclass
class Entry:
    """One rule id as emitted from one module (the lint and audit `blas-not-mkl` are two)."""
    rule_id: str
    where: str
    levels: Set[str] = dataclasses.field(default_factory=set)
    sources: Set[str] = dataclasses.field(default_factory=set)
    rule: Optional[object] = None
    function: str = ""
    doc: str = ""
    graded: bool = False


class Module:
    """One parsed package module: its functions by name and its imported object."""

    def __init__(self, path: pathlib.Path):
        self.where = str(path.relative_to(PACKAGE.parent))
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        name = self.where[:-3].replace("/", ".")
        self.name = name[:-9] if name.endswith(".__init__") else name
        self._module = None
        self.functions = {n.name: n for n in ast.walk(self.tree)
                          if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}

    @property
    def module(self):
        """The imported module (imported on first use: only modules that make findings)."""
        if self._module is None:
            self._module = importlib.import_module(self.name)
        return self._module

    def constant(self, name: str) -> Set[str]:
        value = getattr(self.module, name, None)
        return {value} if isinstance(value, str) else set()

    def call_sites(self, fn: ast.FunctionDef):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and _callee(node) == fn.name:
                yield node

    def values(self, node, fn, depth=0) -> Set[str]:
        """Every string `node` can hold inside function `fn` (empty: not resolved)."""
        if depth > 8 or node is None:
            return set()
        if isinstance(node, ast.Constant):
            return {node.value} if isinstance(node.value, str) else set()
        if isinstance(node, ast.IfExp):
            return self.values(node.body, fn, depth + 1) | self.values(node.orelse, fn, depth + 1)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.values(v, fn, depth + 1) for v in node.values))
        if isinstance(node, ast.Call):
            return self._returns(_callee(node), depth)
        if isinstance(node, ast.Tuple):
            return set().union(set(), *(self.values(e, fn, depth + 1) for e in node.elts))
        if isinstance(node, ast.Name):
            return self._name(node.id, fn, depth)
        return set()

    def _returns(self, name: str, depth: int) -> Set[str]:
        """What the function `name` (this module's, or one imported from the package)
        can return."""
        owner, helper = self, self.functions.get(name)
        if helper is None:
            obj = getattr(self.module, name, None)
            if not inspect.isfunction(obj) or not obj.__module__.startswith(PACKAGE.name + "."):
                return set()
            owner = module_named(obj.__module__)
            helper = owner.functions.get(obj.__name__)
        return set().union(set(), *(owner.values(r.value, helper, depth + 1)
                                    for r in ast.walk(helper) if isinstance(r, ast.Return)))

    def _name(self, name: str, fn, depth: int) -> Set[str]:
        found = self.constant(name)
        params = [a.arg for a in fn.args.args] if fn is not None else []
        if name in params:
            index = params.index(name)
            for call in self.call_sites(fn):
                arg = _argument(call, index, name)
                caller = _enclosing(self, call)
                found |= self.values(arg, caller, depth + 1)
        for assign in (n for n in ast.walk(fn) if isinstance(n, ast.Assign)) if fn else ():
            for target in assign.targets:
                names = [target] if isinstance(target, ast.Name) else getattr(target, "elts", [])
                if any(isinstance(t, ast.Name) and t.id == name for t in names):
                    found |= self.values(assign.value, fn, depth + 1)
        return found


_MODULES: Dict[str, Module] = {}


def module_named(name: str) -> Module:
    """The parsed package module `name` (parsed once)."""
    if name not in _MODULES:
        path = PACKAGE.parent / (name.replace(".", "/") + ".py")
        if not path.exists():
            path = PACKAGE.parent / name.replace(".", "/") / "__init__.py"
        _MODULES[name] = Module(path)
    return _MODULES[name]


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _argument(call: ast.Call, index: int, name: str):
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    return call.args[index] if index < len(call.args) else None


def _enclosing(module: Module, node) -> Optional[ast.FunctionDef]:
    for fn in module.functions.values():
        if any(child is node for child in ast.walk(fn)):
            return fn
    return None


def _dotted(path: pathlib.Path) -> str:
    name = str(path.relative_to(PACKAGE.parent))[:-3].replace("/", ".")
    return name[:-9] if name.endswith(".__init__") else name


def _constructors() -> Dict[str, List[str]]:
    """Callable name -> its parameter names, for the calls that make a Finding."""
    from eb_torchperf.lint import common
    return {"Finding": [f.name for f in dataclasses.fields(Finding)],
            "finding": list(inspect.signature(common.finding).parameters)}


def _emissions(module: Module, constructors):
    """(function, [(rule ids, levels)], sources, graded) per Finding-making call; an id and a
    level chosen by the same `a if c else b` are paired."""
    for fn in module.functions.values():
        for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
            name = _callee(call)
            if name in constructors:
                params = constructors[name]
                args = {p: _argument(call, params.index(p), p) for p in _FIELDS}
            elif name == "replace" and any(k.arg == "rule_id" for k in call.keywords):
                args = {k.arg: k.value for k in call.keywords if k.arg in _FIELDS}
            else:
                continue
            ids, level = args.get("rule_id"), args.get("severity")
            pairs = ([(ids.body, level.body), (ids.orelse, level.orelse)]
                     if isinstance(ids, ast.IfExp) and isinstance(level, ast.IfExp)
                     and ast.dump(ids.test) == ast.dump(level.test) else [(ids, level)])
            yield (fn, [(module.values(i, fn), module.values(v, fn) & set(SEVERITIES))
                        for i, v in pairs],
                   {s for s in module.values(args.get("source"), fn) if s.startswith("http")},
                   level is not None and not isinstance(level, (ast.Constant, ast.IfExp)))


def _reachable(module: Module, fn, seen=None) -> Set[str]:
    """Names of `fn` and of the same-module functions it calls, transitively."""
    seen = set() if seen is None else seen
    if fn.name in seen:
        return seen
    seen.add(fn.name)
    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
        if _callee(call) in module.functions:
            _reachable(module, module.functions[_callee(call)], seen)
    return seen


def _first_paragraph(obj) -> str:
    return " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())


def _registered_rules():
    from eb_torchperf.diagnosis.diagnose import load_rules
    from eb_torchperf.lint.rules import RULES
    return list(load_rules()) + list(RULES)


def _doc(node) -> str:
    return " ".join((ast.get_docstring(node) or "").split("\n\n")[0].split())


def _collect(modules: Dict[str, Module]) -> Dict[tuple, Entry]:
    constructors, entries = _constructors(), {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        module = modules.setdefault(_dotted(path), module_named(_dotted(path)))
        for fn, pairs, sources, graded in _emissions(module, constructors):
            for ids, levels in pairs:
                for rule_id in filter(RULE_ID.match, ids):
                    entry = entries.setdefault((module.where, rule_id), Entry(
                        rule_id, module.where, function=fn.name,
                        doc=_doc(fn) if fn.name.startswith("rule") else _doc(module.tree)))
                    entry.levels |= levels
                    entry.sources |= sources
                    entry.graded = entry.graded or graded
    return entries


def _mentions(module: Module, names: Set[str], text: str) -> bool:
    return any(isinstance(c, ast.Constant) and c.value == text
               for name in names for c in ast.walk(module.functions[name]))


def catalogue() -> List[Entry]:
    """Every rule id of the package, registered rules first, by module then id; each tied to the
    registered rule that reaches it (the one naming the id where a helper serves several)."""
    modules: Dict[str, Module] = {}
    entries = _collect(modules)
    for rule in _registered_rules():
        module = modules[rule.__module__]
        names = _reachable(module, module.functions[rule.__name__])
        for entry in entries.values():
            if entry.where != module.where or entry.function not in names:
                continue
            if entry.rule is None or _mentions(module, names, entry.rule_id):
                entry.rule, entry.doc = rule, _first_paragraph(rule)
    return sorted(entries.values(), key=lambda e: (e.rule is None, e.where, e.rule_id))
