"""The contents manager that serves a notebook with its kernel's metadata (pulsarlab_widgets.kernel_metadata): what it
predicts is what a real kernel reports, a stored lab is served with it and left unchanged on disk, a kernel it cannot
predict is left as stored; the server extension installs it unless the config names another contents manager. The
browser side (no unsaved-changes dot on a lab just opened) is tests/browser/test_unsaved_dot_browser.py."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from traitlets.config import Config

from pulsarlab_widgets import kernel_metadata
from pulsarlab_widgets.kernel_metadata import (
    KernelMetadataContentsManager,
    ipykernel_language_info,
    runs_ipykernel_here,
)

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "labs" / "03-acks-and-the-cursor.ipynb"
KERNEL = "python3"


@pytest.fixture(scope="module")
def kernel_info_reply() -> dict:
    """The kernel_info reply of a real ``python3`` kernel, as JupyterLab receives it when the kernel connects."""
    manager, client = start_new_kernel(kernel_name=KERNEL, startup_timeout=180)
    try:
        return client.kernel_info(reply=True, timeout=60)["content"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.fixture
def contents(tmp_path) -> KernelMetadataContentsManager:
    shutil.copy(LAB, tmp_path / LAB.name)
    return KernelMetadataContentsManager(root_dir=str(tmp_path))


def _get(manager: KernelMetadataContentsManager, path: str, **kwargs) -> dict:
    return asyncio.run(manager.get(path, **kwargs))


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], True),
        ([f"python{sys.version_info[0]}", "-m", "ipykernel_launcher", "-f", "{connection_file}"], True),
        ([sys.executable, "-m", "ipykernel", "-f", "{connection_file}"], True),
        (["/opt/other/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"], False),
        (["python", "-m", "some_other_kernel", "-f", "{connection_file}"], False),
        (["python", "-m"], False),
        ([], False),
    ],
)
def test_only_ipykernel_on_the_servers_interpreter_is_predicted(argv, expected):
    assert runs_ipykernel_here(argv) is expected


@pytest.mark.notebook  # starts a kernel
def test_the_predicted_language_info_is_what_the_kernel_reports(kernel_info_reply):
    assert ipykernel_language_info() == kernel_info_reply["language_info"]


def test_a_lab_is_served_with_its_kernels_metadata_and_stays_unchanged_on_disk(contents, tmp_path):
    stored = (tmp_path / LAB.name).read_bytes()
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    served = _get(contents, LAB.name)["content"]
    assert served["metadata"]["language_info"] == ipykernel_language_info()
    # what JupyterLab's NotebookPanel writes from the kernel's spec
    assert served["metadata"]["kernelspec"] == {"name": KERNEL, "display_name": spec.display_name, "language": "python"}
    plain = asyncio.run(AsyncLargeFileManager(root_dir=str(tmp_path)).get(LAB.name))["content"]
    assert served["cells"] == plain["cells"]
    assert (tmp_path / LAB.name).read_bytes() == stored
    assert json.loads(stored)["metadata"]["language_info"] == {"name": "python"}


def test_without_content_a_notebook_model_is_served_as_is(contents):
    model = _get(contents, LAB.name, content=False)
    assert model["type"] == "notebook" and model["content"] is None


@pytest.mark.parametrize("kernelspec", [None, {"name": "no-such-kernel", "display_name": "Nope", "language": "x"}])
def test_a_kernel_it_cannot_predict_is_left_as_stored(contents, tmp_path, kernelspec):
    nb = json.loads(LAB.read_text())
    nb["metadata"].pop("kernelspec")
    if kernelspec:
        nb["metadata"]["kernelspec"] = kernelspec
    (tmp_path / "other.ipynb").write_text(json.dumps(nb))
    assert _get(contents, "other.ipynb")["content"]["metadata"] == nb["metadata"]


def test_another_interpreters_kernel_gets_its_spec_but_not_a_guessed_language_info(contents, monkeypatch):
    spec = SimpleNamespace(
        argv=["/opt/other/bin/python", "-m", "ipykernel_launcher"], display_name="Other", language="python"
    )
    monkeypatch.setattr(KernelSpecManager, "get_kernel_spec", lambda self, name: spec)
    metadata = _get(contents, LAB.name)["content"]["metadata"]
    assert metadata["kernelspec"] == {"name": KERNEL, "display_name": "Other", "language": "python"}
    assert metadata["language_info"] == {"name": "python"}


@pytest.mark.parametrize("configured", [False, True])
def test_the_extension_installs_the_contents_manager_unless_the_config_names_one(configured):
    config = Config()
    if configured:
        config.ServerApp.contents_manager_class = (
            "jupyter_server.services.contents.filemanager.AsyncFileContentsManager"
        )
    serverapp = SimpleNamespace(config=config, contents_manager_class=AsyncLargeFileManager)
    kernel_metadata._link_jupyter_server_extension(serverapp)
    expected = AsyncLargeFileManager if configured else KernelMetadataContentsManager
    assert serverapp.contents_manager_class is expected


def test_the_extension_is_enabled_for_the_environment():
    """`make install` (and Binder's postBuild) copy the enabling config into the prefix."""
    installed = Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/pulsarlab.json"
    if not installed.exists():
        pytest.fail(f"{installed} is missing: run make install", pytrace=False)
    extensions = json.loads(installed.read_text())["ServerApp"]["jpserver_extensions"]
    assert extensions.get("pulsarlab_widgets.kernel_metadata") is True
    assert kernel_metadata._jupyter_server_extension_points() == [{"module": "pulsarlab_widgets.kernel_metadata"}]
