"""A kernel the Jupyter server lists while it starts, so JupyterLab's poll of ``/api/kernels`` never answers 500.

Models no Pulsar class. jupyter_server's ``MappingKernelManager`` adds a kernel to its table once the process is
launched and sets the kernel's ``last_activity`` only when its own start coroutine resumes; a ``GET /api/kernels``
handled in between reads the unset trait (``ServerKernelManager.last_activity`` has no default), raises a
``TraitError`` that ``list_kernels`` does not catch, and answers 500. JupyterLab polls that URL while it opens a
notebook, so on a busy machine the page's console shows "Failed to load resource ... 500" as a lab starts.
`ListedKernelManager` gives ``last_activity`` a default (the moment it is first read, which the server replaces
with its own start time a moment later). A Jupyter server extension (enabled by
``jupyter/jupyter_server_config.d/pulsarlab.json``) makes it the server's kernel manager class unless the config
names another one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from jupyter_server._tz import utcnow
from jupyter_server.services.kernels.kernelmanager import ServerKernelManager
from traitlets import default

SERVER_DEFAULT = f"{ServerKernelManager.__module__}.{ServerKernelManager.__qualname__}"


class ListedKernelManager(ServerKernelManager):
    """jupyter_server's kernel manager whose ``last_activity`` exists from the moment the kernel is listed."""

    @default("last_activity")
    def _last_activity_default(self) -> datetime:
        return utcnow()


LISTED = f"{ListedKernelManager.__module__}.{ListedKernelManager.__qualname__}"


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pulsarlab_widgets.kernel_listing"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    kernels = getattr(serverapp, "kernel_manager", None)
    if kernels is None or not hasattr(kernels, "kernel_manager_class"):
        return
    if kernels.kernel_manager_class == SERVER_DEFAULT:
        kernels.kernel_manager_class = LISTED  # jupyter_client rebuilds its kernel manager factory on this change
    elif kernels.kernel_manager_class != LISTED:
        serverapp.log.info(
            "pulsarlab: the server's kernels use %s (configured): JupyterLab's kernel list may answer 500 while a "
            "kernel starts",
            kernels.kernel_manager_class,
        )
