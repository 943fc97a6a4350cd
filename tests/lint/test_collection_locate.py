"""find_collection on the two ways pip installs easybuild-easyconfigs (no real package needed)."""

import importlib.metadata
from pathlib import Path

import pytest

from eb_torchperf.lint import collection

EASYCONFIG = "easybuild/easyconfigs/p/PyTorch/PyTorch-2.1.2-foss-2023a.eb"


class _Dist:
    """The two things find_collection reads of an importlib.metadata Distribution."""

    def __init__(self, base: Path):
        self.base = base
        self.files = [importlib.metadata.PackagePath(EASYCONFIG)]

    def locate_file(self, entry):
        return self.base / entry


def _install(monkeypatch, tmp_path, base: Path):
    monkeypatch.setattr(collection.importlib.metadata, "distribution", lambda name: _Dist(base))
    prefix = tmp_path / "venv"
    for attr in ("prefix", "base_prefix"):
        monkeypatch.setattr(collection.sys, attr, str(prefix))
    monkeypatch.setattr(collection.site, "getuserbase", lambda: str(tmp_path / "user"))
    return prefix


def test_wheel_install_found_from_its_file_list(monkeypatch, tmp_path):
    site_packages = tmp_path / "venv/lib/python3.11/site-packages"
    (site_packages / EASYCONFIG).parent.mkdir(parents=True)
    (site_packages / EASYCONFIG).write_text("name = 'PyTorch'\n")
    _install(monkeypatch, tmp_path, site_packages)
    assert collection.find_collection() == str(site_packages / "easybuild/easyconfigs")


def test_egg_info_install_found_under_the_prefix(monkeypatch, tmp_path):
    # Legacy sdist install: the file list names SOURCES.txt paths under site-packages that
    # do not exist; the files sit in <venv>/easybuild/easyconfigs.
    site_packages = tmp_path / "venv/lib/python3.11/site-packages"
    site_packages.mkdir(parents=True)
    prefix = _install(monkeypatch, tmp_path, site_packages)
    (prefix / EASYCONFIG).parent.mkdir(parents=True)
    (prefix / EASYCONFIG).write_text("name = 'PyTorch'\n")
    root = collection.find_collection()
    assert root == str(prefix / "easybuild/easyconfigs")
    assert [Path(p).name for p in collection.pytorch_easyconfigs(root)] == [Path(EASYCONFIG).name]


def test_listed_but_absent_everywhere_is_none(monkeypatch, tmp_path):
    _install(monkeypatch, tmp_path, tmp_path / "nowhere")
    assert collection.find_collection() is None


def test_not_installed_is_none(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)
    monkeypatch.setattr(collection.importlib.metadata, "distribution", missing)
    assert collection.find_collection() is None
