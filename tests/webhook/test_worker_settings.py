"""What each worker sets for itself when it loads the app (``WebhookServer.load`` runs in the worker)."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from webhook import server, tls


def test_a_worker_hands_the_gil_over_every_half_millisecond(tmp_path: Path) -> None:
    pair = tls.write_self_signed(tmp_path, ["localhost"])
    before = sys.getswitchinterval()
    app_server = server.WebhookServer(server.Options(cert_file=str(pair.cert_file), key_file=str(pair.key_file)))
    try:
        app_server.load()
        assert server.GIL_SWITCH_INTERVAL == 0.0005
        assert sys.getswitchinterval() == server.GIL_SWITCH_INTERVAL
    finally:
        sys.setswitchinterval(before)
        gc.unfreeze()


def test_a_worker_freezes_what_it_loaded_and_makes_young_collections_rare(tmp_path: Path) -> None:
    """A ~1 MiB review is some 32,000 containers: at Python's 700 its parse alone set off dozens of young
    collections, each scanning every review in flight (``webhook.server.YOUNG_COLLECTION_EVERY``)."""
    pair = tls.write_self_signed(tmp_path, ["localhost"])
    before, switch = gc.get_threshold(), sys.getswitchinterval()
    app_server = server.WebhookServer(server.Options(cert_file=str(pair.cert_file), key_file=str(pair.key_file)))
    try:
        gc.unfreeze()
        app_server.load()
        assert gc.get_threshold() == (50_000, *before[1:])
        assert gc.get_freeze_count() > 0
    finally:
        gc.set_threshold(*before)
        sys.setswitchinterval(switch)
        gc.unfreeze()


def test_idle_keep_alive_connections_outlive_the_api_servers_own(tmp_path: Path) -> None:
    """The API server drops an idle webhook connection after 90 s and does not retry a POST whose write fails: a
    webhook closing idle connections sooner races its calls ("write: broken pipe", the user's write refused with a
    500), so the API server must be the one to close them."""
    pair = tls.write_self_signed(tmp_path, ["localhost"])
    app_server = server.WebhookServer(server.Options(cert_file=str(pair.cert_file), key_file=str(pair.key_file)))
    assert app_server.cfg.keepalive == server.KEEPALIVE_SECONDS == 120
    assert app_server.cfg.keepalive > 90
