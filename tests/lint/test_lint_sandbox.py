"""`eb-torchperf lint` on untrusted easyconfigs: each file in its own time-bounded child
inside a sandbox, as `nobody` when run as root (lint/sandbox.py)."""

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap

import pytest

from eb_torchperf import cli
from eb_torchperf.lint import confine
from lint_factories import DATA, ROBOT, sandbox_unreadable_reason

pytestmark = [pytest.mark.usefixtures("easybuild_ready"),
              pytest.mark.skipif(sandbox_unreadable_reason() is not None,
                                 reason=str(sandbox_unreadable_reason()))]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="the privilege drop needs root")

GOOD = DATA / "PyTorch-2.9.1-flexiblas-blis.eb"


@pytest.fixture
def reachable():
    """A root-owned 0755 folder `nobody` can reach (pytest's tmp_path is under a 0700
    folder), outside /tmp (bubblewrap gives the parse a /tmp of its own)."""
    path = tempfile.mkdtemp(prefix="eb-torchperf-sandbox-test-",
                            dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    os.chmod(path, 0o755)
    yield __import__("pathlib").Path(path)
    shutil.rmtree(path, ignore_errors=True)


def _evil(tmp_path, target):
    path = tmp_path / "evil.eb"
    path.write_text(textwrap.dedent('''\
        open(%r, "w").write("written by the easyconfig")
        name = "PyTorch"
        version = "2.9.1"
        ''' % str(target)))
    return path


def _lint(capsys, *argv):
    code = cli.main(["lint", "--robot-paths", str(ROBOT), *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@as_root
def test_an_easyconfig_cannot_write_a_root_owned_folder(tmp_path, reachable, capsys):
    folder = reachable / "root-owned"
    folder.mkdir(mode=0o755)
    code, out, err = _lint(capsys, _evil(tmp_path, folder / "pwned"), GOOD)
    assert not (folder / "pwned").exists()
    assert code == 2
    # bubblewrap: the file system is read-only (30); otherwise `nobody` may not write (13)
    errno = 30 if confine.mechanism() == "bwrap" else 13
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: [Errno %d] %s: '%s' "
                                "(line 1)" % (tmp_path / "evil.eb", errno,
                                              os.strerror(errno), folder / "pwned")]
    assert "blas-not-mkl" in out  # the good file was still linted


@pytest.mark.skipif(confine.mechanism() != "bwrap", reason="needs bubblewrap")
def test_with_bubblewrap_not_even_a_world_writable_folder_is_written(tmp_path, reachable,
                                                                     capsys):
    folder = reachable / "shared"
    folder.mkdir()
    os.chmod(folder, 0o1777)  # like /tmp
    code, _, err = _lint(capsys, _evil(tmp_path, folder / "written"))
    assert not (folder / "written").exists()
    assert code == 2 and "Read-only file system" in err


@as_root
def test_allow_root_executes_the_easyconfig_as_root(tmp_path, capsys):
    whoami = tmp_path / "whoami.eb"
    whoami.write_text("import os\nraise ValueError('uid %d' % os.getuid())\n")
    _, _, err = _lint(capsys, whoami, "--allow-root")
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: uid 0 (line 2)" % whoami]
    _, _, err = _lint(capsys, whoami)
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: uid %d (line 2)"
                                % (whoami, pwd.getpwnam("nobody").pw_uid)]


def test_binary_and_latin1_files_one_line_each_the_others_still_linted(tmp_path, capsys):
    binary, latin = tmp_path / "binary.eb", tmp_path / "latin.eb"
    binary.write_bytes(b"\x00\x01\xff\xfe\x80")
    latin.write_bytes("name = 'caf\xe9'\nversion = '1'\n".encode("latin-1"))
    code, out, err = _lint(capsys, binary, GOOD, latin)
    assert code == 2
    assert [line.split(": cannot parse: ")[0] for line in err.splitlines()] == [
        "eb-torchperf lint: %s" % binary, "eb-torchperf lint: %s" % latin]
    assert all("UnicodeDecodeError" in line for line in err.splitlines())
    assert "blas-not-mkl" in out and "3 files, 1 linted, 2 not lintable" in out


def test_a_hanging_easyconfig_is_killed_at_the_timeout(tmp_path, capsys):
    hang = tmp_path / "hang.eb"
    hang.write_text("import time\ntime.sleep(600)\nname = 'x'\n")
    code, out, err = _lint(capsys, hang, GOOD, "--timeout", "3")
    assert code == 2
    assert err.splitlines() == ["eb-torchperf lint: %s: parsing took longer than 3 s; the "
                                "parser was killed" % hang]
    assert "blas-not-mkl" in out


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_a_non_finite_lint_timeout_is_refused(capsys, value):
    code, _, err = _lint(capsys, GOOD, "--timeout", value)
    assert code == 2 and err.count("\n") == 1 and "--timeout must be a finite number" in err


def test_help_says_easyconfigs_are_executed(capsys):
    with pytest.raises(SystemExit):
        cli.main(["lint", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "Easyconfigs are Python, and EasyBuild's parser executes them" in text
    assert "--allow-root" in text


@as_root
def test_the_run_as_root_flag_is_never_added_silently(tmp_path):
    code = ("import os; os.environ.pop('EB_TORCHPERF_LINT_ALLOW_ROOT', None)\n"
            "from eb_torchperf.lint import ebsetup\n"
            "try:\n    ebsetup.ensure_configured()\nexcept Exception as exc:\n"
            "    print(type(exc).__name__, exc)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EASYBUILD_")}
    env.pop("EB_TORCHPERF_LINT_ALLOW_ROOT", None)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120)
    assert proc.stdout.startswith("ConfigError EasyBuild configuration failed: "), proc
    assert "root" in proc.stdout


def test_private_folder_names_the_first_folder_others_cannot_enter(tmp_path):
    from eb_torchperf.lint.sandbox import private_folder
    shut = tmp_path / "shut"
    inner = shut / "open"
    inner.mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    os.chmod(shut, 0o700)
    os.chmod(inner, 0o755)
    assert private_folder(str(inner / "x.eb")) == str(shut)
    os.chmod(shut, 0o711)
    assert private_folder(str(inner / "x.eb")) in (None, str(tmp_path.parent),
                                                    str(tmp_path.parent.parent))
