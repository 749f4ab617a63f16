"""Soak benchmark: N producer/consumer pairs of real clients against ``pulsarlab serve`` for as long as asked.

Run: ``.venv/bin/python bench/soak.py [--minutes 120] [--pairs 100] [--every 60]``. Prints the server's RSS, the
messages sent and delivered every ``--every`` seconds, then the totals: messages, missing, and the duplicates by
cause (redelivered after a re-subscription, or stored twice after a producer's resend: at-least-once delivery; or a
fault), the clients' reconnects, the warnings in their log and why the server closed connections. The harness is
`tests/soak_clients.py` (the same as ``make test``'s 2-minute soak). Loopback only. Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/selectors.py would shadow the standard library's selectors module (subprocess imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT / "tests"))

from soak_clients import soak  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=120.0)
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--every", type=float, default=60.0, help="seconds between printed samples")
    ap.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting for the server (repeatable); none: Pulsar's defaults",
    )
    args = ap.parse_args()
    last = [-args.every]

    def show(t: float, rss_kib: int, sent: int, received: int) -> None:
        if t - last[0] >= args.every:
            last[0] = t
            print(f"t={t:8.0f} s  rss={rss_kib / 1024:8.1f} MiB  sent={sent:>10}  delivered={received:>10}", flush=True)

    r = soak(args.pairs, args.minutes * 60, tuple(args.broker_config), on_sample=show)
    rss = [kib for _, kib in r["rss_kib"]]
    print(
        f"pairs={r['pairs']} seconds={r['seconds']:.0f} sent={r['sent']} received={r['received']} "
        f"missing={r['missing']} duplicates={r['duplicates']} (faults {r['duplicate_faults']}) "
        f"unexpected={r['unexpected']} errors={r['errors']}"
    )
    for cause, count in r["duplicates_by_cause"].items():
        print(f"  {count:>8}  {cause}")
    for name, examples in r["duplicate_examples"].items():
        print(f"  e.g. {name}: {'; '.join(examples[:3])}")
    print(f"clients: {r['resubscriptions']} re-subscriptions, {r['producer_reconnects']} producer reconnects")
    for kind, count in r["client_warnings"].items():
        print(f"  {count:>8}  client log: {kind}")
    for reason, count in r["server_closes"].items():
        print(f"  {count:>8}  the server closed a connection: {reason}")
    print(f"rss MiB: first {rss[0] / 1024:.1f}, max {max(rss) / 1024:.1f}, last {rss[-1] / 1024:.1f}")


if __name__ == "__main__":
    main()
