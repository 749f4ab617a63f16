"""Pulsar's `ManagedLedgerException` family: how the managed ledger and its cursors fail an operation.

Models `org.apache.bookkeeper.mledger.ManagedLedgerException` and the nested exceptions the lab raises. The Java
futures they fail are plain raises here.
"""

from __future__ import annotations

from pulsarlab.errors import PulsarError

_MLE = "org.apache.bookkeeper.mledger.ManagedLedgerException"


class ManagedLedgerException(PulsarError):
    """`ManagedLedgerException`: the managed ledger / cursor failed an operation (a failed future)."""

    java_class = _MLE

    def __init__(self, message: str, *, via: str = "future") -> None:
        super().__init__(message, via=via)

    @classmethod
    def wrapping(cls, error: PulsarError) -> "ManagedLedgerException":
        """`getManagedLedgerException(e)`: ``new ManagedLedgerException(e)``, whose message is ``e.toString()``."""
        if isinstance(error, ManagedLedgerException):
            return error
        return cls(f"{error.java_class}: {error.message}")


class CursorNotFoundException(ManagedLedgerException):
    java_class = _MLE + "$CursorNotFoundException"


class CursorAlreadyClosedException(ManagedLedgerException):
    java_class = _MLE + "$CursorAlreadyClosedException"


class NonRecoverableLedgerException(ManagedLedgerException):
    java_class = _MLE + "$NonRecoverableLedgerException"


class LedgerNotExistException(NonRecoverableLedgerException):
    java_class = _MLE + "$LedgerNotExistException"
