"""Set up easybuild-framework for parsing easyconfigs outside `eb`.

EasyBuild's parser needs an initialised configuration (robot path, build options).
Inside `eb` (the hook) it already exists and is left alone; the CLI sets it up once per
process with `set_up_configuration`, honouring the site's EasyBuild configuration
(config files, $EASYBUILD_* variables) except for what parsing must not need:

- `--fetch`: EasyBuild's own way to run without a modules tool (Lmod is not needed
  to read easyconfigs).
- `--allow-use-as-root-and-accept-consequences` only when asked for explicitly
  ($EB_TORCHPERF_LINT_ALLOW_ROOT=1, set by `eb-torchperf lint --allow-root`): easyconfigs
  are Python that EasyBuild's parser executes, and `lint` parses them as the user
  `nobody` when run as root (lint/sandbox.py).
- its temporary and log directories go to a private directory removed at exit.

Importing this module needs EasyBuild; the rest of the package imports it lazily.
"""

import atexit
import contextlib
import io
import os
import shutil
import tempfile
from typing import Iterator, Sequence, Tuple

from easybuild.framework.easyconfig import constants as eb_constants
from easybuild.tools.build_log import EasyBuildError
from easybuild.tools.config import build_option, update_build_option
from easybuild.tools.options import set_up_configuration

from eb_torchperf.errors import ConfigError
from eb_torchperf.lint import collection

#: Set to "1" to let EasyBuild run as root (lint --allow-root; the tests).
ALLOW_ROOT_ENV = "EB_TORCHPERF_LINT_ALLOW_ROOT"
#: EasyBuild prints warnings as "\nWARNING: <msg>\n\n" on stderr (build_log.print_warning).
_WARNING_PREFIX = "WARNING:"


def is_configured() -> bool:
    """True when EasyBuild's build options exist (inside `eb`, or after `ensure_configured`)."""
    return build_option("robot_path", default=None) is not None


def _set_up() -> None:
    """Run EasyBuild's `set_up_configuration` once, quietly, with a private temp dir.

    Raises:
        ConfigError: the site's EasyBuild configuration is invalid (message quoted).
    """
    workdir = tempfile.mkdtemp(prefix="eb-torchperf-lint-")
    atexit.register(shutil.rmtree, workdir, True)
    args = ["--fetch", "--tmpdir", workdir, "--tmp-logdir", workdir]
    if os.geteuid() == 0 and os.environ.get(ALLOW_ROOT_ENV) == "1":
        args.append("--allow-use-as-root-and-accept-consequences")
    previous_tempdir = tempfile.tempdir
    output = io.StringIO()
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            set_up_configuration(args=args, silent=True)
    except EasyBuildError as err:
        raise ConfigError("EasyBuild configuration failed: %s" % one_line(err.msg)) from None
    except SystemExit:
        # EasyBuild's option parser exits on a bad $EASYBUILD_* value or config file.
        raise ConfigError("EasyBuild rejected its configuration (check $EASYBUILD_* and "
                          "config files): %s" % one_line(output.getvalue())) from None
    finally:
        # set_up_configuration points tempfile at its own directory; undo that for the
        # rest of the process.
        tempfile.tempdir = previous_tempdir


def ensure_configured(robot_paths: Sequence[str] = ()) -> Tuple[str, ...]:
    """Initialise EasyBuild once per process and put `robot_paths` first in its robot path.

    Args:
        robot_paths: extra directories searched for dependency and toolchain easyconfigs,
            before the configured robot path (default: the installed easyconfigs).

    Returns:
        The robot path now in effect.

    Raises:
        ConfigError: a robot path is not a directory, or EasyBuild's configuration fails.
    """
    for path in robot_paths:
        if not os.path.isdir(path):
            raise ConfigError("robot path %r is not a directory" % path)
    if not is_configured():
        _set_up()
    current = [p for p in build_option("robot_path") or [] if os.path.isdir(p)]
    extra = [os.path.abspath(p) for p in robot_paths if os.path.abspath(p) not in current]
    # EasyBuild derives its default robot path from sys.path, which misses the
    # collection when easybuild-easyconfigs is installed in a venv (it lands in
    # <venv>/easybuild/easyconfigs): fall back to the installed collection.
    installed = collection.find_collection()
    fallback = [installed] if installed and installed not in current + extra else []
    if extra or fallback or len(current) != len(build_option("robot_path") or []):
        update_build_option("robot_path", extra + current + fallback)
    return tuple(build_option("robot_path") or ())


@contextlib.contextmanager
def target_arch(arch: str) -> Iterator[None]:
    """Parse easyconfigs as if on `arch`: the `ARCH` constant they may test is set to it.

    Easyconfigs choose dependencies and wheels with `ARCH` (e.g. `_torch_wheel_source[ARCH]`,
    `if ARCH == 'aarch64': ...`).  EasyBuild reads the constant from
    `EASYCONFIG_CONSTANTS` at every parse, so it is swapped for the parse and restored.
    The `%(arch)s` template and the toolchain's own CPU detection still see the host.
    """
    value, doc = eb_constants.EASYCONFIG_CONSTANTS["ARCH"]
    if arch == value:
        yield
        return
    eb_constants.EASYCONFIG_CONSTANTS["ARCH"] = (arch, doc)
    try:
        yield
    finally:
        eb_constants.EASYCONFIG_CONSTANTS["ARCH"] = (value, doc)


@contextlib.contextmanager
def captured_output() -> Iterator[io.StringIO]:
    """Collect what EasyBuild prints (warnings, messages) instead of showing it."""
    output = io.StringIO()
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        yield output


def warnings_in(text: str) -> Tuple[str, ...]:
    """The warnings in captured EasyBuild output, one line each, without the prefix."""
    chunks = [chunk.strip() for chunk in text.split("\n\n")]
    return tuple(one_line(chunk[len(_WARNING_PREFIX):]) for chunk in chunks
                 if chunk.startswith(_WARNING_PREFIX))


def one_line(text: str, limit: int = 400) -> str:
    """`text` with whitespace runs collapsed to one space, cut at `limit` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."
