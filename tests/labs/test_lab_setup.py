"""A newcomer's set-up: what `make lab` / `make test` install, environment.yml, JupyterLab's settings defaults, the
labs' sample data from any folder, and a lab without Java (a clear message at its Spark cells, the rest runs)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import requires
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from packaging.requirements import Requirement

from pulsarlab.importers import load, samples_dir
from pulsarlab.importers.samples import SAMPLES_ENV

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ARTIFACTS = REPO / ".test-artifacts"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
ENVIRONMENT = yaml.safe_load((REPO / "environment.yml").read_text())
LAB_OVERRIDES = REPO / "jupyter" / "lab-overrides.json"
# enables the Jupyter server extension that serves plotly's widget bundle (pulsarlab_widgets.plotly_server)
SERVER_CONFIG = REPO / "jupyter" / "jupyter_server_config.d" / "pulsarlab.json"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()


def _environment() -> dict[str, str]:
    """environment.yml's packages, conda's and pip's, as normalised name -> the specifier it gives."""
    found = {}
    for dep in ENVIRONMENT["dependencies"]:
        for entry in dep["pip"] if isinstance(dep, dict) else [dep]:
            # conda writes python=3.11 / openjdk=17 for "3.11.*"; requirement syntax wants ==
            req = Requirement(re.sub(r"^([A-Za-z0-9_.\-]+)=(?!=)", r"\1==", entry))
            found[_name(req.name)] = str(req.specifier)
    return found


def _project_requirements() -> list[Requirement]:
    """The requirements `make install` installs: the dependencies and the lab, spark and test extras."""
    listed = PYPROJECT["project"]["dependencies"] + [
        r for extra in ("lab", "spark", "test") for r in PYPROJECT["project"]["optional-dependencies"][extra]
    ]
    return [Requirement(r) for r in listed if _name(r) != "pulsarlab"]


def test_environment_yml_lists_every_requirement_with_its_bounds():
    env = _environment()
    missing = [str(r) for r in _project_requirements() if _name(r.name) not in env]
    assert not missing, f"environment.yml lacks {missing} (pyproject.toml's dependencies and extras)"
    differ = {
        str(r): env[_name(r.name)]
        for r in _project_requirements()
        if set(map(str, r.specifier)) != set(env[_name(r.name)].split(",")) - {""}
    }
    assert not differ, f"environment.yml's bounds differ from pyproject.toml's: {differ}"


def test_environment_yml_has_what_pyspark_connect_installs_and_nothing_else():
    connect = {_name(r) for r in requires("pyspark") or [] if re.search(r"extra\s*==\s*.connect.", r)}
    assert connect, "the installed pyspark declares no `connect` extra"
    env = set(_environment())
    assert connect - env == set(), f"pyspark[connect] needs {sorted(connect - env)}, not in environment.yml"
    expected = {_name(r.name) for r in _project_requirements()} | connect | {"python", "openjdk", "pip"}
    assert env - expected == set(), f"environment.yml lists {sorted(env - expected)}, which pyproject.toml does not"


def test_environment_yml_pins_python_and_java_as_the_makefile_and_spark_need():
    env = _environment()
    assert env["python"] == "==3.11"
    assert env["openjdk"] == "==17"


def _make_dry_run(tmp_path: Path, target: str) -> str:
    done = subprocess.run(["make", "-n", target], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def checkout(tmp_path):
    """The files the Makefile's install rules read, in a folder of their own (nothing is installed: make -n)."""
    if shutil.which("make") is None:
        pytest.fail("`make` is not installed", pytrace=False)
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy(REPO / name, tmp_path / name)
    (tmp_path / "jupyter").mkdir()
    shutil.copy(LAB_OVERRIDES, tmp_path / "jupyter" / LAB_OVERRIDES.name)
    shutil.copytree(SERVER_CONFIG.parent, tmp_path / "jupyter" / SERVER_CONFIG.parent.name)
    return tmp_path


def _pip_installs(plan: str) -> list[str]:
    return re.findall(r'pip install --quiet -e "\.\[([a-z,]+)\]"', plan)


def _fake_venv(checkout: Path, *stamps: str) -> None:
    (checkout / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        python.symlink_to(sys.executable)
    settings = checkout / ".venv/share/jupyter/lab/settings/overrides.d/pulsarlab.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(LAB_OVERRIDES, settings)
    server_config = checkout / ".venv/etc/jupyter/jupyter_server_config.d/pulsarlab.json"
    server_config.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(SERVER_CONFIG, server_config)
    for stamp in stamps:
        (checkout / ".venv" / stamp).touch()


def test_make_lab_installs_only_the_lab_and_spark_extras(checkout):
    plan = _make_dry_run(checkout, "lab")
    assert _pip_installs(plan) == ["lab,spark"]
    assert "jupyter lab --ip 127.0.0.1" in plan
    assert "overrides.d/pulsarlab.json" in plan
    assert ".venv/etc/jupyter/jupyter_server_config.d/pulsarlab.json" in plan


def test_make_test_on_a_fresh_clone_installs_the_test_extra(checkout):
    assert _pip_installs(_make_dry_run(checkout, "test")) == ["lab,spark,test"]


def test_make_test_after_make_lab_installs_the_test_extra(checkout):
    _fake_venv(checkout, ".installed-lab")
    assert _pip_installs(_make_dry_run(checkout, "test")) == ["lab,spark,test"]


def test_make_lab_after_make_test_installs_nothing(checkout):
    _fake_venv(checkout, ".installed-lab", ".installed-test")
    plan = _make_dry_run(checkout, "lab")
    assert _pip_installs(plan) == [] and "jupyter lab" in plan


def test_a_changed_pyproject_reinstalls(checkout):
    _fake_venv(checkout, ".installed-lab", ".installed-test")
    stamp_time = (checkout / ".venv" / ".installed-test").stat().st_mtime
    os.utime(checkout / "pyproject.toml", (stamp_time + 10, stamp_time + 10))
    assert _pip_installs(_make_dry_run(checkout, "lab")) == ["lab,spark"]
    assert _pip_installs(_make_dry_run(checkout, "test")) == ["lab,spark,test"]


def test_lab_overrides_turn_off_jupyterlab_news_and_update_check():
    """The settings `make` installs name real settings of the installed JupyterLab's notification plugin."""
    overrides = json.loads(LAB_OVERRIDES.read_text())
    plugin = overrides["@jupyterlab/apputils-extension:notification"]
    assert plugin == {"fetchNews": "false", "checkForUpdates": False}
    schema_path = Path(sys.prefix) / "share/jupyter/lab/schemas/@jupyterlab/apputils-extension/notification.json"
    properties = json.loads(schema_path.read_text())["properties"]
    assert {"const": "false", "title": "Never"} in properties["fetchNews"]["oneOf"]
    assert properties["checkForUpdates"]["type"] == "boolean"


def test_samples_are_found_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(SAMPLES_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    folder = samples_dir()
    assert folder == (REPO / "data" / "broker-json").resolve() and folder.is_absolute()
    assert load(folder / "ack-holes.stats.json").subscriptions


def test_samples_folder_can_be_named(tmp_path, monkeypatch):
    shutil.copy(REPO / "data/broker-json/shared-healthy.stats.json", tmp_path)
    monkeypatch.setenv(SAMPLES_ENV, str(tmp_path))
    assert samples_dir() == tmp_path.resolve()
    monkeypatch.setenv(SAMPLES_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=f"{SAMPLES_ENV}=.*nowhere.* is not a folder"):
        samples_dir()


def _code_cells(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


@pytest.mark.parametrize("notebook", sorted(LABS.glob("[0-9][0-9]-*.ipynb")), ids=lambda p: p.stem)
def test_a_labs_spark_cells_come_last(notebook):
    """Without Java a lab stops at its first Spark cell, so no cell that needs no Spark may follow it."""
    cells = _code_cells(notebook)
    spark = [i for i, source in enumerate(cells) if "get_session(" in source]
    if not spark:
        return
    after = cells[spark[0] + 1 :]
    defined = set(re.findall(r"^(\w+)\s*=", cells[spark[0]], re.M))
    independent = [s[:80] for s in after if not any(re.search(rf"\b{name}\b", s) for name in defined)]
    assert not independent, (
        f"{notebook.name}: cells after the first Spark cell (cell {spark[0]}) use none of its results, so they "
        f"would not run without Java: {independent}"
    )


@pytest.mark.notebook
def test_lab_without_java_shows_a_clear_message_at_its_spark_cell(tmp_path, monkeypatch):
    """Lab 01 in a kernel that finds no Java: every cell before the Spark cell runs, the Spark cell says why."""
    notebook = LABS / "01-key-shared.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    no_java = tmp_path / "bin"
    no_java.mkdir()
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), str(no_java)]))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    client = NotebookClient(nb, kernel_name="python3", timeout=600, startup_timeout=180,
                            resources={"metadata": {"path": str(LABS)}})  # fmt: skip
    with pytest.raises(CellExecutionError) as raised:
        client.execute()
    ARTIFACTS.mkdir(exist_ok=True)
    nbformat.write(nb, ARTIFACTS / "executed-01-without-java.ipynb")
    code = [c for c in nb.cells if c.cell_type == "code"]
    failed = [i for i, c in enumerate(code) if any(o.output_type == "error" for o in c.outputs)]
    assert failed == [len(code) - 1], f"the cells that failed: {failed} of {len(code)}"
    assert "get_session(" in code[-1].source
    assert all(c.execution_count is not None for c in code), "a cell before the Spark cell did not run"
    error = next(o for o in code[-1].outputs if o.output_type == "error")
    assert error.ename == "JavaNotFoundError"
    shown = ANSI.sub("", "\n".join(error.traceback))
    assert "Spark needs Java 17+" in shown and "Only the Spark cells need Java" in shown
    assert "File " not in shown and "Traceback" not in shown, f"a traceback, not a message:\n{shown}"
    assert "JavaNotFoundError" in str(raised.value)


@pytest.mark.notebook
@pytest.mark.parametrize("stem", ["06-debug-your-cluster", "10-watch-your-app"])
def test_lab_runs_with_its_kernel_in_another_folder(stem, tmp_path, monkeypatch):
    """Lab 06 reads data/broker-json/ through samples_dir(), not ../data, and lab 10 runs labs/watch_app.py through
    lab_file(): a kernel started elsewhere finds both."""
    notebook = LABS / f"{stem}.ipynb"
    nb = nbformat.read(notebook, as_version=4)
    code = "".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "../data" not in code and '"watch_app.py"' not in code.replace('lab_file("watch_app.py")', "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    monkeypatch.delenv(SAMPLES_ENV, raising=False)
    client = NotebookClient(nb, kernel_name="python3", timeout=600, startup_timeout=180,
                            resources={"metadata": {"path": str(tmp_path)}})  # fmt: skip
    try:
        client.execute()
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        nbformat.write(nb, ARTIFACTS / f"executed-{stem[:2]}-elsewhere.ipynb")
    assert list(tmp_path.iterdir()) == [], "the lab wrote into the folder it ran in"
