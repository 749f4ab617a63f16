"""The error codes a broker answers with: `ServerError` of `PulsarApi.proto`.

The broker maps its exceptions to these (`pulsarlab.broker.service.client_error_code`, as
`BrokerServiceException.getClientErrorCode` does); the front end writes them into ERROR, SEND_ERROR and the
error fields of responses.
"""

from __future__ import annotations

import enum


class ServerError(enum.IntEnum):
    """`ServerError`: the error codes a broker puts in ERROR, SEND_ERROR and error fields of responses."""

    UnknownError = 0
    MetadataError = 1
    PersistenceError = 2
    AuthenticationError = 3
    AuthorizationError = 4
    ConsumerBusy = 5
    ServiceNotReady = 6
    ProducerBlockedQuotaExceededError = 7
    ProducerBlockedQuotaExceededException = 8
    ChecksumError = 9
    UnsupportedVersionError = 10
    TopicNotFound = 11
    SubscriptionNotFound = 12
    ConsumerNotFound = 13
    TooManyRequests = 14
    TopicTerminatedError = 15
    ProducerBusy = 16
    InvalidTopicName = 17
    IncompatibleSchema = 18
    ConsumerAssignError = 19
    TransactionCoordinatorNotFound = 20
    InvalidTxnStatus = 21
    NotAllowedError = 22
    TransactionConflict = 23
    TransactionNotFound = 24
    ProducerFenced = 25


__all__ = ["ServerError"]
