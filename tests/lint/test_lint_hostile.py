"""Hostile easyconfigs against the lint sandbox (issue 27: items 6, 7, 8, 11, 19 and
`sources`): each is a file a pull request could carry."""

import os
import subprocess
import sys
import textwrap
import uuid

import pytest

from eb_torchperf import cli
from eb_torchperf.lint import sandbox
from lint_factories import DATA, ROBOT, sandbox_unreadable_reason

pytestmark = [pytest.mark.usefixtures("easybuild_ready"),
              pytest.mark.skipif(sandbox_unreadable_reason() is not None,
                                 reason=str(sandbox_unreadable_reason()))]
GOOD = DATA / "PyTorch-2.9.1-flexiblas-blis.eb"
REPO = DATA.parents[2]
HEADER = ('name = "torch"\nversion = "2.9.1"\nhomepage = "https://pytorch.org"\n'
          'description = "x"\ntoolchain = SYSTEM\n')


def _lint(capsys, *argv):
    code = cli.main(["lint", "--robot-paths", str(ROBOT), *map(str, argv)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _write(tmp_path, name, code):
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return path


@pytest.mark.parametrize("extra", [[], ["--allow-root"]])
def test_an_easyconfig_cannot_forge_its_verdict_nor_another_files(tmp_path, capsys, extra):
    forger = _write(tmp_path, "forger.eb", '''\
        import os
        for fd in range(3, 1024):
            try:
                os.write(fd, b'{"findings": []}')
            except OSError:
                pass
        forged = b'{"index": 0, "problem": "FORGED"}\\n{"index": 1, "problem": "FORGED"}\\n'
        for pid in {os.getppid(), 1}:  # the worker's and the sandbox's descriptors
            try:
                fds = os.listdir("/proc/%d/fd" % pid)
            except OSError:
                continue
            for fd in fds:
                try:
                    with open("/proc/%d/fd/%s" % (pid, fd), "wb") as handle:
                        handle.write(forged)
                except OSError:
                    pass
        os._exit(0)
        ''')
    code, out, err = _lint(capsys, forger, GOOD, *extra)
    assert code == 2
    assert err.splitlines() == ["eb-torchperf lint: %s: the parser gave no result" % forger]
    assert "blas-not-mkl" in out and "2 files, 1 linted, 1 not lintable" in out


def _running(token: str):
    """Processes whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                if token.encode() in handle.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("hang", [False, True])
def test_nothing_the_parse_started_outlives_it(tmp_path, capsys, hang):
    token = "%d.%s" % (600 + hang, uuid.uuid4().int % 10 ** 9)
    escaper = _write(tmp_path, "escaper.eb", '''\
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "%s"])
            os._exit(0)
        time.sleep(1)
        %s
        name = "PyTorch"
        ''' % (token, "time.sleep(600)" if hang else ""))
    _lint(capsys, escaper, "--timeout", "5")
    assert _running(token) == []


def test_a_memory_hog_is_stopped_with_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "MEMORY_LIMIT_MIB", 1024)
    hog = _write(tmp_path, "hog.eb", "hog = bytearray(2 * 2 ** 30)\nname = 'PyTorch'\n")
    code, out, err = _lint(capsys, hog, GOOD)
    assert code == 2 and "blas-not-mkl" in out
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: exceeded the memory "
                                "limit (1024 MiB)" % hog]


def test_a_fork_loop_stops_at_the_process_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "MAX_PROCESSES", 12)
    forker = _write(tmp_path, "forker.eb", '''\
        import os, time
        started = 0
        try:
            for _ in range(100):
                if os.fork() == 0:
                    time.sleep(3)
                    os._exit(0)
                started += 1
        except OSError:
            pass
        raise ValueError("started %d" % started)
        ''')
    _, _, err = _lint(capsys, forker)
    started = int(err.split("started ")[1].split()[0])
    assert started < 12


def test_files_share_one_sandbox_and_one_that_kills_it_costs_only_itself(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setattr(sandbox, "PARALLEL", 1)
    starts = []
    real = sandbox._run_sandbox
    monkeypatch.setattr(sandbox, "_run_sandbox",
                        lambda files, *rest: starts.append(len(files)) or real(files, *rest))
    killer = _write(tmp_path, "killer.eb", "import os, signal\n"
                                           "os.kill(os.getppid(), signal.SIGKILL)\n")
    code, out, err = _lint(capsys, GOOD, killer, GOOD)
    assert starts == [3, 1]  # one sandbox for all three; a fresh one after the killer
    assert out.count("blas-not-mkl") >= 2 and "3 files, 2 linted, 1 not lintable" in out
    assert err.splitlines() == ["eb-torchperf lint: %s: the parser ended or stopped its "
                                "sandbox (parsing it again in a fresh one is not tried)"
                                % killer]


def test_sandboxes_side_by_side_keep_the_files_order(capsys, monkeypatch):
    monkeypatch.setattr(sandbox, "PARALLEL", 2)
    starts = []
    real = sandbox._run_sandbox
    monkeypatch.setattr(sandbox, "_run_sandbox",
                        lambda files, *rest: starts.append(len(files)) or real(files, *rest))
    files = [GOOD, DATA / "PyTorch-2.9.1-imkl.eb", GOOD, DATA / "PyTorch-2.9.1-acl.eb"]
    code, out, err = _lint(capsys, "--format", "json", *files)
    import json
    assert sorted(starts) == [2, 2] and err == ""
    assert [f["path"] for f in json.loads(out)["files"]] == [str(f) for f in files]


def test_a_python_under_a_folder_nobody_cannot_enter(tmp_path):
    """Issue 27: root with a Python under /root linted nothing (`nobody` could not read
    its standard library); a venv under a 0700 folder is the same case."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(private / "venv")],
                   check=True, timeout=120)
    site = next((private / "venv" / "lib").glob("python*/site-packages"))
    (site / "parent.pth").write_text("\n".join([str(REPO)] + [p for p in sys.path if p]))
    lazy = tmp_path / "lazy.eb"  # stdlib modules nothing imported before
    lazy.write_text("import colorsys, _strptime\n" + GOOD.read_text())
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(private / "venv" / "bin" / "python"), "-m", "eb_torchperf.cli",
                           "lint", "--robot-paths", str(ROBOT), str(lazy)],
                          capture_output=True, text=True, timeout=300, env=env, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert "blas-not-mkl" in proc.stdout and "1 linted" in proc.stdout


def test_sources_parses_the_easyconfig_in_the_sandbox(tmp_path, capsys):
    folder = tmp_path / "outside"
    folder.mkdir()
    evil = tmp_path / "evil.eb"
    evil.write_text('open(%r, "w").write("x")\n' % str(folder / "pwned") + HEADER)
    plain = _write(tmp_path, "plain.eb", HEADER + 'sources = ["%(name)s-%(version)s-py3-none-any.whl"]\n')
    assert cli.main(["sources", "--list", str(plain), str(tmp_path / "dest")]) == 0
    assert capsys.readouterr().out.splitlines() == ["torch-2.9.1-py3-none-any.whl"]
    assert cli.main(["sources", "--list", str(evil), str(tmp_path / "dest")]) == 2
    assert not (folder / "pwned").exists()
    assert "cannot parse %s" % evil in capsys.readouterr().err


def test_bwrap_view_replaces_private_folders_and_binds_the_trees_back(tmp_path):
    from eb_torchperf.lint.confine import bwrap_view
    shut = tmp_path / "shut"
    tree = shut / "a" / "venv"
    tree.mkdir(parents=True)
    os.chmod(shut, 0o700)
    args = bwrap_view(["/", "/tmp", str(tree)], hide_private=True)  # "/tmp": a cwd
    joined = " ".join(args)
    tmpfs, folder, bind = ("--tmpfs %s" % shut, "--dir %s" % (shut / "a"),
                           "--ro-bind %s %s" % (tree, tree))
    assert joined.index(tmpfs) < joined.index(folder) < joined.index(bind)
    assert args[:3] == ["--ro-bind", "/", "/"] and joined.count("--ro-bind / /") == 1
    assert "--ro-bind /tmp /tmp" not in joined  # the sandbox's /tmp stays its own
    assert tmpfs not in " ".join(bwrap_view([str(tree)], hide_private=False))


def _interpreter_hidden_from_nobody():
    return os.geteuid() != 0 or sandbox.private_folder(os.path.realpath(sys.executable)) is None


@pytest.mark.skipif(_interpreter_hidden_from_nobody(),
                    reason="needs root and a Python under a folder others cannot enter")
@pytest.mark.parametrize("tier", ["unshare", "plain"])
def test_without_bubblewrap_root_gets_one_line_saying_what_to_do(capsys, monkeypatch, tier):
    from eb_torchperf.lint import confine
    monkeypatch.setattr(confine, "mechanism", lambda: tier)
    code, out, err = _lint(capsys, GOOD)
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "could not start: the user nobody cannot read " in err
    assert "apt-get install bubblewrap" in err and "--allow-root" in err


@pytest.mark.parametrize("tier", ["unshare", "plain"])
def test_the_weaker_sandboxes_still_refuse_forgery_and_kill_escapers(tmp_path, capsys,
                                                                     monkeypatch, tier):
    from eb_torchperf.lint import confine
    monkeypatch.setattr(confine, "mechanism", lambda: tier)
    token = "602.%d" % (uuid.uuid4().int % 10 ** 9)
    escaper = _write(tmp_path, "escaper.eb", '''\
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "%s"])
            os._exit(0)
        for fd in range(3, 1024):
            try:
                os.write(fd, b'{"findings": []}')
            except OSError:
                pass
        os._exit(0)
        ''' % token)
    extra = ["--allow-root"] if os.geteuid() == 0 else []
    code, out, err = _lint(capsys, escaper, GOOD, *extra)
    assert _running(token) == []
    assert err.splitlines() == ["eb-torchperf lint: %s: the parser gave no result" % escaper]
    assert code == 2 and "blas-not-mkl" in out


def test_the_callers_secrets_are_not_in_the_parses_environment(tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setenv("CI_JOB_TOKEN", "s3cret-token")
    monkeypatch.setenv("EASYBUILD_DEBUG", "0")  # EasyBuild's own variables are kept
    snoop = _write(tmp_path, "snoop.eb", "import os\nraise ValueError(sorted(\n"
                   "    k for k in os.environ if k in ('CI_JOB_TOKEN', 'EASYBUILD_DEBUG')))\n")
    _, _, err = _lint(capsys, snoop)
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: ['EASYBUILD_DEBUG'] "
                                "(line 2)" % snoop]


def test_no_network_from_the_parse(tmp_path, capsys):
    import socket
    confine = pytest.importorskip("eb_torchperf.lint.confine")
    if confine.mechanism() == "plain":
        pytest.skip("without namespaces the parse has the network")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.1)
    caller = _write(tmp_path, "caller.eb", '''\
        import socket
        socket.create_connection(("127.0.0.1", %d), timeout=5).sendall(b"leak")
        ''' % server.getsockname()[1])
    _, _, err = _lint(capsys, caller)
    with pytest.raises(socket.timeout):
        server.accept()
    server.close()
    assert "cannot parse: [Errno 111] Connection refused" in err


def test_filling_the_sandboxs_tmp_stops_at_its_size(tmp_path, capsys, monkeypatch):
    confine = pytest.importorskip("eb_torchperf.lint.confine")
    if confine.mechanism() != "bwrap":
        pytest.skip("the size limit needs bubblewrap")
    monkeypatch.setattr(confine, "TMP_BYTES", 8 * 2 ** 20)
    filler = _write(tmp_path, "filler.eb", '''\
        import os, tempfile
        for index in range(4):
            with open(os.path.join(tempfile.gettempdir(), "fill%d" % index), "wb") as out:
                out.write(bytes(4 * 2 ** 20))
        ''')
    code, out, err = _lint(capsys, filler, GOOD)
    assert err.splitlines() == ["eb-torchperf lint: %s: cannot parse: [Errno 28] No space left "
                                "on device (line 4)" % filler]
    assert code == 2 and "blas-not-mkl" in out  # the next file had its /tmp emptied
