"""Every lab notebook runs top to bottom in a fresh kernel, and is stored clean (no outputs, no counts).

Labs with exercises run twice: as shipped (every ``answer_N = ...``; every checker says "not answered yet") and
with the solutions of `pulsarlab.exercises.solutions` put in place of those lines (every checker says OK)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from pulsarlab.exercises.check import NOT_ANSWERED
from pulsarlab.exercises.solutions import SOLUTIONS, source

pytestmark = pytest.mark.notebook

REPO = Path(__file__).resolve().parents[2]
LABS = REPO / "labs"
ARTIFACTS = REPO / ".test-artifacts"
NOTEBOOKS = sorted(LABS.glob("*.ipynb"))
KERNEL = "python3"
CELL_TIMEOUT = 900
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SHIPPED_ANSWER = re.compile(r"^(answer_\d+) = \.\.\.$", re.M)

NOTEBOOK_PARAMS = [pytest.param(p, id=p.name) for p in NOTEBOOKS] or [pytest.param(None, id="no-notebooks")]
EXERCISE_PARAMS = [pytest.param(p, id=p.name) for p in NOTEBOOKS if p.stem in SOLUTIONS] or [
    pytest.param(None, id="no-exercises")
]


@pytest.fixture
def kernel_env(monkeypatch):
    """The kernel inherits the test's environment: give it what PySpark needs, as `make` would."""
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    # the kernel imports pulsarlab and widgets from this checkout, not from wherever the package is installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))


def _need(path: Path | None) -> Path:
    if path is None:
        pytest.fail(f"no notebooks in {LABS}")
    return path


def _run(nb: nbformat.NotebookNode, cwd: Path, label: str) -> nbformat.NotebookNode:
    current: dict[str, int] = {}

    def on_cell_start(cell, cell_index):
        current["index"] = cell_index

    client = NotebookClient(
        nb,
        kernel_name=KERNEL,
        timeout=CELL_TIMEOUT,
        startup_timeout=180,
        allow_errors=False,
        resources={"metadata": {"path": str(cwd)}},
        on_cell_start=on_cell_start,
    )
    failure = None
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
        failure = f"{label}: cell {current.get('index', '?')} failed ({type(exc).__name__})\n{ANSI.sub('', str(exc))}"
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        kept = nbformat.from_dict(nb)
        kept.metadata.pop("widgets", None)
        nbformat.write(kept, ARTIFACTS / f"executed-{label}")
    if failure:
        pytest.fail(failure, pytrace=False)
    return nb


def test_labs_has_notebooks():
    assert NOTEBOOKS, f"no notebooks in {LABS}"


def test_python3_kernelspec_is_this_interpreter():
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    assert spec.display_name == "Python 3 (ipykernel)"
    cmd = KernelManager(kernel_name=KERNEL).format_kernel_cmd()
    assert Path(cmd[0]) == Path(sys.executable), (
        f"kernelspec {KERNEL!r} in {spec.resource_dir} starts {cmd[0]}, not {sys.executable}"
    )


def test_kernel_runs_this_interpreter_with_spark_env(kernel_env, tmp_path):
    probe = nbformat.v4.new_notebook()
    probe.cells = [
        nbformat.v4.new_code_cell(
            "import os, sys\n"
            "print(sys.executable)\n"
            "print(os.environ['SPARK_LOCAL_IP'], os.environ['PYSPARK_PYTHON'])\n"
            "print(os.getcwd())"
        )
    ]
    _run(probe, tmp_path, "probe.ipynb")
    lines = probe.cells[0].outputs[0]["text"].splitlines()
    assert lines == [sys.executable, f"127.0.0.1 {sys.executable}", str(tmp_path)]


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_notebook_is_stored_clean(path):
    nb = nbformat.read(_need(path), as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: cells {dirty} carry outputs or execution counts; clear them before committing"
    kernelspec = nb.metadata.get("kernelspec", {})
    assert kernelspec.get("name") == KERNEL, (
        f"{path.name}: metadata.kernelspec.name is {kernelspec.get('name')!r}, expected {KERNEL!r} "
        "(JupyterLab asks for a kernel otherwise)"
    )


def _exercise_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code" and SHIPPED_ANSWER.search(c.source)]


def _check_texts(cells: list[nbformat.NotebookNode]) -> list[str]:
    """What each exercise cell's checker printed (its result is the cell's value)."""
    return [
        "".join(o.get("data", {}).get("text/plain", "") for o in c.outputs if o.output_type == "execute_result")
        for c in cells
    ]


def _ran_clean(nb: nbformat.NotebookNode) -> None:
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert all(c.execution_count for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_notebook_runs_top_to_bottom(path, kernel_env):
    """As shipped: no exception, and every exercise's checker says "not answered yet"."""
    nb = nbformat.read(_need(path), as_version=4)
    assert any(c.cell_type == "code" and c.source.strip() for c in nb.cells), f"{path.name} has no code"
    _run(nb, path.parent, path.name)
    _ran_clean(nb)
    texts = _check_texts(_exercise_cells(nb))
    assert len(texts) == len(SOLUTIONS.get(path.stem, {})), f"{path.name}: exercises and solutions differ"
    wrong = [t for t in texts if not t.startswith(f"{NOT_ANSWERED}: ")]
    assert not wrong, f"{path.name}: checkers that did not wait for an answer: {wrong}"


@pytest.mark.parametrize("path", EXERCISE_PARAMS)
def test_notebook_with_solutions_passes_every_check(path, kernel_env):
    """The solutions put in place of ``answer_N = ...``: the lab still runs top to bottom, every checker says OK."""
    nb = nbformat.read(_need(path), as_version=4)
    cells = _exercise_cells(nb)
    for cell in cells:
        cell.source = SHIPPED_ANSWER.sub(lambda m: source(path.stem, m.group(1)), cell.source)
    assert len(cells) == len(SOLUTIONS[path.stem]) and not any(SHIPPED_ANSWER.search(c.source) for c in cells)
    _run(nb, path.parent, f"solved-{path.name}")
    _ran_clean(nb)
    texts = _check_texts(cells)
    wrong = [t for t in texts if not t.startswith("OK: ")]
    assert not wrong, f"{path.name}: solutions the checkers rejected: {wrong}"
