"""The reference platform: numpy's generic code path, on whatever CPU runs the oracle.

The reference that claimtrace reproduces is numpy's generic code path, where float64 ``np.log``
is the C library's ``log`` and ``argsort`` is the generic introsort (docs/architecture.md,
"Reference platform"). On a CPU with AVX-512, numpy 1.24 dispatches float64 ``log`` to a
vectorised routine whose last bit differs on about a fifth of inputs, so the 2024 environment
would compute a CPU-dependent reference.

``.venv-oracle`` therefore switches numpy's AVX-512 dispatch off for every process it starts:
``make oracle-env`` installs ``oracle/reference_platform.pth`` into its site-packages, which sets
``NPY_DISABLE_CPU_FEATURES`` before numpy is first imported (a warning about features this CPU
does not have is silenced). :func:`require` is called by every oracle script: it refuses to
produce a reference if the switch did not take.
"""

from __future__ import annotations

import os

#: numpy 1.24's AVX-512 dispatch targets (``numpy.show_config()`` lists them).
AVX512_TARGETS = ("AVX512F", "AVX512CD", "AVX512_SKX", "AVX512_CLX", "AVX512_CNL", "AVX512_ICL")


def active_features() -> list[str]:
    """The CPU features numpy found usable in this process (a disabled target reads as off)."""
    from numpy.core._multiarray_umath import __cpu_features__

    return sorted(name for name, on in __cpu_features__.items() if on)


def require() -> None:
    """Exit with a message if numpy would dispatch to an AVX-512 target here."""
    active = [name for name in active_features() if name in AVX512_TARGETS]
    if active:
        raise SystemExit(
            f"the oracle must run numpy's generic path, but AVX-512 dispatch is on ({' '.join(active)}); "
            f"NPY_DISABLE_CPU_FEATURES={os.environ.get('NPY_DISABLE_CPU_FEATURES')!r}: "
            "run `make oracle-env` to install oracle/reference_platform.pth"
        )
