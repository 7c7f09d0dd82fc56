#!/usr/bin/env python3
"""ctl_client.py — the postgres user's half of ctl_broker.py.

    ctl_client.py SOCKET [helper-ctl arguments...]

Passes its arguments and its stdin, stdout and stderr to the broker, waits
for helper-ctl to finish there, and exits with its status.
"""
import json
import os
import socket
import sys

for fd in (0, 1, 2):  # a closed descriptor cannot be passed: give /dev/null
    try:
        os.fstat(fd)
    except OSError:
        os.dup2(os.open(os.devnull, os.O_RDWR), fd)
conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
conn.connect(sys.argv[1])
socket.send_fds(conn, [json.dumps(sys.argv[2:]).encode()], [0, 1, 2])
reply = json.loads(conn.recv(4096) or b'{"rc": 71, "err": "the broker closed the connection"}')
if "err" in reply:
    sys.stderr.write("ctl_broker: %s\n" % reply["err"])
sys.exit(reply["rc"])
