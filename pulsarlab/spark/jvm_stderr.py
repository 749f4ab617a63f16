"""The driver JVM started with its stderr passed on line by line, minus the JVM's incubator-module notice.

Models no Pulsar class. Spark 4's launcher (``org.apache.spark.launcher.JavaModuleOptions``) starts every driver
with ``--add-modules=jdk.incubator.vector``, and the JVM answers with ``WARNING: Using incubator modules:
jdk.incubator.vector`` on stderr, which a notebook shows in a red box although nothing is wrong; no JVM option turns
that one line off. pulsarlab starts the py4j gateway itself with its stderr on a pipe and copies every other line,
unchanged and at once, to this process's stderr file descriptor, where the JVM would have written it: log4j's
warnings and errors and the Python workers' stderr still show.
"""

from __future__ import annotations

import os
import re
import threading
from typing import IO, Any, Iterable, Iterator

# the whole line the JVM prints (java.lang.module's ModuleBootstrap) when only jdk.incubator.vector is in use
INCUBATOR_NOTICE = re.compile(rb"WARNING: Using incubator modules: jdk\.incubator\.vector\r?\n?")


def without_notice(lines: Iterable[bytes]) -> Iterator[bytes]:
    """``lines`` without the JVM's incubator-module notice (any other line, warning or not, is kept)."""
    return (line for line in lines if not INCUBATOR_NOTICE.fullmatch(line))


def relay(source: IO[bytes], fd: int) -> None:
    """Copy ``source`` to file descriptor ``fd`` line by line without the notice, until ``source`` ends."""
    with source:
        for line in without_notice(iter(source.readline, b"")):
            os.write(fd, line)


def start_gateway(conf: Any) -> Any:
    """pyspark's py4j gateway (``launch_gateway``) with the driver's stderr relayed to fd 2 by a daemon thread
    that ends with the JVM; started before the JVM, so a JVM that fails to start still shows why. ``conf`` is the
    SparkConf the driver starts with (its JVM options among it)."""
    from pyspark.java_gateway import launch_gateway

    read_end, write_end = os.pipe()
    relaying = threading.Thread(
        target=relay, args=(os.fdopen(read_end, "rb"), 2), name="pulsarlab-spark-stderr", daemon=True
    )
    relaying.start()
    try:
        return launch_gateway(conf, popen_kwargs={"stderr": write_end})
    except BaseException:
        os.close(write_end)
        write_end = -1
        relaying.join(timeout=60)  # the JVM has exited: what it said (why it failed) is out before the traceback
        raise
    finally:
        if write_end >= 0:
            os.close(write_end)  # the JVM holds its own copy: the relay ends when the JVM does


__all__ = ["INCUBATOR_NOTICE", "relay", "start_gateway", "without_notice"]
