#!/usr/bin/env python3
# bench/ftps_client.py - a lean FTPS client for bench.py's "lean client" rows.
#
# curl reads a TLS data connection a record at a time: five system calls per
# 16 KiB record (poll, the 5-byte header, the body, two writes of the
# output), about 330,000 per GiB, which on this kind of machine costs a full
# core and caps every server near 1 GB/s.  This client moves the same bytes
# with the same TLS library (stock OpenSSL through Python's ssl module, no
# read-ahead tricks inside the library) but feeds it through memory BIOs:
# one recv per 256 KiB on the socket, the plaintext discarded.  It speaks plain RFC 4217
# (AUTH TLS, PBSZ 0, PROT P, EPSV/PASV) and resumes the control
# connection's TLS session on the data connection (servers that require
# reuse expect it; the others may start a new one).  Python standard library only.
#
#   ftps_client.py HOST PORT USER PASSWORD CAFILE NAME
#
# Prints one line like curl's -w of bench.py: pretransfer, starttransfer,
# total (seconds since start), bytes down, bytes up, exit code.
import ftplib
import socket
import ssl
import sys
import time

CHUNK = 256 << 10
TIMEOUT_S = 300


class Session(ftplib.FTP_TLS):
    """control connection; data connections resume its TLS session"""

    def data_socket(self, cmd):
        """a plain TCP data connection for cmd, the server's reply read"""
        self.voidcmd("TYPE I")
        host, port = self.makepasv()
        sock = socket.create_connection((host, port), timeout=TIMEOUT_S)
        resp = self.sendcmd(cmd)
        if resp[0] != "1":
            sock.close()
            raise ftplib.error_reply(resp)
        return sock


class Pipe:
    """TLS over a socket through memory BIOs, the socket used in CHUNKs"""

    def __init__(self, ctx, sock, host, session):
        self.sock = sock
        self.rbio, self.wbio = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = ctx.wrap_bio(self.rbio, self.wbio, server_hostname=host, session=session)
        self.buf = bytearray(CHUNK)
        self.view = memoryview(self.buf)

    def flush(self):
        while self.wbio.pending:
            self.sock.sendall(self.wbio.read())

    def fill(self):
        n = self.sock.recv_into(self.buf)
        if n == 0:
            self.rbio.write_eof()
        else:
            self.rbio.write(self.view[:n])
        return n

    def run(self, step):
        """step() until it stops wanting the peer's bytes"""
        while True:
            try:
                r = step()
                self.flush()
                return r
            except ssl.SSLWantReadError:
                self.flush()
                if self.fill() == 0:
                    raise ConnectionError("data connection closed during TLS")

    def handshake(self):
        self.run(self.tls.do_handshake)

    def drain(self):
        """read and discard until the server's close; returns the bytes"""
        total, out = 0, bytearray(CHUNK)
        while True:
            try:
                n = self.tls.read(CHUNK, out)
            except ssl.SSLWantReadError:
                if self.fill() == 0:
                    return total
                continue
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                return total
            if n == 0:
                return total
            total += n


def main(argv):
    host, port, user, pw, cafile, name = argv[1:7]
    t0 = time.perf_counter()
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    ftp = Session(context=ctx, timeout=TIMEOUT_S)
    ftp.connect(host, int(port))
    ftp.auth()
    ftp.login(user, pw)
    ftp.prot_p()
    sock = ftp.data_socket("RETR " + name)
    pipe = Pipe(ctx, sock, host, ftp.sock.session)
    pipe.handshake()
    pre = time.perf_counter() - t0
    down = pipe.drain()
    sock.close()
    ftp.voidresp()
    total = time.perf_counter() - t0
    ftp.quit()
    print(f"{pre:.6f} {pre:.6f} {total:.6f} {down} 0 0")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
