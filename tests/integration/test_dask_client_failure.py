"""A ``--scheduler`` that Dask cannot connect to leaves no half-made ``Client`` behind.

Such a client, collected later by the garbage collector, closes itself inside whatever runs then: inside the
next ``LocalCluster``'s loop start it waits for the lock that start holds, and the process hangs (a run of the
Dask tests hung there, in ``test_exit_codes.py``'s handshake test right after its TLS one).
"""

from __future__ import annotations

import gc
import socket
import threading

import pytest


def test_a_tls_scheduler_without_tls_settings_leaves_no_client_alive():
    pytest.importorskip("distributed")
    from reportgen.errors import InputError
    from reportgen.cluster.client import dask_client
    from reportgen.cluster.scheduler import parse_scheduler

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held: list = []
    threading.Thread(target=lambda: [held.append(server.accept()) for _ in range(4)], daemon=True).start()
    before = {id(o) for o in gc.get_objects() if type(o).__name__ == "Client"}  # other tests' clients
    try:
        with pytest.raises(InputError, match="Dask cannot connect with this configuration") as failure:
            with dask_client(parse_scheduler(f"tls://127.0.0.1:{server.getsockname()[1]}"), connect_timeout=2):
                pass
        # the error is still held (as pytest.raises holds it): the client it came from is gone all the same
        assert failure.value is not None
        assert [o for o in gc.get_objects() if type(o).__name__ == "Client" and id(o) not in before] == []
    finally:
        server.close()
