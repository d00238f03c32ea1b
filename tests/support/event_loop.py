"""Running a coroutine to its end from a test, whatever the test's thread holds.

The page tests share one Chromium per test process (tests/web/conftest.py ``browser``), and
Playwright's sync API keeps its asyncio loop marked as running in the thread that entered it
for as long as the browser lives. ``asyncio.run`` refuses to start in such a thread, so a test
that runs a coroutine after any page test of its process would fail for a reason of the suite,
not of the code under test.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor


def run_to_end(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own (a fresh event loop there); its result,
    or its exception raised here."""
    with ThreadPoolExecutor(1, thread_name_prefix="test-event-loop") as pool:
        return pool.submit(asyncio.run, coroutine).result()
