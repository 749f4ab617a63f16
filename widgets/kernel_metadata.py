"""Notebooks served with the kernel metadata their kernel will report, so a lab just opened is not modified.

Models no Pulsar class. When a notebook's kernel connects, JupyterLab's ``NotebookPanel`` writes
``metadata.kernelspec`` (the kernel's name and its spec's display name and language) and ``metadata.language_info``
(the kernel's info reply) into the notebook; a value that differs from what was read marks the notebook modified,
and its tab shows the unsaved-changes dot before the learner has done anything. The labs are stored
machine-independent (``language_info`` is only ``{"name": "python"}``: the Python version differs between machines),
so `KernelMetadataContentsManager` fills both in as it reads a notebook: the kernelspec from the server's kernel
specs, language_info from ipykernel when the kernel is ipykernel on the server's own interpreter (as the labs'
``python3`` is). A kernel it cannot predict is left as stored. The file is not changed; a save writes what
JupyterLab would have written anyway. A Jupyter server extension (enabled by
``jupyter/jupyter_server_config.d/pulsarlab.json``) makes it the server's contents manager unless the server's
config names another one.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager, NoSuchKernel
from jupyter_core.utils import ensure_async
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

# the interpreter names jupyter_client's KernelManager.format_kernel_cmd replaces with the server's sys.executable
THIS_PYTHON = frozenset({"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])})
IPYKERNEL_MODULES = frozenset({"ipykernel_launcher", "ipykernel"})


def runs_ipykernel_here(argv: list[str]) -> bool:
    """Whether a kernel spec's command starts ipykernel (``-m ipykernel_launcher``) on the server's interpreter."""
    if not argv or (argv[0] not in THIS_PYTHON and argv[0] != sys.executable):
        return False
    return "-m" in argv[:-1] and argv[argv.index("-m") + 1] in IPYKERNEL_MODULES


@functools.cache
def ipykernel_language_info() -> dict[str, Any] | None:
    """The ``language_info`` of ipykernel's kernel_info reply on this interpreter; None without ipykernel."""
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:
        return None
    return dict(IPythonKernel.language_info)


def kernel_metadata(name: str, spec: KernelSpec) -> dict[str, Any]:
    """The notebook metadata JupyterLab writes when a kernel of spec ``name`` connects, as far as it is known before
    the kernel starts (``NotebookPanel._updateSpec`` and ``_updateLanguage``)."""
    metadata: dict[str, Any] = {
        "kernelspec": {"name": name, "display_name": spec.display_name, "language": spec.language}
    }
    language_info = ipykernel_language_info() if runs_ipykernel_here(spec.argv) else None
    if language_info is not None:
        metadata["language_info"] = language_info
    return metadata


class KernelMetadataContentsManager(AsyncLargeFileManager):
    """The Jupyter server's default contents manager; a notebook it reads carries its kernel's metadata."""

    @property
    def kernel_specs(self) -> KernelSpecManager:
        specs = getattr(self.parent, "kernel_spec_manager", None)
        return specs if isinstance(specs, KernelSpecManager) else KernelSpecManager(parent=self)

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        if model["type"] == "notebook" and model["content"] is not None:
            await self.fill_kernel_metadata(model["content"]["metadata"])
        return model

    async def fill_kernel_metadata(self, metadata: dict[str, Any]) -> None:
        """Put what the notebook's kernel will report into ``metadata`` (a notebook without a kernelspec, or whose
        kernel this server does not have, is left alone: JupyterLab asks which kernel to start)."""
        name = (metadata.get("kernelspec") or {}).get("name")
        if not name:
            return
        try:
            spec = await ensure_async(self.kernel_specs.get_kernel_spec(name))
        except NoSuchKernel:
            return
        metadata.update(kernel_metadata(name, spec))


# -- the Jupyter server extension (JupyterLab) -------------------------------------------------------------------
def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "pulsarlab_widgets.kernel_metadata"}]


def _link_jupyter_server_extension(serverapp: Any) -> None:
    # linking runs before the server creates its contents manager; a class the config names is kept
    if "contents_manager_class" not in serverapp.config.get("ServerApp", {}):
        serverapp.contents_manager_class = KernelMetadataContentsManager


def _load_jupyter_server_extension(serverapp: Any) -> None:
    manager = type(serverapp.contents_manager)
    if issubclass(manager, KernelMetadataContentsManager):
        serverapp.log.info("pulsarlab: notebooks open with their kernel's metadata (no unsaved-changes dot)")
    else:
        serverapp.log.warning(
            "pulsarlab: the server's contents manager is %s.%s (configured), not %s: a notebook just opened may show "
            "as modified once its kernel connects",
            manager.__module__,
            manager.__qualname__,
            KernelMetadataContentsManager.__qualname__,
        )


__all__ = ["KernelMetadataContentsManager", "ipykernel_language_info", "kernel_metadata", "runs_ipykernel_here"]
