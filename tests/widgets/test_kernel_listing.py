"""The kernel manager that lets the Jupyter server list a kernel while it starts (pulsarlab_widgets.kernel_listing):
a kernel in the server's table before its start finished is listed with an activity time instead of failing the
whole ``GET /api/kernels``; the server extension installs the class unless the config names another one."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager, ServerKernelManager

from pulsarlab_widgets import kernel_listing
from pulsarlab_widgets.kernel_listing import LISTED, SERVER_DEFAULT, ListedKernelManager


def _server(kernel_manager_class: str | None = None) -> SimpleNamespace:
    kernels = AsyncMappingKernelManager()
    if kernel_manager_class is not None:
        kernels.kernel_manager_class = kernel_manager_class
    logged: list[str] = []
    log = SimpleNamespace(info=lambda msg, *args: logged.append(msg % args))
    return SimpleNamespace(kernel_manager=kernels, log=log, logged=logged)


def test_a_kernel_listed_before_its_start_finished_is_in_the_list(tmp_path):
    """jupyter_client puts the kernel in the table once its process is launched; the server sets its activity time
    only when its start resumes. A listing in between answers, with the kernel in it."""
    server = _server()
    kernel_listing._load_jupyter_server_extension(server)
    kernels = server.kernel_manager
    km = kernels.kernel_manager_factory(connection_file=str(tmp_path / "kernel.json"), parent=kernels)
    assert isinstance(km, ListedKernelManager)
    kernels._kernels["starting"] = km  # what MultiKernelManager._add_kernel_when_ready does before start resumes
    listed = kernels.list_kernels()
    assert [k["id"] for k in listed] == ["starting"]
    assert datetime.fromisoformat(listed[0]["last_activity"].replace("Z", "+00:00")).tzinfo is not None
    kernels._kernels.clear()


def test_the_server_replaces_the_default_activity_time_when_the_start_resumes(tmp_path):
    km = ListedKernelManager(connection_file=str(tmp_path / "kernel.json"))
    first = km.last_activity
    later = datetime(2030, 1, 1, tzinfo=first.tzinfo)
    km.last_activity = later
    assert km.last_activity == later


def test_the_extension_installs_the_class_on_the_servers_default_kernel_manager():
    server = _server()
    assert server.kernel_manager.kernel_manager_class == SERVER_DEFAULT
    kernel_listing._load_jupyter_server_extension(server)
    assert server.kernel_manager.kernel_manager_class == LISTED
    assert server.logged == []


class UsersKernelManager(ServerKernelManager):
    """A kernel manager class a user's Jupyter config names."""


def test_a_configured_kernel_manager_class_is_kept_and_the_log_says_so():
    name = f"{__name__}.{UsersKernelManager.__qualname__}"
    server = _server(name)
    kernel_listing._load_jupyter_server_extension(server)
    assert server.kernel_manager.kernel_manager_class == name
    assert len(server.logged) == 1 and name in server.logged[0]


def test_the_extension_is_enabled_for_the_environment():
    """`make install` (and Binder's postBuild) copy the enabling config into the prefix."""
    installed = Path(sys.prefix) / "etc/jupyter/jupyter_server_config.d/pulsarlab.json"
    if not installed.exists():
        pytest.fail(f"{installed} is missing: run make install", pytrace=False)
    extensions = json.loads(installed.read_text())["ServerApp"]["jpserver_extensions"]
    assert extensions.get("pulsarlab_widgets.kernel_listing") is True
    assert kernel_listing._jupyter_server_extension_points() == [{"module": "pulsarlab_widgets.kernel_listing"}]
