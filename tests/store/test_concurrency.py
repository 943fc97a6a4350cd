"""50 writer processes at once (a fleet finishing together): every audit stored once.

The writers start together on a database that does not exist yet, so they also race
to create its schema; 10 of them store a document another writer stores too.
"""

import multiprocessing

import sqlalchemy as sa

from store_documents import variant
from eb_torchperf.store import engine as engines
from eb_torchperf.store.context import from_env
from eb_torchperf.store.schema import audit_rows, audits
from eb_torchperf.store.write import content_hash, record_document

WRITERS = 50
DISTINCT = 40


def _writer(url, document, start, results):
    start.wait(60)
    try:
        audit_id, new = record_document(engines.opened(url), document,
                                        from_env("fleet", "zen", env={}))
        results.put((audit_id, new, ""))
    except Exception as exc:  # reported to the test, which fails with it
        results.put((None, False, "%s: %s" % (type(exc).__name__, exc)))


def test_fifty_concurrent_writers_store_every_audit_once(db_url):
    documents = [variant("2026-03-01T00:00:%02d+00:00" % (i % DISTINCT)) for i in range(WRITERS)]
    context = multiprocessing.get_context("fork")
    start, results = context.Event(), context.Queue()
    workers = [context.Process(target=_writer, args=(db_url, d, start, results))
               for d in documents]
    for worker in workers:
        worker.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(30)
    assert [error for _, _, error in outcomes if error] == []
    assert sum(new for _, new, _ in outcomes) == DISTINCT
    engine = engines.opened(db_url)
    with engine.connect() as conn:
        hashes = [h for (h,) in conn.execute(sa.select(audits.c.content_hash))]
        row_count = conn.execute(sa.select(sa.func.count()).select_from(audit_rows)).scalar()
    assert sorted(hashes) == sorted({content_hash(d) for d in documents})
    assert row_count == DISTINCT * len(documents[0]["analysis"]["rows"])
    assert len({audit_id for audit_id, _, _ in outcomes}) == DISTINCT
