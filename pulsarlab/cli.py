"""The ``pulsarlab`` command line (also ``python -m pulsarlab``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _cmd_conformance(args: argparse.Namespace) -> int:
    from .conformance import UnknownAlgorithm, run_file

    status = 0
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            print(f"{name}: no such file", file=sys.stderr)
            status = 1
            continue
        try:
            result = run_file(path)
        except (UnknownAlgorithm, ValueError) as exc:
            print(f"{path.name}: {exc}", file=sys.stderr)
            status = 1
            continue
        print(result.summary())
        if not result.ok:
            status = 1
            if result.first_mismatch:
                print(f"  first mismatch: {result.first_mismatch}")
            elif result.total == 0:
                print("  the file holds no scenarios")
    return status


def _cmd_profiles(args: argparse.Namespace) -> int:
    from .profiles import DEFAULT_PROFILE, PROFILES

    for name, prof in PROFILES.items():
        mark = " (default)" if name == DEFAULT_PROFILE else ""
        print(
            f"{name}{mark}: consistent hashing {prof.consistent_hashing.value}, sticky ranges "
            f"{prof.sticky_ranges.value}, sticky hash {prof.sticky_hash_mode.value}, keyless key "
            f"{'producerName-sequenceId' if prof.keyless_producer_sequence_key else 'NONE_KEY'}"
        )
    return 0


def _cmd_hash(args: argparse.Namespace) -> int:
    from .hashing import murmur3_32, reduce_hash

    for key in args.keys:
        m = murmur3_32(key)
        print(
            f"{key!r}: murmur3 {m}  3.x slot {m % 65536}  4.x consistent-hashing {reduce_hash(m, 1, 65535)}"
            f"  4.x auto-split/sticky {reduce_hash(m, 0, 65535)}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsarlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("conformance", help="replay golden-vector files against the model")
    p.add_argument("files", nargs="+", metavar="FILE.jsonl")
    p.set_defaults(func=_cmd_conformance)
    p = sub.add_parser("profiles", help="list the modelled Pulsar version profiles")
    p.set_defaults(func=_cmd_profiles)
    p = sub.add_parser("hash", help="show Pulsar's hashes of sticky keys")
    p.add_argument("keys", nargs="+")
    p.set_defaults(func=_cmd_hash)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
