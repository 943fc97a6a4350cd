"""Locate the installed easybuild-easyconfigs collection and its PyTorch easyconfigs.

Stdlib only: the collection is found from the package's installed file list
(`importlib.metadata`), so tests can skip cleanly when it is not installed.
"""

import importlib.metadata
import os
import site
import sys
from pathlib import Path
from typing import List, Optional

DISTRIBUTION = "easybuild-easyconfigs"
#: Where the package puts easyconfigs, relative to its install prefix.
EASYCONFIGS_SUBDIR = os.path.join("easybuild", "easyconfigs")
#: The easyconfigs the linter is about (also matches PyTorch-bundle, -Lightning, ...).
PYTORCH_GLOB = "PyTorch-*.eb"


def collection_version() -> Optional[str]:
    """Installed easybuild-easyconfigs version, None when not installed."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def find_collection() -> Optional[str]:
    """Directory holding the installed easyconfigs (with a/, b/, ... p/), None if absent.

    The package's file list is read first (a wheel install: RECORD).  An install that pip
    made from the sdist the legacy way leaves an ``.egg-info`` whose file list Python < 3.12
    reads from SOURCES.txt, paths that do not exist where they point; then the collection
    is looked for where the package puts it, ``<prefix>/easybuild/easyconfigs`` under this
    interpreter's prefixes (venv, base, user).
    """
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in dist.files or ():
        if entry.name.endswith(".eb") and "easyconfigs" in Path(entry).parts[:-1]:
            located = Path(dist.locate_file(entry)).resolve()
            if not located.is_file():
                break
            root = next(parent for parent in located.parents if parent.name == "easyconfigs")
            return str(root)
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, site.getuserbase())):
        candidate = Path(prefix, EASYCONFIGS_SUBDIR)
        if candidate.is_dir():
            return str(candidate.resolve())
    return None


def pytorch_easyconfigs(root: str) -> List[str]:
    """Every PYTORCH_GLOB file below `root`, sorted by path."""
    return sorted(str(path) for path in Path(root).rglob(PYTORCH_GLOB))
