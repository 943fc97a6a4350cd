"""Fixtures for the easyconfig linter tests.

Pure rule tests build `EasyconfigFacts` by hand (`make_facts`).  Tests that parse need
easybuild-framework and -easyblocks (`easybuild_ready`, skipped otherwise); tests on the
real collection also need easybuild-easyconfigs (`collection_root`, skipped otherwise).
"""

import importlib
import os

import pytest

from eb_torchperf.lint.options import LintOptions
from lint_factories import PINNED_COLLECTION_VERSION, ROBOT


@pytest.fixture
def x86() -> LintOptions:
    """Options for an x86-64 target, homogeneous site, no GPUs configured."""
    return LintOptions(arch="x86_64")


@pytest.fixture(scope="session")
def easybuild_ready(tmp_path_factory):
    """EasyBuild configured once for this process, isolated from the user's configuration."""
    for module, reason in (("easybuild.framework", "easybuild-framework is not installed"),
                           ("easybuild.easyblocks", "easybuild-easyblocks is not installed "
                                                    "(the EB_PyTorch easyblock is needed)")):
        try:
            importlib.import_module(module)
        except ImportError:
            pytest.skip(reason)
    patch = pytest.MonkeyPatch()
    for key in [key for key in os.environ if key.startswith("EASYBUILD_")]:
        patch.delenv(key)
    empty = tmp_path_factory.mktemp("no-easybuild-config")
    patch.setenv("XDG_CONFIG_HOME", str(empty))
    patch.setenv("XDG_CONFIG_DIRS", str(empty))
    # In-process parses of the test files as root: allowed explicitly (the CLI parses
    # in a child as `nobody` instead; see lint/sandbox.py).
    patch.setenv("EB_TORCHPERF_LINT_ALLOW_ROOT", "1")
    from eb_torchperf.lint import ebsetup
    ebsetup.ensure_configured([str(ROBOT)])
    yield
    patch.undo()


@pytest.fixture(scope="session")
def collection_root(easybuild_ready):
    """The installed easybuild-easyconfigs directory."""
    from eb_torchperf.lint.collection import find_collection
    root = find_collection()
    if root is None:
        pytest.skip("easybuild-easyconfigs is not installed "
                    "(pip install easybuild-easyconfigs==<easybuild-framework version>)")
    return root


@pytest.fixture
def pinned_collection(collection_root):
    """Skip unless the collection is the release the pinned findings come from."""
    from eb_torchperf.lint.collection import collection_version
    version = collection_version()
    if version != PINNED_COLLECTION_VERSION:
        pytest.skip("pinned findings are for easybuild-easyconfigs %s, installed: %s"
                    % (PINNED_COLLECTION_VERSION, version))
    return collection_root
