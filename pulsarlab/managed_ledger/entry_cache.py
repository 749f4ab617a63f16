"""The broker's entry cache: a bounded amount of entries kept in memory, the rest in bookie storage.

Models `RangeEntryCacheManagerImpl` and `EntryCacheDefaultEvictionPolicy` (docs/guide/retention.md#entry-cache):
every managed ledger caches the entries it wrote; `ManagedLedgerImpl.doCacheEviction` drops the ones every cursor
has read (`invalidateReadEntriesUntil` the slowest reader's position), and when all caches together pass
``managedLedgerCacheSizeMB`` the largest ones are evicted, oldest entries first, down to
``managedLedgerCacheEvictionWatermark`` of it. An evicted entry is read back from bookie storage
(`pulsarlab.managed_ledger.bookie_storage`) when a cursor asks for it again (a seek, a redelivery, a reader from the
earliest position, compaction).

Simplifies: entries move in blocks of 128 (the ledger's storage blocks) and the block a ledger is still writing
stays in memory, so the bound is the configured size plus one partial block per managed ledger; eviction runs when
a block fills, not on a timer (no ``managedLedgerCacheEvictionTimeThresholdMillis``); entries read back are not
cached again. Without bookie storage (``lab_entryStorage`` "memory", an in-process `Lab`'s default) every entry
stays in memory, as before.
"""

from __future__ import annotations

from typing import Any, Protocol

from pulsarlab.managed_ledger.bookie_storage import BookieStorage

_MB = 1024 * 1024
ENTRY_STORAGE_KEY = "lab_entryStorage"  # "memory" (every entry in memory) or "disk" (bookie storage + a cache)
STORAGES = ("memory", "disk")
DEFAULT_CACHE_SIZE_MB = 64  # Pulsar's is a fifth of the broker's direct memory; the lab's fixed stand-in
DEFAULT_WATERMARK = 0.9  # managedLedgerCacheEvictionWatermark


def _check(max_size_mb: Any, watermark: Any) -> None:
    if type(max_size_mb) is not int or max_size_mb < 0:
        raise ValueError(f"broker setting managedLedgerCacheSizeMB must be an integer >= 0, got {max_size_mb!r}")
    if type(watermark) not in (int, float) or not 0 < watermark <= 1:
        raise ValueError(f"broker setting managedLedgerCacheEvictionWatermark must be in (0, 1], got {watermark!r}")


class CachedLedger(Protocol):
    """What the manager asks of a managed ledger's cache (`EntryCache`)."""

    cached_bytes: int

    def evict_cached(self, nbytes: int) -> int: ...


class EntryCacheManager:
    """`EntryCacheManager`: the caches of every managed ledger of a broker, their total size and its bound."""

    def __init__(
        self, storage: BookieStorage, max_size_mb: int = DEFAULT_CACHE_SIZE_MB, watermark: float = DEFAULT_WATERMARK
    ) -> None:
        _check(max_size_mb, watermark)
        self.storage = storage
        self.max_size = max_size_mb * _MB
        self.watermark = float(watermark)
        self.size = 0  # bytes of every cached block
        self._ledgers: dict[int, CachedLedger] = {}  # id() -> the managed ledgers with cached bytes
        self.evictions = 0  # blocks evicted by the size bound (for stats and tests)

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "EntryCacheManager | None":
        """The manager the broker configuration asks for: None when entries stay in memory."""
        storage = config.get(ENTRY_STORAGE_KEY, "memory")
        if storage not in STORAGES:
            raise ValueError(f"broker setting {ENTRY_STORAGE_KEY} must be one of {STORAGES}, got {storage!r}")
        if storage == "memory":
            return None
        size = config.get("managedLedgerCacheSizeMB", DEFAULT_CACHE_SIZE_MB)
        watermark = config.get("managedLedgerCacheEvictionWatermark", DEFAULT_WATERMARK)
        _check(size, watermark)  # before a folder is made
        return cls(BookieStorage(), size, watermark)

    def grew(self, ledger: CachedLedger, nbytes: int) -> None:
        """``ledger`` cached ``nbytes`` more; evict the largest caches when the total passes the bound."""
        self._ledgers[id(ledger)] = ledger
        self.size += nbytes
        if self.size > self.max_size:
            self._evict_to_watermark()

    def shrank(self, ledger: CachedLedger, nbytes: int) -> None:
        """``ledger`` dropped ``nbytes`` of its cache (evicted, or the ledger was deleted)."""
        self.size -= nbytes
        if ledger.cached_bytes <= 0:
            self._ledgers.pop(id(ledger), None)

    def forget(self, ledger: CachedLedger) -> None:
        """The managed ledger is gone (the topic was deleted)."""
        self.size -= ledger.cached_bytes
        self._ledgers.pop(id(ledger), None)

    def _evict_to_watermark(self) -> None:
        """`EntryCacheDefaultEvictionPolicy.doEviction`: free the largest caches first, down to the watermark."""
        to_free = self.size - int(self.max_size * self.watermark)
        for ledger in sorted(self._ledgers.values(), key=lambda c: c.cached_bytes, reverse=True):
            if to_free <= 0:
                break
            freed = ledger.evict_cached(to_free)
            if freed:
                self.evictions += 1
            to_free -= freed

    def close(self) -> None:
        """The broker stops: bookie storage's folder is removed."""
        self.storage.close()
