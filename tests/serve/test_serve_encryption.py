"""End-to-end encryption through ``pulsarlab serve``: the broker stores and forwards the encrypted bytes and the
metadata's encryption keys untouched (encryption is client-side), on first delivery and on every later read.

Keys: a fresh RSA pair made with ``openssl`` in a temporary folder (PEM files, as the C++ ``CryptoKeyReader``
reads them).
"""

from __future__ import annotations

import subprocess

import pulsar
import pytest
from serve_support import RECEIVE_MS, client_for, served_lab

pytestmark = pytest.mark.serve

TOPIC = "persistent://public/default/secret"


@pytest.fixture(scope="module")
def key_reader(tmp_path_factory) -> pulsar.CryptoKeyReader:
    d = tmp_path_factory.mktemp("keys")
    private, public = d / "private.pem", d / "public.pem"
    subprocess.run(["openssl", "genrsa", "-out", str(private), "2048"], check=True, capture_output=True, timeout=60)
    subprocess.run(
        ["openssl", "rsa", "-in", str(private), "-pubout", "-out", str(public)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return pulsar.CryptoKeyReader(str(public), str(private))


def _producer(client, key_reader, **kwargs):
    return client.create_producer(
        TOPIC,
        encryption_key="lab-key",
        crypto_key_reader=key_reader,
        compression_type=pulsar.CompressionType.LZ4,
        **kwargs,
    )


def test_an_encrypted_message_read_again_after_a_failed_consumer_is_still_decryptable(key_reader):
    with served_lab() as (lab, server), client_for(server) as client:
        p = _producer(client, key_reader)
        p.send(b"msg-0")
        no_key = client.subscribe(
            TOPIC,
            "s",
            initial_position=pulsar.InitialPosition.Earliest,
            crypto_failure_action=pulsar.ConsumerCryptoFailureAction.FAIL,
        )
        with pytest.raises(pulsar.Timeout):
            no_key.receive(1000)  # cannot decrypt: not handed to the application
        no_key.close()
        p.send(b"msg-1")
        with_key = client.subscribe(TOPIC, "s", crypto_key_reader=key_reader)
        got = [with_key.receive(RECEIVE_MS) for _ in range(2)]
        assert [m.data() for m in got] == [b"msg-0", b"msg-1"]
        ctx = got[0].encryption_context()
        assert [k.key for k in ctx.keys()] == ["lab-key"]
        assert ctx.compression_type() == pulsar.CompressionType.LZ4
        assert not ctx.is_decryption_failed()


def test_an_encrypted_compressed_batch_is_stored_whole_and_consumed_undecrypted_without_the_key(key_reader):
    with served_lab() as (lab, server), client_for(server) as client:
        p = _producer(client, key_reader, batching_enabled=True)
        p.send_async(b"msg-3", None)
        p.send_async(b"msg-4", None)
        p.flush()
        raw = client.subscribe(
            TOPIC,
            "raw",
            initial_position=pulsar.InitialPosition.Earliest,
            crypto_failure_action=pulsar.ConsumerCryptoFailureAction.CONSUME,
        )
        m = raw.receive(RECEIVE_MS)
        assert m.data() not in (b"msg-3", b"msg-4")
        assert m.encryption_context().is_decryption_failed()
        assert m.encryption_context().batch_size() == 2
        reader = client.subscribe(
            TOPIC, "dec", initial_position=pulsar.InitialPosition.Earliest, crypto_key_reader=key_reader
        )
        assert [reader.receive(RECEIVE_MS).data() for _ in range(2)] == [b"msg-3", b"msg-4"]
