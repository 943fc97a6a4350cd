"""Size discipline (issue 25): no module over MAX_MODULE_LINES lines, no function over
MAX_FUNCTION_LINES lines of code (its docstring not counted; a pure data table is a
module-level constant, not a function).

Modules and functions still over the limits are listed in OVER with their size today:
they may shrink, never grow, and a new one may not join them.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "eb_torchperf"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 40
#: "path" or "path:function" -> lines today (none left: add none).
OVER = {}


def _function_lines(node) -> int:
    """Lines of a function from its first decorator to its end, less its docstring."""
    start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
    lines = node.end_lineno - start + 1
    first = node.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def sizes():
    """{"path": lines, "path:function": code lines} of everything over the limits."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = str(path.relative_to(PACKAGE))
        text = path.read_text()
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found[rel] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = _function_lines(node)
                if lines > MAX_FUNCTION_LINES:
                    found["%s:%s" % (rel, node.name)] = lines
    return found


def test_no_new_module_or_function_over_the_limits():
    grown = {name: (lines, OVER.get(name)) for name, lines in sizes().items()
             if lines > OVER.get(name, 0)}
    assert grown == {}, "over the size limits (lines now, allowed): %s" % grown


def test_the_list_of_exceptions_is_current():
    """An entry that got back under the limit leaves OVER (the list only shrinks)."""
    assert set(OVER) <= set(sizes()), set(OVER) - set(sizes())


def test_function_lines_leave_the_docstring_out():
    tree = ast.parse('def f():\n    """Doc\n    string."""\n    return 1\n')
    assert _function_lines(tree.body[0]) == 2
