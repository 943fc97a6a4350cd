"""Store an audit without ever failing it: the entry of `audit`, the site check and
fleet gathering.

SQLAlchemy is imported only when a database is configured, so `EB_TORCHPERF_DB=off`
needs none of the database libraries, and a Python without them gets one line (the
results JSON is kept, the exit status unchanged) instead of an internal error.
"""

from typing import Optional, Tuple

from eb_torchperf.store.location import StoreError, database_url

#: Said when the database libraries cannot be imported.
MISSING_LIBRARIES = ("%s: install eb_torchperf's requirements (pip install sqlalchemy "
                     "alembic) or set EB_TORCHPERF_DB=off")


def not_stored(path: str, why: str) -> str:
    """The one line for an audit that was not stored."""
    return ("eb-torchperf: warning: audit not stored in the results database (%s); the "
            "results JSON %s is kept" % (" ".join(str(why).split()), path))


def record_quietly(path: str, context, report_path: str = "",
                   db: Optional[str] = None) -> Tuple[Optional[int], str]:
    """(audit id or None, one line for the user): where `path` was stored, "" when
    storing is off, or what was not stored and why (store.write.record_at)."""
    try:
        url = database_url(db)
    except StoreError as exc:
        return None, not_stored(path, exc)
    if url is None:
        return None, ""
    try:
        from eb_torchperf.store.write import record_at
    except ImportError as exc:
        return None, not_stored(path, MISSING_LIBRARIES % exc)
    return record_at(url, path, context, report_path)


def store_and_compare(results_path: str, context, report_path: str = ""):
    """store.buildcheck.store_and_compare, or None when storing is off (nothing
    imported); a BuildNote with the one line when the libraries are missing."""
    try:
        if database_url() is None:
            return None
    except StoreError as exc:
        return _note(not_stored(results_path, exc))
    try:
        from eb_torchperf.store.buildcheck import store_and_compare as checked
    except ImportError as exc:
        return _note(not_stored(results_path, MISSING_LIBRARIES % exc))
    return checked(results_path, context, report_path)


def _note(line: str):
    """A BuildNote-shaped value without importing buildcheck (it needs SQLAlchemy)."""
    import types
    return types.SimpleNamespace(lines=(line,), regressed=False, fail=False, comparison=None)
