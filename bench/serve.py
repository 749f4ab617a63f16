"""Throughput of real Pulsar clients through ``pulsarlab serve``, beside the in-process API.

Run: ``.venv/bin/python bench/serve.py [--messages N] [--size BYTES] [--repeat R] [--profile]
[--many-clients-messages N] [--only-many-clients]``.

Workloads (one lab per case, profile 4.0, event log on; the server runs on a background thread of this
process, the real client - the ``pulsar-client`` package, C++ 4.2 inside - in a subprocess of its own):

* produce: the client ``send_async``s N messages of ``--size`` bytes (without a callback; the server's count of
  stored messages is checked afterwards) to a topic with one Shared subscription (no consumer connected, so the
  server stores and answers receipts) and ``flush``es; messages/s = N / the client's wall time from the first
  send to the end of the flush. Batched: ``batching_max_messages`` 1000,
  128 KiB, 10 ms (the client's defaults, batching on); unbatched: batching off.
* consume+ack: N messages already stored (produced the same way, batched or not); the client subscribes
  (Shared, Earliest, receiver queue 1000), ``receive``s and ``acknowledge``s each; messages/s = N / the wall
  time from subscribe to the last acknowledge. The run then checks that the acks reached the cursor.
* in-process: the same N messages through ``lab.client()`` in one process (batched producer, Shared consumer,
  receive + acknowledge in rounds of 1000, 10 ms of virtual time per round), as ``bench/broker.py`` measures the
  model.

* many clients (``serve_many_clients_msgs_per_s``): the ``pulsarlab serve`` command in a process of its own,
  and `tests/many_clients.py` in another: N producers and N consumers (N = 10 and 100), each a ``pulsar.Client``
  with its own connection, over min(N, 20) topics of the four subscription types (Exclusive topics give each
  consumer its own subscription), unbatched sends from one thread per producer; msg/s = messages delivered to
  (received and acknowledged by) the consumers / the wall time from the first send to the last delivery. The
  run's ledger must show nothing missing.
* admin stats under load (``admin_stats_requests_per_s``): while the 100-pair traffic flows, two threads of this
  process ask ``GET .../stats`` of one topic over keep-alive HTTP connections, back to back; requests/s = the
  answered requests / the time they took.

Each figure is the best of ``--repeat`` runs. The machine may be shared and noisy: compare figures from one run.
``--profile`` prints the server thread's cProfile top entries for the batched produce and consume runs. Goals
(issue 6): >= 100,000 msg/s batched produce and >= 50,000 msg/s batched consume+ack. Ends with one JSON line.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/selectors.py would shadow the standard library's selectors module (asyncio needs it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import cProfile  # noqa: E402
import http.client  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402

import pulsarlab as pl  # noqa: E402
from pulsarlab.serve import start  # noqa: E402

GOAL_PRODUCE = 100_000
GOAL_CONSUME = 50_000
TOPIC = "persistent://public/default/bench"

CLIENT = r"""
import os, sys, time
import pulsar
mode, url, n, size, batched = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1"
client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull))
topic = "persistent://public/default/bench"
if mode == "produce":
    producer = client.create_producer(topic, batching_enabled=batched, batching_max_messages=1000,
                                      batching_max_allowed_size_in_bytes=128 * 1024, batching_max_publish_delay_ms=10,
                                      max_pending_messages=10000, block_if_queue_full=True)
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        producer.send_async(payload, None)  # no Python callback: each one costs the client a GIL round trip
    producer.flush()
    elapsed = time.perf_counter() - t0
else:
    t0 = time.perf_counter()
    consumer = client.subscribe(topic, "bench", consumer_type=pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest, receiver_queue_size=1000)
    for _ in range(n):
        consumer.acknowledge(consumer.receive(30000))
    elapsed = time.perf_counter() - t0
    time.sleep(0.3)  # the last ack group flushes after 100 ms
print(elapsed)
client.close()
"""


def run_client(mode: str, url: str, n: int, size: int, batched: bool) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLIENT, mode, url, str(n), str(size), "1" if batched else "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the client failed: {err}")
    return float(out.split()[-1])


class ServerProfile:
    """cProfile of the server's network-loop thread while a client runs."""

    def __init__(self, server) -> None:
        self.server = server
        self.profile = cProfile.Profile()

    def _in_loop(self, fn) -> None:
        asyncio.run_coroutine_threadsafe(self._call(fn), self.server._loop).result(10)

    @staticmethod
    async def _call(fn) -> None:
        fn()

    def __enter__(self) -> "ServerProfile":
        self._in_loop(self.profile.enable)
        return self

    def __exit__(self, *exc) -> None:
        self._in_loop(self.profile.disable)

    def top(self, n: int = 18) -> str:
        out = io.StringIO()
        pstats.Stats(self.profile, stream=out).sort_stats("tottime").print_stats(n)
        lines = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
        return "\n".join(lines[start : start + n + 1])


def served_case(mode: str, n: int, size: int, batched: bool, profile: bool) -> tuple[float, str | None]:
    lab = pl.Lab(version="4.0", seed=1)
    server = start(lab, "127.0.0.1", 0)
    report = None
    try:
        server.call(lambda: lab.service.get_topic(TOPIC).get_or_create_subscription("bench", "Earliest"))
        if mode == "consume":
            run_client("produce", server.url, n, size, batched)
        prof = ServerProfile(server) if profile else None
        if prof is not None:
            prof.__enter__()
        elapsed = run_client(mode, server.url, n, size, batched)
        if prof is not None:
            prof.__exit__()
            report = prof.top()
        stats = server.stats_internal(TOPIC)
        if mode == "consume":
            cursor = stats["cursors"]["bench"]
            if cursor["markDeletePosition"] != stats["lastConfirmedEntry"]:
                raise RuntimeError(
                    f"acks did not reach the cursor: {cursor['markDeletePosition']} vs {stats['lastConfirmedEntry']}"
                )
        else:
            stored = server.call(lambda: lab.service.topics[TOPIC].msg_in_counter)
            if stored != n:
                raise RuntimeError(f"{stored} of {n} messages stored")
    finally:
        server.stop()
    return n / elapsed, report


def inprocess_case(n: int, size: int) -> float:
    lab = pl.Lab(version="4.0", seed=1)
    client = lab.client()
    consumer = client.subscribe(TOPIC, "bench", consumer_type=pl.ConsumerType.Shared)
    producer = client.create_producer(TOPIC, batching_enabled=True, batching_max_messages=1000)
    payload = b"x" * size
    t0 = time.perf_counter()
    for start_at in range(0, n, 1000):
        for _ in range(min(1000, n - start_at)):
            producer.send_async(payload, None)
        producer.flush()
        while consumer.receiver_queue:
            consumer.acknowledge(consumer.receive(0))
        lab.advance(10)  # virtual time for the ack-grouping flush (as bench/broker.py does)
    lab.run_until_idle()
    elapsed = time.perf_counter() - t0
    assert lab.admin.topics.stats(TOPIC)["subscriptions"]["bench"]["msgBacklog"] == 0
    return n / elapsed


class ServeCommand:
    """The ``pulsarlab serve`` command in a process of its own (free loopback ports), stopped on exit."""

    def __enter__(self) -> "ServeCommand":
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-m", "pulsarlab", "serve", "--port", "0", "--admin-port", "0", "--log-level", "warning"]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.__exit__()
            raise RuntimeError(f"pulsarlab serve did not start: {line}")
        self.url = line.split(" listening on ")[1].split()[0]
        self.admin = line.split("admin REST on ")[1].split(";")[0]
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.communicate()


def many_clients_run(url: str, pairs: int, messages: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    args = ["--producers", str(pairs), "--consumers", str(pairs), "--topics", str(min(pairs, 20))]
    args += ["--messages", str(messages), "--deadline", "300"]
    return subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "many_clients.py"), url, *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _ledger(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"many_clients failed: {err}")
    ledger = json.loads(out.strip().splitlines()[-1])
    if ledger["missing"] or ledger["received"] != ledger["expected_deliveries"]:
        raise RuntimeError(f"messages lost: {ledger['missing']}")
    return ledger


def many_clients_case(pairs: int, messages: int) -> dict:
    with ServeCommand() as serve:
        return _ledger(many_clients_run(serve.url, pairs, messages))


def admin_stats_case(pairs: int, messages: int, threads: int = 2) -> tuple[float, dict]:
    """REST stats requests/s while ``pairs`` producer/consumer pairs run."""
    with ServeCommand() as serve:
        host, port = serve.admin.removeprefix("http://").rsplit(":", 1)
        path = "/admin/v2/persistent/public/default/load-2/stats"
        proc = many_clients_run(serve.url, pairs, messages)
        counts = [0] * threads
        stop = threading.Event()

        def ask(i: int) -> None:
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            while not stop.is_set():
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                if resp.status == 200:
                    counts[i] += 1
                else:
                    time.sleep(0.01)  # the topic does not exist yet
            conn.close()

        workers = [threading.Thread(target=ask, args=(i,), daemon=True) for i in range(threads)]
        t0 = time.perf_counter()
        for w in workers:
            w.start()
        while proc.poll() is None:
            time.sleep(0.05)
        stop.set()
        for w in workers:
            w.join(30)
        elapsed = time.perf_counter() - t0
        return sum(counts) / elapsed, _ledger(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="messages per batched run")
    parser.add_argument("--unbatched-messages", type=int, default=20_000, help="messages per unbatched run")
    parser.add_argument("--size", type=int, default=100, help="payload bytes")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="print the server thread's profile")
    parser.add_argument("--many-clients-messages", type=int, default=10_000, help="messages sent per many-client run")
    parser.add_argument("--only-many-clients", action="store_true", help="run only the many-client and admin cases")
    args = parser.parse_args()

    many: dict[str, float] = {}
    for pairs in (10, 100):
        best = 0.0
        for _ in range(args.repeat):
            ledger = many_clients_case(pairs, max(1, args.many_clients_messages // pairs))
            best = max(best, ledger["msgs_per_s"])
        many[str(pairs)] = round(best)
        print(
            f"{f'serve_many_clients ({pairs} pairs)':32s} {best:12,.0f} msg/s  ({ledger['received']:,} deliveries of "
            f"{ledger['sent']:,} messages, {ledger['clients']} clients, {ledger['topics']} topics; "
            f"connect {ledger['connect_s']} s)",
            flush=True,
        )
    admin_rate = 0.0
    for _ in range(args.repeat):
        rate, ledger = admin_stats_case(100, max(1, 2 * args.many_clients_messages // 100))
        admin_rate = max(admin_rate, rate)
    print(
        f"{'admin_stats (100 pairs flowing)':32s} {admin_rate:12,.0f} req/s  (while {ledger['received']:,} "
        f"deliveries ran at {ledger['msgs_per_s']:,.0f} msg/s)",
        flush=True,
    )
    if args.only_many_clients:
        print(json.dumps({"serve_many_clients_msgs_per_s": many, "admin_stats_requests_per_s": round(admin_rate)}))
        return

    rates: dict[str, float] = {}
    profiles: dict[str, str] = {}
    cases = [
        ("serve_batched_produce", "produce", True, args.messages),
        ("serve_batched_consume_ack", "consume", True, args.messages),
        ("serve_unbatched_produce", "produce", False, args.unbatched_messages),
        ("serve_unbatched_consume_ack", "consume", False, args.unbatched_messages),
    ]
    for name, mode, batched, n in cases:
        best = 0.0
        for r in range(args.repeat):
            rate, report = served_case(mode, n, args.size, batched, args.profile and batched and r == 0)
            best = max(best, rate)
            if report:
                profiles[name] = report
        rates[name] = best
        print(f"{name:32s} {best:12,.0f} msg/s  ({n:,} x {args.size} B, real client in a subprocess)", flush=True)
    rates["inprocess"] = max(inprocess_case(args.messages, args.size) for _ in range(args.repeat))
    print(f"{'inprocess (batched, one process)':32s} {rates['inprocess']:12,.0f} msg/s", flush=True)
    for name, report in profiles.items():
        print(f"\n-- server thread profile, {name} (sorted by own time) --\n{report}")

    def goal(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print(f"\ngoal >= {GOAL_PRODUCE:,} msg/s batched produce: {goal(rates['serve_batched_produce'] >= GOAL_PRODUCE)}")
    print(
        f"goal >= {GOAL_CONSUME:,} msg/s batched consume+ack: "
        f"{goal(rates['serve_batched_consume_ack'] >= GOAL_CONSUME)}"
    )
    print(
        json.dumps(
            {
                "serve_batched_produce_msgs_per_s": round(rates["serve_batched_produce"]),
                "serve_consume_ack_msgs_per_s": round(rates["serve_batched_consume_ack"]),
                "inprocess_msgs_per_s": round(rates["inprocess"]),
                "serve_unbatched_produce_msgs_per_s": round(rates["serve_unbatched_produce"]),
                "serve_unbatched_consume_ack_msgs_per_s": round(rates["serve_unbatched_consume_ack"]),
                "serve_many_clients_msgs_per_s": many,
                "admin_stats_requests_per_s": round(admin_rate),
                "messages": args.messages,
                "unbatched_messages": args.unbatched_messages,
                "payload_bytes": args.size,
            }
        )
    )


if __name__ == "__main__":
    main()
