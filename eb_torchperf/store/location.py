"""Where the results database is: EB_TORCHPERF_DB, else SQLite under the user's data dir.

EB_TORCHPERF_DB accepts
  a path          an SQLite file (created, with its folder, on first use)
  an URL          `sqlite:///PATH`, `postgresql://USER@HOST/DB` (psycopg 3 is used:
                  `postgresql+psycopg://`), any other SQLAlchemy URL
  off / none      store nothing
  (empty)         the default, as when unset
The default is `$XDG_DATA_HOME/eb_torchperf/results.sqlite` (XDG_DATA_HOME defaults
to ~/.local/share, and a relative XDG_DATA_HOME is ignored, as the specification says:
https://specifications.freedesktop.org/basedir-spec/latest/).
No SQLAlchemy import here, so the CLI can say where the database is cheaply.
"""

import os
from typing import Mapping, Optional

from eb_torchperf.errors import TorchPerfError

#: Environment variable naming the database (path or URL).
ENV_DB = "EB_TORCHPERF_DB"
#: Values of ENV_DB that turn storing off.
OFF = ("off", "none")
#: File name of the default SQLite database.
DEFAULT_NAME = os.path.join("eb_torchperf", "results.sqlite")


class StoreError(TorchPerfError):
    """The results database cannot be opened, read or written; the message says which
    database (password hidden) and why."""


def default_path(env: Optional[Mapping[str, str]] = None) -> str:
    """`$XDG_DATA_HOME/eb_torchperf/results.sqlite` (~/.local/share when unset, empty
    or relative).

    Raises:
        StoreError: XDG_DATA_HOME is unset and the home folder does not exist (a job
            with HOME=/nonexistent): nothing is created outside a home that is there.
    """
    env = os.environ if env is None else env
    if os.path.isabs(env.get("XDG_DATA_HOME") or ""):
        return os.path.join(env["XDG_DATA_HOME"], DEFAULT_NAME)
    home = os.path.expanduser("~")
    if not os.path.isdir(home):
        raise StoreError("the default results database is under the home folder %s, which "
                         "does not exist; set EB_TORCHPERF_DB (a path, a URL, or off)" % home)
    return os.path.join(home, ".local", "share", DEFAULT_NAME)


def database_url(value: Optional[str] = None,
                 env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The SQLAlchemy URL of the database (None: storing is off).

    Args:
        value: a path or URL given on the command line (--db); else ENV_DB; else the
            default SQLite file.
    """
    env = os.environ if env is None else env
    if value is None:
        value = env.get(ENV_DB)
    value = (value or "").strip()
    if not value:  # unset or set empty (`EB_TORCHPERF_DB= cmd`): the default
        return "sqlite:///" + default_path(env)
    if value.lower() in OFF:
        return None
    if "://" not in value:
        return "sqlite:///" + os.path.abspath(os.path.expanduser(value))
    for plain in ("postgresql://", "postgres://"):
        if value.startswith(plain):
            return "postgresql+psycopg://" + value[len(plain):]
    return value


def shown(url: str) -> str:
    """`url` for messages, its password replaced by ***."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if at and ":" in credentials:
        credentials = credentials.split(":", 1)[0] + ":***"
    return scheme + sep + credentials + at + host
