"""Readers on other threads during an open write transaction neither fail nor roll the writer back."""

import threading

import pytest
from sqlalchemy import text

from db.store.engine import WRITE_LOCK, open_store


@pytest.mark.parametrize("where", [":memory:", "file"])
def test_reader_during_a_write_transaction_sees_committed_data_and_leaves_the_writer_alone(tmp_path, where):
    engine = open_store(":memory:" if where == ":memory:" else tmp_path / "w.duckdb")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
    inside, read_done, seen, failures = threading.Event(), threading.Event(), [], []

    def writer():  # the write is held open until the reader has read and returned its connection
        try:
            with WRITE_LOCK, engine.begin() as conn:
                conn.execute(text("INSERT INTO t VALUES (1)"))
                inside.set()
                assert read_done.wait(30)
                conn.execute(text("INSERT INTO t VALUES (2)"))
                raise RuntimeError("aborted on purpose")
        except RuntimeError as exc:
            failures.append(str(exc))

    def reader():
        assert inside.wait(30)
        try:
            with engine.connect() as conn:
                seen.append(conn.execute(text("SELECT count(*) FROM t")).scalar())
        finally:
            read_done.set()

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    [t.start() for t in threads]
    [t.join(60) for t in threads]
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT x FROM t")).fetchall()
    engine.dispose()
    # before the fix: the reader failed ("cannot start a transaction within a transaction") and its rollback
    # undid the writer's transaction, so row 2 autocommitted and survived the abort
    assert seen == [0] and failures == ["aborted on purpose"] and rows == []


def test_a_committed_write_is_seen_by_a_later_reader_on_another_thread(tmp_path):
    engine = open_store(tmp_path / "c.duckdb")
    with WRITE_LOCK, engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (x INTEGER)"))
        conn.execute(text("INSERT INTO t VALUES (41), (1)"))
    seen = []

    def read():
        with engine.connect() as conn:
            seen.append(conn.execute(text("SELECT sum(x) FROM t")).scalar())

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(30)
    engine.dispose()
    assert seen == [42]
