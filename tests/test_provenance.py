"""Machine and Build declared once (bundle.provenance): every model field stored or said why not; the P/E cores and
the install source stored, listed, shown and exported; a v11 store migrated to v12 with NULL there, shown
"unavailable" (null in the API); a field added to the declaration gets its column without an edit of tables.py."""

from __future__ import annotations

import json

from duckdb_engine import Dialect
from sqlalchemy import MetaData, Table, text
from sqlalchemy.schema import CreateTable

from bundle.provenance import BUILD, MACHINE, NOT_STORED, STORED, UNAVAILABLE, Stored
from bundle.schema import Build, Int32, Machine
from db.ingest.core import ingest_bundle
from db.query.run_bundles import run_bundles
from db.query.runs import list_runs
from db.store.engine import open_store
from db.store.tables import STORE_VERSION, Run, provenance_columns
from tests.bundles import make_bundle
from tests.page_store import open_page, page_store
from tests.store_fixtures import api_client

CORES = {"cpu_p_cores": 16, "cpu_e_cores": 8}
SOURCE = "python=/envs/rc/bin/python"
NEW = ("cpu_p_cores", "cpu_e_cores", "install_source")  # the columns store v12 added


def _bundle(run_id: str, cores: bool) -> bytes:
    base = make_bundle(schema_version=3, run_id=run_id)
    machine, build = dict(base["machine"]), dict(base["build"])
    if cores:
        machine |= CORES
        build["install_source"] = SOURCE
    return json.dumps(base | {"machine": machine, "build": build}).encode()


def test_every_machine_and_build_field_is_stored_or_said_why_not():
    for model, entries in ((Machine, MACHINE), (Build, BUILD)):
        declared = [e.field for e in entries] + [f for m, f in NOT_STORED if m is model]
        assert sorted(declared) == sorted(model.model_fields), model.__name__
    columns = [e.column for e in STORED]
    assert len(set(columns)) == len(columns)  # one column per field


def test_a_bundle_with_p_and_e_cores_is_stored_listed_and_exported(tmp_path):
    engine = open_store(tmp_path / "s.duckdb")
    try:
        ingest_bundle(engine, _bundle("a" * 32, cores=True), "t")
        with engine.connect() as conn:
            row = conn.execute(text("SELECT cpu_p_cores, cpu_e_cores, install_source FROM runs")).one()
        assert tuple(row) == (16, 8, SOURCE)
        listed = list_runs(engine, {}).iloc[0]
        assert (listed["cpu_p_cores"], listed["cpu_e_cores"]) == (16, 8)
        (exported,) = run_bundles(engine, ["a" * 32])
    finally:
        engine.dispose()
    assert {k: exported["machine"][k] for k in CORES} == CORES and exported["build"]["install_source"] == SOURCE
    assert exported["machine"]["name"] == "m3u" and exported["build"]["libraries"] == {}  # JSON decoded


def _v11_store(path) -> None:
    """A store as v11 left it: one run stored then, without the three columns v12 adds."""
    engine = open_store(path)
    try:
        ingest_bundle(engine, _bundle("0" * 32, cores=True), "t")  # the v11 ingest dropped the cores: so do we
        with engine.begin() as conn:
            for column in NEW:
                conn.execute(text(f"ALTER TABLE runs DROP COLUMN {column}"))
            conn.execute(text("UPDATE meta SET value = '11' WHERE key = 'store_version'"))
    finally:
        engine.dispose()


def test_a_v11_store_migrates_with_no_cores_shown_unavailable(tmp_path, monkeypatch):
    assert STORE_VERSION >= 12  # the cores came with v12
    path = tmp_path / "store.duckdb"
    _v11_store(path)

    def fill(engine):
        with engine.connect() as conn:
            version = conn.execute(text("SELECT value FROM meta WHERE key = 'store_version'")).scalar()
            old = conn.execute(text(f"SELECT {', '.join(NEW)} FROM runs")).one()
        assert version == str(STORE_VERSION) and tuple(old) == (None, None, None)
        ingest_bundle(engine, _bundle("1" * 32, cores=True), "t")  # a run stored since keeps them

    page_store(tmp_path, monkeypatch, fill)  # reopens the file: the migration runs here
    at = open_page("runs.py")
    assert not at.exception, [e.value for e in at.exception]
    listed = at.dataframe[0].value.set_index("run_id")
    assert listed.loc["0" * 32, "cpu_p_cores"] == UNAVAILABLE and listed.loc["1" * 32, "cpu_p_cores"] == "16"
    assert listed.loc["0" * 32, "cpu_e_cores"] == UNAVAILABLE and listed.loc["1" * 32, "cpu_e_cores"] == "8"

    for run_id, cores, source in (("0" * 32, (UNAVAILABLE, UNAVAILABLE), None), ("1" * 32, (16, 8), SOURCE)):
        at = open_page("runs.py", {"run_id": run_id})
        machine, build = (json.loads(c.value) for c in at.code[1:3])  # after the run_id
        assert (machine["CPU performance cores (cores)"], machine["CPU efficiency cores (cores)"]) == cores
        assert build["install source"] == source  # absent: not a sweep's, nothing to say

    with api_client(monkeypatch, path, "ci=tok") as client:
        runs = {r["run_id"]: r for r in client.get("/api/v1/runs").json()["runs"]}
    assert (runs["0" * 32]["cpu_p_cores"], runs["0" * 32]["cpu_e_cores"]) == (None, None)  # a number or null
    assert (runs["1" * 32]["cpu_p_cores"], runs["1" * 32]["cpu_e_cores"]) == (16, 8)


class _WithNpu(Machine):
    npu_cores: Int32 | None = None


def test_a_field_added_to_the_declaration_gets_its_column():
    """The runs table's provenance columns are provenance_columns(STORED), and a declared field of a model derived
    from Machine appears in the DDL with its type from the model: a bound below 2**31 is INTEGER."""
    assert [c.name for c in Run.__table__.columns][-len(STORED) :] == [e.column for e in STORED]
    extra = Stored(_WithNpu, "npu_cores", "npu_cores", "NPU cores", "cores", listed=True)
    ddl = str(
        CreateTable(Table("runs_probe", MetaData(), *provenance_columns((*STORED, extra)))).compile(dialect=Dialect())
    )
    assert "\tnpu_cores INTEGER\n" in ddl  # the last column: nullable, as the model's Optional says
    for expected in (
        "cpu_p_cores INTEGER",
        "memory_bytes BIGINT",
        "machine_name VARCHAR NOT NULL",
        "env_json VARCHAR NOT NULL",
        "channel VARCHAR NOT NULL",
        "low_power_mode BOOLEAN",
    ):
        assert expected in ddl, expected
    assert "npu_cores" not in [c.name for c in provenance_columns()]  # the real declaration is untouched
