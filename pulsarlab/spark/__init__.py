"""Scale-up pipelines on Spark DataFrames (imports pulsarlab and pyspark; the model never imports this)."""

from .keydist import key_distribution
from .session import JavaNotFoundError, get_session

__all__ = ["JavaNotFoundError", "get_session", "key_distribution"]
