"""Where an audit's results go: the default run name, and the checks of an explicit
`--out` made before anything is measured (workflows.request.validate)."""

import datetime
import pathlib
import tempfile

from eb_torchperf.errors import ConfigError, WriteError
from eb_torchperf.records import safe_write

DEFAULT_OUT_DIR = "reports"


def default_out_path() -> str:
    """reports/torchperf-<UTC time>.json relative to the working directory, made
    unique with "-2", "-3", ... (claimed with O_EXCL: two audits started in the same
    second in one folder get two names; the reports' names are free too).  The claimed
    file is empty until results are saved (the caller removes it if none are)."""
    from eb_torchperf.present.formats import SUFFIXES
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    siblings = list(SUFFIXES.values()) + [".explain.json"]
    return str(safe_write.claim_new(DEFAULT_OUT_DIR, "torchperf-" + stamp, ".json", siblings))


def check_out_name(path: pathlib.Path) -> None:
    """Refuse a results path that a report of the same stem would overwrite.

    Raises:
        ConfigError: `--out` ends in a report suffix (.md, .html), is an explain
            document's name, or holds a control character (a newline).
    """
    if any(ord(c) < 32 or ord(c) == 127 for c in str(path)):
        raise ConfigError("--out %r: a file name with a control character (a newline, a "
                          "tab) is refused; the results path is printed as one line" % str(path))
    if path.suffix in (".md", ".html", ".htm") or path.name.endswith(".explain.json"):
        raise ConfigError("--out %s: the results JSON needs a name of its own (the reports "
                          "use <name>.md and <name>.html beside it); use e.g. --out %s"
                          % (path, path.with_suffix(".json").name.replace(".explain", "")))


def check_writable(path: pathlib.Path) -> None:
    """Make sure the results file can be written, before anything is measured.

    The probe is a temporary file in the folder: the path itself is not opened (a FIFO
    would block, a link to nothing would create its target).

    Raises:
        ConfigError: a folder, a device, FIFO or socket, or a folder that cannot be
            created or written.
    """
    if path.is_dir():
        raise ConfigError("cannot write results to %s: it is a folder" % path)
    try:
        safe_write.refuse_special(path)
    except WriteError as exc:
        raise ConfigError(str(exc)) from None
    try:
        safe_write.make_folder(path.parent)
        with tempfile.TemporaryFile(dir=str(path.parent)):
            pass
    except WriteError as exc:
        raise ConfigError("cannot write results to %s: %s" % (path, exc)) from None
    except OSError as exc:
        raise ConfigError("cannot write results to %s: %s" % (path, exc.strerror or exc)) from None
