"""The `pulsarlab` command and `python -m pulsarlab`: profiles, hash and conformance, with clear failures."""

from __future__ import annotations

import gzip
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pulsarlab.profiles import DEFAULT_PROFILE, PROFILES

GOLDEN_MURMUR3 = Path(__file__).resolve().parents[1] / "golden" / "murmur3.jsonl.gz"


def _console_script() -> list[str]:
    script = shutil.which("pulsarlab", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.fail(f"the `pulsarlab` console script is not installed next to {sys.executable}; run `make install`")
    return [script]


ENTRY_POINTS = {"script": _console_script, "module": lambda: [sys.executable, "-m", "pulsarlab"]}


@pytest.fixture(params=sorted(ENTRY_POINTS))
def pulsarlab(request):
    prefix = ENTRY_POINTS[request.param]()

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=300)

    return run


@pytest.fixture
def murmur3_copy(tmp_path) -> tuple[Path, list[str]]:
    """A plain .jsonl copy of the committed murmur3 golden file, and its non-empty lines."""
    with gzip.open(GOLDEN_MURMUR3, "rt", encoding="utf-8") as fh:
        lines = [line for line in fh.read().splitlines() if line.strip()]
    path = tmp_path / "murmur3.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


def test_profiles_lists_every_profile_and_the_default(pulsarlab):
    res = pulsarlab("profiles")
    assert res.returncode == 0, res.stderr
    names = [line.split(":")[0].removesuffix(" (default)") for line in res.stdout.splitlines()]
    assert names == list(PROFILES)
    defaults = [line for line in res.stdout.splitlines() if "(default)" in line]
    assert len(defaults) == 1 and defaults[0].startswith(f"{DEFAULT_PROFILE} (default):")


def test_hash_shows_pulsars_masked_murmur3(pulsarlab):
    res = pulsarlab("hash", "Order-3459134", "key-0")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert len(lines) == 2
    assert "Order-3459134" in lines[0] and "964695987" in lines[0]
    assert "key-0" in lines[1] and "1664612543" in lines[1]


def test_conformance_on_the_murmur3_recording(pulsarlab, murmur3_copy):
    path, lines = murmur3_copy
    res = pulsarlab("conformance", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    n = len(lines)
    assert n > 900
    assert f"conformance: {n}/{n} scenarios match" in res.stdout


def test_conformance_reads_the_gzip_copy(pulsarlab, murmur3_copy):
    n = len(murmur3_copy[1])
    res = pulsarlab("conformance", str(GOLDEN_MURMUR3))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"conformance: {n}/{n} scenarios match" in res.stdout


def test_conformance_reports_the_first_mismatch(pulsarlab, murmur3_copy):
    path, lines = murmur3_copy
    target = 7
    record = json.loads(lines[target])
    good = record["murmur3_32_masked"]
    record["murmur3_32_masked"] = good + 1
    lines[target] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    res = pulsarlab("conformance", str(path))
    n = len(lines)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"conformance: {n - 1}/{n} scenarios match" in res.stdout
    assert "first mismatch" in res.stdout
    assert f"murmur3.jsonl:{target + 1}" in res.stdout
    assert "murmur3_32_masked" in res.stdout
    assert str(good + 1) in res.stdout and str(good) in res.stdout


def test_conformance_on_a_missing_file_fails_naming_it(pulsarlab, tmp_path):
    missing = tmp_path / "no-such-golden.jsonl"
    res = pulsarlab("conformance", str(missing))
    assert res.returncode == 1
    assert "no-such-golden.jsonl" in res.stderr
    assert "Traceback" not in res.stderr


def test_conformance_on_a_non_json_file_fails_naming_it(pulsarlab, tmp_path):
    bad = tmp_path / "not-json.jsonl"
    bad.write_text('{"algorithm": "Murmur3_32Hash"\nthis is not json\n', encoding="utf-8")
    res = pulsarlab("conformance", str(bad))
    assert res.returncode == 1
    assert "not-json.jsonl" in res.stderr
    assert "JSON" in res.stderr
    assert "Traceback" not in res.stderr


def test_conformance_fails_when_any_file_fails(pulsarlab, murmur3_copy, tmp_path):
    path, _ = murmur3_copy
    res = pulsarlab("conformance", str(path), str(tmp_path / "missing.jsonl"))
    assert res.returncode == 1
    assert "scenarios match" in res.stdout
    assert "missing.jsonl" in res.stderr


def _declared_in_source() -> dict[str, str]:
    """Event kinds declared by an ``event_type("name", ...)`` call anywhere in the package -> the declaring file."""
    import ast

    root = Path(__file__).resolve().parents[2] / "pulsarlab"
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "event_type" and node.args:
                found[node.args[0].value] = str(path.relative_to(root.parent))
    return found


def test_events_lists_every_kind_declared_in_the_catalogue(pulsarlab):
    importlib.import_module("pulsarlab.event_catalogue")  # declares every kind in this process too
    from pulsarlab.events import get_event_type

    res = pulsarlab("events", "--json")
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)
    declared = _declared_in_source()
    assert {k["kind"] for k in listed} == set(declared)
    assert all(path.startswith("pulsarlab/event_catalogue/") for path in declared.values()), declared
    assert [k["code"] for k in listed] == list(range(len(listed)))
    for k in listed:
        et = get_event_type(k["kind"])
        # a code is the kind's place in its process's order of declaration: compare it in the listing only
        assert (k["template"], k["rule"]) == (et.template, et.rule)
        assert [(f["name"], f["type"]) for f in k["fields"]] == list(et.fields)
        assert declared[k["kind"]] == f"pulsarlab/event_catalogue/{k['area']}.py"
    text = pulsarlab("events")
    assert text.returncode == 0, text.stderr
    for k in listed:
        fields = " ".join(f"{f['name']}:{f['type']}" for f in k["fields"])
        assert f"{k['kind']}  [{k['area']}]  {fields}\n    {k['template']}\n" in text.stdout
    assert text.stdout.splitlines()[-1].startswith(f"{len(listed)} event kinds in ")


def test_events_names_an_unknown_kind(pulsarlab):
    one = pulsarlab("events", "ledger_rolled")
    assert one.returncode == 0 and one.stdout.startswith("ledger_rolled  [managed_ledger]  topic:str ")
    res = pulsarlab("events", "ledger_rolled", "no_such_kind")
    assert res.returncode == 1 and "no_such_kind" in res.stderr and res.stdout == ""


@pytest.mark.parametrize(
    "first",
    [
        "pulsarlab.event_catalogue.cursor",
        "pulsarlab.scenarios.key_shared",
        "pulsarlab.managed_ledger.cursor",
        "pulsarlab.events",
    ],
)
def test_type_codes_do_not_depend_on_what_is_imported_first(first):
    """Codes are stored in the log and hashed by its digest: they must be the catalogue's order in every process."""
    code = (
        f"import {first}, pulsarlab.event_catalogue as c, pulsarlab.events as e; "
        "print([t.name for t in e._BY_CODE] == [et.name for _a, et in c.catalogue()], len(e._BY_CODE))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    from pulsarlab.event_catalogue import catalogue

    assert out == ["True", str(len(catalogue()))]
