"""Databases for the store tests: SQLite in a temporary folder, and a throwaway
PostgreSQL database on the server scripts/test.sh starts (EB_TORCHPERF_TEST_PG_URL).

Without that server the PostgreSQL cases skip with the reason; under CI=true as root
(where scripts/test.sh must have started it) they fail instead.
"""

import copy
import json
import os
import pathlib
import uuid

import pytest

EXAMPLE = (pathlib.Path(__file__).resolve().parents[2] / "reports" / "examples"
           / "debian-python3-torch-vs-wheel-2.13.0.json")
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


def example_document() -> dict:
    """A real results document (Debian's torch 1.13 against the 2.13.0 wheel, with its
    analysis section)."""
    return json.loads(EXAMPLE.read_text())


def variant(created: str, python: str = "/opt/torch/bin/python", scale=None, env=None) -> dict:
    """The example audit as another build: start time, target interpreter, target
    environment, and each named row's relative OPS and interval multiplied by a factor."""
    document = copy.deepcopy(example_document())
    document["created_utc"] = created
    document["target"]["python"] = python
    document["options"]["target_env"] = dict(env or {})
    for row in document["analysis"]["rows"]:
        factor = (scale or {}).get(row["bench"])
        if factor:
            for key in ("relative_ops", "ci_low", "ci_high", "estimate"):
                if row.get(key) is not None:
                    row[key] *= factor
    return document


def write(path: pathlib.Path, document: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return str(path)
