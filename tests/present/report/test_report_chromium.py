"""The HTML report opened in headless Chromium (Debian package `chromium`).

Checks that the page loads from a file:// URL without console messages (Chromium logs
them on stderr as `:CONSOLE:`), that the SVG chart is in the rendered DOM, and that the
screenshot shows the bar colours.  A page with a console error is run first, so the
check is known to catch one.
"""

import dataclasses
import pathlib
import shutil
import struct
import subprocess
import zlib

import pytest

from testdata import record, with_findings
from eb_torchperf.present.report import write_reports

from auditcases import golden_result

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed "
                                "(Debian: apt-get install chromium)")
#: fill colours of the chart's bar classes in report.html.j2 (slow, even, fast).
BAR_COLOURS = {(0xd9, 0x53, 0x4f), (0x5c, 0xb8, 0x5c), (0x4a, 0x90, 0xd9)}


def _chromium(tmp_path, *args):
    profile = tmp_path / "profile"
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-background-networking", "--disable-component-update",
               "--no-first-run", "--user-data-dir=%s" % profile, "--enable-logging=stderr",
               "--v=0", "--log-level=0", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def _console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _png_pixels(path):
    """RGB(A) rows of an 8-bit non-interlaced PNG (what Chromium writes)."""
    data = pathlib.Path(path).read_bytes()
    chunks, offset = {}, 8
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset:offset + 8])
        chunks.setdefault(kind, []).append(data[offset + 8:offset + 8 + length])
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][0][:10])
    assert depth == 8 and colour in (2, 6)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks[b"IDAT"]))
    stride, rows, previous = width * channels, [], bytearray(width * channels)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, corner = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(line))
        previous = line
    return rows, channels


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    result = with_findings(golden_result())
    return write_reports(result, record(result), folder, ("html",), stem="audit")["html"]


def test_console_errors_are_detected(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>console.error('boom');"
                   "undefinedFunction();</script></body></html>")
    run = _chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert len(_console_lines(run.stderr)) == 2


def test_report_renders_the_chart_without_console_messages(tmp_path, report):
    run = _chromium(tmp_path, "--dump-dom", report.as_uri())
    assert _console_lines(run.stderr) == []
    dom = run.stdout
    assert '<svg xmlns="http://www.w3.org/2000/svg" id="ops-chart"' in dom
    # one bar per conclusive row: the golden layernorm row (60-292 %) is inconclusive
    assert dom.count('<rect class="bar ') == 3
    assert 'id="verdict"' in dom


def test_screenshot_shows_the_bars(tmp_path):
    # without findings the chart sits in the first 1000 pixels: a small screenshot
    quiet = dataclasses.replace(golden_result(), findings=())
    page = write_reports(quiet, record(quiet), tmp_path, ("html",), stem="no-findings")["html"]
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "--hide-scrollbars", "--window-size=900,1000",
              "--screenshot=%s" % shot, page.as_uri())
    rows, channels = _png_pixels(shot)
    colours = {tuple(row[i:i + 3]) for row in rows for i in range(0, len(row), channels)}
    assert colours & BAR_COLOURS
