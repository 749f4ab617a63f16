"""This pulsarlab's version (the package's ``__version__``, written into timeline files). Models no Pulsar class."""

__version__ = "0.1.0"

__all__ = ["__version__"]
