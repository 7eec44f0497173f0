"""A loopback TCP proxy that can cut the network between a client and a server.

    with TcpProxy(etcd.client_port) as proxy:   # listens on a random free port
        watcher uses proxy.url
        proxy.cut()        # a partition: nothing flows, new connections hang
        proxy.restore()    # the network is back: held bytes and connections flow

cut("stall"), the default, is what a partition looks like from both ends:
established connections stay open but no byte moves in either direction
(the proxy stops reading, so TCP's flow control holds the senders), and new
connections complete their handshake in the listen backlog but are not
served. Nothing is lost: restore() lets everything through in order.
cut("drop") instead closes every connection and the listening socket, so
clients see resets and refused connections until restore() listens again
on the same port.

One thread with a selector moves the bytes; buffers are bounded (a full
buffer stops reading from its side). Python 3 standard library only.
"""

import selectors
import socket
import threading

BUFFER_LIMIT = 1 << 20  # bytes held per direction before the proxy stops reading


class _Pipe:
    """One direction of a connection: bytes read from src, not yet written to dst."""

    def __init__(self, src, dst):
        self.src, self.dst = src, dst
        self.buf = bytearray()
        self.eof = False  # src said end of file
        self.done = False  # and everything was passed on


class _Pair:
    def __init__(self, client, upstream):
        self.socks = (client, upstream)
        self.pipes = (_Pipe(client, upstream), _Pipe(upstream, client))

    def close(self):
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass


class TcpProxy:
    def __init__(self, target_port, target_host="127.0.0.1", port=0):
        self.target = (target_host, target_port)
        self.port = port
        self.mode = "flow"
        self.connections_accepted = 0
        self._pairs = []
        self._listener = None
        self._lock = threading.Lock()
        self._wanted = None  # a mode change for the loop to apply
        self._stopping = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._thread = threading.Thread(target=self._run, name="tcp-proxy", daemon=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    # -- control (any thread) ------------------------------------------------

    def start(self):
        self._listen()
        self._thread.start()
        return self

    def _command(self, mode):
        done = threading.Event()
        with self._lock:
            self._wanted = (mode, done)
        self._wake_w.send(b"x")
        if not done.wait(10):
            raise RuntimeError("tcp proxy: the loop did not take the change to %s" % mode)

    def cut(self, how="stall"):
        if how not in ("stall", "drop"):
            raise ValueError("cut: stall or drop")
        self._command(how)

    def restore(self):
        self._command("flow")

    def stop(self):
        if self._thread.is_alive():
            with self._lock:
                self._stopping = True
            self._wake_w.send(b"x")
            self._thread.join(10)
        self._close_all()
        self._wake_r.close()
        self._wake_w.close()
        self._sel.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    # -- the loop ----------------------------------------------------------------

    def _listen(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", self.port))
        s.listen(128)
        s.setblocking(False)
        self.port = s.getsockname()[1]
        self._listener = s

    def _close_all(self):
        """Every connection and the listening socket."""
        for p in self._pairs:
            p.close()
        self._pairs = []
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    def _apply(self, mode):
        if mode == "drop":
            self._close_all()
        elif mode == "flow" and self._listener is None:
            self._listen()
        self.mode = mode

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            self.connections_accepted += 1
            try:
                upstream = socket.create_connection(self.target, timeout=2)
            except OSError:
                client.close()  # the server is down: so is this connection
                continue
            for s in (client, upstream):
                s.setblocking(False)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._pairs.append(_Pair(client, upstream))

    def _move(self, pair, readable, writable):
        """Moves what can be moved; False when the pair is finished."""
        for pipe in pair.pipes:
            if pipe.src in readable and not pipe.eof:
                try:
                    data = pipe.src.recv(65536)
                except (BlockingIOError, InterruptedError):
                    data = None
                except OSError:
                    return False
                if data == b"":
                    pipe.eof = True
                elif data:
                    pipe.buf += data
            if pipe.buf and (pipe.dst in writable or pipe.src in readable):
                try:
                    sent = pipe.dst.send(pipe.buf)
                    del pipe.buf[:sent]
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError:
                    return False
            if pipe.eof and not pipe.buf and not pipe.done:
                pipe.done = True
                try:
                    pipe.dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        return not all(p.done for p in pair.pipes)

    def _register(self):
        """What the selector waits for, given the mode and the buffers."""
        want = {self._wake_r: selectors.EVENT_READ}
        if self.mode == "flow":
            if self._listener is not None:
                want[self._listener] = selectors.EVENT_READ
            for pair in self._pairs:
                for pipe in pair.pipes:
                    if not pipe.eof and len(pipe.buf) < BUFFER_LIMIT:
                        want[pipe.src] = want.get(pipe.src, 0) | selectors.EVENT_READ
                    if pipe.buf:
                        want[pipe.dst] = want.get(pipe.dst, 0) | selectors.EVENT_WRITE
        for key in list(self._sel.get_map().values()):
            if key.fileobj not in want:
                self._sel.unregister(key.fileobj)
        for s, events in want.items():
            try:
                self._sel.modify(s, events)
            except KeyError:
                self._sel.register(s, events)

    def _run(self):
        while True:
            with self._lock:
                wanted, self._wanted = self._wanted, None
                stopping = self._stopping
            if stopping:
                return
            if wanted is not None:
                self._apply(wanted[0])
                wanted[1].set()
            self._register()
            ready = self._sel.select(timeout=0.5)
            readable, writable = set(), set()
            for key, events in ready:
                if key.fileobj is self._wake_r:
                    try:
                        self._wake_r.recv(4096)
                    except BlockingIOError:
                        pass
                    continue
                if events & selectors.EVENT_READ:
                    readable.add(key.fileobj)
                if events & selectors.EVENT_WRITE:
                    writable.add(key.fileobj)
            if self.mode != "flow":
                continue
            if self._listener is not None and self._listener in readable:
                self._accept()
            alive = []
            for pair in self._pairs:
                if self._move(pair, readable, writable):
                    alive.append(pair)
                else:
                    pair.close()
            self._pairs = alive
