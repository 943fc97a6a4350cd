"""Fixtures for real `eb` runs (helpers in ebsite.py)."""

import pytest

from ebsite import HOOKS_FILE, TIMINGS, TORCH_EC, EbSite, pip_download, requirements, skip_reason


@pytest.fixture(scope="session")
def eb_site(tmp_path_factory):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    site = EbSite(tmp_path_factory.mktemp("ebsite"))
    pip_download(site.sources, requirements(TORCH_EC, "torch"))
    (site.prefix / "modules" / "all").mkdir(parents=True, exist_ok=True)
    return site


@pytest.fixture(scope="session")
def good_install(eb_site):
    """PyTorch/2.13.0-wheel installed with the hooks file in warn mode (test 1)."""
    proc = eb_site.eb("install, warn mode", "--hooks=%s" % HOOKS_FILE, TORCH_EC,
                      EB_TORCHPERF_MODE="warn")
    return proc


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.write_line("eb runs (seconds): " + ", ".join(
            "%s %.0f" % (label, seconds) for label, seconds in TIMINGS))
