# sftp_raw.py -- for the tests' paramiko clients: a login with the user's
# key, SFTP packets built and read by hand over a session channel, and
# the TAP-like lines the Perl side turns into tests.

import struct, sys
import paramiko


def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()


def login(port, key, user='alice'):
    tr = paramiko.Transport(('127.0.0.1', port))
    tr.banner_timeout = 30
    tr.connect(username=user,
               pkey=paramiko.Ed25519Key.from_private_key_file(key))
    return tr


def pkt(t, body, id_=None):
    if id_ is not None:
        body = struct.pack('>I', id_) + body
    return struct.pack('>IB', len(body) + 1, t) + body


def s(b):
    return struct.pack('>I', len(b)) + b


def recv_exact(ch, n):
    b = b''
    while len(b) < n:
        x = ch.recv(n - len(b))
        if not x:
            return None
        b += x
    return b


def reply(ch):
    h = recv_exact(ch, 4)
    if h is None:
        return None
    n = struct.unpack('>I', h)[0]
    return recv_exact(ch, n)


def status(r):
    if r is None or r[0] != 101:
        return None
    return struct.unpack('>II', r[1:9])


def channel(tr, init=True):
    # a session channel with the sftp subsystem, INIT done
    ch = tr.open_session()
    ch.settimeout(15)
    ch.invoke_subsystem('sftp')
    if init:
        ch.sendall(pkt(1, struct.pack('>I', 3)))
        v = reply(ch)
        assert v[0] == 2, v
    return ch
