"""The ``pulsarlab`` command line (also ``python -m pulsarlab``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _cmd_conformance(args: argparse.Namespace) -> int:
    from pulsarlab.conformance import UnknownAlgorithm, run_file

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
    from pulsarlab.profiles import DEFAULT_PROFILE, PROFILES

    for name, prof in PROFILES.items():
        mark = " (default)" if name == DEFAULT_PROFILE else ""
        print(
            f"{name}{mark}: consistent hashing {prof.consistent_hashing.value}, sticky ranges "
            f"{prof.sticky_ranges.value}, sticky hash {prof.sticky_hash_mode.value}, keyless key "
            f"{'producerName-sequenceId' if prof.keyless_producer_sequence_key else 'NONE_KEY'}"
        )
    return 0


def _cmd_hash(args: argparse.Namespace) -> int:
    from pulsarlab.hashing import murmur3_32, reduce_hash

    for key in args.keys:
        m = murmur3_32(key)
        print(
            f"{key!r}: murmur3 {m}  3.x slot {m % 65536}  4.x consistent-hashing {reduce_hash(m, 1, 65535)}"
            f"  4.x auto-split/sticky {reduce_hash(m, 0, 65535)}"
        )
    return 0


def _config_value(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from pulsarlab.lab import Lab
    from pulsarlab.serve import serve_forever

    overrides = {}
    for item in args.broker_config:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"--broker-config takes KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        overrides[key] = _config_value(value)
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(message)s")
    try:
        lab = Lab(version=args.version, seed=args.seed, broker_config=overrides)
    except (ValueError, KeyError) as e:
        print(f"pulsarlab serve: {e}", file=sys.stderr)
        return 2

    def ready(server) -> None:
        print(f"pulsarlab serve: profile {lab.version} listening on {server.url} (Ctrl-C stops)", flush=True)

    try:
        serve_forever(lab, args.host, args.port, allow_remote=args.allow_remote,
                      advertised_host=args.advertised_host, on_ready=ready)
    except (PermissionError, OSError, ValueError) as e:
        print(f"pulsarlab serve: {e}", file=sys.stderr)
        return 1
    print("pulsarlab serve: stopped", flush=True)
    return 0


def _cmd_sweep(args: argparse.Namespace) -> int:
    from pulsarlab.scenarios.spec import SpecError
    from pulsarlab.spark.sweep import SweepOutputExists, check_out, load_specs

    try:
        specs = load_specs(args.specs)  # every spec and the output folder checked before Spark starts
        check_out(args.out, args.overwrite)
    except (SpecError, ValueError, FileNotFoundError, RuntimeError, SweepOutputExists) as e:
        print(f"pulsarlab sweep: {e}", file=sys.stderr)
        return 2
    from pulsarlab.spark.session import JavaNotFoundError, get_session
    from pulsarlab.spark.sweep import sweep

    try:
        spark = get_session("pulsarlab-sweep", master=args.master)
    except (JavaNotFoundError, RuntimeError) as e:
        print(f"pulsarlab sweep: {e}", file=sys.stderr)
        return 1
    try:
        metrics = sweep(spark, specs, args.out, overwrite=args.overwrite, partitions=args.partitions,
                        progress=not args.quiet)
    except SweepOutputExists as e:
        print(f"pulsarlab sweep: {e}", file=sys.stderr)
        return 2
    runs = len(metrics)
    print(f"pulsarlab sweep: {runs} run(s) of {', '.join(s.name for s in specs)}: events in {args.out}/events/, "
          f"metrics in {args.out}/metrics/")
    columns = ["scenario", "version", "seed", "published", "acked", "dead_lettered", "duplicates", "out_of_order",
               "max_ack_holes", "md_lag_ms_p99", "blocked_hash_ms_total"]
    if not args.quiet:
        print(metrics[columns].head(args.show).to_string(index=False))
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
    p = sub.add_parser("serve", help="serve a lab broker to real Pulsar clients (Pulsar's binary protocol)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback unless --allow-remote)")
    p.add_argument("--port", type=int, default=6650, help="TCP port (0 picks a free one)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a non-loopback --host (the lab broker has no authentication)")
    p.add_argument("--advertised-host", default=None, help="host name lookups hand to clients")
    p.add_argument("--version", default=None, help="the Pulsar line to model (see `pulsarlab profiles`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                   help="a broker.conf setting, e.g. maxMessageSize=1024 (repeatable)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.set_defaults(func=_cmd_serve)
    p = sub.add_parser("sweep", help="run a scenario spec's grid of whole-model runs on Spark (events + metrics)")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="scenario spec file(s), .json or .yaml")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for events/ and metrics/ (Parquet)")
    p.add_argument("--master", default=None,
                   help="Spark master or sc:// remote (default: $PULSARLAB_SPARK_MASTER, $SPARK_REMOTE, local[*])")
    p.add_argument("--partitions", type=int, default=None, help="Spark tasks to spread the runs over")
    p.add_argument("--overwrite", action="store_true", help="replace a sweep already in DIR")
    p.add_argument("--show", type=int, default=20, help="metrics rows to print (default 20)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no metrics table")
    p.set_defaults(func=_cmd_sweep)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
