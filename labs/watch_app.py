"""A small real Pulsar application for lab 10: one producer and three Key_Shared consumers.

    python watch_app.py pulsar://127.0.0.1:6650 [--messages 60] [--keys 6] [--hold]

It uses only the real ``pulsar-client`` package, so it runs unchanged against a Pulsar broker or against
``pulsarlab serve``. On the subscription ``workers`` of topic ``orders``:

* ``steady`` acknowledges every message it receives;
* ``nacker`` negatively acknowledges each message the first time it sees it (``redelivery_count() == 0``)
  and acknowledges it when it comes back;
* ``crasher`` runs in a process of its own, receives a few messages and dies without acknowledging them
  (``os._exit``: its connection simply drops).

The producer sends ``--messages`` messages round robin over ``--keys`` keys, then the program waits until
every message has been acknowledged by ``steady`` or ``nacker`` and prints who got what.

With ``--hold``, ``nacker`` keeps the first message that comes back to it unacknowledged: it prints
``holding order-N`` and acknowledges it only once a line arrives on standard input. While it holds, the mark-delete
position cannot pass that message and later acknowledgements leave holes behind it: a moment a watcher can record
however slowly it polls (lab 10 lets go once its watcher has seen it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict

import pulsar

TOPIC = "persistent://public/default/orders"
SUBSCRIPTION = "workers"


def new_client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=10,
                         logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))


def subscribe(client: pulsar.Client, name: str, **options) -> pulsar.Consumer:
    return client.subscribe(TOPIC, SUBSCRIPTION, consumer_type=pulsar.ConsumerType.KeyShared, consumer_name=name,
                            **options)


def run_crasher(url: str, crash_after: int) -> None:
    """Receive ``crash_after`` messages (or whatever arrives within 10 s), then die without acknowledging."""
    client = new_client(url)
    consumer = subscribe(client, "crasher", receiver_queue_size=5)
    print("subscribed", flush=True)
    got = []
    deadline = time.time() + 10
    while len(got) < crash_after and time.time() < deadline:
        try:
            got.append(consumer.receive(200).data().decode())
        except pulsar.Timeout:
            pass
    print(f"crasher: received {len(got)} message(s) {got}, dying without acknowledging them", flush=True)
    os._exit(1)


def main() -> int:
    parser = argparse.ArgumentParser(description="a small Key_Shared application to watch in pulsarlab")
    parser.add_argument("url")
    parser.add_argument("--messages", type=int, default=60)
    parser.add_argument("--keys", type=int, default=6)
    parser.add_argument("--crash-after", type=int, default=3)
    parser.add_argument("--role", default="app", choices=["app", "crasher"])
    parser.add_argument("--hold", action="store_true",
                        help="nacker holds the first redelivered message until a line arrives on stdin")
    args = parser.parse_args()
    if args.role == "crasher":
        run_crasher(args.url, args.crash_after)
        return 1

    crasher = subprocess.Popen([sys.executable, __file__, args.url, "--role", "crasher",
                                "--crash-after", str(args.crash_after)], stdout=subprocess.PIPE, text=True)
    try:
        assert crasher.stdout is not None
        if crasher.stdout.readline().strip() != "subscribed":
            print("the crasher did not start", file=sys.stderr)
            return 2
        client = new_client(args.url)
        steady = subscribe(client, "steady")
        nacker = subscribe(client, "nacker", negative_ack_redelivery_delay_ms=500)
        acked: set[str] = set()
        received: dict[str, list[tuple[str, int]]] = defaultdict(list)
        lock = threading.Lock()
        done = threading.Event()
        hold = [args.hold]

        def work(name: str, consumer: pulsar.Consumer, nack_first: bool) -> None:
            while not done.is_set():
                try:
                    msg = consumer.receive(100)
                except pulsar.Timeout:
                    continue
                text = msg.data().decode()
                with lock:
                    received[name].append((text, msg.redelivery_count()))
                if nack_first and msg.redelivery_count() == 0:
                    consumer.negative_acknowledge(msg)
                    continue
                if nack_first and hold[0]:
                    hold[0] = False
                    print(f"holding {text}", flush=True)
                    sys.stdin.readline()
                consumer.acknowledge(msg)
                with lock:
                    acked.add(text)
                    if len(acked) == args.messages:
                        done.set()

        workers = [threading.Thread(target=work, args=("steady", steady, False)),
                   threading.Thread(target=work, args=("nacker", nacker, True))]
        for w in workers:
            w.start()
        producer = client.create_producer(TOPIC, batching_enabled=False)
        for i in range(args.messages):
            producer.send(f"order-{i}".encode(), partition_key=f"customer-{i % args.keys}")
        finished = done.wait(300 if args.hold else 120)
        done.set()
        for w in workers:
            w.join()
        print(crasher.stdout.read().strip())
        crasher.wait(10)
        client.close()  # closing a consumer sends its grouped acknowledgements first, and waits for the broker
        for name in ("steady", "nacker"):
            redelivered = sum(1 for _, count in received[name] if count > 0)
            print(f"{name}: received {len(received[name])} message(s), {redelivered} of them redelivered")
        print(f"all {args.messages} messages acknowledged" if finished else
              f"only {len(acked)} of {args.messages} messages acknowledged")
        return 0 if finished else 1
    finally:
        if crasher.poll() is None:
            crasher.kill()
            crasher.wait()


if __name__ == "__main__":
    sys.exit(main())
