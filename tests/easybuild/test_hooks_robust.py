"""Issue 27 item 18: the EasyBuild hook functions never crash EasyBuild, whatever the
EasyBlock lacks (no .log, no .installdir, a dry run without them)."""

import types

import pytest

pytest.importorskip("easybuild.tools.build_log", reason="easybuild-framework not installed")
from easybuild.tools.build_log import EasyBuildError  # noqa: E402

from eb_torchperf.easybuild import hooks  # noqa: E402


def _block(**fields):
    return types.SimpleNamespace(name="PyTorch", version="2.13.0", **fields)


@pytest.mark.parametrize("fields", [{}, {"dry_run": True}, {"installdir": "/nonexistent"}])
def test_a_bare_easyblock_is_a_warning_in_warn_mode(monkeypatch, capsys, fields):
    monkeypatch.setenv("EB_TORCHPERF_MODE", "warn")
    monkeypatch.setenv("EB_TORCHPERF_REFERENCE", "none")
    assert hooks.post_sanitycheck_hook(_block(**fields)) is None  # nothing escapes
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err


def test_a_bare_easyblock_is_one_easybuild_error_in_fail_mode(monkeypatch):
    monkeypatch.setenv("EB_TORCHPERF_MODE", "fail")
    monkeypatch.setenv("EB_TORCHPERF_REFERENCE", "none")
    with pytest.raises(EasyBuildError, match="eb_torchperf: audit failed: the EasyBlock "
                                             "has no installdir"):
        hooks.post_sanitycheck_hook(_block())
