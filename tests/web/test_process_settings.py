"""claimtrace.web.process_settings: a server process's settings set at its start, typed claims
giving freed memory back to the system every so often, and what a warm process holds kept out of
the collector's full passes."""

from __future__ import annotations

import os
import sys
import types


def test_a_server_process_starts_on_one_torch_thread_with_its_malloc_arenas_capped(monkeypatch):
    """The one start-up function: the environment torch reads at import, torch told when it is
    already imported, the arenas capped (each recorded here, nothing of this process changed)."""
    from claimtrace.web import process_settings

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "8")  # restored after the test
    threads, arenas = [], []
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(set_num_threads=threads.append))
    monkeypatch.setattr(process_settings, "limit_malloc_arenas", lambda: arenas.append(1) or True)
    process_settings.configure_server_process()
    assert os.environ["OMP_NUM_THREADS"] == os.environ["MKL_NUM_THREADS"] == "1"
    assert threads == [1] and arenas == [1]


def test_an_app_leaves_its_process_settings_alone(demo_build, monkeypatch):
    """A warm app (as serve makes) sets nothing for the process: each process serve runs does, at
    its start; an app made in a test changes neither the environment nor torch's threads."""
    from claimtrace.web.app import create_app
    from claimtrace.web.site_data import SiteData

    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "8")
    environment, threads = dict(os.environ), []
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(set_num_threads=threads.append))
    site_data = SiteData(demo_build)
    monkeypatch.setattr(site_data, "warm", lambda: None)
    create_app(site_data=site_data, warm=True)
    assert dict(os.environ) == environment and threads == []


def test_typed_claims_return_freed_memory_every_so_often(demo_site_data, monkeypatch):
    """Every RELEASE_EVERY typed claims the server returns freed heap memory to the system
    (glibc keeps it otherwise: the resident memory climbed by about 100 KB a typed claim)."""
    from claimtrace.web import process_settings
    from claimtrace.web import typed_claims as typed_claims_module

    typed_claims = demo_site_data.typed_claims
    released = []
    monkeypatch.setattr(typed_claims_module, "release_memory", lambda: released.append(1))
    monkeypatch.setattr(typed_claims, "release_every", 3)
    for i in range(7):
        typed_claims.trace_text(f"sea level rising {i}")
    assert len(released) in (2, 3)  # the count started wherever earlier tests left it
    monkeypatch.setattr(typed_claims, "release_every", 0)  # a typed-claims process: it returns memory itself
    for i in range(7):
        typed_claims.trace_text_json(f"sea level falling {i}")
    assert len(released) in (2, 3)
    assert process_settings.limit_malloc_arenas(2) in (True, False)
    process_settings.release_memory()  # the real call: harmless, and under 1 ms


def test_a_typed_claims_process_returns_memory_when_nobody_waits_or_at_the_latest():
    """Never before RELEASE_EVERY claims; after that, at the first moment no claim waits; and
    after RELEASE_LATEST claims even with claims waiting (a stream that never pauses)."""
    from claimtrace.web.process_settings import RELEASE_EVERY, RELEASE_LATEST
    from claimtrace.web.typed_processes import release_due

    assert RELEASE_EVERY < RELEASE_LATEST
    assert not release_due(RELEASE_EVERY - 1, waiting=False)
    assert release_due(RELEASE_EVERY, waiting=False)
    assert not release_due(RELEASE_LATEST - 1, waiting=True)
    assert release_due(RELEASE_LATEST, waiting=True)


def test_a_waiting_connection_is_seen_on_the_processes_socket(tmp_path):
    import socket

    from claimtrace.web.typed_processes import _someone_waiting

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(tmp_path / "typed.sock"))
    listener.listen(4)
    try:
        assert not _someone_waiting(listener)
        caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        caller.connect(str(tmp_path / "typed.sock"))
        assert _someone_waiting(listener)
        listener.accept()[0].close()
        caller.close()
        assert not _someone_waiting(listener)
    finally:
        listener.close()


def test_a_warm_server_keeps_what_it_holds_out_of_full_collections():
    """keep_out_of_collections freezes what the process holds (a full pass no longer walks it);
    collect_all_again lets the collector see it again (a build read again)."""
    import gc

    from claimtrace.web.process_settings import collect_all_again, keep_out_of_collections

    try:
        keep_out_of_collections()
        assert gc.get_freeze_count() > 0
    finally:
        collect_all_again()
    assert gc.get_freeze_count() == 0


def test_warm_up_freezes_only_where_asked(demo_build, monkeypatch):
    """A server process of its own (serve, its workers) freezes once warm; an app made in a test
    or for the static export does not."""
    from claimtrace.web import app as app_module
    from claimtrace.web.site_data import SiteData

    frozen = []
    monkeypatch.setattr(app_module, "keep_out_of_collections", lambda: frozen.append(1))
    for freeze in (False, True):
        site_data = SiteData(demo_build)
        monkeypatch.setattr(site_data, "warm", lambda: None)
        app = app_module.create_app(site_data=site_data)
        app_module.warm_up(app, app_module.AnswerCache(), prerender=False, freeze=freeze)
        assert app.state.warmth["typed_ready"] and app.state.warmth.get("frozen", False) == freeze
    assert frozen == [1]
