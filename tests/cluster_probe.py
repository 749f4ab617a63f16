"""Runs the Spark pipelines against one Spark master or Spark Connect remote and saves what they return.

Used by tests/spark/test_spark_cluster.py in a subprocess (a classic session and a Connect session do not share one
Python process; pyspark's Connect dependency check also wants a file, not ``python -c``):

    python tests/cluster_probe.py MASTER OUT_DIR

writes OUT_DIR/keydist.pkl, delayed.pkl (pandas pickles) and the scenario sweep (OUT_DIR/sweep/events, metrics).
"""

from __future__ import annotations

import sys
from pathlib import Path

# the same small workloads the test computes locally
KEYDIST = dict(
    n_keys=20_000, selectors=("auto_split", "consistent_hashing"), consumer_counts=(2, 4), version=("3.0", "4.0")
)
DELAYED = dict(messages=(400,), spreads_ms=(3_600_000,), seeds=(0, 1))
SWEEP = {
    "name": "cluster",
    "versions": ["3.0", "4.0"],
    "subscription_type": "Key_Shared",
    "seeds": [1],
    "messages": 200,
    "keys": 10,
    "consumers": 2,
    "nack_rate": 0.1,
    "consumer_churn_every_ms": 100,
}


def main(master: str, out: Path) -> None:
    from pulsarlab.spark import get_session
    from pulsarlab.spark.delayed_sweep import delayed_sweep
    from pulsarlab.spark.keydist import key_distribution
    from pulsarlab.spark.sweep import sweep

    config = None if master.startswith("sc://") else {"spark.executor.memory": "512m", "spark.cores.max": "2"}
    spark = get_session("pulsarlab-cluster-probe", master=master, config=config)
    try:
        out.mkdir(parents=True, exist_ok=True)
        key_distribution(spark, **KEYDIST).to_pickle(out / "keydist.pkl")
        delayed_sweep(spark, **DELAYED).to_pickle(out / "delayed.pkl")
        sweep(spark, SWEEP, out / "sweep", progress=False)
        (out / "session.txt").write_text(type(spark).__module__)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
