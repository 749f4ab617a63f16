"""Where the tests find Pulsar's golden vectors: the committed gzip copy, and the shared folder when present."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).parent
COMMITTED = HERE / "golden"
SHARED = HERE.parent.parent / "shared" / "golden"


def golden_path(name: str) -> Path:
    """The committed copy of a golden file, e.g. ``golden_path("murmur3.jsonl")``."""
    path = COMMITTED / (name if name.endswith(".gz") else name + ".gz")
    if not path.is_file():
        raise FileNotFoundError(f"golden file {path} is missing from the committed copy")
    return path


def golden_lines(name: str) -> list[dict]:
    """Every parsed line of a golden file (from the committed copy)."""
    from pulsarlab.conformance import iter_lines

    return [line for _, line in iter_lines(golden_path(name))]
