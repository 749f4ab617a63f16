"""One configured SparkSession for pulsarlab: local[*] by default, a cluster or Spark Connect on request.

Models no Pulsar class. Where the session goes, first match wins: the ``master`` argument, the
``PULSARLAB_SPARK_MASTER`` environment variable, the ``SPARK_REMOTE`` environment variable (Spark
Connect), else ``local[*]``. A master starting with ``sc://`` is a Spark Connect remote. Classic
sessions get quiet logs (the ``log4j2.properties`` beside this module), no UI, and
``spark.sql.shuffle.partitions`` of twice the local cores; Java 17+ is checked before the JVM starts.
Simplification: on a real cluster ``PYSPARK_PYTHON`` (set here to this interpreter if unset) must
name a Python with pulsarlab installed on every worker.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

from pulsarlab.spark.jvm_stderr import start_gateway

MIN_JAVA = 17
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
MASTER_ENV = "PULSARLAB_SPARK_MASTER"
REMOTE_ENV = "SPARK_REMOTE"

INSTALL_HINT = (
    "Install a Java 17 (or newer) runtime, e.g. `sudo apt-get install openjdk-17-jre-headless` on "
    "Debian/Ubuntu, `brew install openjdk@17` on macOS or `conda install -c conda-forge openjdk=17`, "
    "then put `java` on PATH or set JAVA_HOME to the JDK's home directory."
)


class JavaNotFoundError(RuntimeError):
    """Spark needs Java 17+ and none was found (or the one found is too old or broken).

    In a notebook it shows as its message and what to do, without a traceback: a lab's Spark cells are its last
    ones (lab 11 is all Spark), so everything before them has run and only they need Java.
    """

    def _render_traceback_(self) -> list[str]:
        """What IPython (Jupyter) prints instead of the traceback."""
        return [
            f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}",
            "Only the Spark cells need Java: the cells before this one ran without it. Install Java 17+, then run "
            "this cell again (restart JupyterLab from a shell where `java -version` works if you changed PATH or "
            "JAVA_HOME).",
        ]


def find_java() -> Path:
    """The java launcher Spark's scripts would run: ``$JAVA_HOME/bin/java`` if JAVA_HOME is set, else PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if not java.is_file():
            raise JavaNotFoundError(
                f"Spark needs Java {MIN_JAVA}+, but JAVA_HOME={java_home!r} has no bin/java. "
                f"Fix or unset JAVA_HOME. {INSTALL_HINT}"
            )
        return java
    found = shutil.which("java")
    if found is None:
        raise JavaNotFoundError(
            f"Spark needs Java {MIN_JAVA}+, but no `java` is on PATH and JAVA_HOME is unset. {INSTALL_HINT}"
        )
    return Path(found)


def parse_java_major(version_output: str) -> int:
    """The major version in ``java -version`` output ('version "17.0.15"' -> 17, '"1.8.0_392"' -> 8)."""
    match = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if match is None:
        raise ValueError(f"cannot find a version in `java -version` output: {version_output.strip()[:200]!r}")
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:  # pre-9 scheme: 1.8 is Java 8
        major = int(match.group(2))
    return major


_checked: dict[tuple[str | None, str | None], Path] = {}


def check_java(min_major: int = MIN_JAVA) -> Path:
    """The java launcher if it is Java ``min_major``+, else JavaNotFoundError. Starts no Spark JVM."""
    cache_key = (os.environ.get("JAVA_HOME"), os.environ.get("PATH"))
    if cache_key in _checked:
        return _checked[cache_key]
    java = find_java()
    try:
        done = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise JavaNotFoundError(
            f"Spark needs Java {min_major}+, but running {java} -version failed: {exc}. {INSTALL_HINT}"
        ) from exc
    output = done.stderr + done.stdout
    try:
        major = parse_java_major(output)
    except ValueError as exc:
        raise JavaNotFoundError(
            f"Spark needs Java {min_major}+, but {java} -version gave no version ({exc}). {INSTALL_HINT}"
        ) from None
    if major < min_major:
        raise JavaNotFoundError(f"Spark needs Java {min_major}+, but {java} is Java {major}. {INSTALL_HINT}")
    _checked[cache_key] = java
    return java


def resolve_master(master: str | None = None) -> tuple[str, str]:
    """``("remote", url)`` for Spark Connect or ``("master", url)`` for a classic session (see module doc)."""
    if master is not None and (not isinstance(master, str) or not master.strip()):
        raise ValueError(f"master must be a non-empty string such as 'local[2]' or 'spark://host:7077', not {master!r}")
    chosen = master or os.environ.get(MASTER_ENV) or None
    if chosen:
        return ("remote", chosen) if chosen.startswith("sc://") else ("master", chosen)
    remote = os.environ.get(REMOTE_ENV)
    if remote:
        return "remote", remote
    return "master", "local[*]"


def local_cores(master: str) -> int | None:
    """Worker threads of a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master; None otherwise."""
    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if match is None:
        return None
    threads = match.group(1)
    if threads is None:
        return 1
    if threads == "*":
        return os.cpu_count() or 1
    return int(threads)


def classic_config(master: str) -> dict[str, str]:
    """The settings pulsarlab gives a classic (JVM-in-this-process) session."""
    config = {
        "spark.master": master,
        "spark.api.mode": "classic",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    cores = local_cores(master)
    if cores is not None:
        config["spark.sql.shuffle.partitions"] = str(max(2, 2 * cores))
    if LOG4J2_CONFIG.is_file():
        config["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}"
    return config


@contextlib.contextmanager
def _without_env(name: str) -> Iterator[None]:
    """Hide one environment variable while pyspark decides classic vs Connect."""
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


class SparkUnreachableError(RuntimeError):
    """The Spark Connect server or Spark master named is not reachable: said at once, where the clients would
    retry in silence (Spark Connect's default policy for about 15 minutes, a standalone master for a minute)."""


PROBE_TIMEOUT_S = 5.0
_DEFAULT_PORTS = {"sc": 15002, "spark": 7077}  # Spark Connect's and the standalone master's


def _addresses(url: str) -> list[tuple[str, int]]:
    """``(host, port)`` of each server an ``sc://`` or ``spark://`` URL names (a standalone master URL may list
    several, ``spark://h1:7077,h2:7077``); empty for any other master (``local``, ``yarn``, ...)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _DEFAULT_PORTS:
        return []
    hosts = rest.split("/", 1)[0].split(";", 1)[0]
    out = []
    for part in hosts.split(",") if scheme == "spark" else [hosts]:
        split = urlsplit(f"//{part.strip()}")
        try:
            port = split.port or _DEFAULT_PORTS[scheme]
        except ValueError:
            raise SparkUnreachableError(f"{url!r}: {part!r} is not host:port") from None
        if not split.hostname:
            raise SparkUnreachableError(f"{url!r} names no host")
        out.append((split.hostname, port))
    return out


def _probe(host: str, port: int, timeout_s: float) -> str | None:
    """None if a TCP connection to ``host:port`` opens within ``timeout_s``, else why not, in a few words."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except socket.gaierror as exc:
        return f"cannot resolve {host!r} ({exc.strerror or exc})"
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)


def check_reachable(kind: str, target: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise `SparkUnreachableError` ("cannot reach Spark Connect at sc://...: connection refused") unless the
    Spark Connect server (``kind`` "remote") or one of the standalone masters (``spark://``) accepts a TCP
    connection within ``timeout_s``. Other masters (``local[*]``, ``yarn``, ``k8s://``) are not probed."""
    addresses = _addresses(target)
    if not addresses:
        return
    what = "Spark Connect" if kind == "remote" else "the Spark master"
    failures = [_probe(host, port, timeout_s) for host, port in addresses]
    if all(failures):
        reasons = sorted(set(failures))  # type: ignore[arg-type]
        raise SparkUnreachableError(f"cannot reach {what} at {target}: {'; '.join(reasons)}")


def get_session(app_name: str = "pulsarlab", master: str | None = None, config: dict[str, Any] | None = None):
    """A SparkSession (the active one if it exists), configured for pulsarlab.

    ``config`` adds or overrides Spark settings. Raises JavaNotFoundError before starting a JVM if
    Java 17+ is missing, `SparkUnreachableError` (a RuntimeError) within seconds if the Spark Connect server or
    standalone master does not accept a connection, and RuntimeError if a Spark Connect client is asked for but
    not installed.
    """
    kind, target = resolve_master(master)
    check_reachable(kind, target)
    from pyspark.sql import SparkSession

    if kind == "remote":
        builder = SparkSession.builder.remote(target).appName(app_name)
        for key, value in (config or {}).items():
            builder = builder.config(key, value)
        try:
            return builder.getOrCreate()
        except ImportError as exc:
            raise RuntimeError(
                f"Spark Connect remote {target!r} needs the Connect client: pip install 'pyspark[connect]' ({exc})"
            ) from exc

    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = {"spark.app.name": app_name, **classic_config(target), **{k: str(v) for k, v in (config or {}).items()}}
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _without_env(REMOTE_ENV):  # an explicit master wins over SPARK_REMOTE
        _start_driver(settings)
        return builder.getOrCreate()


def _start_driver(settings: dict[str, str]) -> None:
    """Start the driver JVM with ``settings`` and its stderr relayed without the incubator notice
    (`pulsarlab.spark.jvm_stderr`), unless this process already has one or was given one by spark-submit."""
    from pyspark import SparkConf, SparkContext

    with SparkContext._lock:
        if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
            return
        conf = SparkConf(loadDefaults=False).setAll(settings.items())
        SparkContext._gateway = start_gateway(conf)
        SparkContext._jvm = SparkContext._gateway.jvm
