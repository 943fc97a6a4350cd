"""The README a site admin reads first (issue 25): its first code block holds the two
commands, it stays under 200 lines, and every relative link in it and in docs/ points
at a file that exists."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMANDS = ["bash scripts/setup.sh && .venv/bin/eb-torchperf audit --python /usr/bin/python3 "
            "--reference wheel==2.13.0",
            "bash scripts/test.sh"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_first_code_block_holds_the_two_commands():
    text = README.read_text(encoding="utf-8")
    first = re.search(r"^```[a-z]*\n(.*?)^```$", text, re.M | re.S)
    assert first.group(1).splitlines() == COMMANDS
    assert text.index(first.group(0)) < 40        # right under the title


def test_readme_is_at_most_200_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


@pytest.mark.parametrize("page", [README] + sorted((ROOT / "docs").glob("*.md"))
                         + [ROOT / "reports" / "examples" / "README.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(page):
    missing = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert missing == [], "%s links to missing files: %s" % (page.relative_to(ROOT), missing)
