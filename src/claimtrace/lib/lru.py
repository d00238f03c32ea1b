"""The one least-recently-used cache: a map bounded in entries (and, optionally, in a size such
as bytes), the least recently used entry dropped first, safe to share between threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """At most ``entries`` entries and, with ``size_of``, at most ``size`` in total of
    ``size_of(value)``; a value larger than ``size // refuse_over`` is not kept at all."""

    def __init__(
        self,
        entries: int,
        size: int | None = None,
        size_of: Callable[[V], int] | None = None,
        refuse_over: int = 16,
    ):
        self.entries, self.size, self.size_of, self.refuse_over = entries, size, size_of, refuse_over
        self.total = 0
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: K) -> bool:
        return key in self._items

    def get(self, key: K) -> V | None:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` (the first value kept for a key stays), dropping the least recently used
        entries beyond the bounds."""
        weight = self.size_of(value) if self.size_of is not None else 0
        with self._lock:
            if key in self._items or (self.size is not None and weight > self.size // self.refuse_over):
                return
            self._items[key] = value
            self.total += weight
            while len(self._items) > self.entries or (self.size is not None and self.total > self.size):
                _, dropped = self._items.popitem(last=False)
                self.total -= self.size_of(dropped) if self.size_of is not None else 0

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._items.clear()
            self.total = 0

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for ``key``, else ``make()`` (called outside the lock) kept and returned."""
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value
