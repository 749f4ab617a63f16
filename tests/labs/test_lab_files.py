"""Files beside the labs are found from the package, whichever folder the kernel starts in."""

from __future__ import annotations

import os

import pytest

from pulsarlab.lab_files import LABS_DIR, lab_file


def test_lab_file_is_absolute_and_independent_of_the_working_folder(tmp_path):
    here = os.getcwd()
    try:
        os.chdir(tmp_path)
        path = lab_file("watch_app.py")
    finally:
        os.chdir(here)
    assert path.is_absolute() and path.parent == LABS_DIR
    assert "pulsar.Client" in path.read_text(encoding="utf-8")


def test_a_missing_lab_file_names_the_folder():
    with pytest.raises(FileNotFoundError, match="not in .*labs"):
        lab_file("no-such-file.py")
