"""Version profiles: names, defaults and clear errors."""

from __future__ import annotations

import pytest

from pulsarlab.profiles import (
    DEFAULT_PROFILE,
    ConsistentHashingVariant,
    StickyHashMode,
    get_profile,
)


def test_default_is_the_current_lts_line():
    assert DEFAULT_PROFILE == "4.0"
    assert get_profile().name == "4.0"
    assert get_profile(None) is get_profile("4.0")


def test_lines_differ_where_pulsar_differs():
    p3, p4, p41 = get_profile("3.0"), get_profile("4.0"), get_profile("4.1")
    assert p3.sticky_hash_mode is StickyHashMode.FULL and p4.sticky_hash_mode is StickyHashMode.RANGED
    assert p3.consistent_hashing is ConsistentHashingVariant.V3_IDENTITY
    assert p4.consistent_hashing is ConsistentHashingVariant.V4
    assert not p3.keyless_producer_sequence_key and p4.keyless_producer_sequence_key
    # the client default is the Python client's (false in every line); Java's turned true in 4.1
    assert not p4.batch_index_ack_enabled and not p41.batch_index_ack_enabled
    assert p41.broker_config()["acknowledgmentAtBatchIndexLevelEnabled"] is True
    assert p4.broker_config()["acknowledgmentAtBatchIndexLevelEnabled"] is False


@pytest.mark.parametrize("bad", ["5.0", "4", "", "latest"])
def test_unknown_profiles_name_the_choices(bad):
    with pytest.raises(ValueError, match=r"unknown Pulsar version profile .* choose one of: .*4\.0"):
        get_profile(bad)


def test_profile_must_be_a_string():
    with pytest.raises(TypeError, match="version must be a string"):
        get_profile(4.0)


def test_broker_config_uses_pulsar_defaults_and_rejects_unknown_names():
    conf = get_profile("4.0").broker_config({"managedLedgerMaxEntriesPerLedger": 3})
    assert conf["managedLedgerMaxEntriesPerLedger"] == 3
    assert conf["subscriptionKeySharedConsistentHashingReplicaPoints"] == 100
    assert conf["activeConsumerFailoverDelayTimeMillis"] == 1000
    with pytest.raises(ValueError, match="unknown broker setting 'managedLedgerMaxEntries'"):
        get_profile("4.0").broker_config({"managedLedgerMaxEntries": 3})


def test_replace_derives_a_variant_without_touching_the_original():
    p = get_profile("4.0")
    q = p.replace(consistent_hashing=ConsistentHashingVariant.V3_IDENTITY)
    assert q.consistent_hashing is ConsistentHashingVariant.V3_IDENTITY
    assert p.consistent_hashing is ConsistentHashingVariant.V4
