"""Where the sample broker JSON lives: the checkout's ``data/broker-json/``, found from the package, not the cwd.

Models no Pulsar class. The samples are files of the repository, next to the ``pulsarlab`` package in a checkout
and in the editable install `make lab` makes, so a lab finds them whichever folder its kernel starts in. The
``PULSARLAB_SAMPLES`` environment variable names another folder (e.g. for a non-editable install, which carries
no samples).
"""

from __future__ import annotations

import os
from pathlib import Path

SAMPLES_ENV = "PULSARLAB_SAMPLES"
# the repository root is the folder that holds the pulsarlab package
REPO_SAMPLES = Path(__file__).resolve().parents[2] / "data" / "broker-json"


def samples_dir() -> Path:
    """The folder of sample ``stats`` / ``stats-internal`` files (absolute); FileNotFoundError if there is none."""
    configured = os.environ.get(SAMPLES_ENV)
    if configured:
        folder = Path(configured).expanduser().resolve()
        if not folder.is_dir():
            raise FileNotFoundError(f"{SAMPLES_ENV}={configured!r} is not a folder (it should hold the sample JSON)")
        return folder
    if not REPO_SAMPLES.is_dir():
        raise FileNotFoundError(
            f"the sample broker JSON is not at {REPO_SAMPLES}: this pulsarlab is not installed from a checkout. "
            f"Install the checkout in editable mode (`pip install -e .`, as `make lab` does) or set {SAMPLES_ENV} "
            "to a folder of stats / stats-internal files."
        )
    return REPO_SAMPLES
