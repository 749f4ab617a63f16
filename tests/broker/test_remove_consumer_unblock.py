"""A consumer leaving a Shared subscription that is blocked on unacked messages: the read that unblocking starts
runs after the consumer left the list (Pulsar's readMoreEntriesAsync), so it neither spins on the closed consumer's
permits nor loses its messages."""

import pulsarlab as pl
import pulsarlab.broker.dispatch.shared as dispatcher_shared


def test_a_crash_that_unblocks_the_subscription_hands_its_messages_on(monkeypatch):
    monkeypatch.setattr(dispatcher_shared, "MAX_LOOPS", 1000)  # a spinning dispatcher fails fast
    lab = pl.Lab(version="4.0", seed=1, broker_config={"maxUnackedMessagesPerSubscription": 4})
    client = lab.client()
    a = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="a", receiver_queue_size=10)
    b = client.subscribe("t", "s", consumer_type=pl.ConsumerType.Shared, consumer_name="b", receiver_queue_size=0)
    producer = client.create_producer("t")
    sent = [producer.send(f"m{i}".encode()) for i in range(8)]
    sub = lab.admin.topics.stats("t")["subscriptions"]["s"]
    assert sub["blockedSubscriptionOnUnackedMsgs"] and len(a.receiver_queue) == 4
    a.crash()  # its 4 unacked messages return; the subscription unblocks while a is being removed
    got = []
    for _ in range(8):
        m = b.receive()
        got.append(m.message_id())
        b.acknowledge(m)
    assert sorted(map(str, got)) == sorted(map(str, sent))
    lab.run_until_idle()
    assert lab.admin.topics.stats("t")["subscriptions"]["s"]["msgBacklog"] == 0
