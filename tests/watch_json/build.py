"""Builds the constructed poll sequences of this folder from the samples in data/broker-json/ (see README.md).

    python tests/watch_json/build.py      # rewrites the *.json files here; the tests read the files, not this

Every field comes from a sample file (real 3.0.x / 4.0.x output field by field); only the values this script
names are changed from poll to poll, and printed with Jackson's pretty printer layout (`"key" : value`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from pulsarlab.importers import lenient_json

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parents[1] / "data" / "broker-json"


def jackson(obj: object) -> str:
    """JSON as Jackson's DefaultPrettyPrinter lays it out (``"key" : value``, two-space indent)."""
    text = json.dumps(obj, indent=2, ensure_ascii=False)
    return text.replace('": ', '" : ') + "\n"


def write(folder: str, poll: int, stats: dict, internal: dict) -> None:
    out = HERE / folder
    out.mkdir(exist_ok=True)
    (out / f"poll-{poll}.stats.json").write_text(jackson(stats))
    (out / f"poll-{poll}.stats-internal.json").write_text(jackson(internal))


def draining_4x() -> None:
    """Key_Shared ``fulfilment`` (4.0.0): fulfilment-a holds 30 unacked messages, 10 of them of 5 hashes now owned by
    fulfilment-b (draining); the mark-delete 5003:1789 is stuck behind the hole at 5003:1790 while entries are added;
    at poll 3 fulfilment-a has acked everything and the mark-delete reaches the last entry."""
    stats0 = json.loads((SAMPLES / "key-shared-4x-draining.stats.json").read_text())
    shape = json.loads((SAMPLES / "shared-healthy.stats-internal.json").read_text())
    # the 30 holes: 5003:1790, 1791, 1800-1809, 1820-1829, 1840-1847; the acked ranges between them:
    acked = "[(5003:1791..5003:1799],(5003:1809..5003:1819],(5003:1829..5003:1839],(5003:1847..5003:1859]]"
    for poll in range(4):
        added = 12 * poll  # entries published since poll 0
        stats = copy.deepcopy(stats0)
        sub = stats["subscriptions"]["fulfilment"]
        a, b = sub["consumers"]
        internal = copy.deepcopy(shape)
        lac = 1877 + added
        internal.update(
            entriesAddedCounter=41878 + added,
            numberOfEntries=41878 + added,
            currentLedgerEntries=1878 + added,
            lastConfirmedEntry=f"5003:{lac}",
            lastLedgerCreatedTimestamp="2024-10-21T04:58:12.114Z",
        )
        internal["ledgers"] = [
            {"ledgerId": 5001, "entries": 40000, "size": 16512000, "offloaded": False, "underReplicated": False},
            {"ledgerId": 5003, "entries": 0, "size": 0, "offloaded": False, "underReplicated": False},
        ]
        cursor = internal["cursors"].pop("invoice-writer")
        stats["msgInCounter"] = 41878 + added
        if poll < 3:
            unread = 18  # entries after the read position
            cursor.update(
                markDeletePosition="5003:1789",
                readPosition=f"5003:{1860 + added}",
                messagesConsumedCounter=41860 + added,
                # fulfilment-b takes and acks the new entries: the last acked range grows, the holes stay
                individuallyDeletedMessages=acked.replace("5003:1859]]", f"5003:{1859 + added}]]"),
                numberOfEntriesSinceFirstNotAckedMessage=lac - 1789,
                totalNonContiguousDeletedMessagesRange=4,
            )
            sub.update(msgBacklog=30 + unread, msgBacklogNoDelayed=30 + unread, unackedMessages=30)
            sub["lastAckedTimestamp"] = 1729490376390 + 2000 * poll  # fulfilment-b keeps acking
            for h in a["drainingHashes"]:
                h["blockedAttempts"] += 3 * poll
        else:
            cursor.update(
                markDeletePosition=f"5003:{lac}",
                readPosition=f"5003:{lac + 1}",
                messagesConsumedCounter=41878 + added,
                individuallyDeletedMessages="[]",
                numberOfEntriesSinceFirstNotAckedMessage=1,
                totalNonContiguousDeletedMessagesRange=0,
            )
            sub.update(msgBacklog=0, msgBacklogNoDelayed=0, unackedMessages=0, msgInReplay=0)
            sub.update(drainingHashesCount=0, drainingHashesClearedTotal=5, drainingHashesUnackedMessages=0)
            sub.update(nonContiguousDeletedMessagesRanges=0, nonContiguousDeletedMessagesRangesSerializedSize=0)
            sub["lastAckedTimestamp"] = sub["lastMarkDeleteAdvancedTimestamp"] = 1729490382390
            a.update(unackedMessages=0, drainingHashesCount=0, drainingHashesClearedTotal=5)
            a.update(drainingHashesUnackedMessages=0, drainingHashes=[])
        b["unackedMessages"] = 0
        internal["cursors"] = {"fulfilment": cursor}
        write("draining-4x", poll, stats, internal)


def ack_holes_3x() -> None:
    """Shared ``settlement-writer`` (3.0.6): the mark-delete 2371:4 stays behind the hole at 2371:5 for polls 0-1
    while entries are added; at poll 2 the holes are acked and the mark-delete jumps to 2398:2."""
    stats0 = json.loads((SAMPLES / "ack-holes.stats.json").read_text())
    # the sample is a web UI's copy (trailing commas, "‥" in the ranges): read it leniently, print it as a broker does
    internal0, _src = lenient_json.load(SAMPLES / "ack-holes.stats-internal.json")
    cursor0 = internal0["cursors"]["settlement-writer"]
    cursor0["individuallyDeletedMessages"] = cursor0["individuallyDeletedMessages"].replace("‥", "..")
    for poll in range(3):
        stats, internal = copy.deepcopy(stats0), copy.deepcopy(internal0)
        added = 40 * poll
        internal["entriesAddedCounter"] += added
        internal["numberOfEntries"] += added
        internal["currentLedgerEntries"] += added
        ledger, entry = internal["lastConfirmedEntry"].split(":")
        internal["lastConfirmedEntry"] = f"{ledger}:{int(entry) + added}"
        stats["msgInCounter"] += added
        cursor = internal["cursors"]["settlement-writer"]
        sub = stats["subscriptions"]["settlement-writer"]
        audit = internal["cursors"]["settlement-audit"]  # healthy: it keeps up with the new entries
        for field in ("markDeletePosition", "readPosition"):
            lid, e = audit[field].split(":")
            audit[field] = f"{lid}:{int(e) + added}"
        audit["messagesConsumedCounter"] += added
        if poll == 2:
            cursor["markDeletePosition"] = "2398:2"
            cursor["individuallyDeletedMessages"] = "[]"
            cursor["totalNonContiguousDeletedMessagesRange"] = 0
            cursor["numberOfEntriesSinceFirstNotAckedMessage"] = 1
            sub["lastMarkDeleteAdvancedTimestamp"] = sub["lastAckedTimestamp"]
            sub["msgBacklog"] = sub["msgBacklogNoDelayed"] = 118
        write("ack-holes-3x", poll, stats, internal)


if __name__ == "__main__":
    draining_4x()
    ack_holes_3x()
