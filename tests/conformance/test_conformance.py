"""Every line of every golden file replays on the model (committed copy, and ../shared/golden when present)."""

from __future__ import annotations

import pytest
from golden_files import COMMITTED, SHARED

from pulsarlab.conformance import run_file

COMMITTED_FILES = sorted(p.name for p in COMMITTED.glob("*.jsonl.gz"))


def test_the_committed_copy_holds_every_golden_file():
    assert len(COMMITTED_FILES) == 17
    if SHARED.is_dir():
        assert {p.name + ".gz" for p in SHARED.glob("*.jsonl")} == set(COMMITTED_FILES)


@pytest.mark.parametrize("name", COMMITTED_FILES)
def test_committed_golden_file_conforms(name):
    result = run_file(COMMITTED / name)
    assert result.total > 0
    assert result.ok, f"{result.summary()}\n{result.first_mismatch}"


SHARED_FILES = sorted(p.name for p in SHARED.glob("*.jsonl")) if SHARED.is_dir() else []

if SHARED_FILES:  # ../shared/golden sits beside the project in CI; a bare clone checks the committed copy only

    @pytest.mark.parametrize("name", SHARED_FILES)
    def test_shared_golden_file_conforms(name):
        result = run_file(SHARED / name)
        assert result.ok, f"{result.summary()}\n{result.first_mismatch}"
