"""A scenario spec: a grid of whole-model runs (versions x subscription types x seeds x workload knobs).

Models no Pulsar class; it describes what `pulsarlab.scenarios.run.run_row` runs: one producer and a group of
consumers on one topic and subscription of a `pulsarlab.Lab`, consumers that nack, crash, join and leave on the
virtual clock. A spec is JSON or YAML (a mapping) or a `ScenarioSpec`; every grid field takes one value or a list
of values, and the grid is the cartesian product of the lists, in field order (``GRID_FIELDS``). ``seeds`` also
takes ``{"count": N}`` (seeds 0 .. N-1) or ``{"start": S, "count": N}``. Unknown fields and bad values raise
`SpecError` naming the field, before any run or Spark job.

Client-side knobs carry the real ``pulsar-client`` parameter names (``receiver_queue_size``,
``negative_ack_redelivery_delay_ms``, ``unacked_messages_timeout_ms`` = the ack timeout, ``max_redeliver_count`` of
``ConsumerDeadLetterPolicy``, ``batching_max_messages``); the workload knobs are the lab's own. Simplifications: one
producer, one subscription; keys are drawn uniformly per message; a consumer acts on each message as it takes it
(crash, else nack, else ack) with the given probabilities.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from pulsarlab.profiles import get_profile

SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
MAX_GRID_ROWS = 1_000_000
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
# maxMessageSize the lab gives a broker when a spec asks for chunked messages without setting it (1 KiB: a chunked
# message of CHUNKED_PAYLOAD_FACTOR x that splits into 3 chunks instead of a 5 MiB default needing 15 MiB payloads)
CHUNKING_MAX_MESSAGE_SIZE = 1024
CHUNKED_PAYLOAD_FACTOR = 2.5


class SpecError(ValueError):
    """A scenario spec is invalid; ``field`` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"scenario spec field {field_name!r}: {message}")
        self.field = field_name


# grid fields: name -> (default, kind); kind is checked by _check_value
GRID_FIELDS: dict[str, tuple[Any, str]] = {
    "versions": ("4.0", "version"),
    "subscription_type": ("Shared", "subscription_type"),
    "seeds": (0, "int"),
    "messages": (1000, "count"),
    "keys": (16, "count"),
    "consumers": (2, "count"),
    "partitions": (0, "count0"),
    "nack_rate": (0.0, "fraction"),
    "max_redeliver_count": (None, "count_or_none"),
    "negative_ack_redelivery_delay_ms": (1000, "ms"),
    "unacked_messages_timeout_ms": (None, "ack_timeout"),
    "consumer_churn_every_ms": (None, "ms_positive_or_none"),
    "crash_rate": (0.0, "fraction"),
    "delayed_fraction": (0.0, "fraction"),
    "delayed_spread_ms": (0, "ms"),
    "chunked_fraction": (0.0, "fraction"),
    "batching": (False, "bool"),
    "batching_max_messages": (100, "count"),
    "receiver_queue_size": (1000, "count"),
    "publish_rate_per_s": (1000, "count"),
    "consume_rate_per_s": (None, "count_or_none"),
}
# fields that are one value for the whole spec
SCALAR_FIELDS: dict[str, tuple[Any, str]] = {
    "name": ("scenario", "name"),
    "broker_config": (None, "mapping"),
    "tick_ms": (10, "count"),
    "max_run_ms": (None, "count_or_none"),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_value(name: str, kind: str, value: Any) -> Any:
    """One checked value of field ``name`` (normalised), or SpecError."""

    def bad(expected: str) -> SpecError:
        return SpecError(name, f"{expected}, got {value!r}")

    if kind == "version":
        if not isinstance(value, str):
            raise bad("must be a version profile name (a string)")
        try:
            return get_profile(value).name
        except (KeyError, ValueError) as exc:
            raise SpecError(name, str(exc).strip("'\"")) from None
    if kind == "subscription_type":
        if value not in SUBSCRIPTION_TYPES:
            raise bad(f"must be one of {', '.join(SUBSCRIPTION_TYPES)}")
        return value
    if kind == "int":
        if not _is_int(value):
            raise bad("must be an int")
        return value
    if kind == "count":
        if not _is_int(value) or value < 1:
            raise bad("must be an int >= 1")
        return value
    if kind == "count0":
        if not _is_int(value) or value < 0:
            raise bad("must be an int >= 0 (0: a non-partitioned topic)")
        return value
    if kind == "count_or_none":
        if value is not None and (not _is_int(value) or value < 1):
            raise bad("must be an int >= 1 or null")
        return value
    if kind == "ms":
        if not _is_int(value) or value < 0:
            raise bad("must be an int >= 0 (milliseconds)")
        return value
    if kind == "ms_positive_or_none":
        if value is not None and (not _is_int(value) or value < 1):
            raise bad("must be an int >= 1 (milliseconds) or null")
        return value
    if kind == "ack_timeout":
        if value is None or value == 0:
            return None
        if not _is_int(value) or value < 1000:
            raise bad("must be null/0 (no ack timeout) or an int >= 1000 (milliseconds), as the Java client requires")
        return value
    if kind == "fraction":
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or not 0 <= value <= 1
        ):
            raise bad("must be a number between 0 and 1")
        return float(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise bad("must be true or false")
        return value
    if kind == "name":
        if not isinstance(value, str) or not value or not set(value) <= NAME_CHARS:
            raise bad("must be a non-empty name of letters, digits, '-', '_' or '.' (it names a Parquet partition)")
        return value
    if kind == "mapping":
        if value is None:
            return {}
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise bad("must be a mapping of broker.conf setting names to values")
        return dict(value)
    raise AssertionError(kind)  # pragma: no cover


def _grid_values(name: str, kind: str, value: Any) -> tuple:
    if name == "seeds" and isinstance(value, Mapping):
        unknown = set(value) - {"start", "count"}
        if unknown or "count" not in value:
            raise SpecError(name, f"takes a list of ints, one int, or {{start: S, count: N}}; got {dict(value)!r}")
        start, count = value.get("start", 0), value["count"]
        if not _is_int(start) or not _is_int(count) or count < 1:
            raise SpecError(name, f"start must be an int and count an int >= 1, got {dict(value)!r}")
        return tuple(range(start, start + count))
    values = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    if not values:
        raise SpecError(name, "is an empty list; give at least one value")
    checked = tuple(_check_value(name, kind, v) for v in values)
    if len(set(checked)) != len(checked):
        raise SpecError(name, f"lists a value twice: {list(values)!r}")
    return checked


@dataclass(frozen=True)
class GridRow:
    """One run of the grid: every grid field with one value, plus the spec's fixed settings."""

    run: int  # the row's number in the grid (0, 1, ...)
    scenario: str
    version: str
    subscription_type: str
    seed: int
    messages: int
    keys: int
    consumers: int
    partitions: int
    nack_rate: float
    max_redeliver_count: int | None
    negative_ack_redelivery_delay_ms: int
    unacked_messages_timeout_ms: int | None
    consumer_churn_every_ms: int | None
    crash_rate: float
    delayed_fraction: float
    delayed_spread_ms: int
    chunked_fraction: float
    batching: bool
    batching_max_messages: int
    receiver_queue_size: int
    publish_rate_per_s: int
    consume_rate_per_s: int | None
    tick_ms: int = 10
    max_run_ms: int | None = None
    broker_config: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The row as plain values (broker_config as JSON text, so a table column holds it)."""
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["broker_config"] = json.dumps(dict(self.broker_config), sort_keys=True)
        return d

    def effective_broker_config(self) -> dict[str, Any]:
        """The overrides the run's Lab gets: the spec's, plus the lab's 1 KiB maxMessageSize for chunked runs."""
        config = dict(self.broker_config)
        if self.chunked_fraction > 0:
            config.setdefault("maxMessageSize", CHUNKING_MAX_MESSAGE_SIZE)
        return config

    def run_limit_ms(self) -> int:
        """Virtual time after which a run stops even if messages are still unsettled."""
        if self.max_run_ms is not None:
            return self.max_run_ms
        publishing = math.ceil(self.messages * 1000 / self.publish_rate_per_s)
        return publishing + self.delayed_spread_ms + 600_000


ROW_FIELDS = [f.name for f in dataclasses.fields(GridRow)]


@dataclass(frozen=True)
class ScenarioSpec:
    """A checked scenario spec: ``grid`` holds each grid field's values, the rest are fixed settings."""

    name: str
    grid: Mapping[str, tuple]
    broker_config: Mapping[str, Any]
    tick_ms: int
    max_run_ms: int | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScenarioSpec":
        """Check a spec mapping (field by field, then across fields) and build the spec."""
        if not isinstance(data, Mapping):
            raise SpecError("<spec>", f"a spec is a mapping of field names to values, got {type(data).__name__}")
        known = list(GRID_FIELDS) + list(SCALAR_FIELDS)
        for key in data:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise SpecError(str(key), f"is not a spec field{hint}; fields: {', '.join(known)}")
        grid = {
            name: _grid_values(name, kind, data.get(name, default)) for name, (default, kind) in GRID_FIELDS.items()
        }
        fixed = {
            name: _check_value(name, kind, data.get(name, default)) for name, (default, kind) in SCALAR_FIELDS.items()
        }
        spec = cls(fixed["name"], grid, fixed["broker_config"], fixed["tick_ms"], fixed["max_run_ms"])
        spec._check_across()
        return spec

    def _check_across(self) -> None:
        g = self.grid
        if any(c > 0 for c in g["chunked_fraction"]) and any(g["batching"]):
            raise SpecError(
                "chunked_fraction",
                "chunked messages need batching off (Pulsar refuses chunking with "
                "batching); set batching: false or chunked_fraction: 0",
            )
        if any(t in ("Exclusive",) for t in g["subscription_type"]) and (
            max(g["consumers"]) > 1 or any(g["consumer_churn_every_ms"]) or any(g["crash_rate"])
        ):
            raise SpecError(
                "subscription_type",
                "an Exclusive subscription takes one consumer: use consumers: 1 "
                "without churn or crashes, or another type",
            )
        for version in g["versions"]:
            try:
                get_profile(version).broker_config(self.broker_config)
            except (KeyError, ValueError, TypeError) as exc:
                raise SpecError("broker_config", str(exc).strip("'\"")) from None
        rows = math.prod(len(v) for v in g.values())
        if rows > MAX_GRID_ROWS:
            raise SpecError("<grid>", f"{rows:,} runs is more than {MAX_GRID_ROWS:,}; shorten a list")

    def __len__(self) -> int:
        return math.prod(len(v) for v in self.grid.values())

    def rows(self) -> Iterator[GridRow]:
        """The grid rows, in order: the last field varies fastest."""
        names = list(GRID_FIELDS)
        for run, values in enumerate(itertools.product(*(self.grid[n] for n in names))):
            v = dict(zip(names, values))
            yield GridRow(
                run=run,
                scenario=self.name,
                version=v.pop("versions"),
                seed=v.pop("seeds"),
                tick_ms=self.tick_ms,
                max_run_ms=self.max_run_ms,
                broker_config=dict(self.broker_config),
                **v,
            )

    def to_dict(self) -> dict[str, Any]:
        """The spec as a mapping ``from_dict`` accepts (lists for the grid fields)."""
        return {
            "name": self.name,
            **{k: list(v) for k, v in self.grid.items()},
            "broker_config": dict(self.broker_config),
            "tick_ms": self.tick_ms,
            "max_run_ms": self.max_run_ms,
        }


def load_spec(source: str | Path | Mapping[str, Any] | ScenarioSpec) -> ScenarioSpec:
    """A checked spec from a `ScenarioSpec`, a mapping, or a ``.json`` / ``.yaml`` / ``.yml`` file."""
    if isinstance(source, ScenarioSpec):
        return source
    if isinstance(source, Mapping):
        return ScenarioSpec.from_dict(source)
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no scenario spec file {str(path)!r}")
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            import yaml  # PyYAML, from the spark extra
        except ImportError:
            raise RuntimeError(f"{path.name} is YAML: install PyYAML (pip install 'pulsarlab[spark]')") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"{path.name}: not valid YAML: {exc}") from None
    elif path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path.name}: not valid JSON: {exc}") from None
    else:
        raise ValueError(f"{path.name}: a scenario spec is a .json, .yaml or .yml file")
    return ScenarioSpec.from_dict(data)


__all__ = ["GRID_FIELDS", "GridRow", "ROW_FIELDS", "SCALAR_FIELDS", "ScenarioSpec", "SpecError", "load_spec"]
