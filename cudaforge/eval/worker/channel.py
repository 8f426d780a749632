"""Framed JSON messages between the verifier and its sandboxed worker (stdlib only, so either side can open
one before importing torch).

Length-prefixed JSON frames over a stream socket; file descriptors ride along with a frame's header. The
receiving side bounds everything: frame size, nesting, time. Whatever the other side sends, ``recv`` returns a
dict or raises :class:`ChannelError` (``timeout``, ``closed``, ``protocol``); it never raises anything else.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from typing import Any

from cudaforge.proc.text import loads_plain

MAX_FRAME = 16 << 20
"""The largest message either side accepts (bytes of JSON)."""
MAX_FDS = 4


class ChannelError(Exception):
    """The other side timed out, went away or broke the protocol; ``kind`` says which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Channel:
    """Framed JSON messages over a connected stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    @classmethod
    def from_fd(cls, fd: int) -> Channel:
        """The channel on an inherited socket descriptor."""
        return cls(socket.socket(fileno=fd))

    def send(self, message: dict[str, Any], fds: tuple[int, ...] = ()) -> None:
        """Send one message (raises ChannelError ``closed`` when the other side is gone)."""
        data = json.dumps(message).encode()
        header = struct.pack(">I", len(data))
        try:
            self.sock.settimeout(None)
            if fds:
                socket.send_fds(self.sock, [header], list(fds))
                self.sock.sendall(data)
            else:
                self.sock.sendall(header + data)
        except OSError as exc:
            raise ChannelError("closed", f"the other side is gone ({exc.strerror or exc})") from None

    def _read(self, n: int, deadline: float | None, fds: list[int] | None) -> bytes:
        chunks, got = [], 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelError("timeout", "no answer before the deadline")
                self.sock.settimeout(left)
            else:
                self.sock.settimeout(None)
            try:
                if fds is not None:
                    data, received, _, _ = socket.recv_fds(self.sock, n - got, MAX_FDS)
                    fds.extend(received)
                else:
                    data = self.sock.recv(min(n - got, 1 << 20))
            except TimeoutError:
                raise ChannelError("timeout", "no answer before the deadline") from None
            except OSError as exc:
                raise ChannelError("closed", f"the channel broke ({exc.strerror or exc})") from None
            if not data:
                raise ChannelError("closed", "the other side closed the channel")
            chunks.append(data)
            got += len(data)
        return b"".join(chunks)

    def recv(self, timeout_s: float | None = None, *, accept_fds: bool = False) -> tuple[dict[str, Any], list[int]]:
        """The next message and the descriptors sent with it (closed and dropped unless ``accept_fds``)."""
        deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        fds: list[int] = []
        try:
            (size,) = struct.unpack(">I", self._read(4, deadline, fds))
            if size > MAX_FRAME:
                raise ChannelError("protocol", f"a message of {size} bytes (at most {MAX_FRAME} are accepted)")
            body = self._read(size, deadline, None)
        except ChannelError:
            _close_all(fds)
            raise
        if not accept_fds:
            _close_all(fds)
            fds = []
        try:
            message = loads_plain(body)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            _close_all(fds)
            raise ChannelError("protocol", f"a message that is not JSON ({type(exc).__name__})") from None
        if not isinstance(message, dict):
            _close_all(fds)
            raise ChannelError("protocol", "a message that is not a JSON object")
        return message, fds

    def close(self) -> None:
        """Close the socket."""
        try:
            self.sock.close()
        except OSError:
            pass


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
