"""The static HTML history opened in headless Chromium (Debian package `chromium`):
it renders from a file:// URL with no console message, the charts are in the DOM, and
nothing is loaded from the network.  A page with a console error is run first, so the
check is known to catch one."""

import os
import re
import shutil
import subprocess

import pytest

from store_documents import variant
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import from_env
from eb_torchperf.store.query import Filters
from eb_torchperf.store.site import write_site
from eb_torchperf.store.write import record_document

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def chromium():
    if CHROMIUM is None:
        reason = "chromium not installed (Debian: apt-get install chromium)"
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            pytest.fail(reason + " under CI=true as root")
        pytest.skip(reason)
    return CHROMIUM


def _open(chromium, tmp_path, page, *args):
    """(stderr console lines, stdout) of Chromium loading `page`."""
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--no-first-run", "--user-data-dir=%s" % (tmp_path / "profile"),
               "--enable-logging=stderr", "--v=0", "--log-level=0", *args,
               "file://%s" % page]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    return [l for l in done.stderr.splitlines() if ":CONSOLE" in l], done.stdout


@pytest.fixture
def site(tmp_path):
    engine = engines.opened("sqlite:///%s" % (tmp_path / "db.sqlite"))
    for created, python, node, scale in (
            ("2026-01-01T00:00:00+00:00", "/old/bin/python", "zen", None),
            ("2026-02-01T00:00:00+00:00", "/new/bin/python", "zen", {"matmul_fp32": 0.1}),
            ("2026-02-02T00:00:00+00:00", "/new/bin/python", "grace", None)):
        record_document(engine, variant(created, python, scale), from_env("cli", node, env={}))
    return write_site(engine, Filters(), str(tmp_path / "site"))[0]


def test_the_console_check_catches_an_error(chromium, tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>console.error('boom')</script></body></html>")
    assert _open(chromium, tmp_path, page, "--dump-dom")[0]


def test_the_history_renders_offline_with_its_charts(chromium, tmp_path, site):
    console, dom = _open(chromium, tmp_path, site, "--dump-dom")
    assert console == []
    assert dom.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart"') == 2
    assert dom.count('class="point"') == 3
    assert "Node type zen" in dom and "Node type grace" in dom
    assert "class=\"slower\">matmul_fp32 at 10.0 %" in dom
    assert re.findall(r'(?:src|href)="(?:https?:)?//', dom) == []
    assert 'href="audits/1.json"' in dom and (tmp_path / "site" / "audits" / "1.json").is_file()
    shot = tmp_path / "history.png"
    _open(chromium, tmp_path, site, "--screenshot=%s" % shot, "--window-size=1100,1400")
    assert shot.stat().st_size > 10000
