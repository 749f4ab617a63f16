"""Start-up of ``pulsarlab serve``: from starting the process to the real client's first ``create_producer``.

Run: ``.venv/bin/python bench/startup.py [--runs 5] [--pulsar-lite PATH] [--no-admin] [--importtime]
[--settle S]``.

Each run starts ``python -m pulsarlab serve`` (admin REST on a free port unless ``--no-admin``) on a free loopback
port, connects to the port every 2 ms until it accepts, then a real ``pulsar.Client`` (imported before the clock
starts, as an app's test suite already has it) creates a producer; the figure is the wall time from ``Popen`` to
``create_producer`` returning. The client is not pointed at the port before it accepts, because the client's own
reconnect back-off (100 ms and up) would be measured instead of the broker. Prints each run and the median;
``--pulsar-lite PATH`` measures pulsar-lite's binary (from ``pip download --no-deps pulsar-lite``: the wheel's
``pulsar_lite/bin/pulsar-lite``) the same way, beside it (its metrics listener off). ``--importtime`` prints
the slowest imports of one ``python -X importtime -m pulsarlab serve`` start. ``--settle S`` also reads the
broker's CPU S seconds after the first producer: the start's cost in full, work beside or after the producer
included (the admin port's aiohttp loads only with its first connection). Issue 21's goal: a median within
0.25 s. The machine may be shared and noisy: compare figures from one run. Ends with one JSON line.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/selectors.py would shadow the standard library's selectors module (asyncio needs it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import pulsar  # noqa: E402

GOAL_S = 0.25
TOPIC = "persistent://public/default/startup"
WAIT_S = 30.0  # a start that takes longer than this is a failure, not a figure


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, deadline: float) -> None:
    while True:
        with socket.socket() as s:
            s.settimeout(0.5)
            try:
                s.connect(("127.0.0.1", port))
                return
            except OSError:
                pass
        if proc.poll() is not None:
            raise RuntimeError(f"the broker exited ({proc.returncode}) before it listened: {proc.stderr.read()!r}")
        if time.perf_counter() > deadline:
            raise RuntimeError(f"nothing listened on port {port} within {WAIT_S} s")
        time.sleep(0.002)


def first_producer(
    command: list[str], port: int, env: dict[str, str] | None = None, settle_s: float = 0.0, cwd: Path | None = None
) -> tuple[float, float, float | None]:
    """Seconds from starting ``command`` (a broker listening on ``port``) to the first producer, the CPU seconds
    the broker process used until then, and (with ``settle_s``) by ``settle_s`` seconds later: what the start
    cost in full, work it did beside or after the first producer included."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True
    )
    try:
        wait_for_port(port, proc, t0 + WAIT_S)
        client = pulsar.Client(
            f"pulsar://127.0.0.1:{port}",
            operation_timeout_seconds=10,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, os.devnull),
        )
        try:
            client.create_producer(TOPIC)
            elapsed = time.perf_counter() - t0
            cpu = cpu_seconds(proc.pid)
            if settle_s:
                time.sleep(settle_s)
            settled = cpu_seconds(proc.pid) if settle_s else None
        finally:
            client.close()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        proc.stderr.close()
    return elapsed, cpu, settled


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) the process has used so far, from /proc: less sensitive to a busy machine than
    wall time (other processes' CPU does not count), though caches and frequency still vary."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def serve_command(port: int, admin: bool) -> list[str]:
    cmd = [sys.executable, "-m", "pulsarlab", "serve", "--port", str(port), "--log-level", "warning"]
    return cmd + (["--admin-port", str(free_port())] if admin else ["--no-admin"])


def lite_command(binary: str, port: int, folder: Path) -> list[str]:
    db = Path(tempfile.mkdtemp(dir=folder))
    config = folder / "pulsar-lite.toml"
    config.write_text("[metrics]\nenabled = false\n")
    return [binary, "--config", str(config), "--addr", f"127.0.0.1:{port}", "--db-path", str(db), "--log-level", "warn"]


def import_profile(top: int = 15) -> str:
    """The slowest imports (cumulative) of one ``pulsarlab serve`` start, from ``python -X importtime``."""
    port = free_port()
    cmd = serve_command(port, admin=True)
    cmd.insert(1, "-X")
    cmd.insert(2, "importtime")
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True
    )
    try:
        wait_for_port(port, proc, time.perf_counter() + WAIT_S)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    rows = []
    for line in err.splitlines():
        if line.startswith("import time:") and "|" in line and "cumulative" not in line:
            self_us, cum_us, name = line.removeprefix("import time:").split("|")
            rows.append((int(cum_us), int(self_us), name.rstrip()))
    total = sum(c for c, _s, n in rows if not n.startswith("  "))
    lines = [f"imports at start: {total / 1e6:.3f} s in {len(rows)} modules; slowest (cumulative):"]
    for cum, _self, name in sorted(rows, reverse=True)[:top]:
        lines.append(f"  {cum / 1e6:7.3f} s  {name.strip()}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-admin", action="store_true", help="start serve without the admin REST API")
    ap.add_argument("--pulsar-lite", default=os.environ.get("PULSAR_LITE_BIN"), metavar="PATH")
    ap.add_argument("--importtime", action="store_true")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        metavar="S",
        help="also report the broker's CPU S seconds after the first producer (the start's cost in full)",
    )
    args = ap.parse_args()
    result: dict[str, object] = {}
    ours, ours_cpu, ours_settled = [], [], []
    for i in range(args.runs):
        port = free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        # in ROOT: `python -m` puts the working directory first on sys.path, so another checkout's folder would
        # have its own pulsarlab measured
        command = serve_command(port, not args.no_admin)
        s, cpu, settled = first_producer(command, port, env=env, settle_s=args.settle, cwd=ROOT)
        ours.append(s)
        ours_cpu.append(cpu)
        later = ""
        if settled is not None:
            ours_settled.append(settled)
            later = f", {settled:.2f} s CPU {args.settle:g} s later"
        print(f"pulsarlab serve run {i + 1}: {s:.3f} s ({cpu:.2f} s CPU{later})", flush=True)
    median = statistics.median(ours)
    verdict = "meets" if median <= GOAL_S else "misses"
    print(
        f"pulsarlab serve: median {median:.3f} s to the first create_producer ({verdict} the {GOAL_S} s goal), "
        f"median {statistics.median(ours_cpu):.2f} s CPU; load average {os.getloadavg()[0]:.1f}"
    )
    result["serve_first_producer_s_median"] = round(median, 4)
    result["serve_first_producer_s_runs"] = [round(s, 4) for s in ours]
    result["serve_cpu_s_median"] = round(statistics.median(ours_cpu), 3)
    if ours_settled:
        settled_median = statistics.median(ours_settled)
        print(f"pulsarlab serve: median {settled_median:.2f} s CPU by {args.settle:g} s after the first producer")
        result["serve_cpu_settled_s_median"] = round(settled_median, 3)
    if args.pulsar_lite:
        lite = []
        with tempfile.TemporaryDirectory(prefix="pulsar-lite-bench-") as folder:
            for i in range(args.runs):
                port = free_port()
                s, cpu, _settled = first_producer(lite_command(args.pulsar_lite, port, Path(folder)), port)
                lite.append(s)
                print(f"pulsar-lite run {i + 1}: {s:.3f} s ({cpu:.2f} s CPU)", flush=True)
        lite_median = statistics.median(lite)
        print(f"pulsar-lite: median {lite_median:.3f} s to the first create_producer")
        result["pulsar_lite_first_producer_s_median"] = round(lite_median, 4)
    if args.importtime:
        print(import_profile())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
