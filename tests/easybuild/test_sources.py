"""`eb-torchperf sources`: the files an easyconfig names, collected into a folder."""

import os

import pytest

from eb_torchperf.cli.dispatch import main
from eb_torchperf.errors import ConfigError

from ebsite import TORCH_EC

pytest.importorskip("easybuild.framework.easyconfig.parser")

WHEEL_EC_FILES = [
    "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl", "setuptools-80.9.0-py3-none-any.whl",
    "mpmath-1.3.0-py3-none-any.whl", "sympy-1.14.0-py3-none-any.whl",
    "networkx-3.6.1-py3-none-any.whl", "filelock-4.3.1-py3-none-any.whl",
    "typing_extensions-4.15.0-py3-none-any.whl", "fsspec-2026.9.0-py3-none-any.whl",
    "markupsafe-3.0.3-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64."
    "manylinux_2_28_x86_64.whl", "jinja2-3.1.6-py3-none-any.whl"]


def test_list_names_the_main_source_and_every_extension(capsys):
    assert main(["sources", "--list", str(TORCH_EC), "unused"]) == 0
    assert capsys.readouterr().out.splitlines() == WHEEL_EC_FILES


def test_files_come_from_the_folder_from_dirs_or_pip_and_misses_are_one_line(tmp_path, capsys,
                                                                           monkeypatch):
    for name in [k for k in os.environ if k.startswith("PIP_")]:
        monkeypatch.delenv(name)  # no index, no find-links: torch cannot be had
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    have = tmp_path / "have"
    have.mkdir()
    for name in WHEEL_EC_FILES[1:]:
        (have / name).write_text(name)
    dest = tmp_path / "sources"
    dest.mkdir()
    (dest / WHEEL_EC_FILES[2]).write_text("already")
    status = main(["sources", str(TORCH_EC), str(dest), "--from", str(have),
                   "--pip-option=--no-index"])
    err = capsys.readouterr().err
    assert status == 2
    assert sorted(p.name for p in dest.iterdir()) == sorted(WHEEL_EC_FILES[1:])
    assert (dest / WHEEL_EC_FILES[2]).read_text() == "already"
    assert err.splitlines()[-1].startswith(
        "eb-torchperf: error: 1 of 10 file(s) not collected into %s: %s (pip download "
        "torch==2.13.0+cpu" % (dest, WHEEL_EC_FILES[0]))


@pytest.mark.parametrize("content", [b"\xb2\xff\x00binary", "name = 'Py\u00e9'\n".encode("latin-1")])
def test_an_unreadable_easyconfig_is_one_line_not_a_crash(tmp_path, capsys, content):
    """A binary or latin-1 file gave exit 3 (UnicodeDecodeError inside EasyBuild's parser)."""
    bad = tmp_path / "bad.eb"
    bad.write_bytes(content)
    assert main(["sources", str(bad), str(tmp_path / "src"), "--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot parse %s" % bad in err and "Traceback" not in err


def test_sdists_and_wheels_name_their_requirement():
    from eb_torchperf.easybuild.sources import wheel_requirement
    assert wheel_requirement("easybuild_framework-5.4.1.tar.gz") == "easybuild_framework==5.4.1"
    assert wheel_requirement("six-1.17.0-py2.py3-none-any.whl") == "six==1.17.0"
    with pytest.raises(ConfigError, match="is not a wheel or sdist"):
        wheel_requirement("notes.txt")
