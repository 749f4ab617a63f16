"""The broker's command surface and its admin resources are apart (`pulsarlab.broker.service`,
`pulsarlab.broker.admin`), and pulsar-admin's exceptions are importable where user code imported them before."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import pulsarlab as pl
import pulsarlab.admin
import pulsarlab.broker.service
import pulsarlab.errors
from pulsarlab.broker.admin import BrokerAdmin
from pulsarlab.broker.service import BrokerService

ADMIN_EXCEPTIONS = [
    "NotFoundException",
    "ConflictException",
    "PreconditionFailedException",
    "BadRequestException",
    "MethodNotAllowedException",
]


def _methods(cls: type) -> list[str]:
    return [name for name, value in vars(cls).items() if inspect.isfunction(value)]


@pytest.mark.parametrize("cls", [BrokerService, BrokerAdmin], ids=lambda c: c.__name__)
def test_each_class_stays_small(cls):
    methods = _methods(cls)
    assert 10 <= len(methods) <= 40, (cls.__name__, len(methods))
    lines = Path(inspect.getfile(cls)).read_text(encoding="utf-8").count("\n")
    assert lines <= 800, (inspect.getfile(cls), lines)


def test_admin_operations_are_not_client_commands():
    admin_only = {"create_tenant", "create_namespace", "set_retention", "skip_messages", "expire_messages", "compact"}
    assert admin_only <= set(_methods(BrokerAdmin))
    assert not admin_only & set(dir(BrokerService))


@pytest.mark.parametrize("name", ADMIN_EXCEPTIONS)
def test_admin_exceptions_live_in_errors_and_keep_their_old_import_paths(name):
    cls = getattr(pulsarlab.errors, name)
    assert cls.__module__ == "pulsarlab.errors"
    assert cls.java_class.startswith("org.apache.pulsar.client.admin.PulsarAdminException")
    assert getattr(pulsarlab.broker.service, name) is cls
    if name != "MethodNotAllowedException":
        assert getattr(pulsarlab.admin, name) is cls
    assert pulsarlab.errors.error_from_java(cls.java_class) is cls


def test_lab_admin_compacts_through_the_admin_resources():
    lab = pl.Lab(version="4.0", seed=1)
    producer = lab.client().create_producer("t")
    for key in ("a", "b", "a"):
        producer.send(key.encode(), partition_key=key)
    assert lab.admin.topics.compaction_status("t") == {"status": "NOT_RUN", "lastError": ""}
    lab.admin.topics.trigger_compaction("t")
    assert lab.admin.topics.compaction_status("t") == {"status": "SUCCESS", "lastError": ""}
    with pytest.raises(pulsarlab.errors.NotFoundException, match="Topic not found"):
        lab.admin.topics.trigger_compaction("missing")
