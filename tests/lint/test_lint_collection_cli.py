"""`eb-torchperf lint --collection` (replaces scripts/lint_collection.py): the installed
easybuild-easyconfigs is found by the package's own files (lint/collection.py); here a
one-file collection stands in for it so the run stays short."""

import argparse
import shutil

import pytest

from eb_torchperf.cli import lint as lint_cli
from eb_torchperf.errors import ConfigError
from eb_torchperf.lint import collection
from lint_factories import DATA, ROBOT

#: EasyBuild 5.4.1's refusal (easybuild/tools/options.py), as lint_paths re-raises it.
REFUSAL = ("EasyBuild configuration failed: You seem to be running EasyBuild with root "
           "privileges which is not wise, so let's end this here.")


def run(*argv):
    parser = argparse.ArgumentParser(prog="eb-torchperf lint")
    lint_cli.add_arguments(parser)
    return lint_cli.run(parser.parse_args(list(argv) + ["--robot-paths", str(ROBOT)]))


def test_collection_lints_its_pytorch_easyconfigs(easybuild_ready, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "easyconfigs" / "p" / "PyTorch"
    folder.mkdir(parents=True)
    shutil.copy(DATA / "PyTorch-2.9.1-no-blas.eb", folder / "PyTorch-2.9.1-no-blas.eb")
    (folder / "Other-1.0.eb").write_text("name = 'Other'\n")
    monkeypatch.setattr(collection, "find_collection", lambda: str(tmp_path / "easyconfigs"))
    status = run("--collection", "--allow-root")
    captured = capsys.readouterr()
    assert status == 1  # PyTorch-2.9.1-no-blas.eb has an error-level finding
    assert "at %s: 1 PyTorch easyconfigs" % (tmp_path / "easyconfigs") in captured.err
    assert "Summary: 1 files, 1 linted" in captured.out


def test_no_collection_is_one_line_with_what_to_do(monkeypatch):
    monkeypatch.setattr(collection, "find_collection", lambda: None)
    with pytest.raises(ConfigError, match=r"^easybuild-easyconfigs is not installed for \S+: "
                                          r"pip install easybuild-easyconfigs=="):
        run("--collection")


def test_nothing_to_lint_is_a_usage_error():
    with pytest.raises(ConfigError, match="give easyconfig files or folders, or --collection"):
        run()


def test_root_refusal_says_what_to_do():
    hint = lint_cli._root_hint(REFUSAL)
    assert hint.startswith("EasyBuild refuses to run as root: run as a normal user, or set "
                           "EASYBUILD_ALLOW_USE_AS_ROOT_AND_ACCEPT_CONSEQUENCES=1")
    assert "\n" not in hint and REFUSAL in hint
    assert lint_cli._root_hint("robot path 'x' is not a directory") == \
        "robot path 'x' is not a directory"
