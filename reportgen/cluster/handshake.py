"""Whether ``tcp://host:port`` answers as a Dask scheduler, within a time limit, before a Client is made.

Why: ``Client(address, timeout=10)`` limits the TCP connect, not the handshake after it. A port that
accepts and never answers hung the run without limit; one that answers with something else (an HTTP
server, a database) had its bytes read as Dask frame sizes: ``MemoryError: Unable to allocate 3.07 EiB``
or ``Maximum allowed dimension exceeded``, exit 3. A Dask listener writes its handshake first (a small
message: an 8-byte little-endian length, then a frame count and the frames' lengths), so reading that
message, with a deadline and size limits, tells a scheduler from anything else without sending a byte.
"""

from __future__ import annotations

import socket
import struct
import time

from reportgen.errors import InputError

HANDSHAKE_LIMIT = 1 << 20  # a scheduler's handshake is a few hundred bytes
MAX_FRAMES = 64


def _read_exactly(sock: socket.socket, n: int, deadline: float) -> bytes:
    data = bytearray()
    while len(data) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionResetError("the connection was closed")
        data += chunk
    return bytes(data)


def looks_like_dask_handshake(message: bytes) -> bool:
    """A Dask message body: a frame count, that many 8-byte lengths, and frames that fit in the body."""
    if len(message) < 8:
        return False
    (frames,) = struct.unpack_from("<Q", message, 0)
    if not 1 <= frames <= MAX_FRAMES or len(message) < 8 * (frames + 1):
        return False
    lengths = struct.unpack_from(f"<{frames}Q", message, 8)
    return sum(lengths) <= len(message) - 8 * (frames + 1)


def check_scheduler(host: str, port: int, address: str, timeout: float) -> None:
    """Raise ``InputError`` naming ``address`` unless a Dask scheduler answers there within ``timeout``."""
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as err:
        raise InputError(f"--scheduler: cannot reach the Dask scheduler at {address} "
                         f"({err.strerror or err or type(err).__name__})") from None
    try:
        with sock:
            (size,) = struct.unpack("<Q", _read_exactly(sock, 8, deadline))
            if not 8 <= size <= HANDSHAKE_LIMIT:
                raise InputError(f"--scheduler {address}: the program there is not a Dask scheduler "
                                 f"(its first message announced {size} bytes)")
            if not looks_like_dask_handshake(_read_exactly(sock, size, deadline)):
                raise InputError(f"--scheduler {address}: the program there is not a Dask scheduler "
                                 "(its first message is not a Dask handshake)")
    except TimeoutError:
        raise InputError(f"--scheduler {address}: no Dask handshake within {timeout:.0f} s (the port accepts "
                         "connections but does not answer as a Dask scheduler)") from None
    except OSError as err:
        raise InputError(f"--scheduler {address}: the connection failed during the Dask handshake "
                         f"({err.strerror or err})") from None
