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
