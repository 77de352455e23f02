"""Sweep inputs without running anything: --build specs parsed and refused with the argument named, the rotated
schedule with A/A slots, and environment reuse keyed by the spec (a second sweep creates nothing)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from collector.errors import CollectorError
from collector.sweep import envs
from collector.sweep.schedule import schedule
from collector.sweep.spec import parse_spec, parse_specs

TEST_CPU = "https://download.pytorch.org/whl/test/cpu"


def test_spec_forms():
    plain = parse_spec("torch==2.14.1")
    assert plain.requirements == ("torch==2.14.1",) and plain.install_source == "https://pypi.org/simple"
    rc = parse_spec(f"--pre torch==2.15.0 --index-url {TEST_CPU}")
    assert rc.pip_options == ("--pre", "--index-url", TEST_CPU) and rc.index_url == TEST_CPU and rc.prerelease
    assert parse_spec(f"torch==2.15.0 -i {TEST_CPU}").index_url == TEST_CPU
    own = parse_spec(f"python={sys.executable} --channel rc")
    assert own.python == sys.executable and own.channel == "rc" and own.install_source == f"python={sys.executable}"
    local = parse_spec("torch==2.13.0+cpu --find-links /opt/wheels")
    assert local.install_index is None and local.install_source == "--find-links /opt/wheels"
    assert rc.key() == parse_spec(f"--pre torch==2.15.0 --index-url {TEST_CPU}").key() != plain.key()


@pytest.mark.parametrize(
    "text,rule",
    [
        ("", "is empty"),
        ("numpy==2.0", "exactly one torch requirement"),
        ("torch==2.14.1 torch==2.15.0", "exactly one torch requirement"),
        ("torch==2.14.1 --upgrade-strategy eager", "unknown option '--upgrade-strategy'"),
        ("torch==2.14.1 --index-url", "--index-url needs a value"),
        ("torch===", "is not a requirement pip understands"),
        ("torch==2.14.1 --channel beta", "--channel must be one of"),
        ("python=/no/such/python", "no executable file there"),
        (f"python={sys.executable} torch==2.14.1", "takes no requirement"),
        ("torch=='2.14", "cannot be split"),
    ],
)
def test_bad_specs_name_the_argument(text, rule):
    with pytest.raises(CollectorError) as err:
        parse_spec(text)
    assert str(err.value).startswith(f"--build {text!r}: ") and rule in str(err.value)


def test_fewer_than_two_and_named_twice():
    with pytest.raises(CollectorError, match="at least two builds"):
        parse_specs(["torch==2.14.1"])
    with pytest.raises(CollectorError, match="named twice"):
        parse_specs(["torch==2.14.1", "torch==2.14.1"])
    link = Path(sys.executable).parent / "python"
    if link.exists() and str(link) != sys.executable:
        with pytest.raises(CollectorError, match="named twice"):  # two paths to one interpreter
            parse_specs([f"python={sys.executable}", f"python={link}"])


def test_two_venvs_of_one_python_are_two_builds(tmp_path):
    # venvs link bin/python to the interpreter they were made from: the same real file for both
    pythons = []
    for name in ("env-2.14", "env-2.15"):
        (tmp_path / name / "bin").mkdir(parents=True)
        (tmp_path / name / "pyvenv.cfg").write_text("home = /usr/bin\n")
        (tmp_path / name / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
        pythons.append(tmp_path / name / "bin" / "python")
    specs = parse_specs([f"python={p}" for p in pythons])
    assert [s.identity() for s in specs] == [("python", str(tmp_path / n)) for n in ("env-2.14", "env-2.15")]
    with pytest.raises(CollectorError, match="named twice"):
        parse_specs([f"python={pythons[0]}", f"python={pythons[0].parent / '..' / 'bin' / 'python'}"])


def test_rounds_rotate_and_aa_adds_the_baseline_twice():
    slots = schedule([0, 1, 2], rounds=4, aa=True)
    by_round = {}
    for s in slots:
        by_round.setdefault(s.round, []).append((s.build, s.aa))
    assert by_round[1] == [(0, 0), (1, 0), (2, 0), (0, 1)]
    assert by_round[2] == [(1, 0), (2, 0), (0, 1), (0, 0)]
    assert by_round[4] == [(0, 1), (0, 0), (1, 0), (2, 0)]
    # over len(lineup) rounds every slot takes every position once
    for who in [(0, 0), (1, 0), (2, 0), (0, 1)]:
        assert sorted(s.position for s in slots if (s.build, s.aa) == who) == [1, 2, 3, 4]
    assert [s.position for s in slots if s.round == 3] == [1, 2, 3, 4]
    assert len({s.key for s in slots}) == len(slots) == 16
    assert [(s.build, s.aa) for s in schedule([0, 2], rounds=2, aa=False)] == [(0, 0), (2, 0), (2, 0), (0, 0)]


def test_a_ready_environment_is_reused_and_nothing_is_created(tmp_path, monkeypatch):
    spec = parse_spec("--pre torch==2.15.0 --index-url https://download.pytorch.org/whl/test/cpu")
    env_dir = tmp_path / spec.key()
    (env_dir / "bin").mkdir(parents=True)
    (env_dir / "bin" / "python").write_text("")
    (env_dir / envs.READY).write_text("{}")
    seen = []
    monkeypatch.setattr(envs, "probe", lambda python, s, i, created=False: seen.append((python, created)) or "ok")
    monkeypatch.setattr(envs.Installer, "_run", lambda *a: pytest.fail("a reused environment must not be rebuilt"))
    assert envs.Installer(tmp_path).ensure(spec, 1) == "ok"
    assert seen == [(str(env_dir / "bin" / "python"), False)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [spec.key()]


def test_runtime_requirements_leave_torch_to_the_build():
    reqs = envs.runtime_requirements()
    assert reqs and not [r for r in reqs if r.lower().startswith("torch")] and "pydantic>=2.10" in reqs
