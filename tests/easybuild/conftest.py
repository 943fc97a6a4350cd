"""Fixtures for real `eb` runs (helpers in ebsite.py)."""

import subprocess
import sys

import pytest

from ebsite import (HOOKS_FILE, TIMINGS, TOOL_EC, TORCH_EC, EbSite, pip_download, requirements,
                    skip_reason)


@pytest.fixture(scope="session")
def eb_site(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    site = EbSite(tmp_path_factory.mktemp("ebsite"))
    site.copy_clone()
    pip_download(site.sources, requirements(TORCH_EC, "torch"))
    (site.prefix / "modules" / "all").mkdir(parents=True, exist_ok=True)
    return site


@pytest.fixture(scope="session")
def good_install(eb_site):
    """PyTorch/2.13.0-wheel installed with the hooks file in warn mode (test 1)."""
    proc = eb_site.eb("install, warn mode", "--hooks=%s" % HOOKS_FILE,
                      eb_site.clone / "easyconfigs" / TORCH_EC.name, EB_TORCHPERF_MODE="warn")
    return proc


@pytest.fixture(scope="session")
def tool_module(eb_site):
    """The eb_torchperf module, from the clone copy's wheel and easyconfig."""
    pip_download(eb_site.sources, requirements(TOOL_EC, None))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(eb_site.sources), str(eb_site.clone)], check=True,
                   capture_output=True, timeout=600)
    return eb_site.eb("install eb_torchperf module", eb_site.clone / "easyconfigs" / TOOL_EC.name)


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.write_line("eb runs (seconds): " + ", ".join(
            "%s %.0f" % (label, seconds) for label, seconds in TIMINGS))
