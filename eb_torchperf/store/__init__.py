"""The results database: every audit stored, regressions between builds, a history.

- `location`: where the database is (EB_TORCHPERF_DB; SQLite under the user's data
  folder by default; a PostgreSQL URL for a site).
- `schema`: tables (SQLAlchemy Core) and the versioned migrations (Alembic operations).
- `engine`: opening it for many concurrent writers (SQLite WAL, busy timeout, retries).
- `context`: the build, toolchain and node type of an audit.
- `write`: storing results documents as given (idempotent by content hash), imports.
- `query`: history and stored rows; `regress`: each build against the previous one.
- `buildcheck`: store + compare after an unattended audit (hook, sanity-check, CLI).
- `site`: the static HTML history.
See docs/database.md.
"""
