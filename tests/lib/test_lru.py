"""The one LRU cache (claimtrace.lib.lru)."""

from __future__ import annotations

from claimtrace.lib.lru import LRU


def test_the_least_recently_used_entry_goes_first():
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "a" is now the most recently used
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 1 and cache.get("c") == 3 and len(cache) == 2


def test_the_first_value_kept_for_a_key_stays():
    cache: LRU[str, int] = LRU(4)
    cache.put("a", 1)
    cache.put("a", 2)
    assert cache.get("a") == 1


def test_bounded_in_size_and_a_value_too_large_is_not_kept():
    cache: LRU[str, bytes] = LRU(100, size=160, size_of=len)
    for i in range(5):
        cache.put(str(i), b"x" * 9)
    assert cache.total == 45 and len(cache) == 5
    cache.put("big", b"x" * 11)  # over a sixteenth of 160
    assert "big" not in cache
    for i in range(5, 20):
        cache.put(str(i), b"x" * 9)
    assert cache.total <= 160 and "0" not in cache and "19" in cache


def test_get_or_make_makes_once():
    cache: LRU[str, list] = LRU(4)
    made = []
    first = cache.get_or_make("k", lambda: made.append(1) or [1])
    assert cache.get_or_make("k", lambda: made.append(1) or [2]) is first and made == [1]
