"""Runs localstripe (the Stripe emulator the live card tests use) on 127.0.0.1 only.

localstripe's own command listens on every interface and keeps its state in a fixed file in
/tmp shared by every instance; this launcher serves the same application on a loopback port
the system picks, printed first on stdout as LOCALSTRIPE_PORT=<port>, with its state kept in
memory only.
"""

import socket

from aiohttp import web

import localstripe.resources
from localstripe.server import app

# Never read nor written: two test runs at once must not share (or corrupt) each other's state.
localstripe.resources.Store.dump_to_disk = lambda self: None

sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", 0))
print(f"LOCALSTRIPE_PORT={sock.getsockname()[1]}", flush=True)
web.run_app(app, sock=sock, print=None, access_log=None)
