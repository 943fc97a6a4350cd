"""Easyconfig linter: catch known PyTorch build problems before hours of building.

Easyconfigs are parsed with easybuild-framework's own parser (`parse.py`, `resolve.py`);
the rules (`rules*.py`, `matrix.py`) are pure functions over the resulting facts.
Importing this package does not import EasyBuild; `lint_paths` and
`lint_easyconfig_object` do, when called.
"""

from eb_torchperf.lint.api import (FileResult, exit_status_for, find_easyconfigs,
                                   lint_easyconfig_object, lint_paths)
from eb_torchperf.lint.options import LintOptions

__all__ = ["FileResult", "LintOptions", "exit_status_for", "find_easyconfigs",
           "lint_easyconfig_object", "lint_paths"]
