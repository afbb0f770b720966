"""A TCP proxy to a listener that can cut one connection part-way through its answer."""

from __future__ import annotations

import socket
import threading
from typing import Optional


class CuttingProxy:
    """Forwards every connection to ``target`` (a port on loopback, set before the first one).
    ``cut_next_after(n)``: the next answer passing ``n`` bytes is cut there; ``cuts`` counts them."""

    def __init__(self) -> None:
        self.target = 0
        self.cuts = 0
        self._cut_after: Optional[int] = None
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def cut_next_after(self, size: int) -> None:
        with self._lock:
            self._cut_after = size

    def close(self) -> None:
        self._listener.close()

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            threading.Thread(target=self._pump, args=(downstream, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, downstream, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, answer: bool) -> None:
        passed = 0
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                passed += len(chunk)
                keep = self._cut(passed, len(chunk)) if answer else None
                sink.sendall(chunk if keep is None else chunk[:keep])
                if keep is not None:
                    break
        except OSError:
            pass
        for each in (source, sink):
            _close(each)

    def _cut(self, passed: int, size: int) -> Optional[int]:
        """How much of the last chunk goes through when the answer is cut there; None when it is not."""
        with self._lock:
            if self._cut_after is None or passed <= self._cut_after:
                return None
            keep, self._cut_after = size - (passed - self._cut_after), None
            self.cuts += 1
            return keep


def _close(connection: socket.socket) -> None:
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    connection.close()
