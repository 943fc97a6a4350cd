"""Line numbers of easyconfig parameters and dependencies, from Python's own parser.

EasyBuild gives values, not positions.  Easyconfig files (format 1) are Python, so
`ast` finds where a parameter is assigned and where a dependency tuple is written; the
values themselves always come from EasyBuild.  Pure, stdlib only.
"""

import ast
from typing import Dict, Iterable, Iterator

#: Parameters whose tuple elements name dependencies.
DEPENDENCY_PARAMETERS = ("dependencies", "builddependencies", "hiddendependencies")


def _module(rawtxt: str):
    """The parsed module, or None when the text is not Python (e.g. format 2)."""
    try:
        return ast.parse(rawtxt)
    except (SyntaxError, ValueError):
        return None


def _assigned_names(node: ast.AST) -> Iterator[str]:
    """Names a statement assigns to (`x = ...`, `x += ...`, `x: T = ...`)."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id


def parameter_lines(rawtxt: str) -> Dict[str, int]:
    """Map each assigned name to the line of its first assignment.

    Args:
        rawtxt: easyconfig file text.

    Returns:
        name -> 1-based line number; {} when the text is not Python.
    """
    module = _module(rawtxt)
    lines: Dict[str, int] = {}
    if module is None:
        return lines
    for node in ast.walk(module):
        for name in _assigned_names(node):
            lines[name] = min(lines.get(name, node.lineno), node.lineno)
    return lines


def _touches(node: ast.AST, params: Iterable[str]) -> bool:
    """True for `param = ...`, `param += ...` and `param.append/extend/insert(...)`."""
    if any(name in params for name in _assigned_names(node)):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id in params)
    return False


def dependency_lines(rawtxt: str, params: Iterable[str] = DEPENDENCY_PARAMETERS
                     ) -> Dict[str, int]:
    """Map each dependency name to the line of its first tuple in `params`.

    A dependency is a tuple (or list) whose first element is a string literal, written
    in an assignment to, or an append/extend/insert call on, one of `params`.

    Args:
        rawtxt: easyconfig file text.
        params: parameter names holding dependency lists.

    Returns:
        dependency name -> 1-based line number; {} when the text is not Python.
    """
    module = _module(rawtxt)
    lines: Dict[str, int] = {}
    if module is None:
        return lines
    params = tuple(params)
    for stmt in ast.walk(module):
        if not _touches(stmt, params):
            continue
        for node in ast.walk(stmt):
            if (isinstance(node, (ast.Tuple, ast.List)) and node.elts
                    and isinstance(node.elts[0], ast.Constant)
                    and isinstance(node.elts[0].value, str)):
                name = node.elts[0].value
                lines[name] = min(lines.get(name, node.lineno), node.lineno)
    return lines
