"""Databases for the store tests: SQLite in a temporary folder, and a throwaway
PostgreSQL database on the server scripts/test.sh starts (EB_TORCHPERF_TEST_PG_URL).

Without that server the PostgreSQL cases skip with the reason; under CI=true as root
(where scripts/test.sh must have started it) they fail instead.
"""

import os
import uuid

import pytest

PG_ENV = "EB_TORCHPERF_TEST_PG_URL"


def _pg_admin_url() -> str:
    url = os.environ.get(PG_ENV)
    if url:
        return url
    reason = ("no PostgreSQL server: %s is unset (scripts/test.sh starts one as root)" % PG_ENV)
    if os.environ.get("CI") == "true" and os.geteuid() == 0:
        pytest.fail(reason + " under CI=true as root")
    pytest.skip(reason)


@pytest.fixture
def pg_url():
    """A fresh PostgreSQL database (dropped afterwards), as a postgresql+psycopg URL."""
    import sqlalchemy as sa
    from eb_torchperf.store.location import database_url
    admin = sa.create_engine(database_url(_pg_admin_url()), isolation_level="AUTOCOMMIT")
    name = "ebtp_%s" % uuid.uuid4().hex[:12]
    with admin.connect() as conn:
        conn.exec_driver_sql("CREATE DATABASE %s" % name)
    url = admin.url.set(database=name).render_as_string(hide_password=False)
    yield url
    with admin.connect() as conn:
        conn.exec_driver_sql("DROP DATABASE %s WITH (FORCE)" % name)
    admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """Each store test runs against SQLite and against PostgreSQL."""
    if request.param == "sqlite":
        return "sqlite:///%s" % (tmp_path / "results.sqlite")
    return request.getfixturevalue("pg_url")
