"""``pulsarlab record`` and ``pulsarlab fork``: a scenario row saved as a timeline, forked from the file into a
branch file; bad input fails with a clear message, exit status 2 and no file written."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import pulsarlab as pl
from pulsarlab.cli import main
from pulsarlab.scenarios.fork import first_divergence

SPEC = {
    "name": "ks",
    "messages": 30,
    "keys": 4,
    "consumers": 2,
    "subscription_type": "Key_Shared",
    "seeds": 3,
    "publish_rate_per_s": 200,
    "receiver_queue_size": 5,
    "negative_ack_redelivery_delay_ms": 100,
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    spec = folder / "spec.json"
    spec.write_text(json.dumps(SPEC))
    out = folder / "run.plt.jsonl.gz"
    assert main(["record", str(spec), "--out", str(out)]) == 0
    return out


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_record_then_fork_from_the_file(recorded: Path, tmp_path: Path, capsys) -> None:
    timeline = pl.load_timeline(recorded)
    assert timeline.inputs["scenario_row"]["seed"] == 3 and len(timeline) > 100
    out = tmp_path / "branch.plt.jsonl.gz"
    code = main(
        [
            "fork",
            str(recorded),
            "--frame",
            "100",
            "--change",
            "setting_changes",
            "--setting",
            "dispatcherMaxReadBatchSize=2",
            "--out",
            str(out),
        ]
    )
    said = capsys.readouterr().out
    assert code == 0 and "dispatcherMaxReadBatchSize = 2 (was 100)" in said and str(out) in said
    branch = pl.load_timeline(out)
    d = first_divergence(timeline, branch)
    assert d is not None and d >= 100 and f"first divergence at frame {d}" in said
    assert first_divergence(timeline[:d], branch[:d]) is None
    assert branch.inputs["fork_changes"][0]["change"]["setting"] == "dispatcherMaxReadBatchSize"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--frame", "-1", "--change", "consumer_joins"], "fork frame -1 is outside the timeline"),
        (["--frame", "100000", "--change", "consumer_joins"], "fork frame 100000 is outside the timeline \\(0\\.\\."),
        (["--frame", "3", "--change", "consumer_crashes"], "unknown change 'consumer_crashes'; changes: "),
        (["--frame", "3", "--change", "version_changes", "--to-version", "9.9"], "unknown Pulsar version profile"),
        (["--frame", "3", "--change", "setting_changes", "--setting", "nope"], "--setting takes NAME=VALUE"),
        (
            ["--frame", "3", "--change", "setting_changes", "--setting", "dispatcherMaxReadBatchSize=many"],
            "takes an int",
        ),
    ],
)
def test_bad_fork_input_fails_clearly_and_writes_nothing(recorded, tmp_path, capsys, extra, message) -> None:
    code = main(["fork", str(recorded), *extra, "--out", str(tmp_path / "b.plt.jsonl.gz")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("pulsarlab fork: ")
    assert re.search(message, err), err
    assert files(tmp_path) == []


def test_fork_of_a_bad_file_fails_clearly_and_writes_nothing(recorded, tmp_path, capsys) -> None:
    cut = tmp_path / "cut.plt.jsonl.gz"
    data = recorded.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    code = main(["fork", str(cut), "--frame", "3", "--change", "consumer_joins", "--out", str(tmp_path / "b.gz")])
    assert code == 2 and "is truncated: its gzip stream ends early" in capsys.readouterr().err
    assert files(tmp_path) == ["cut.plt.jsonl.gz"]


def test_outputs_that_would_lose_something_are_refused_before_any_work(recorded, tmp_path, capsys) -> None:
    kept = tmp_path / "kept.plt.jsonl.gz"
    kept.write_bytes(b"precious")
    args = ["fork", str(recorded), "--frame", "3", "--change", "consumer_joins", "--out"]
    assert main([*args, str(kept)]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err and kept.read_bytes() == b"precious"
    assert main([*args, str(recorded), "--overwrite"]) == 2
    assert "is the timeline being forked" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "missing" / "b.gz")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main([*args, str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert files(tmp_path) == ["kept.plt.jsonl.gz"]


def test_record_refuses_a_row_outside_the_grid(tmp_path, capsys) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    assert main(["record", str(spec), "--row", "1", "--out", str(tmp_path / "r.gz")]) == 2
    assert "--row 1 is outside the spec's grid (0..0)" in capsys.readouterr().err
    assert main(["record", str(tmp_path / "none.json"), "--out", str(tmp_path / "r.gz")]) == 2
    assert "no scenario spec file" in capsys.readouterr().err
    assert files(tmp_path) == ["spec.json"]
