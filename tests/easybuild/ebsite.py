"""Helpers for real `eb` runs: Lmod from Debian, EasyBuild 5 from PyPI, the local torch 2.13.0 wheel.

Skipped with the reason when `eb`, Lmod or pip's copy of the wheel are missing (a
failure under CI=true: tests/areas.py).  `eb` runs under this test's Python (EB_PYTHON),
a venv with eb_torchperf installed (editable, with its `easybuild.hooks` entry points),
and that venv's bin comes first on PATH, so EasyBuild's PythonPackage installs with it
too: never /usr/bin/python3, whose site fails `pip check` on hosts with python3-gi but
no pycairo.  The reference interpreter is the same Python (torch 2.13.0 from the venv),
the suite one GEMM in one worker pair.  The easyconfigs and eb_torchperf's wheel come
from a copy of this tree (`EbSite.clone`), which the last test deletes.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import time


REPO = pathlib.Path(__file__).resolve().parents[2]
EASYCONFIGS = REPO / "easyconfigs"
HOOKS_FILE = REPO / "hooks" / "torchperf.py"
LMOD_INIT = "/etc/profile.d/lmod.sh"
TORCH_EC = EASYCONFIGS / "PyTorch-2.13.0-wheel.eb"
TOOL_EC = EASYCONFIGS / "eb_torchperf-0.1.0.eb"
#: Keeps the audit inside each `eb` run to one GEMM and three forked worker pairs (one
#: pair cannot tell two processes of one build apart from two builds: a one-pair A/A read
#: 90 % [88-91 %] in CI, 2026-12-03; its interval now carries that unmeasured difference).
#: The module installs the wheel that the reference (this venv) also holds: one build
#: on both sides, an A/A check by design (different files, one build fingerprint).
TINY_AUDIT = {"EB_TORCHPERF_ONLY": "matmul_fp32", "EB_TORCHPERF_PAIRS": "3",
              "EB_TORCHPERF_REFERENCE": sys.executable, "EB_TORCHPERF_ALLOW_SAME_TORCH": "1"}
EB_TIMEOUT_S = 900
TIMINGS = []


def _eb_script():
    local = pathlib.Path(sys.executable).with_name("eb")
    return str(local) if local.exists() else shutil.which("eb")


def skip_reason():
    """Why the real-eb tests cannot run here, or None."""
    try:
        import easybuild.framework  # noqa: F401
    except ImportError:
        return "easybuild-framework is not installed in this Python (pip install '.[easybuild]')"
    if not _eb_script():
        return "the eb command is not installed"
    probe = subprocess.run(["bash", "-c", 'source %s && test -x "$LMOD_CMD"' % LMOD_INIT],
                           capture_output=True) if os.path.exists(LMOD_INIT) else None
    if probe is None or probe.returncode != 0:
        return "Lmod is not installed (apt-get install lmod)"
    return _pip_check_problem()


def _pip_check_problem():
    """Why the Python that EasyBuild installs with (this venv's, first on PATH in `eb`
    runs) would fail EasyBuild's own sanity check (`pip check` covers its whole site)
    before anything is installed, or None."""
    check = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True,
                           text=True, timeout=120)
    if check.returncode != 0:
        first = (check.stdout.strip() or check.stderr.strip()).splitlines()[:1]
        return ("this test's Python (%s) fails `pip check` before anything is installed "
                "(%s): EasyBuild's sanity check would fail; repair that venv (pip install "
                "the missing package)" % (sys.executable, first[0] if first else "no output"))
    return None


def ec_config(path):
    """The raw parameters of an easyconfig, read with EasyBuild's own parser."""
    from easybuild.framework.easyconfig.parser import EasyConfigParser
    return EasyConfigParser(str(path)).get_config_dict()


def requirements(path, main_package):
    """`name==version` for the main package and every extension of an easyconfig."""
    config = ec_config(path)
    reqs = ["%s==%s" % (main_package, config["version"])] if main_package else []
    return reqs + ["%s==%s" % (ext[0], ext[1]) for ext in config["exts_list"]]


def pip_download(dest, reqs):
    """Fetch wheels with pip (from the local find-links/index on the dev machines)."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(dest)]
                   + list(reqs), check=True, capture_output=True, text=True, timeout=600)


class EbSite:
    """A temporary EasyBuild installation prefix, and `eb` / shell runs inside it."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.prefix = root / "prefix"
        self.sources = root / "sources"
        self.sources.mkdir(parents=True, exist_ok=True)
        self.clone = root / "clone"

    def copy_clone(self):
        """A copy of this tree (no .git, .venv, reports, builds) at `self.clone`."""
        shutil.copytree(REPO, self.clone, symlinks=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "reports", "build", "dist", "*.egg-info", "__pycache__",
            ".pytest_cache"))
        return self.clone

    def installdir(self, name, version):
        return self.prefix / "software" / name / version

    def module_file(self, name, version):
        return self.prefix / "modules" / "all" / name / (version + ".lua")

    def env(self, **policy):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("EB_TORCHPERF_",
                                                                        "EASYBUILD_"))}
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        env.update(TINY_AUDIT, EB_PYTHON=sys.executable,
                   EB_TORCHPERF_DB=str(self.root / "results.sqlite"), **policy)
        return env

    def eb(self, label, *args, **policy):
        """Run `eb` with Lmod set up; returns the CompletedProcess (stdout+stderr in .stdout)."""
        argv = [_eb_script(), "--allow-use-as-root-and-accept-consequences",
                "--prefix=%s" % self.prefix, "--sourcepath=%s" % self.sources,
                "--buildpath=%s" % (self.root / "build"), "--tmpdir=%s" % (self.root / "tmp")]
        return self.shell(label, 'exec "$@"', *(argv + [str(a) for a in args]), **policy)

    def shell(self, label, script, *args, **policy):
        """Run a bash script with Lmod initialised and this prefix's modules in MODULEPATH."""
        setup = "source %s && module use %s && " % (LMOD_INIT, self.prefix / "modules" / "all")
        started = time.monotonic()
        proc = subprocess.run(["bash", "-c", setup + script, "bash"] + list(args),
                              cwd=str(self.root), env=self.env(**policy), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=EB_TIMEOUT_S)
        TIMINGS.append((label, time.monotonic() - started))
        return proc


#: Findings of an audit that could not decide (issue 26): a one-pair A/A, on a busy build
#: host or not, may say so instead of "clean", and fail mode fails it.
MEASUREMENT_RULES = ("host-busy", "measurement-undecided")


def undecided(results) -> bool:
    """The audit (a results JSON document) carries measurement findings: what these
    integration tests may expect of an A/A verdict is then a warning, not "clean"."""
    return any(f["rule_id"] in MEASUREMENT_RULES for f in results.get("findings", []))
