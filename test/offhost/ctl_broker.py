#!/usr/bin/env python3
"""ctl_broker.py — stands in for sudo where a machine has none (run.sh).

The TAP tests run as the postgres user and reach the root-only steps
through $PG_TRACER_CTL (test/helper-ctl under sudo in CI).  Here that is
ctl_client.py, which hands its argv and its stdin, stdout and stderr to
this broker over a Unix socket; the broker, root, runs helper-ctl with
those very descriptors, so a streaming `run trace` reads as it would under
sudo, and sends back the exit status.

Only root and the user named on the command line may connect (SO_PEERCRED),
the socket is 0660 root:that user's group, and it runs helper-ctl, whose
every argument is checked, and nothing else.

    ctl_broker.py SOCKET HELPER_CTL USER
"""
import json
import os
import pwd
import socket
import struct
import subprocess
import sys
import threading

path, ctl, user = sys.argv[1:4]
allowed = pwd.getpwnam(user)


def peer_uid(conn):
    """The connecting process's uid, as the kernel saw it at connect()."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


def serve(conn):
    """One request: argv and three fds in, {"rc": N} out."""
    fds = []
    try:
        if peer_uid(conn) not in (0, allowed.pw_uid):
            raise PermissionError("uid %d may not use this broker" % peer_uid(conn))
        msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
        args = json.loads(msg)
        if len(fds) != 3 or not all(isinstance(a, str) for a in args):
            raise ValueError("expected an argv of strings and three descriptors")
        # helper-ctl acts for its caller as under sudo (files opened as it)
        env = dict(os.environ)
        if peer_uid(conn) != 0:
            env.update(SUDO_USER=allowed.pw_name, SUDO_UID=str(allowed.pw_uid))
        child = subprocess.Popen([ctl] + args, stdin=fds[0], stdout=fds[1], stderr=fds[2],
                                 env=env)
        rc = child.wait()
        reply = {"rc": 128 - rc if rc < 0 else rc}
    except Exception as e:  # the client must always get an answer
        reply = {"rc": 70, "err": str(e)}
    finally:
        for fd in fds:
            os.close(fd)
    try:
        conn.send(json.dumps(reply).encode())
    finally:
        conn.close()


def main():
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    old = os.umask(0o117)
    srv.bind(path)
    os.umask(old)
    os.chown(path, 0, allowed.pw_gid)
    srv.listen(16)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


main()
