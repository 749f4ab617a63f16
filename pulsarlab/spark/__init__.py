"""Scale-up pipelines on Spark DataFrames (imports pulsarlab and pyspark; the model never imports this)."""

from pulsarlab.spark.keydist import key_distribution
from pulsarlab.spark.session import JavaNotFoundError, get_session

__all__ = ["JavaNotFoundError", "get_session", "key_distribution"]
