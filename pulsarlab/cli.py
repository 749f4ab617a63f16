"""The ``pulsarlab`` command line (also ``python -m pulsarlab``)."""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import sys
from pathlib import Path

# the events `pulsarlab serve` keeps in memory by default (58 bytes each): live views and stats read the newest ones
DEFAULT_EVENT_WINDOW = 262_144


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


def _switch_text(value: object) -> str:
    return str(value.value) if isinstance(value, enum.Enum) else str(value)


def _cmd_profiles(args: argparse.Namespace) -> int:
    """One line per profile with every switch and broker.conf default that is not the same in all profiles."""
    from pulsarlab.profiles import DEFAULT_PROFILE, PROFILES

    rows = {
        name: {
            **{
                f.name: getattr(prof, f.name)
                for f in dataclasses.fields(prof)
                if f.name not in ("name", "broker_defaults")
            },
            **prof.broker_config(),
            # decided by the line, not by a switch of its own (KeySharedDispatcher._uses_classic)
            "key_shared_ordering": "draining hashes (PIP-379)" if prof.is_4x else "recently joined consumers",
        }
        for name, prof in PROFILES.items()
    }
    differing = [key for key in next(iter(rows.values())) if len({repr(row[key]) for row in rows.values()}) > 1]
    for name, row in rows.items():
        mark = " (default)" if name == DEFAULT_PROFILE else ""
        print(f"{name}{mark}: " + ", ".join(f"{key}={_switch_text(row[key])}" for key in differing))
    return 0


def _cmd_hash(args: argparse.Namespace) -> int:
    from pulsarlab.hashing import murmur3_32, murmur3_32_raw, reduce_hash

    for key in args.keys:
        m = murmur3_32(key)
        print(
            f"{key!r}: murmur3 {murmur3_32_raw(key) & 0xFFFFFFFF}, sign bit cleared {m} (Murmur3_32Hash.makeHash); "
            f"3.x: auto-split/sticky slot {m % 65536}, consistent hashing {m}; "
            f"4.x: auto-split/sticky {reduce_hash(m, 0, 65535)}, consistent hashing {reduce_hash(m, 1, 65535)}"
        )
    return 0


def _cmd_events(args: argparse.Namespace) -> int:
    from pulsarlab.event_catalogue import catalogue

    kinds = catalogue()
    if args.kinds:
        known = {et.name for _area, et in kinds}
        unknown = [k for k in args.kinds if k not in known]
        if unknown:
            print(
                f"pulsarlab events: no event kind {', '.join(map(repr, unknown))}; `pulsarlab events` lists them all",
                file=sys.stderr,
            )
            return 1
        kinds = [(area, et) for area, et in kinds if et.name in args.kinds]
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "kind": et.name,
                        "code": et.code,
                        "area": area,
                        "module": f"pulsarlab.event_catalogue.{area}",
                        "fields": [{"name": f, "type": t} for f, t in et.fields],
                        "template": et.template,
                        "rule": et.rule,
                        "explainer": f"{et.explainer.__module__}.{et.explainer.__qualname__}" if et.explainer else None,
                    }
                    for area, et in kinds
                ],
                indent=2,
            )
        )
        return 0
    for area, et in kinds:
        fields = " ".join(f"{f}:{t}" for f, t in et.fields)
        print(f"{et.name}  [{area}]  {fields}")
        print(f"    {et.template}")
        if et.rule:
            print(f"    rule: {et.rule}")
        if et.explainer is not None:
            print(f"    explained from the field values by {et.explainer.__module__}.{et.explainer.__qualname__}")
    if not args.kinds:
        areas = sorted({area for area, _et in kinds})
        print(f"{len(kinds)} event kinds in {len(areas)} areas (pulsarlab.event_catalogue: {', '.join(areas)})")
    return 0


def _config_value(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


def broker_config_overrides(items: list[str], option: str = "--broker-config") -> dict[str, object]:
    """``KEY=VALUE`` broker settings (a value is JSON when it parses, else text); ValueError names a bad item."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"{option} takes KEY=VALUE, got {item!r}")
        overrides[key] = _config_value(value)
    return overrides


def _cmd_serve(args: argparse.Namespace) -> int:
    import logging

    from pulsarlab.lab import SERVE_BROKER_CONFIG, Lab
    from pulsarlab.serve import serve_forever

    try:
        overrides = broker_config_overrides(args.broker_config)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), format="%(asctime)s %(message)s")
    if args.event_window < 0:
        print(f"--event-window takes a number of events >= 0 (0 keeps all), got {args.event_window}", file=sys.stderr)
        return 2
    try:
        lab = Lab(version=args.version, seed=args.seed, broker_config={**SERVE_BROKER_CONFIG, **overrides})
    except (ValueError, KeyError) as e:
        print(f"pulsarlab serve: {e}", file=sys.stderr)
        return 2
    lab.events.set_window(args.event_window or None)

    def ready(server) -> None:
        admin = f"admin REST on {server.admin_url}; " if server.admin_url else ""
        print(f"pulsarlab serve: profile {lab.version} listening on {server.url} ({admin}Ctrl-C stops)", flush=True)

    try:
        serve_forever(
            lab,
            args.host,
            args.port,
            allow_remote=args.allow_remote,
            advertised_host=args.advertised_host,
            admin_port=None if args.no_admin else args.admin_port,
            admin_in_background=True,
            advertised_listeners=args.advertised_listeners,
            on_ready=ready,
            record=args.record,
        )
    except (PermissionError, OSError, ValueError) as e:
        print(f"pulsarlab serve: {e}", file=sys.stderr)
        return 1
    print("pulsarlab serve: stopped", flush=True)
    if args.record:
        print(f"pulsarlab serve: recorded the run to {args.record} (pulsarlab.load_timeline reads it)", flush=True)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    # the views layer (nbclient, nbconvert, plotly) is imported only when asked for
    from pulsarlab_widgets.classroom.export import LabError, export_lab, write_site_index

    if args.out and len(args.notebooks) > 1:
        print("pulsarlab export: --out names one page; use --out-dir for several labs", file=sys.stderr)
        return 2
    if not args.out and not args.out_dir:
        print("pulsarlab export: say where the page goes: --out LAB.html or --out-dir FOLDER", file=sys.stderr)
        return 2
    status = 0
    done = []
    for name in args.notebooks:
        path = Path(name)
        out = Path(args.out) if args.out else Path(args.out_dir) / f"{path.stem}.html"
        try:
            if args.out_dir:
                Path(args.out_dir).mkdir(parents=True, exist_ok=True)
            result = export_lab(path, out, with_code=args.with_code, max_frames=args.max_frames or None)
        except LabError as e:
            print(f"pulsarlab export: {e}", file=sys.stderr)
            status = 1
            continue
        done.append(result)
        print(
            f"pulsarlab export: {result.out} ({result.bytes / 1e6:.1f} MB, {result.players} player(s), "
            f"{result.figures} other figure(s), {result.seconds:.1f} s)",
            flush=True,
        )
    if args.out_dir and done:
        index = write_site_index(Path(args.out_dir), [r.out for r in done])
        print(f"pulsarlab export: {index}", flush=True)
    return status


def _cmd_present(args: argparse.Namespace) -> int:
    from pulsarlab_widgets.classroom.export import LabError
    from pulsarlab_widgets.classroom.present import presentation, run

    try:
        p = presentation(
            args.notebook,
            port=args.port,
            host=args.host,
            token=args.token,
            no_token=args.no_token,
            allow_remote=args.allow_remote,
            one_view=args.one_view,
        )
    except LabError as e:
        print(f"pulsarlab present: {e}", file=sys.stderr)
        return 2
    return run(p)


def _check_out(out: str, overwrite: bool, *inputs: str) -> Path:
    """The timeline file to write, refused before any work: a folder, a missing folder, an input, or (without
    ``--overwrite``) an existing file."""
    target = Path(out)
    if target.is_dir():
        raise ValueError(f"--out {target} is a directory; name a file, e.g. {target / 'run.plt.jsonl.gz'}")
    if not target.parent.is_dir():
        raise ValueError(f"--out {target}: folder {target.parent} does not exist")
    if any(Path(i).exists() and target.exists() and target.samefile(i) for i in inputs):
        raise ValueError(f"--out {target} is the timeline being forked; name another file")
    if target.exists() and not overwrite:
        raise ValueError(f"--out {target} exists; pass --overwrite to replace it")
    return target


def _cmd_record(args: argparse.Namespace) -> int:
    from pulsarlab.scenarios.fork import record_row
    from pulsarlab.scenarios.spec import SpecError, load_spec

    try:
        out = _check_out(args.out, args.overwrite)
        spec = load_spec(args.spec)
        rows = list(spec.rows())
        if not 0 <= args.row < len(rows):
            raise ValueError(f"--row {args.row} is outside the spec's grid (0..{len(rows) - 1})")
        _result, rec = record_row(rows[args.row])
        rec.save(out)
    except (SpecError, ValueError, TypeError, FileNotFoundError, RuntimeError, OSError) as e:
        print(f"pulsarlab record: {e}", file=sys.stderr)
        return 2
    print(f"pulsarlab record: row {args.row} of {spec.name}: {len(rec)} frames to {out}")
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    from pulsarlab.watch import command

    try:
        out = _check_out(args.out, args.overwrite) if args.out else None
        return command.run(args, out)
    except ValueError as e:
        print(f"pulsarlab watch: {e}", file=sys.stderr)
        return 2


def _parse_setting(text: str) -> tuple[str, object]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--setting takes NAME=VALUE, e.g. dispatcherMaxReadBatchSize=5, got {text!r}")
    try:
        value = json.loads(raw)  # numbers, true/false
    except ValueError:
        value = raw
    return name, value


def _cmd_fork(args: argparse.Namespace) -> int:
    from pulsarlab.scenarios.fork import Change, fork
    from pulsarlab.snapshot.timeline_file import load_timeline

    try:
        out = _check_out(args.out, args.overwrite, args.timeline)
        kw: dict = {"kind": args.change}
        if args.consumer is not None:
            kw["consumer"] = args.consumer
        if args.count is not None:
            kw["count"] = args.count
        if args.setting is not None:
            kw["setting"], kw["value"] = _parse_setting(args.setting)
        if args.to_version is not None:
            kw["version"] = args.to_version
        change = Change(**kw)
        timeline = load_timeline(args.timeline)
        result = fork(timeline, args.frame, change)
        result.branch.save(out)
    except (ValueError, TypeError, IndexError, FileNotFoundError, OSError) as e:
        print(f"pulsarlab fork: {e}", file=sys.stderr)
        return 2
    print(f"pulsarlab fork: {result.summary()}; the branch is in {out}")
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
        metrics = sweep(
            spark, specs, args.out, overwrite=args.overwrite, partitions=args.partitions, progress=not args.quiet
        )
    except SweepOutputExists as e:
        print(f"pulsarlab sweep: {e}", file=sys.stderr)
        return 2
    runs = len(metrics)
    print(
        f"pulsarlab sweep: {runs} run(s) of {', '.join(s.name for s in specs)}: events in {args.out}/events/, "
        f"metrics in {args.out}/metrics/"
    )
    columns = [
        "scenario",
        "version",
        "seed",
        "published",
        "acked",
        "dead_lettered",
        "duplicates",
        "out_of_order",
        "max_ack_holes",
        "md_lag_ms_p99",
        "blocked_hash_ms_total",
    ]
    if not args.quiet:
        print(metrics[columns].head(args.show).to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pulsarlab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("conformance", help="replay golden-vector files against the model")
    p.add_argument("files", nargs="+", metavar="FILE.jsonl")
    p.set_defaults(func=_cmd_conformance)
    p = sub.add_parser(
        "profiles", help="list the modelled Pulsar version profiles and every switch that differs between them"
    )
    p.set_defaults(func=_cmd_profiles)
    p = sub.add_parser("hash", help="show Pulsar's hashes of sticky keys")
    p.add_argument("keys", nargs="+")
    p.set_defaults(func=_cmd_hash)
    p = sub.add_parser("events", help="list every kind of event the lab logs, with its fields and template")
    p.add_argument("kinds", nargs="*", metavar="KIND", help="only these kinds")
    p.add_argument("--json", action="store_true", help="print JSON: kind, code, area, fields, template, rule")
    p.set_defaults(func=_cmd_events)
    p = sub.add_parser("serve", help="serve a lab broker to real Pulsar clients (Pulsar's binary protocol)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback unless --allow-remote)")
    p.add_argument("--port", type=int, default=6650, help="TCP port (0 picks a free one)")
    p.add_argument(
        "--admin-port", type=int, default=8080, help="admin REST / HTTP lookup port on --host (0 picks a free one)"
    )
    p.add_argument("--no-admin", action="store_true", help="do not serve the admin REST API")
    p.add_argument(
        "--allow-remote", action="store_true", help="allow a non-loopback --host (the lab broker has no authentication)"
    )
    p.add_argument("--advertised-host", default=None, help="host name lookups hand to clients")
    p.add_argument(
        "--advertised-listeners",
        default=None,
        metavar="NAME:URL,...",
        help="broker.conf advertisedListeners, e.g. internal:pulsar://127.0.0.1:6650 (clients' listener_name)",
    )
    p.add_argument("--version", default=None, help="the Pulsar line to model (see `pulsarlab profiles`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker.conf setting, e.g. maxMessageSize=1024 (repeatable)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument(
        "--record",
        default=None,
        metavar="FILE",
        help="record every event as a frame and write the timeline to FILE on stop (pulsarlab.load_timeline reads it)",
    )
    p.add_argument(
        "--event-window",
        type=int,
        default=DEFAULT_EVENT_WINDOW,
        metavar="N",
        help=f"keep about the newest N events of the log in memory (default {DEFAULT_EVENT_WINDOW}, about "
        f"{DEFAULT_EVENT_WINDOW * 58 // 2**20} MiB; 0 keeps all); --record still writes every event",
    )
    p.set_defaults(func=_cmd_serve)
    p = sub.add_parser("present", help="serve a lab for a projector: code hidden, big text, players on the keyboard")
    p.add_argument("notebook", metavar="LAB.ipynb")
    p.add_argument("--port", type=int, default=8866, help="TCP port (0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (loopback unless --allow-remote)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host")
    p.add_argument("--token", default=None, help="the access token (default: a random one, printed in the URL)")
    p.add_argument("--no-token", action="store_true", help="no token: anyone who reaches the port gets the lab")
    p.add_argument("--one-view", action="store_true", help="open with one view per screen (key v toggles it)")
    p.set_defaults(func=_cmd_present)
    p = sub.add_parser("export", help="execute labs and write each as one self-contained HTML page")
    p.add_argument("notebooks", nargs="+", metavar="LAB.ipynb")
    p.add_argument("--out", default=None, metavar="LAB.html", help="the page to write (one lab)")
    p.add_argument("--out-dir", default=None, metavar="FOLDER", help="write FOLDER/<lab>.html and FOLDER/index.html")
    p.add_argument("--with-code", action="store_true", help="show the code cells (hidden by default)")
    p.add_argument(
        "--max-frames",
        type=int,
        default=200,
        metavar="N",
        help="frames per player at most, evenly spread (0: all; default 200)",
    )
    p.set_defaults(func=_cmd_export)
    p = sub.add_parser("record", help="run one row of a scenario spec and save its timeline (forkable)")
    p.add_argument("spec", metavar="SPEC", help="scenario spec file, .json or .yaml")
    p.add_argument("--row", type=int, default=0, help="which row of the spec's grid (default 0)")
    p.add_argument("--out", required=True, metavar="FILE", help="the timeline file to write (.plt.jsonl.gz)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=_cmd_record)
    p = sub.add_parser("fork", help="replay a recorded timeline to a frame, make a change, run on, save the branch")
    p.add_argument("timeline", metavar="TIMELINE", help="a timeline file from pulsarlab record (or a fork's branch)")
    p.add_argument("--frame", type=int, required=True, help="the frame to fork at (0..frames-1)")
    p.add_argument(
        "--change",
        required=True,
        metavar="KIND",
        help="consumer_leaves, consumer_joins, nack_next, setting_changes or version_changes",
    )
    p.add_argument("--consumer", default=None, help="consumer_leaves: the consumer's name (default the oldest)")
    p.add_argument("--count", type=int, default=None, help="nack_next: how many messages (default 1)")
    p.add_argument("--setting", default=None, metavar="NAME=VALUE", help="setting_changes: the broker.conf setting")
    p.add_argument("--to-version", default=None, metavar="V", help="version_changes: the profile, e.g. 4.1")
    p.add_argument("--out", required=True, metavar="FILE", help="the branch's timeline file to write")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.set_defaults(func=_cmd_fork)
    p = sub.add_parser("sweep", help="run a scenario spec's grid of whole-model runs on Spark (events + metrics)")
    p.add_argument("specs", nargs="+", metavar="SPEC", help="scenario spec file(s), .json or .yaml")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for events/ and metrics/ (Parquet)")
    p.add_argument(
        "--master",
        default=None,
        help="Spark master or sc:// remote (default: $PULSARLAB_SPARK_MASTER, $SPARK_REMOTE, local[*])",
    )
    p.add_argument("--partitions", type=int, default=None, help="Spark tasks to spread the runs over")
    p.add_argument("--overwrite", action="store_true", help="replace a sweep already in DIR")
    p.add_argument("--show", type=int, default=20, help="metrics rows to print (default 20)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no metrics table")
    p.set_defaults(func=_cmd_sweep)
    p = sub.add_parser("watch", help="watch a real cluster's topics through its admin REST API (read-only, recorded)")
    from pulsarlab.watch.options import add_arguments as watch_arguments

    watch_arguments(p)
    p.set_defaults(func=_cmd_watch)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
