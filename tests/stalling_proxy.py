"""A TCP proxy on 127.0.0.1 that a test controls: it forwards connections to a server until told
to stall, then keeps the connections open and forwards nothing more on them (a dead network path
that no error announces). Connections made after the stall are forwarded as usual."""

from __future__ import annotations

import selectors
import socket
import threading


class StallingProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.connections = 0  # accepted so far
        self._stalled: set[int] = set()  # connection numbers that forward nothing any more
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        acceptor = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        acceptor.start()
        self._threads.append(acceptor)

    def stall(self) -> None:
        """Every connection open now stops forwarding, both ways, without closing."""
        self._stalled.update(range(1, self.connections + 1))

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass
        for thread in self._threads:
            thread.join(5)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            self.connections += 1
            number = self.connections
            self._sockets += [client, upstream]
            pump = threading.Thread(
                target=self._pump, args=(number, client, upstream), name=f"proxy-{number}", daemon=True
            )
            pump.start()
            self._threads.append(pump)

    def _pump(self, number: int, client: socket.socket, upstream: socket.socket) -> None:
        peer = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            selector.register(client, selectors.EVENT_READ)
            selector.register(upstream, selectors.EVENT_READ)
            while not self._closed.is_set():
                if number in self._stalled:
                    self._closed.wait(0.1)  # hold the connection open, say nothing
                    continue
                for key, _ in selector.select(timeout=0.1):
                    try:
                        data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                    except OSError:
                        data = b""
                    if not data or number in self._stalled:
                        if not data:
                            client.close()
                            upstream.close()
                            return
                        continue  # stalled meanwhile: what was read is dropped, as on a dead path
                    peer[key.fileobj].sendall(data)  # type: ignore[index]
