"""Files that ship beside the labs (``labs/`` of the checkout), found from the package, not the kernel's folder.

Models no Pulsar class. Lab 10 shows and runs ``labs/watch_app.py``; a kernel started in another folder (a
JupyterLab opened at the repository root, a test's temporary folder) finds it here all the same.
"""

from __future__ import annotations

from pathlib import Path

LABS_DIR = Path(__file__).resolve().parents[1] / "labs"


def lab_file(name: str) -> Path:
    """The absolute path of ``labs/<name>``; FileNotFoundError naming the folder when it is not there."""
    path = LABS_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"{name} is not in {LABS_DIR}: this pulsarlab is not installed from a checkout")
    return path


__all__ = ["LABS_DIR", "lab_file"]
