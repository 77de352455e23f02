"""Finding a user's model: local directories, hub ids in the local cache only, and the error when missing."""

import socket

import pytest

from collector.errors import CollectorError
from collector.models.locate import locate, specs_from_env


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt fails the test: a lookup must never reach for the network."""

    def refuse(*args, **kwargs):
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _fake_snapshot(cache, hub_id: str, files: dict) -> None:
    """The on-disk layout huggingface_hub's cache uses: models--org--name/{refs/main, snapshots/<hash>/…}."""
    repo = cache / ("models--" + hub_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0123abc")
    for name, text in files.items():
        path = repo / "snapshots" / "0123abc" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_missing_directory_names_the_path(no_network, tmp_path):
    found = locate(str(tmp_path / "nope"), "MPSBENCH_X")
    assert found.path is None
    with pytest.raises(CollectorError) as err:
        found.require()
    assert str(err.value).startswith(f"MPSBENCH_X='{tmp_path / 'nope'}': no such local directory")
    assert "Hugging Face cache" not in str(err.value)  # an absolute path is not a hub id


def test_hub_id_not_in_cache_names_the_cache(no_network, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(CollectorError) as err:
        locate("org/model", "MPSBENCH_X").require()
    assert str(err.value).startswith(f"MPSBENCH_X='org/model': not in the local Hugging Face cache ({tmp_path})")


def test_hub_id_found_in_cache(no_network, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    _fake_snapshot(tmp_path, "org/pipe", {"vae/config.json": "{}", "model_index.json": "{}"})
    found = locate("org/pipe", "MPSBENCH_X", ("", "vae"))
    assert found.name == "org/pipe" and found.path == tmp_path / "models--org--pipe" / "snapshots" / "0123abc" / "vae"


def test_directory_without_config_lists_what_was_looked_for(tmp_path):
    found = locate(str(tmp_path), "MPSBENCH_X", ("", "vae"))
    assert found.path is None and found.name == tmp_path.name
    assert f"{tmp_path}/config.json, {tmp_path}/vae/config.json" in found.problem


def test_specs_from_env(monkeypatch):
    monkeypatch.setenv("MPSBENCH_X", " a/b , /models/c ,")
    assert specs_from_env("MPSBENCH_X") == ["a/b", "/models/c"]
    monkeypatch.delenv("MPSBENCH_X")
    assert specs_from_env("MPSBENCH_X") == []
