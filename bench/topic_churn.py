"""Memory of a served lab under temporary topics: an app making a topic per request, one producer that sends and
closes, no subscription (a reply topic), against ``pulsarlab serve``'s broker settings.

Run: ``.venv/bin/python bench/topic_churn.py [--topics N] [--per-minute M]``. Sends the broker the commands a
served connection would (the broker is the one ``pulsarlab serve`` runs, with its event window), M topics a
virtual minute, and prints the
topics held and the process's RSS every N/10 topics, with the broker's inactive topic deletion on (Pulsar's
default) and off (``brokerDeleteInactiveTopicsEnabled=false``), each in a process of its own. Not a test: it
prints figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/selectors.py would shadow the standard library's selectors module (subprocess imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]

import argparse  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402

from pulsarlab.cli import DEFAULT_EVENT_WINDOW  # noqa: E402
from pulsarlab.lab import SERVE_BROKER_CONFIG, Lab  # noqa: E402
from pulsarlab.messages import EntryData, MessageMetadata  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def run(topics: int, per_minute: int, enabled: bool) -> None:
    lab = Lab(broker_config={**SERVE_BROKER_CONFIG, "brokerDeleteInactiveTopicsEnabled": enabled})
    lab.events.set_window(DEFAULT_EVENT_WINDOW)
    svc = lab.service
    every = max(topics // 10, 1)
    for i in range(topics):  # the broker commands a served connection sends: PRODUCER, SEND, CLOSE_PRODUCER
        name = f"standalone-0-{i}"
        handle = svc.register_producer(svc.new_producer_id(), name, f"persistent://public/default/reply-{i}")
        svc.publish(handle, EntryData(MessageMetadata(name, 0, lab.now()), [(None, b"x" * 200)]))
        svc.unregister_producer(handle)
        if (i + 1) % per_minute == 0:
            lab.advance(60_000)
        if (i + 1) % every == 0:
            gc.collect()
            print(
                f"deletion {'on ' if enabled else 'off'}  topics made {i + 1:>7}  held {len(lab.service.topics):>7}  "
                f"rss {rss_mib():7.1f} MiB",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topics", type=int, default=20_000)
    ap.add_argument("--per-minute", type=int, default=200)
    ap.add_argument(
        "--deletion", choices=("on", "off"), help="one case in this process (default: both, each in its own)"
    )
    args = ap.parse_args()
    if args.deletion:
        run(args.topics, args.per_minute, args.deletion == "on")
        return
    for case in ("on", "off"):
        argv = [sys.executable, __file__, f"--topics={args.topics}", f"--per-minute={args.per_minute}"]
        subprocess.run([*argv, f"--deletion={case}"], check=True)


if __name__ == "__main__":
    main()
