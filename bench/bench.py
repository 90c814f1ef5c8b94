#!/usr/bin/env python3
# bench/bench.py - measures every server of a lab started by bench/run.sh
# (siftpd, vsftpd, ProFTPD, Pure-FTPd, OpenSSH sshd; siftpd's S3 driver and
# rclone serve on one S3 backend: moto_server or a Ceph radosgw) with the same clients for
# all of them (curl for FTP/FTPS, bench/ftps_client.py for one FTPS row that
# curl's own cost would cap, OpenSSH sftp for SFTP, a small stdlib FTP
# client for logins and idle sessions) and writes results/<arch>.json (every
# run, raw), results/<arch>.md (the table, also printed) and results/<arch>.svg
# (siftpd's ratio to each peer).  Python standard library only.
#
#   bench.py --lab LAB/lab.json --out bench/results [--quick] [--only RE] [--servers a,b]
#   bench.py --report results/x86_64.json      (re-render .md/.svg from a json)
import argparse
import json
import os
import platform
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

MB = 1e6
GiB = 1 << 30
CLK = os.sysconf("SC_CLK_TCK")

# every count and time limit lives here
PROFILES = {
    "quick": dict(runs=3, big=GiB // 4, sftp_big=GiB // 16, par_n=16, par_size=32 << 20, small_n=1000,
                  small_size=16 << 10, login_window=0.4, login_max=300, conc=32, first_conc_runs=1,
                  sessions=200, mem_runs=1, setup_runs=5, ceil_runs=1, api_gets=500,
                  speed_secs=1, iperf_secs=2, budget_s=285,
                  s3_runs=1, s3_big=GiB // 16, s3_small_n=200, s3_mem_n=16, s3_mem_size=16 << 20, s3_budget_s=600),
    "full": dict(runs=5, big=GiB, sftp_big=GiB, par_n=16, par_size=256 << 20, small_n=1000,
                 small_size=16 << 10, login_window=3.0, login_max=5000, conc=32, first_conc_runs=5,
                 sessions=200, mem_runs=3, setup_runs=15, ceil_runs=3, api_gets=500,
                 speed_secs=3, iperf_secs=5, budget_s=2200,
                 s3_runs=3, s3_big=GiB, s3_small_n=1000, s3_mem_n=16, s3_mem_size=64 << 20, s3_budget_s=1200),
}
TRANSFER_TIMEOUT_S = 300     # any single client process
FIRST_LOGIN_TIMEOUT_S = 60   # 32 argon2id checks queue up on 2 cores: ~10-20 s

# SFTP: every session uses this key exchange (libssh 0.10 in siftpd has no
# sntrup761, OpenSSH would pick it; forced, both do the same work) and one
# of these ciphers, each compared with one core's `openssl speed` of it
SFTP_KEX = "curve25519-sha256"
SFTP_CIPHERS = {"chacha": ("chacha20-poly1305@openssh.com", "ceil_chacha", "chacha20-poly1305"),
                "aes": ("aes256-gcm@openssh.com", "ceil_aes_gcm", "aes256-gcm")}
# siftpd's lab variants (bench/run.sh, only when named in --servers): the
# rows each one is measured in (a regex over row ids), what it is set
# against, and what that ratio says
VARIANTS = {
    "siftpd-pg": dict(rows=r"^(login_|sftp_setup$)", base="siftpd",
                      what="PostgreSQL user store / users file"),
    "siftpd-fleet": dict(rows=r"^(login_repeat_|ftp_dl_par16$)", base="siftpd-fleet1",
                         what="two nodes / one node, both through HAProxy"),
    "siftpd-fleet1": dict(rows=r"^(login_repeat_|ftp_dl_par16$)", base="siftpd",
                          what="one node through HAProxy / siftpd straight"),
}
SETTLE_S = 0.25              # let the server finish closing before reading /proc
S3_PROTOS = {"s3ftp": "ftp", "s3sftp": "sftp"}   # row protocols served from the S3 backend's bucket
# the S3 rows' backends (bench/run.sh S3_BACKEND): the name in titles, and
# what bounds the rows on it (the S3 rows' footnote)
S3_BACKENDS = {
    "moto": dict(title="moto_server", note=(
        "moto, a single Python process holding every object, shares the two cores with client and server "
        "and reads a whole object for every GET, ranged or not: its own rate alone is under the machine "
        "ceilings, and its CPU per GiB for each server beside the rows")),
    "ceph": dict(title="Ceph radosgw", note=(
        "the backend is a Ceph cluster of the lab's own (bench/ceph_lab.py: one monitor, one memstore OSD "
        "with one copy of each object, radosgw with the beast frontend), sharing the two cores with client "
        "and server: its own rate alone is under the machine ceilings, and its CPU per GiB (monitor, OSD "
        "and radosgw together) for each server beside the rows")),
}

CEILING_NOTE = ("the row's throughput as a share of one core's `openssl speed -evp` (16 KiB blocks) for the "
                "cipher in use: the one forced on the SFTP client, or the AEAD of the TLS suite FTPS negotiated "
                "(AES-256-GCM for TLS_AES_256_GCM_SHA384); 100 % would be one core doing nothing but that cipher")
LEAN_NOTE = ("curl reads TLS a record at a time (poll, header, body, two writes: ~330,000 system calls "
             "per GiB, a full core here), which caps every server near 1 GB/s; bench/ftps_client.py moves "
             "the same bytes with stock OpenSSL through memory BIOs, one recv per 256 KiB, and discards them")
FLOOR_NOTE = ("the FTP small-file rows' client and session against bench/ftp_floor.c: one process "
              "with blocking calls that answers every command at once, drops what is uploaded and sends "
              "zeros, opening no file: what a file costs there is the client and the kernel's TCP work "
              "(EPSV listener, connect, transfer, close), a floor no server on this machine can pass")
LOGIN_NOTE = ("peers' user has a SHA-512 crypt hash (`openssl passwd -6`), not the OS "
              "default yescrypt (~55 ms per check here); siftpd verifies its own argon2id hash "
              "(`user add` default), a deliberately costlier check; 'first' = siftpd with "
              "`login_cache_ttl_secs 0;`, the peers cache nothing so first = repeat for them")


# ------------------------------------------------------------------ /proc
def proc_table():
    """pid -> (ppid, utime+stime, cutime+cstime) for every process."""
    tab = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        rest = data[data.rindex(b")") + 2:].split()
        tab[int(name)] = (int(rest[1]), int(rest[11]) + int(rest[12]),
                          int(rest[13]) + int(rest[14]))
    return tab


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except OSError:
        return None


def tree(root, tab=None):
    tab = tab if tab is not None else proc_table()
    kids = {}
    for pid, (ppid, _, _) in tab.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo and len(out) < 100000:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out, tab


def cpu_seconds(root):
    """CPU of root's whole tree, live and exited (exited ones sit in their
    reaper's cutime; supervise.py is a subreaper so no orphan escapes)."""
    if not root:
        return None
    desc, tab = tree(root)
    ticks = 0
    for pid in [root] + desc:
        if pid in tab:
            ticks += tab[pid][1] + tab[pid][2]
    return ticks / CLK


def tree_mem_mib(root):
    """RSS and PSS summed over the server's tree (supervise.py itself
    excluded), in MiB, and how many processes"""
    desc, _ = tree(root)
    kib = {"Rss:": 0, "Pss:": 0}
    for pid in desc:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    field = line[:4]
                    if field in kib:
                        kib[field] += int(line.split()[1])
        except OSError:
            pass
    return kib["Rss:"] / 1024, kib["Pss:"] / 1024, len(desc)


def pss_mib(root):
    """PSS of the server's tree (supervise.py itself excluded)."""
    _, pss, n = tree_mem_mib(root)
    return pss, n


# ------------------------------------------------------------------ helpers
class Skip(Exception):
    """cell not applicable / not available: message is shown in the table"""


def run_proc(cmd, timeout=TRANSFER_TIMEOUT_S, **kw):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException:
        p.kill()
        p.wait()
        raise
    return p.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def client_cpu():
    """user + system CPU seconds of this process's waited-for children (the
    clients it ran: curl, sftp and its ssh)"""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


CURL_W = "%{time_pretransfer} %{time_starttransfer} %{time_total} %{size_download} %{size_upload} %{exitcode}\\n"


def parse_w(out):
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 6:
            rows.append(dict(pre=float(f[0]), start=float(f[1]), total=float(f[2]),
                             down=int(f[3]), up=int(f[4]), exit=int(f[5])))
    return rows


def median_min_max(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None, None, None
    return statistics.median(vals), min(vals), max(vals)


# ------------------------------------------------------------------ FTP control client (logins)
class Ftp:
    """Just enough FTP for logins and idle sessions; TCP_NODELAY like curl."""

    def __init__(self, port, timeout=10.0):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb")

    def reply(self):
        """(code, last line) of one reply, multi-line replies included"""
        line = self.f.readline(4096)
        if len(line) < 4:
            raise ConnectionError("connection closed")
        code = line[:3]
        if line[3:4] == b"-":
            for _ in range(500):
                line = self.f.readline(4096)
                if not line:
                    raise ConnectionError("connection closed")
                if line[:3] == code and line[3:4] == b" ":
                    break
        return int(code), line.decode(errors="replace").strip()

    def cmd(self, text, ok):
        self.s.sendall(text.encode() + b"\r\n")
        code, line = self.reply()
        if code not in ok:
            raise RuntimeError(f"{text.split()[0]} -> {line[:80]}")
        return code, line

    def data(self):
        """EPSV + connect, like curl does it"""
        _, line = self.cmd("EPSV", (229,))
        m = re.search(r"\(\|\|\|(\d+)\|\)", line)
        if not m:
            raise RuntimeError(f"bad EPSV reply {line[:80]}")
        d = socket.create_connection(("127.0.0.1", int(m.group(1))), timeout=30)
        d.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return d

    def retr(self, name, buf):
        d = self.data()
        try:
            self.cmd(f"RETR {name}", (125, 150))
            n = 0
            while True:
                k = d.recv_into(buf)
                if not k:
                    break
                n += k
        finally:
            d.close()
        self.reply_ok((226, 250))
        return n

    def stor(self, name, payload):
        d = self.data()
        try:
            self.cmd(f"STOR {name}", (125, 150))
            d.sendall(payload)
        finally:
            d.close()
        self.reply_ok((226, 250))

    def reply_ok(self, ok):
        code, line = self.reply()
        if code not in ok:
            raise RuntimeError(f"transfer end -> {line[:80]}")

    def login(self, user, password):
        if self.reply()[0] != 220:
            raise RuntimeError("no 220 greeting")
        if self.cmd(f"USER {user}", (230, 331))[0] == 331:
            self.cmd(f"PASS {password}", (230,))

    def quit(self):
        try:
            self.cmd("QUIT", (221,))
        finally:
            self.close()

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass


# ------------------------------------------------------------------ the context
class Ctx:
    def __init__(self, lab, prof, quick):
        self.lab = lab
        self.p = prof
        self.quick = quick
        self.data = lab["data"]
        self.client = lab["client"]
        self.user = lab["user"]
        self.pw = lab["password"]
        self.deadline = time.monotonic() + prof["budget_s"]
        self.algos = {}
        self.sftp_base = {}
        self.row_seconds = {}
        self.seq = 0
        backend = lab.get("s3_backend")
        self.s3b = backend if backend and backend.get("port") else None
        self.s3 = S3(backend) if self.s3b else None
        self.s3_ref = None

    def uniq(self):
        self.seq += 1
        return f"{os.getpid()}-{self.seq}"

    def left(self):
        return self.deadline - time.monotonic()

    # where a server serves a protocol; Skip tells why not
    def endpoint(self, srv, proto, nocache=False):
        if proto in S3_PROTOS:
            return self.s3_instance(srv, proto)["port"]
        key = "ftp" if proto in ("ftp", "ftps") else proto
        ep = srv.get(key)
        if srv["name"] == "siftpd" or srv["name"] in VARIANTS:
            if not ep:
                raise Skip(f"n/a ({srv.get('why_na') or 'not built'})")
            if proto == "ftps" and not ep.get("tls"):
                raise Skip("n/a (no TLS)")
            if nocache and not ep.get("nocache_port"):
                raise Skip("n/a (no cache-off instance)")
            return ep["nocache_port"] if nocache else ep["port"]
        if not ep:
            raise Skip("–")
        if proto == "ftps" and not ep.get("tls"):
            raise Skip("–")
        return ep["port"]

    def s3_instance(self, srv, proto):
        """the instance serving the bucket over ftp or sftp (its port and
        supervisor); Skip: not one of the S3 servers, or why not"""
        s3 = srv.get("s3")
        if s3 is None:
            raise Skip("–")
        self.s3_backend_up()
        inst = s3.get(S3_PROTOS[proto]) or {}
        if not inst.get("port"):
            raise Skip(f"n/a ({inst.get('why_na') or 'not started'})")
        return inst

    def s3_backend_up(self):
        """Skip: why the lab has no S3 backend"""
        if not self.s3b:
            raise Skip(f"n/a ({self.lab.get('s3_backend_why') or 'no S3 backend'})")

    def root(self, srv, proto=None):
        if proto in S3_PROTOS:
            return self.s3_instance(srv, proto).get("sup_pid") or None
        return srv.get("sup_pid") or None

    def store(self, srv, s3):
        """where the row's server keeps its files"""
        return S3Store(self.s3, srv["s3"]["prefix"]) if s3 else LocalStore(self)

    def backend_cpu(self, s3):
        """CPU seconds of the S3 backend's tree so far (S3 rows only)"""
        return cpu_seconds(self.s3b.get("sup_pid")) if s3 else None

    def curl_base(self, tls=False):
        c = ["curl", "-sS", "--user", f"{self.user}:{self.pw}", "--max-time", str(TRANSFER_TIMEOUT_S)]
        if tls:
            c += ["--ssl-reqd", "--cacert", self.lab["cacert"]]
        return c

    def lean_base(self, port):
        """bench/ftps_client.py with this interpreter (no launcher shim in
        the client's CPU)"""
        return [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ftps_client.py"),
                "127.0.0.1", str(port), self.user, self.pw, self.lab["cacert"]]

    def sftp_cmd(self, port, batch, cipher, verbose=False):
        """the same client for every server: key exchange and cipher forced,
        so both servers do the same work whatever their preferences"""
        c = ["sftp", "-q", "-b", batch, "-P", str(port), "-i", self.lab["ssh_key"], "-F", "/dev/null",
             "-c", SFTP_CIPHERS[cipher][0], "-o", f"KexAlgorithms={SFTP_KEX}",
             "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes",
             "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "LogLevel=ERROR"]
        if verbose:
            c += ["-v", "-o", "LogLevel=DEBUG1"]
        return c + [f"{self.user}@127.0.0.1"]


def prepare_data(ctx):
    """big.bin (FTP/FTPS), mid.bin (parallel downloads), sftp.bin, s3.bin and
    s3mem.bin (S3 transfers, uploads in flight), small/ (N x 16 KiB), up/."""
    p, d = ctx.p, ctx.data
    os.makedirs(os.path.join(d, "small"), exist_ok=True)
    os.makedirs(os.path.join(d, "up"), exist_ok=True)
    os.makedirs(ctx.client, exist_ok=True)
    block = os.urandom(64 << 20)  # incompressible; repeats every 64 MiB
    for name, size in (("big.bin", p["big"]), ("mid.bin", p["par_size"]), ("sftp.bin", p["sftp_big"]),
                       ("s3.bin", p["s3_big"]), ("s3mem.bin", p["s3_mem_size"])):
        path = os.path.join(d, name)
        if os.path.exists(path) and os.path.getsize(path) == size:
            continue
        with open(path, "wb") as f:
            left = size
            while left > 0:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n
    for i in range(p["small_n"]):
        path = os.path.join(d, "small", f"f{i:04d}")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(block[i * 4096:i * 4096 + p["small_size"]])
    for root, dirs, files in os.walk(d):
        os.chown(root, ctx.lab["uid"], ctx.lab["gid"])
        for fn in files:
            os.chown(os.path.join(root, fn), ctx.lab["uid"], ctx.lab["gid"])
    # uploads land here; world-writable because siftpd's workers run as their own user
    os.chmod(os.path.join(d, "up"), 0o777)


def rm_tree(ctx, path):
    """remove an upload dir/file - only ever below DATA/up"""
    up = os.path.join(os.path.realpath(ctx.data), "up") + "/"
    if not os.path.realpath(path).startswith(up):
        return
    for root, dirs, files in os.walk(path, topdown=False):
        for fn in files:
            os.unlink(os.path.join(root, fn))
        for dn in dirs:
            os.rmdir(os.path.join(root, dn))
    if os.path.isdir(path):
        os.rmdir(path)
    elif os.path.exists(path):
        os.unlink(path)


def mkdir_user(ctx, path):
    os.makedirs(path, exist_ok=True)
    os.chown(path, ctx.lab["uid"], ctx.lab["gid"])
    os.chmod(path, 0o777)


# ------------------------------------------------------------------ S3 (the backend)
def sigv4(method, host, path, query, body, key, secret, region, now=None):
    """the headers of an AWS Signature Version 4 S3 request, its payload's
    SHA-256 signed: path as sent (URI-encoded), query "a=b&c" as sent; now:
    "YYYYMMDDTHHMMSSZ", the current time if None"""
    import hashlib
    import hmac
    import urllib.parse
    now = now or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    scope = f"{now[:8]}/{region}/s3/aws4_request"
    enc = lambda v: urllib.parse.quote(urllib.parse.unquote(v), safe="-_.~")  # noqa: E731
    query = "&".join(sorted(f"{enc(k)}={enc(v)}" for k, _, v in (p.partition("=") for p in query.split("&") if p)))
    headers = {"host": host, "x-amz-content-sha256": hashlib.sha256(body or b"").hexdigest(), "x-amz-date": now}
    names = ";".join(sorted(headers))
    canonical = "\n".join([method, path, query, *(f"{k}:{headers[k]}" for k in sorted(headers)), "", names,
                           headers["x-amz-content-sha256"]])
    k = ("AWS4" + secret).encode()
    for part in scope.split("/"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    to_sign = f"AWS4-HMAC-SHA256\n{now}\n{scope}\n" + hashlib.sha256(canonical.encode()).hexdigest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    del headers["host"]   # http.client sends it
    headers["Authorization"] = f"AWS4-HMAC-SHA256 Credential={key}/{scope}, SignedHeaders={names}, Signature={sig}"
    return headers


class S3:
    """the backend's S3 API over http.client, every request signed (SigV4;
    moto checks no signature, radosgw does): what the S3 rows seed, check and
    clean up, never through a server"""
    PART = 64 << 20

    def __init__(self, backend):
        self.port, self.bucket = backend["port"], backend["bucket"]
        self.key, self.secret, self.region = backend["access_key"], backend["secret_key"], backend["region"]

    def url(self, key):
        return f"http://127.0.0.1:{self.port}/{self.bucket}/{key}"

    def curl_auth(self):
        """curl's options for the same signature (it signs no payload: its hash is sent as unsigned)"""
        return ["--aws-sigv4", f"aws:amz:{self.region}:s3", "--user", f"{self.key}:{self.secret}",
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]

    def req(self, method, key="", query="", body=None, ok=(200,), md5=False):
        import base64
        import hashlib
        import http.client
        import urllib.parse
        h = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TRANSFER_TIMEOUT_S)
        path = f"/{self.bucket}/{urllib.parse.quote(key)}"
        headers = sigv4(method, f"127.0.0.1:{self.port}", path, query, body, self.key, self.secret, self.region)
        if md5:
            headers["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
        try:
            h.request(method, path + (f"?{query}" if query else ""), body=body, headers=headers)
            r = h.getresponse()
            data = r.read()
        finally:
            h.close()
        if r.status not in ok:
            raise RuntimeError(f"S3 {method} {key or self.bucket}: {r.status} {data[:160]!r}")
        return r, data

    def make_bucket(self):
        self.req("PUT", ok=(200, 409))

    def size(self, key):
        r, _ = self.req("HEAD", key, ok=(200, 404))
        return int(r.getheader("Content-Length")) if r.status == 200 else None

    def put(self, key, data):
        self.req("PUT", key, body=data)

    def put_file(self, key, path):
        """a multipart upload of PART-sized parts, so the backend never holds
        one request of the whole file"""
        import xml.etree.ElementTree as ET
        _, data = self.req("POST", key, "uploads")
        upload = ET.fromstring(data).find("{*}UploadId").text
        parts = []
        with open(path, "rb") as f:
            while True:
                chunk = f.read(self.PART)
                if not chunk and parts:
                    break
                r, _ = self.req("PUT", key, f"partNumber={len(parts) + 1}&uploadId={upload}", chunk)
                parts.append(r.getheader("ETag"))
                if len(chunk) < self.PART:
                    break
        xml = "".join(f"<Part><PartNumber>{i + 1}</PartNumber><ETag>{e}</ETag></Part>" for i, e in enumerate(parts))
        self.req("POST", key, f"uploadId={upload}",
                 f"<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>".encode())

    def keys(self, prefix):
        """every key below prefix (ListObjectsV2, page by page; at most 100 pages)"""
        import urllib.parse
        import xml.etree.ElementTree as ET
        out, token = [], None
        for _ in range(100):
            q = "list-type=2&prefix=" + urllib.parse.quote(prefix, safe="")
            if token:
                q += "&continuation-token=" + urllib.parse.quote(token, safe="")
            _, data = self.req("GET", query=q)
            doc = ET.fromstring(data)
            out += [k.text for k in doc.findall("{*}Contents/{*}Key")]
            t = doc.find("{*}NextContinuationToken")
            if t is None or not t.text:
                break
            token = t.text
        return out

    def purge(self, keys):
        """every version of the keys and of those below key/ (the bucket
        keeps versions, see run.sh): one listing of their common prefix,
        DeleteObjects of up to 1000 at once"""
        import urllib.parse
        import xml.etree.ElementTree as ET
        if not keys:
            return
        gone, marks = [], None
        dirs = tuple(k.rstrip("/") + "/" for k in keys)
        for _ in range(100):
            q = "versions=&prefix=" + urllib.parse.quote(os.path.commonprefix(keys), safe="")
            if marks:
                q += "&key-marker=" + urllib.parse.quote(marks[0], safe="")
                q += "&version-id-marker=" + urllib.parse.quote(marks[1], safe="")
            _, data = self.req("GET", query=q)
            doc = ET.fromstring(data)
            for v in doc.findall("{*}Version") + doc.findall("{*}DeleteMarker"):
                k = v.find("{*}Key").text
                if k in keys or k.startswith(dirs):
                    gone.append((k, v.find("{*}VersionId").text))
            if doc.findtext("{*}IsTruncated") != "true":
                break
            marks = (doc.findtext("{*}NextKeyMarker"), doc.findtext("{*}NextVersionIdMarker"))
        for i in range(0, len(gone), 1000):
            body = "".join(f"<Object><Key>{esc(k)}</Key><VersionId>{v}</VersionId></Object>"
                           for k, v in gone[i:i + 1000])
            body = f"<Delete><Quiet>true</Quiet>{body}</Delete>".encode()
            self.req("POST", query="delete=", body=body, md5=True)


class LocalStore:
    """the lab's served directory: where the posix servers keep the files"""
    def __init__(self, ctx):
        self.ctx = ctx

    def path(self, rel):
        return os.path.join(self.ctx.data, rel)

    def size(self, rel):
        p = self.path(rel)
        return os.path.getsize(p) if os.path.exists(p) else None

    def mkdir(self, rel):
        mkdir_user(self.ctx, self.path(rel))

    def count(self, rel):
        return len(os.listdir(self.path(rel)))

    def remove(self, rel):
        rm_tree(self.ctx, self.path(rel))


class S3Store:
    """a server's prefix in the backend's bucket: the same operations on its keys"""
    def __init__(self, s3, prefix):
        self.s3, self.prefix = s3, prefix

    def size(self, rel):
        return self.s3.size(self.prefix + rel)

    def count(self, rel):
        return len([k for k in self.s3.keys(self.prefix + rel + "/") if not k.endswith("/")])

    def remove(self, *rels):
        """files or directories, every version - only ever below up/"""
        self.s3.purge([self.prefix + rel for rel in rels if rel.startswith("up/")])


def prepare_s3(ctx, servers):
    """each S3 server's prefix (or ref/ when no server has one): s3.bin,
    small/ and up/ as in the lab's directory (kept when already there);
    the first prefix's s3.bin is what the backend's own GET row reads"""
    ctx.s3.make_bucket()
    prefixes = [srv["s3"]["prefix"] for srv in servers if srv.get("s3")] or ["ref/"]
    ctx.s3_ref = prefixes[0] + "s3.bin"
    for prefix in prefixes:
        if ctx.s3.size(prefix + "s3.bin") != ctx.p["s3_big"]:
            ctx.s3.put_file(prefix + "s3.bin", os.path.join(ctx.data, "s3.bin"))
        have = set(ctx.s3.keys(prefix + "small/"))
        for i in range(ctx.p["s3_small_n"]):
            key = f"{prefix}small/f{i:04d}"
            if key not in have:
                with open(os.path.join(ctx.data, "small", f"f{i:04d}"), "rb") as f:
                    ctx.s3.put(key, f.read())
        ctx.s3.put(prefix + "up/", b"")
    # one FTP login to each S3 instance: siftpd's first one is an argon2id check
    # (~1 s of CPU) that would land in the first row's CPU per GiB, and 16 at
    # once would find no cached check (it queues 8 per address); the posix
    # instances' first logins are paid by the rows before theirs
    for srv in servers:
        port = ((srv.get("s3") or {}).get("ftp") or {}).get("port")
        if port:
            ftp_login_once(ctx, port, 10.0)


# ------------------------------------------------------------------ FTP / FTPS measurements
def ftp_transfer(ctx, srv, tls, upload, lean=False, s3=False):
    """one big file with curl, or downloaded with bench/ftps_client.py
    (lean: FTPS only), which prints curl's -w line; s3: s3.bin ({s3_big}),
    from and to the server's prefix in the backend's bucket"""
    proto = "s3ftp" if s3 else "ftps" if tls else "ftp"
    port = ctx.endpoint(srv, proto)
    size, fname = (ctx.p["s3_big"], "s3.bin") if s3 else (ctx.p["big"], "big.bin")
    root = ctx.root(srv, proto)
    store = ctx.store(srv, s3)
    target = f"up/ul-{ctx.uniq()}.bin" if upload else None
    if lean:
        cmd = ctx.lean_base(port) + ["big.bin"]
    elif upload:
        cmd = ctx.curl_base(tls) + ["-w", CURL_W, "-T", os.path.join(ctx.data, fname),
                                    f"ftp://127.0.0.1:{port}/{target}"]
    else:
        cmd = ctx.curl_base(tls) + ["-w", CURL_W, "-o", "/dev/null", f"ftp://127.0.0.1:{port}/{fname}"]
    c0 = cpu_seconds(root)  # this server's previous run already settled after its transfer
    b0 = ctx.backend_cpu(s3)
    k0 = client_cpu()
    try:
        rc, out, err = run_proc(cmd)
        k1 = client_cpu()
        time.sleep(SETTLE_S)
        c1 = cpu_seconds(root)
        b1 = ctx.backend_cpu(s3)
        w = parse_w(out)
        if rc != 0 or not w:
            raise RuntimeError(f"{os.path.basename(cmd[1] if lean else cmd[0])} rc={rc}: {err.strip()[-200:]}")
        w = w[0]
        moved = w["up"] if upload else w["down"]
        if upload and store.size(target) != size:
            raise RuntimeError(f"uploaded file has {store.size(target)} bytes, want {size}")
        if moved != size:
            raise RuntimeError(f"moved {moved} bytes, want {size}")
    finally:
        if target:
            store.remove(target)
    secs = w["total"] - w["pre"]
    return dict(value=size / secs / MB, data_s=secs, curl=w, **per_gib(size, c0, c1, k0, k1, b0, b1))


def per_gib(size, c0, c1, k0, k1, b0=None, b1=None):
    """server, client and (S3 rows) the S3 backend's CPU seconds of a transfer of size
    bytes, and each per GiB"""
    out = {}
    for name, per, a, b in (("server_cpu_s", "cpu_s_per_gib", c0, c1),
                            ("client_cpu_s", "client_cpu_s_per_gib", k0, k1),
                            ("backend_cpu_s", "backend_cpu_s_per_gib", b0, b1)):
        cpu = (b - a) if a is not None and b is not None else None
        if cpu is not None or name != "backend_cpu_s":
            out[name] = cpu
            out[per] = (cpu / (size / GiB)) if cpu is not None else None
    return out


def ftp_parallel(ctx, srv):
    """16 curl processes at once; aggregate = bytes / (last data byte - first
    data byte).  A run where some curl sat in its 1 s connect stall (see
    ftp_small) is done once more and the stall is recorded."""
    port = ctx.endpoint(srv, "ftp")
    n, size = ctx.p["par_n"], ctx.p["par_size"]
    cmd = ctx.curl_base() + ["-w", CURL_W, "-o", "/dev/null", f"ftp://127.0.0.1:{port}/mid.bin"]
    # the row times transfers, not 16 first password checks queued at once:
    # log in before the clock starts, twice for a balancer's two nodes
    for _ in range(2):
        ftp_login_once(ctx, port, FIRST_LOGIN_TIMEOUT_S)
    stalled = 0
    for attempt in range(2):
        procs = []
        try:
            for _ in range(n):
                t = time.perf_counter()
                procs.append((t, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
            res = []
            limit = time.monotonic() + TRANSFER_TIMEOUT_S
            for t0, p in procs:
                out, err = p.communicate(timeout=max(1, limit - time.monotonic()))
                w = parse_w(out.decode())
                if p.returncode != 0 or not w or w[0]["down"] != size:
                    raise RuntimeError(f"curl rc={p.returncode}: {err.decode().strip()[-200:]}")
                res.append((t0, w[0]))
        finally:
            for _, p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        if max(w["pre"] for _, w in res) < 0.5:
            break
        stalled += 1
    start = min(t0 + w["pre"] for t0, w in res)
    end = max(t0 + w["total"] for t0, w in res)
    return dict(value=n * size / (end - start) / MB, window_s=end - start, stalled_attempts=stalled,
                max_pretransfer_s=max(w["pre"] for _, w in res),
                per_client_mb_s=sorted(round(size / (w["total"] - w["pre"]) / MB, 1) for _, w in res))


def ftp_small(ctx, srv, upload, s3=False):
    """N small files over one logged-in session (ftp_small_session); an
    upload's files counted where the server keeps them"""
    proto = "s3ftp" if s3 else "ftp"
    port = ctx.endpoint(srv, proto)
    store = ctx.store(srv, s3)
    n = ctx.p["s3_small_n" if s3 else "small_n"]
    updir = None
    if upload:
        updir = f"up/s-{ctx.uniq()}"
        if not s3:  # S3: the client's MKD below, so that a server's directory cache knows it
            store.mkdir(updir)
    try:
        busy = ftp_small_session(ctx, port, n, upload, updir if upload else "small", mkd=upload and s3)
        if upload:
            all_arrived(store, updir, n)
    finally:
        if updir:
            store.remove(updir)
    return dict(value=n / busy, transfer_s=busy)


def all_arrived(store, updir, n):
    """the N files of an upload row are where the server keeps them"""
    got = store.count(updir)
    if got != n:
        raise RuntimeError(f"{got}/{n} files arrived")


def ftp_small_session(ctx, port, n, upload, cwd, mkd=False):
    """N small files over one logged-in session with the stdlib client: EPSV,
    connect, RETR/STOR, 226 per file; the seconds they took.  (curl 7.88
    stalls for exactly 1 s on a share of reused-connection data connects - a
    multi-wait timeout in the client - which swamped this row, so curl is
    not used here.)"""
    size = ctx.p["small_size"]
    payloads = []
    if upload:
        for i in range(n):
            with open(os.path.join(ctx.data, "small", f"f{i:04d}"), "rb") as f:
                payloads.append(f.read())
    buf = bytearray(1 << 16)
    c = Ftp(port, timeout=30)
    try:
        c.login(ctx.user, ctx.pw)
        c.cmd("TYPE I", (200,))
        if mkd:
            c.cmd(f"MKD {cwd}", (257,))
        c.cmd(f"CWD {cwd}", (250,))
        limit = time.monotonic() + TRANSFER_TIMEOUT_S
        t0 = time.perf_counter()
        for i in range(n):
            if time.monotonic() > limit:
                raise RuntimeError(f"time limit after {i} files")
            if upload:
                c.stor(f"f{i:04d}", payloads[i])
            else:
                got = c.retr(f"f{i:04d}", buf)
                if got != size:
                    raise RuntimeError(f"f{i:04d}: {got} bytes, want {size}")
        busy = time.perf_counter() - t0
        c.quit()
    finally:
        c.close()
    return busy


def ftp_floor(ctx, upload):
    """the small-file session against bench/ftp_floor.c, an FTP server that
    does nothing but answer (no files, no logins, blocking calls): the
    floor of the FTP small-file rows on this machine, built with cc into
    the lab and stopped by its pid"""
    exe = os.path.join(ctx.lab["lab"], "ftp_floor")
    if not os.path.exists(exe):
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ftp_floor.c")
        rc, out, err = run_proc(["cc", "-O2", "-o", exe, src], timeout=120)
        if rc != 0:
            raise Skip(f"n/a (cc: {(err or out).strip()[-120:]})")
    port = ctx.lab["iperf_port"]  # the loopback ceiling's port: the two never run at once
    srv = subprocess.Popen([exe, str(port), str(ctx.p["small_size"])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if srv.poll() is not None:
                    raise RuntimeError(f"ftp_floor exited ({srv.returncode})")
                time.sleep(0.1)
        n = ctx.p["small_n"]
        busy = ftp_small_session(ctx, port, n, upload, "small")
    finally:
        if srv.poll() is None:
            srv.kill()
        srv.wait()
    return dict(value=n / busy, transfer_s=busy)


def ftp_login_once(ctx, port, timeout):
    """connect, log in, quit"""
    c = Ftp(port, timeout=timeout)
    try:
        c.login(ctx.user, ctx.pw)
        c.quit()
    finally:
        c.close()


def ftp_logins(ctx, srv, first, conc):
    port = ctx.endpoint(srv, "ftp", nocache=first)
    window, cap = ctx.p["login_window"], ctx.p["login_max"]
    workers = ctx.p["conc"] if conc else 1
    lock = threading.Lock()
    st = dict(ok=0, fail=0, started=0, err="")
    if not first:  # "repeat": the server has seen this login before the clock starts
        ftp_login_once(ctx, port, FIRST_LOGIN_TIMEOUT_S)
    stop_at = time.monotonic() + window

    def worker():
        while time.monotonic() < stop_at:
            with lock:
                if st["started"] >= cap:
                    return
                st["started"] += 1
            try:
                ftp_login_once(ctx, port, FIRST_LOGIN_TIMEOUT_S if first else 10.0)
                with lock:
                    st["ok"] += 1
            except Exception as e:  # counted, reported, not fatal
                with lock:
                    st["fail"] += 1
                    st["err"] = str(e)[:120]
    t0 = time.perf_counter()
    ths = [threading.Thread(target=worker, daemon=True) for _ in range(workers)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(window + FIRST_LOGIN_TIMEOUT_S + 5)
    el = time.perf_counter() - t0
    if st["ok"] == 0:
        raise RuntimeError(f"no login succeeded: {st['err']}")
    return dict(value=st["ok"] / el, logins=st["ok"], failures=st["fail"], last_error=st["err"],
                elapsed_s=el, workers=workers)


def mem_idle(ctx, srv):
    if not (srv.get("ftp") or srv.get("sftp")):
        raise Skip(f"n/a ({srv.get('why_na') or 'not built'})" if srv["name"] == "siftpd" else "–")
    time.sleep(SETTLE_S)
    mib, nproc = pss_mib(ctx.root(srv))
    return dict(value=mib, processes=nproc)


def open_ftp_sessions(ctx, port, n, conns):
    """n FTP sessions logged in and idle, by 16 threads, into conns; the
    errors of those that failed"""
    lock, errs = threading.Lock(), []
    stop_at = time.monotonic() + 60

    def opener(k):
        for _ in range(k):
            if time.monotonic() > stop_at:
                return
            try:
                c = Ftp(port, timeout=30)
                c.login(ctx.user, ctx.pw)
                with lock:
                    conns.append(c)
            except Exception as e:
                with lock:
                    errs.append(str(e)[:100])
    ths = [threading.Thread(target=opener, args=(n // 16 + (k < n % 16),), daemon=True) for k in range(16)]
    for t in ths:
        t.start()
    for t in ths:
        t.join(90)
    return errs


def close_ftp_sessions(conns):
    for c in conns:
        try:
            c.quit()
        except Exception:
            c.close()


def open_sftp_sessions(ctx, port, n, procs):
    """n OpenSSH clients logged in and idle (`sftp -b -` kept open), in waves
    of 8 so that sshd's MaxStartups (10) never refuses one, into procs; how
    many are in"""
    import select
    ready = 0
    deadline = time.monotonic() + 180
    while len(procs) < n and time.monotonic() < deadline:
        wave = []
        for _ in range(min(8, n - len(procs))):
            pr = subprocess.Popen(ctx.sftp_cmd(port, "-", "chacha"), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            pr.stdin.write(b"pwd\n")
            pr.stdin.flush()
            wave.append(pr)
        procs += wave
        for pr in wave:
            buf = b""
            while b"Remote working directory" not in buf and time.monotonic() < deadline:
                r, _, _ = select.select([pr.stdout], [], [], 1.0)
                if r:
                    chunk = os.read(pr.stdout.fileno(), 4096)
                    if not chunk:
                        break
                    buf += chunk
            ready += b"Remote working directory" in buf
    return ready


def close_sftp_sessions(procs):
    for pr in procs:
        try:
            pr.stdin.close()
        except Exception:
            pass
    for pr in procs:
        try:
            pr.wait(10)
        except Exception:
            pr.kill()
            pr.wait()


def mem_sessions(ctx, srv):
    port = ctx.endpoint(srv, "ftp")
    n = ctx.p["sessions"]
    conns = []
    try:
        errs = open_ftp_sessions(ctx, port, n, conns)
        time.sleep(0.5)
        mib, nproc = pss_mib(ctx.root(srv))
    finally:
        close_ftp_sessions(conns)
    if len(conns) < n:
        raise RuntimeError(f"only {len(conns)}/{n} sessions logged in: {errs[-1] if errs else ''}")
    return dict(value=mib, sessions=len(conns), processes=nproc)


def mem_sftp_sessions(ctx, srv):
    port = ctx.endpoint(srv, "sftp")
    n = ctx.p["sessions"]
    procs = []
    try:
        ready = open_sftp_sessions(ctx, port, n, procs)
        time.sleep(SETTLE_S)
        mib, nproc = pss_mib(ctx.root(srv))
    finally:
        close_sftp_sessions(procs)
    if ready < n:
        raise RuntimeError(f"only {ready}/{n} SFTP sessions logged in")
    return dict(value=mib, sessions=ready, processes=nproc)


def api_sessions(ctx, srv):
    """half the sessions FTP, half SFTP, held open; then api_gets sequential
    GET /api/v1/sessions on one keep-alive connection, each timed by the
    client: p50 (the value) and p99 in ms"""
    import http.client
    ep = srv.get("api")
    if not ep:
        raise Skip("–" if srv["name"] != "siftpd" else "n/a (no FTP and SFTP)")
    n = ctx.p["sessions"]
    conns, procs, times = [], [], []
    try:
        open_ftp_sessions(ctx, ctx.endpoint(srv, "ftp"), n // 2, conns)
        ready = open_sftp_sessions(ctx, ctx.endpoint(srv, "sftp"), n - n // 2, procs)
        if len(conns) + ready < n:
            raise RuntimeError(f"only {len(conns)} FTP and {ready} SFTP of {n} sessions in")
        time.sleep(SETTLE_S)
        h = http.client.HTTPConnection("127.0.0.1", ep["port"], timeout=30)
        auth = {"Authorization": "Bearer " + ep["token"]}
        listed = 0
        for _ in range(ctx.p["api_gets"]):
            t0 = time.perf_counter()
            h.request("GET", "/api/v1/sessions", headers=auth)
            r = h.getresponse()
            body = r.read()
            times.append(time.perf_counter() - t0)
            if r.status != 200:
                raise RuntimeError(f"GET /api/v1/sessions: {r.status}")
            listed = len(json.loads(body))
        h.close()
    finally:
        close_ftp_sessions(conns)
        close_sftp_sessions(procs)
    if listed < n:
        raise RuntimeError(f"only {listed}/{n} sessions listed")
    times.sort()
    return dict(value=1000 * times[len(times) // 2], p99=1000 * times[(99 * len(times)) // 100],
                sessions=listed, gets=len(times))


def ftps_probe(ctx, srv):
    """curl -v on a tiny FTPS transfer: which TLS version / cipher was negotiated."""
    port = ctx.endpoint(srv, "ftps")
    rc, out, err = run_proc(ctx.curl_base(True) + ["-v", "-o", "/dev/null",
                                                    f"ftp://127.0.0.1:{port}/small/f0000"], timeout=30)
    m = re.findall(r"SSL connection using (.+)", err)
    ctx.algos.setdefault(srv["name"], {})["ftps"] = m[0].strip() if m else f"unknown (curl rc={rc})"


# ------------------------------------------------------------------ SFTP measurements
def sftp_session(ctx, port, lines, cipher, verbose=False):
    bf = os.path.join(ctx.client, f"batch-{ctx.uniq()}")
    with open(bf, "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        t0 = time.perf_counter()
        rc, out, err = run_proc(ctx.sftp_cmd(port, bf, cipher, verbose))
        wall = time.perf_counter() - t0
    finally:
        os.unlink(bf)
    if rc != 0:
        raise RuntimeError(f"sftp rc={rc}: {err.strip()[-200:]}")
    return wall, err


def sftp_baseline(ctx, srv, cipher, proto="sftp"):
    """median wall time of a session that moves no file (per instance and
    cipher), and what was negotiated (sftp -v)"""
    port = ctx.endpoint(srv, proto)
    key = (srv["name"], proto, cipher)
    if key not in ctx.sftp_base:
        walls = [sftp_session(ctx, port, ["pwd"], cipher)[0] for _ in range(3)]
        ctx.sftp_base[key] = statistics.median(walls)
        _, err = sftp_session(ctx, port, ["pwd"], cipher, verbose=True)
        a = {}
        for k, rx in (("kex", r"kex: algorithm: (\S+)"), ("hostkey", r"kex: host key algorithm: (\S+)"),
                      ("s2c", r"kex: server->client cipher: (\S+) MAC: (\S+)"),
                      ("c2s", r"kex: client->server cipher: (\S+) MAC: (\S+)")):
            m = re.search(rx, err)
            if m:
                a[k] = " ".join(m.groups())
        ctx.algos.setdefault(srv["name"], {}).setdefault(f"sftp {SFTP_CIPHERS[cipher][0]}", a)
    return ctx.sftp_base[key]


def sftp_setup(ctx, srv):
    """one whole session that moves nothing: connect, kex, auth, subsystem, pwd"""
    port = ctx.endpoint(srv, "sftp")
    sftp_baseline(ctx, srv, "chacha")
    wall, _ = sftp_session(ctx, port, ["pwd"], "chacha")
    return dict(value=wall * 1000)


def sftp_transfer(ctx, srv, upload, cipher, s3=False):
    """one big file with OpenSSH's sftp; s3: s3.bin of the server's prefix
    in the backend's bucket ({s3_big}), else sftp.bin ({sftp_big})"""
    proto = "s3sftp" if s3 else "sftp"
    port = ctx.endpoint(srv, proto)
    base = sftp_baseline(ctx, srv, cipher, proto)
    size, fname = (ctx.p["s3_big"], "s3.bin") if s3 else (ctx.p["sftp_big"], "sftp.bin")
    root = ctx.root(srv, proto)
    store = ctx.store(srv, s3)
    target = None
    if upload:
        target = f"up/ul-{ctx.uniq()}.bin"
        lines = [f"put {os.path.join(ctx.data, fname)} {target}"]
    else:
        lines = [f"get {fname} /dev/null"]
    c0 = cpu_seconds(root)  # this server's previous run already settled after its transfer
    b0 = ctx.backend_cpu(s3)
    k0 = client_cpu()
    try:
        wall, _ = sftp_session(ctx, port, lines, cipher)
        k1 = client_cpu()
        time.sleep(SETTLE_S)
        c1 = cpu_seconds(root)
        b1 = ctx.backend_cpu(s3)
        if upload and store.size(target) != size:
            raise RuntimeError(f"uploaded file has {store.size(target)} bytes")
    finally:
        if target:
            store.remove(target)
    secs = max(wall - base, 1e-3)
    return dict(value=size / secs / MB, wall_s=wall, baseline_s=base, **per_gib(size, c0, c1, k0, k1, b0, b1))


def sftp_small(ctx, srv, upload, s3=False):
    proto = "s3sftp" if s3 else "sftp"
    port = ctx.endpoint(srv, proto)
    base = sftp_baseline(ctx, srv, "chacha", proto)
    store = ctx.store(srv, s3)
    n = ctx.p["s3_small_n" if s3 else "small_n"]
    updir = None
    if upload:
        updir = f"up/s-{ctx.uniq()}"
        if not s3:  # S3: the client's mkdir, so that a server's directory cache knows it
            store.mkdir(updir)
        lines = ([f"mkdir {updir}"] if s3 else []) + [
            f"put {os.path.join(ctx.data, 'small', f'f{i:04d}')} {updir}/f{i:04d}" for i in range(n)]
    else:
        lines = [f"get small/f{i:04d} /dev/null" for i in range(n)]
    try:
        wall, _ = sftp_session(ctx, port, lines, "chacha")
        if upload:
            all_arrived(store, updir, n)
    finally:
        if updir:
            store.remove(updir)
    return dict(value=n / max(wall - base, 1e-3), wall_s=wall, baseline_s=base)


# ------------------------------------------------------------------ S3 rows: memory, the backend's own rate
def pool_in_use_mib(api):
    """siftpd's buffer pool chunks handed out (all workers), in MiB, from
    its admin API; None without one"""
    import http.client
    if not api:
        return None
    h = http.client.HTTPConnection("127.0.0.1", api["port"], timeout=10)
    try:
        h.request("GET", "/api/v1/stats", headers={"Authorization": "Bearer " + api["token"]})
        r = h.getresponse()
        body = r.read()
    finally:
        h.close()
    if r.status != 200:
        raise RuntimeError(f"GET /api/v1/stats: {r.status}")
    pool = json.loads(body)["buffer_pool"]
    return pool["in_use"] * pool["chunk_bytes"] / (1 << 20)


def s3_uploads_memory(ctx, srv, proto):
    """s3_mem_n uploads of s3_mem_size at once (curl -T, or OpenSSH sftp
    put), the server tree's RSS and PSS sampled every 0.1 s while they run:
    the value is the peak RSS sum; per upload = (peak - idle before) / n;
    siftpd's buffer pool in use from its API beside"""
    port = ctx.endpoint(srv, proto)
    root = ctx.root(srv, proto)
    api = ctx.s3_instance(srv, proto).get("api")
    store = ctx.store(srv, True)
    n, size = ctx.p["s3_mem_n"], ctx.p["s3_mem_size"]
    src = os.path.join(ctx.data, "s3mem.bin")
    names = [f"up/mem-{ctx.uniq()}.bin" for _ in range(n)]
    if proto == "s3ftp":
        # a cached password check for the 16 logins at once: the one of
        # prepare_s3 is older than siftpd's login_cache_ttl_secs (300) by
        # now, and 16 argon2id checks from one address would queue 8 and
        # refuse the rest (curl: "Timeout was reached")
        ftp_login_once(ctx, port, FIRST_LOGIN_TIMEOUT_S)
    time.sleep(SETTLE_S)
    rss0, pss0, _ = tree_mem_mib(root)
    rss_peak, pss_peak, pool_peak, samples = rss0, pss0, pool_in_use_mib(api), 0
    batches, procs = [], []
    try:
        for name in names:
            if proto == "s3ftp":
                cmd = ctx.curl_base() + ["-T", src, f"ftp://127.0.0.1:{port}/{name}"]
            else:
                batches.append(os.path.join(ctx.client, f"batch-{ctx.uniq()}"))
                with open(batches[-1], "w") as f:
                    f.write(f"put {src} {name}\n")
                cmd = ctx.sftp_cmd(port, batches[-1], "chacha")
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        limit = time.monotonic() + TRANSFER_TIMEOUT_S
        while any(p.poll() is None for p in procs) and time.monotonic() < limit:
            rss, pss, _ = tree_mem_mib(root)
            rss_peak, pss_peak = max(rss_peak, rss), max(pss_peak, pss)
            pool = pool_in_use_mib(api)
            pool_peak = max(pool_peak, pool) if pool is not None else None
            samples += 1
            time.sleep(0.1)
        for p in procs:
            p.wait(max(1, limit - time.monotonic()))
            if p.returncode != 0:
                raise RuntimeError(f"{p.args[0]} rc={p.returncode}: {p.stderr.read().decode().strip()[-200:]}")
        sizes = [store.size(name) for name in names]
        if sizes != [size] * n:
            raise RuntimeError(f"uploaded sizes {sorted(set(map(str, sizes)))}, want {size}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            p.stderr.close()
        for bf in batches:
            os.unlink(bf)
        store.remove(*names)
    return dict(value=rss_peak, idle_rss=rss0, per_upload_mib=(rss_peak - rss0) / n, pss_peak=pss_peak,
                idle_pss=pss0, pool_peak_mib=pool_peak,
                pool_per_upload_mib=pool_peak / n if pool_peak is not None else None,
                uploads=n, size=size, samples=samples)


def s3_ceiling(ctx, upload):
    """the S3 backend alone: one PUT or GET of s3.bin by curl (signed), no
    server between; what any server's S3 rows are measured against"""
    ctx.s3_backend_up()
    key = f"ref-{ctx.uniq()}.bin"
    size = ctx.p["s3_big"]
    cmd = ["curl", "-sS", "-f", "--max-time", str(TRANSFER_TIMEOUT_S), *ctx.s3.curl_auth(), "-w", CURL_W]
    if upload:
        cmd += ["-T", os.path.join(ctx.data, "s3.bin"), ctx.s3.url(key)]
    else:
        cmd += ["-o", "/dev/null", ctx.s3.url(ctx.s3_ref)]
    b0 = ctx.backend_cpu(True)
    try:
        rc, out, err = run_proc(cmd)
        b1 = ctx.backend_cpu(True)
        w = parse_w(out)
        if rc != 0 or not w or (w[0]["up"] if upload else w[0]["down"]) != size:
            raise RuntimeError(f"curl rc={rc}: {err.strip()[-200:]} {out.strip()[-120:]}")
    finally:
        if upload:
            ctx.s3.purge([key])
    secs = w[0]["total"] - w[0]["pre"]
    return dict(value=size / secs / MB, data_s=secs, backend_cpu_s=b1 - b0,
                backend_cpu_s_per_gib=(b1 - b0) / (size / GiB))


# ------------------------------------------------------------------ machine ceilings
def openssl_speed(ctx, alg):
    rc, out, err = run_proc(["openssl", "speed", "-mr", "-evp", alg, "-bytes", "16384",
                             "-seconds", str(ctx.p["speed_secs"])], timeout=60)
    for line in out.splitlines():  # machine-readable: +F:n:NAME:bytes-per-second
        if line.startswith("+F:"):
            return dict(value=float(line.split(":")[-1]) / MB, bytes=16384, cores=1)
    raise RuntimeError(f"openssl speed {alg}: no result (rc={rc}) {err.strip()[-120:]}")


def loopback_tcp(ctx):
    port, secs = ctx.lab["iperf_port"], ctx.p["iperf_secs"]
    from shutil import which
    if which("iperf3"):
        srv = subprocess.Popen(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(30):  # the one-off server may need a moment to listen
                rc, out, err = run_proc(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(secs), "-J"],
                                        timeout=secs + 30)
                try:
                    bps = json.loads(out)["end"]["sum_received"]["bits_per_second"]
                    return dict(value=bps / 8 / MB, tool="iperf3, 1 stream")
                except (ValueError, KeyError):
                    pass  # not listening yet: iperf3 -J reports that as JSON
                if srv.poll() is not None:
                    break
                time.sleep(0.2)
            raise RuntimeError(f"iperf3 failed: {(out or err).strip()[-200:]}")
        finally:
            if srv.poll() is None:
                srv.kill()
            srv.wait()
    # fallback: a stdlib loop, sendfile() from tmpfs into loopback TCP
    ls = socket.socket()
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    total = [0]

    def rx():
        c, _ = ls.accept()
        buf = bytearray(1 << 20)
        while True:
            k = c.recv_into(buf)
            if not k:
                break
            total[0] += k
        c.close()
    t = threading.Thread(target=rx, daemon=True)
    t.start()
    s = socket.create_connection(("127.0.0.1", port))
    t0 = time.perf_counter()
    with open(os.path.join(ctx.data, "big.bin"), "rb") as f:
        s.sendfile(f)
    s.close()
    t.join(60)
    ls.close()
    return dict(value=total[0] / (time.perf_counter() - t0) / MB, tool="python sendfile loop")


# ------------------------------------------------------------------ rows
class Row:
    """a measured row (fn), or one derived from another row's runs (source):
    its runs' `key`, or with `ceiling` (ctx, server -> ceiling row id) the
    runs' value as a percentage of that machine ceiling's median; missing:
    the text of a derived cell whose runs have no `key` (a server that
    has no such figure), instead of an error"""
    def __init__(self, id, title, unit, better, proto, fn=None, source=None, key=None,
                 runs="runs", note="", servers=None, ceiling=None, missing=None):
        self.id, self.title, self.unit, self.better = id, title, unit, better
        self.proto, self.fn, self.source, self.key = proto, fn, source, key
        self.runs, self.note, self.servers, self.ceiling = runs, note, servers, ceiling
        self.missing = missing

    def is_s3(self):
        """served from the S3 backend's bucket, or the backend's own rate"""
        return self.proto in S3_PROTOS or self.id.startswith("ceil_s3")


def crypto_rows(rid, title, proto, fn, ceiling, note=""):
    """a TLS/SSH throughput row, then its server CPU per GiB, the client's
    (what the server's way of sending and receiving costs the client, which
    shares the machine and often sets the pace) and its share of one
    core's `openssl speed` for the cipher in use"""
    return [Row(rid, title, "MB/s", "higher", proto, fn, note=note),
            Row(f"{rid}_cpu", f"{title}: server CPU per GiB", "CPU-s/GiB", "lower", proto,
                source=rid, key="cpu_s_per_gib"),
            Row(f"{rid}_client_cpu", f"{title}: client CPU per GiB", "CPU-s/GiB", "lower", proto,
                source=rid, key="client_cpu_s_per_gib"),
            Row(f"{rid}_ceil", f"{title}: % of one core's openssl speed", "%", "higher", proto,
                source=rid, ceiling=ceiling, note=CEILING_NOTE)]


def ftps_ceiling(ctx, name):
    """the ceiling of the cipher a server's FTPS negotiated; None if unknown"""
    algo = ctx.algos.get(name, {}).get("ftps", "")
    if "AES_256_GCM" in algo or "AES256-GCM" in algo:
        return "ceil_aes_gcm"
    if "CHACHA20" in algo:
        return "ceil_chacha"
    return None


S3_NOTE = ("siftpd with `driver s3` (its defaults: 8 MiB parts, 2 in flight, a 64 MiB buffer pool) against "
           "rclone serve with `--vfs-cache-mode off` (rclone's default: a file is written as a stream, in order, "
           "into a multipart upload of 5 MiB parts, 4 at once, and read by ranged GETs), each on its own prefix "
           "of one {s3_backend} bucket, with the same endpoint and keys; {s3_backend_note}")
S3_MEM_NOTE = ("16 uploads started at once; the value is the peak of the RSS summed over every "
               "server process (sampled every 0.1 s while they run), per upload = (peak - the idle RSS just "
               "before) / 16; siftpd's workers share one buffer pool mapping, whose pages count in the RSS "
               "of each worker that touched them; siftpd's pool row is the peak of its chunks handed out "
               "(`/api/v1/stats`) / 16, to hold against 2 parts of 8 MiB")


def s3_rows(rid, title, proto, fn):
    """an S3 throughput row, then the server's CPU per GiB and what it cost
    the S3 backend per GiB"""
    return [Row(rid, title, "MB/s", "higher", proto, fn, runs="s3_runs", note=S3_NOTE),
            Row(f"{rid}_cpu", f"{title}: server CPU per GiB", "CPU-s/GiB", "lower", proto,
                source=rid, key="cpu_s_per_gib"),
            Row(f"{rid}_backend_cpu", f"{title}: {{s3_backend}}'s CPU per GiB", "CPU-s/GiB", "lower", proto,
                source=rid, key="backend_cpu_s_per_gib")]


def s3_memory_rows(rid, name, proto):
    """the peak RSS with 16 uploads in flight, per upload, and siftpd's pool"""
    title = f"S3: memory, 16 {name} uploads of {{s3_mem}} in flight"
    return [Row(rid, f"{title} (RSS sum, peak)", "MiB", "lower", proto,
                lambda c, s: s3_uploads_memory(c, s, proto), runs="s3_runs", note=S3_MEM_NOTE),
            Row(f"{rid}_per", f"{title}: per upload", "MiB", "lower", proto, source=rid, key="per_upload_mib"),
            Row(f"{rid}_pool", f"{title}: buffer pool per upload", "MiB", "lower", proto, source=rid,
                key="pool_per_upload_mib", missing="–")]


ROWS = [
    Row("ceil_aes_gcm", "Ceiling: openssl speed -evp aes-256-gcm, 16 KiB, 1 core", "MB/s", "higher", "machine",
        lambda c, s: openssl_speed(c, "aes-256-gcm"), runs="ceil_runs"),
    Row("ceil_chacha", "Ceiling: openssl speed -evp chacha20-poly1305, 16 KiB, 1 core", "MB/s", "higher",
        "machine", lambda c, s: openssl_speed(c, "chacha20-poly1305"), runs="ceil_runs"),
    Row("ceil_loopback", "Ceiling: loopback TCP, 1 stream", "MB/s", "higher", "machine",
        lambda c, s: loopback_tcp(c), runs="ceil_runs"),
    Row("ceil_ftp_small_dl", "Ceiling: FTP small files down against a server that only answers (bench/ftp_floor.c)",
        "files/s", "higher", "machine", lambda c, s: ftp_floor(c, False), note=FLOOR_NOTE),
    Row("ceil_ftp_small_ul", "Ceiling: FTP small files up against a server that only answers (bench/ftp_floor.c)",
        "files/s", "higher", "machine", lambda c, s: ftp_floor(c, True), note=FLOOR_NOTE),
    Row("ftp_dl", "FTP download {big}", "MB/s", "higher", "ftp", lambda c, s: ftp_transfer(c, s, False, False)),
    Row("ftp_ul", "FTP upload {big}", "MB/s", "higher", "ftp", lambda c, s: ftp_transfer(c, s, False, True)),
    Row("ftp_dl_par16", "FTP 16 parallel downloads, aggregate", "MB/s", "higher", "ftp", ftp_parallel),
    Row("ftp_small_dl", "FTP small files down (1000 x 16 KiB, one session)", "files/s", "higher", "ftp",
        lambda c, s: ftp_small(c, s, False)),
    Row("ftp_small_ul", "FTP small files up (1000 x 16 KiB, one session)", "files/s", "higher", "ftp",
        lambda c, s: ftp_small(c, s, True)),
    Row("login_first_seq", "FTP logins/s, first, sequential", "logins/s", "higher", "ftp",
        lambda c, s: ftp_logins(c, s, True, False), note=LOGIN_NOTE),
    Row("login_first_c32", "FTP logins/s, first, 32 concurrent", "logins/s", "higher", "ftp",
        lambda c, s: ftp_logins(c, s, True, True), note=LOGIN_NOTE, runs="first_conc_runs"),
    Row("login_repeat_seq", "FTP logins/s, repeat, sequential", "logins/s", "higher", "ftp",
        lambda c, s: ftp_logins(c, s, False, False), note=LOGIN_NOTE),
    Row("login_repeat_c32", "FTP logins/s, repeat, 32 concurrent", "logins/s", "higher", "ftp",
        lambda c, s: ftp_logins(c, s, False, True), note=LOGIN_NOTE),
    Row("cpu_per_gib_ftp", "Server CPU per GiB, FTP download", "CPU-s/GiB", "lower", "ftp",
        source="ftp_dl", key="cpu_s_per_gib"),
    Row("mem_idle", "Memory idle (PSS, process tree)", "MiB", "lower", "any", mem_idle, runs="mem_runs"),
    Row("mem_200", "Memory, 200 logged-in FTP sessions (PSS)", "MiB", "lower", "ftp", mem_sessions,
        runs="mem_runs"),
    Row("mem_sftp_200", "Memory, 200 idle SFTP sessions (PSS)", "MiB", "lower", "sftp",
        mem_sftp_sessions, runs="mem_runs"),
    Row("api_sessions", "API GET /api/v1/sessions, 200 live sessions (FTP+SFTP): p50", "ms", "lower", "api",
        api_sessions, runs="mem_runs"),
    Row("api_sessions_p99", "API GET /api/v1/sessions, 200 live sessions (FTP+SFTP): p99", "ms", "lower", "api",
        source="api_sessions", key="p99"),
    *crypto_rows("ftps_dl", "FTPS download {big}", "ftps", lambda c, s: ftp_transfer(c, s, True, False),
                 ftps_ceiling),
    *crypto_rows("ftps_dl_lean", "FTPS download {big}, lean client", "ftps",
                 lambda c, s: ftp_transfer(c, s, True, False, lean=True), ftps_ceiling, note=LEAN_NOTE),
    *crypto_rows("ftps_ul", "FTPS upload {big}", "ftps", lambda c, s: ftp_transfer(c, s, True, True),
                 ftps_ceiling),
    *[r for cipher in SFTP_CIPHERS for up in (False, True)
      for r in crypto_rows(f"sftp_{'ul' if up else 'dl'}_{cipher}",
                           f"SFTP {'upload' if up else 'download'} {{sftp_big}}, {SFTP_CIPHERS[cipher][2]}",
                           "sftp", lambda c, s, up=up, cipher=cipher: sftp_transfer(c, s, up, cipher),
                           lambda ctx, name, cipher=cipher: SFTP_CIPHERS[cipher][1])],
    Row("sftp_setup", f"SFTP session setup (connect, kex {SFTP_KEX}, auth, subsystem)", "ms", "lower", "sftp",
        sftp_setup, runs="setup_runs"),
    Row("sftp_small_dl", "SFTP small files down (1000 x 16 KiB, one session, chacha20-poly1305)", "files/s", "higher", "sftp",
        lambda c, s: sftp_small(c, s, False)),
    Row("sftp_small_ul", "SFTP small files up (1000 x 16 KiB, one session, chacha20-poly1305)", "files/s", "higher", "sftp",
        lambda c, s: sftp_small(c, s, True)),
    Row("ceil_s3_put", "Ceiling: {s3_backend} alone, one PUT of {s3_big} (curl)", "MB/s", "higher",
        "machine", lambda c, s: s3_ceiling(c, True), runs="ceil_runs"),
    Row("ceil_s3_get", "Ceiling: {s3_backend} alone, one GET of {s3_big} (curl)", "MB/s", "higher",
        "machine", lambda c, s: s3_ceiling(c, False), runs="ceil_runs"),
    *s3_rows("s3_ftp_dl", "S3: FTP download {s3_big}", "s3ftp", lambda c, s: ftp_transfer(c, s, False, False, s3=True)),
    *s3_rows("s3_ftp_ul", "S3: FTP upload {s3_big}", "s3ftp", lambda c, s: ftp_transfer(c, s, False, True, s3=True)),
    *s3_rows("s3_sftp_dl", "S3: SFTP download {s3_big}, chacha20-poly1305", "s3sftp",
             lambda c, s: sftp_transfer(c, s, False, "chacha", s3=True)),
    *s3_rows("s3_sftp_ul", "S3: SFTP upload {s3_big}, chacha20-poly1305", "s3sftp",
             lambda c, s: sftp_transfer(c, s, True, "chacha", s3=True)),
    Row("s3_ftp_small_dl", "S3: FTP small files down ({s3_small_n} x 16 KiB, one session)", "files/s", "higher", "s3ftp",
        lambda c, s: ftp_small(c, s, False, s3=True), runs="s3_runs", note=S3_NOTE),
    Row("s3_ftp_small_ul", "S3: FTP small files up ({s3_small_n} x 16 KiB, one session)", "files/s", "higher", "s3ftp",
        lambda c, s: ftp_small(c, s, True, s3=True), runs="s3_runs", note=S3_NOTE),
    Row("s3_sftp_small_dl", "S3: SFTP small files down ({s3_small_n} x 16 KiB, one session, chacha20-poly1305)", "files/s",
        "higher", "s3sftp", lambda c, s: sftp_small(c, s, False, s3=True), runs="s3_runs", note=S3_NOTE),
    Row("s3_sftp_small_ul", "S3: SFTP small files up ({s3_small_n} x 16 KiB, one session, chacha20-poly1305)", "files/s",
        "higher", "s3sftp", lambda c, s: sftp_small(c, s, True, s3=True), runs="s3_runs", note=S3_NOTE),
    *s3_memory_rows("s3_mem_ul16_ftp", "FTP", "s3ftp"),
    *s3_memory_rows("s3_mem_ul16_sftp", "SFTP", "s3sftp"),
]
MACHINE = {"name": "machine"}


def run_rows(ctx, rows, servers, results, log):
    wanted = {r.id for r in rows}
    for row in ROWS:
        if row.id not in wanted or row.source:
            continue
        cols = [MACHINE] if row.proto == "machine" else servers
        cells = {}
        for srv in cols:
            cell = cells[srv["name"]] = dict(status="ok", runs=[], errors=[])
            try:
                if srv["name"] in VARIANTS and not re.search(VARIANTS[srv["name"]]["rows"], row.id):
                    raise Skip("–")
                if row.proto != "machine" and row.proto != "any":
                    ctx.endpoint(srv, row.proto)
            except Skip as e:
                cell.update(status="na", text=str(e))
        live = [s for s in cols if cells[s["name"]]["status"] == "ok"]
        if live and row.proto == "ftps":
            for s in live:
                try:
                    ftps_probe(ctx, s)
                except Exception as e:
                    ctx.algos.setdefault(s["name"], {})["ftps"] = f"probe failed: {e}"
        nruns = ctx.p[row.runs]
        t_row = time.monotonic()
        for i in range(nruns):
            if ctx.left() <= 0:
                log(f"  {row.id}: time budget used up after {i} run(s)")
                break
            order = live[i % len(live):] + live[:i % len(live)] if live else []
            for srv in order:  # interleaved and rotated: drift hits every server alike
                cell = cells[srv["name"]]
                if cell["status"] != "ok" or len(cell["errors"]) >= 2:
                    continue
                try:
                    r = row.fn(ctx, srv)
                    r["run"] = i
                    cell["runs"].append(r)
                except Skip as e:
                    cell.update(status="na", text=str(e))
                except KeyboardInterrupt:
                    raise
                except Exception as e:
                    cell["errors"].append(f"run {i}: {e}")
                    log(f"  {row.id} {srv['name']} run {i}: ERROR {e}")
        for name, cell in cells.items():
            vals = [r["value"] for r in cell["runs"]]
            cell["median"], cell["min"], cell["max"] = median_min_max(vals)
            if cell["status"] == "ok" and not vals:
                cell["status"] = "error" if cell["errors"] else "skipped"
                cell["text"] = "error" if cell["errors"] else "skipped (time budget)"
        for cell in cells.values():
            cell["loadavg_1m"] = loadavg()
        results[row.id] = cells
        ctx.row_seconds[row.id] = round(time.monotonic() - t_row, 1)
        log(f"{title(row, ctx.p)}: " + ", ".join(f"{n}={fmt_cell(c)}" for n, c in cells.items())
            + f"  [{time.monotonic() - t_row:.0f}s]")
    # rows derived from another row's runs
    for row in ROWS:
        if row.id in wanted and row.source and row.source in results:
            cells = {}
            for name, src in results[row.source].items():
                cell = dict(status=src["status"], text=src.get("text"), errors=src["errors"])
                why = "no CPU sample"
                if row.ceiling:
                    cid = row.ceiling(ctx, name)
                    ceil = results.get(cid, {}).get("machine", {}).get("median") if cid else None
                    vals = [100.0 * r["value"] / ceil for r in src["runs"]] if ceil else []
                    why = f"no ceiling ({ctx.algos.get(name, {}).get('ftps', '?')})" if not cid else "no ceiling"
                    cell["ceiling"] = cid
                    cell["ceiling_mb_s"] = ceil
                else:
                    vals = [r.get(row.key) for r in src["runs"] if r.get(row.key) is not None]
                cell["runs"] = [{"value": v} for v in vals]
                cell["median"], cell["min"], cell["max"] = median_min_max(vals)
                if cell["status"] == "ok" and not vals:
                    cell.update(status="na" if row.missing else "error", text=row.missing or why)
                cells[name] = cell
            results[row.id] = cells


# ------------------------------------------------------------------ report
def num(v):
    if v is None:
        return "?"
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_cell(c):
    if c["status"] != "ok":
        return c.get("text") or c["status"]
    if len(c["runs"]) == 1:
        return num(c["median"])
    return f"{num(c['median'])} ({num(c['min'])}–{num(c['max'])})"


def title(row, prof):
    return fill(row.title, prof)


def fill(text, prof):
    """a title or note with the run's sizes, counts and S3 backend (a run of
    before the backend was named in the profile: moto)"""
    def size(n):
        return f"{n // GiB} GiB" if n >= GiB else f"{n >> 20} MiB"
    backend = S3_BACKENDS[prof.get("s3_backend", "moto")]
    return (text.replace("{big}", size(prof.get("big", GiB)))
            .replace("{s3_backend_note}", backend["note"]).replace("{s3_backend}", backend["title"])
            .replace("{s3_big}", size(prof.get("s3_big", GiB)))
            .replace("{s3_small_n}", str(prof.get("s3_small_n", 1000)))
            .replace("{sftp_big}", size(prof.get("sftp_big", prof.get("big", GiB))))
            .replace("{s3_mem}", size(prof.get("s3_mem_size", 64 << 20))))


def row_by_id(rid):
    """the row; a row id this version no longer has (an older json) gets a
    stand-in titled by its id"""
    return next((r for r in ROWS if r.id == rid), None) or Row(rid, rid, "?", "higher", "?")


def render_md(doc):
    m = doc["meta"]
    names = m["servers"]
    out = [f"# siftpd vs peers — {m['arch']}, {m['mode']} run, {m['date']}"
           + (" (interrupted: partial)" if m.get("interrupted") else ""), ""]
    out.append(f"Machine: {m['cpu']}, {m['cores']} cores shared by client and server; kernel {m['kernel']}. "
               f"Cells: median (min–max) of {m['runs']} runs"
               + (f" ({m['profile']['s3_runs']} for the S3 rows)"
                  if any(row_by_id(r).is_s3() for r in doc["results"]) and "s3_runs" in m["profile"] else "")
               + ", interleaved across servers. "
               f"MB = 10^6 bytes. Throughput counts the data phase only. ↑ higher is better, ↓ lower is better.")
    loads = [c.get("loadavg_1m") for cells in doc["results"].values() for c in cells.values()]
    loads = [x for x in loads + [m.get("loadavg_start")] if x is not None]
    if loads:
        out[-1] += (f" 1-minute load average during the run: {min(loads):.1f}–{max(loads):.1f} "
                    f"(anything above ~1 is other work competing with client and server).")
    out.append("")
    out.append("| row | unit | " + " | ".join(names) + " |")
    out.append("|---|---|" + "---|" * len(names))
    notes = []
    for rid, cells in doc["results"].items():
        row = row_by_id(rid)
        if row.proto == "machine":
            continue
        mark = ""
        if row.note:
            if row.note not in notes:
                notes.append(row.note)
            mark = f" [{notes.index(row.note) + 1}]"
        arrow = "↑" if row.better == "higher" else "↓"
        out.append(f"| {title(row, m['profile'])}{mark} | {row.unit} {arrow} | "
                   + " | ".join(fmt_cell(cells[n]) if n in cells else "" for n in names) + " |")
    out += variant_lines(doc)
    ceil = [(rid, c) for rid, c in doc["results"].items() if row_by_id(rid).proto == "machine"]
    if ceil:
        out += ["", "| machine ceiling | unit | value |", "|---|---|---|"]
        for rid, cells in ceil:
            row = row_by_id(rid)
            c = cells["machine"]
            extra = c["runs"][0].get("tool", "") if c["runs"] else ""
            out.append(f"| {title(row, m['profile']).replace('Ceiling: ', '')} | {row.unit} | {fmt_cell(c)}"
                       + (f" ({extra})" if extra else "") + " |")
    out.append("")
    for i, n in enumerate(notes):
        out.append(f"[{i + 1}] {fill(n, m['profile'])}.")
    out.append("")
    b = m.get("s3_backend") or m.get("moto")   # "moto": a run of before the backend was named
    backend = (f"; {S3_BACKENDS[m['profile'].get('s3_backend', 'moto')]['title']} {b['version']} "
               "(the S3 rows' backend)") if b else ""
    out.append("Versions: " + "; ".join(f"{s['name']} {s.get('version') or s.get('why_na') or '?'}"
                                        for s in m["server_info"])
               + f"{backend}; clients: {m['clients']}.")
    for name, a in sorted(m.get("algorithms", {}).items()):
        parts = []
        if "ftps" in a:
            parts.append(f"FTPS {a['ftps']}")
        for k in sorted(k for k in a if k.startswith("sftp")):
            s = a[k]
            parts.append("SSH kex " + s.get("kex", "?") + ", host key " + s.get("hostkey", "?")
                         + ", cipher/MAC s->c " + s.get("s2c", "?") + ", c->s " + s.get("c2s", "?"))
        out.append(f"Negotiated with {name}: " + "; ".join(parts) + ".")
    errs = [(rid, n, e) for rid, cells in doc["results"].items() for n, c in cells.items() for e in c["errors"]]
    if errs:
        out += ["", "Errors:"] + [f"- {rid} / {n}: {e}" for rid, n, e in errs[:30]]
    out.append("")
    return "\n".join(out)


def variant_lines(doc):
    """siftpd's variants set against their base, row by row: ratio of
    medians, > 100 % = the variant better whichever way the row counts"""
    names = doc["meta"]["servers"]
    out = []
    for name, v in VARIANTS.items():
        if name not in names or v["base"] not in names:
            continue
        parts = []
        for rid, cells in doc["results"].items():
            a, b = cells.get(name), cells.get(v["base"])
            if not (a and b and a["status"] == b["status"] == "ok" and a["median"] and b["median"]):
                continue
            r = a["median"] / b["median"] if row_by_id(rid).better == "higher" else b["median"] / a["median"]
            parts.append(f"{rid} {100 * r:.0f} %")
        if parts:
            out.append(f"- {name} / {v['base']} ({v['what']}): " + ", ".join(parts))
    if out:
        out = ["", "Variants against their base (ratio of medians, > 100 % = the first better):"] + out
    return out


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def peer_serves(cell):
    """False where a peer does not speak the row's protocol ('–')"""
    return cell is not None and not (cell["status"] == "na" and cell.get("text") == "–")


def ratio_items(doc):
    """per comparison row: (label, [(peer, ratio or None, why)]); a ratio > 1
    means siftpd is better, whichever way the row counts"""
    peers = [n for n in doc["meta"]["servers"] if n != "siftpd"]
    items = []
    for rid, cells in doc["results"].items():
        row = row_by_id(rid)
        if row.proto == "machine":
            continue
        me = cells.get("siftpd")
        out = []
        for p in peers:
            c = cells.get(p)
            if not peer_serves(c):
                continue
            if not me or me["status"] != "ok" or not me["median"]:
                why = f"siftpd {fmt_cell(me)}" if me else "siftpd not run"
                out.append((p, None, why))
            elif c["status"] != "ok" or not c["median"]:
                out.append((p, None, f"{p} {fmt_cell(c)}"))
            else:
                r = me["median"] / c["median"] if row.better == "higher" else c["median"] / me["median"]
                out.append((p, r, ""))
        if out:
            items.append((title(row, doc["meta"]["profile"]), out))
    return items


def render_svg(doc):
    """siftpd's ratio to each peer for every row (ratio of medians, > 1 means
    siftpd is better); a pair without a ratio says why instead of a bar"""
    peers = [n for n in doc["meta"]["servers"] if n != "siftpd"]
    palette = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3"]
    colour = {p: palette[k % len(palette)] for k, p in enumerate(peers)}
    items = ratio_items(doc)
    ratios = [r for _, out in items for _, r, _ in out if r is not None]
    W, top, lh, left, right = 1100, 70, 16, 470, 60
    vmax = min(max(2.0, max(ratios, default=1.0) * 1.1), 50.0)
    scale = (W - left - right) / vmax
    H = top + sum(12 + lh * len(out) for _, out in items) + 40
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
         '<rect width="100%" height="100%" fill="white"/>',
         f'<text x="20" y="24" font-size="16">siftpd / peer, per row ({esc(doc["meta"]["arch"])}, '
         f'{esc(doc["meta"]["mode"])} run) — right of 1.0 = siftpd better</text>']
    for k, p in enumerate(peers):
        o.append(f'<rect x="{20 + k * 140}" y="38" width="12" height="12" fill="{colour[p]}"/>'
                 f'<text x="{36 + k * 140}" y="48">{esc(p)}</text>')
    if not items:
        o.append(f'<text x="20" y="{top + 10}" font-size="14" fill="#c44e52">No rows to compare.</text>')
    y = top
    for label, out in items:
        y += 12
        o.append(f'<text x="{left - 8}" y="{y + 11}" text-anchor="end">{esc(label)}</text>')
        for p, r, why in out:
            if r is None:
                o.append(f'<text x="{left + 4}" y="{y + 11}" fill="#888">{esc(p)}: no ratio ({esc(why)})</text>')
            else:
                w = min(r, vmax) * scale
                o.append(f'<rect x="{left}" y="{y}" width="{max(1.0, w):.1f}" height="{lh - 3}" fill="{colour[p]}"/>'
                         f'<text x="{left + w + 4:.1f}" y="{y + 11}">{r:.2f}'
                         f'{" (off scale)" if r > vmax else ""}</text>')
            y += lh
    x1 = left + scale
    o.append(f'<line x1="{x1:.1f}" y1="{top}" x2="{x1:.1f}" y2="{y + 4}" stroke="black" stroke-dasharray="4 3"/>')
    o.append(f'<text x="{x1:.1f}" y="{y + 18}" text-anchor="middle">1.0</text></svg>\n')
    return "\n".join(o)


def write_outputs(doc, out_dir, stem):
    """raw json first (so a rendering bug loses nothing), then .md and .svg"""
    os.makedirs(out_dir, exist_ok=True)

    def put(ext, text):
        tmp = os.path.join(out_dir, f"{stem}.{ext}.tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out_dir, f"{stem}.{ext}"))
    about = "generated by bench/bench.py (bench/run.sh): siftpd vs peers, see docs/performance.md"
    put("json", json.dumps(dict(_about=about, **{k: v for k, v in doc.items() if k != "_about"}),
                           indent=1) + "\n")
    md = render_md(doc)
    put("md", f"<!-- {about} -->\n" + md)
    put("svg", f"<!-- {about} -->\n" + render_svg(doc))
    return md


def server_info(srv):
    """what the json keeps of a server: no token"""
    out = {k: srv.get(k) for k in ("name", "version", "ftp", "sftp", "why_na") if k in srv}
    if srv.get("s3"):
        out["s3"] = {"prefix": srv["s3"]["prefix"],
                     **{p: {k: v for k, v in (srv["s3"].get(p) or {}).items() if k != "api"} for p in ("ftp", "sftp")}}
    return out


def machine_meta():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    tool = []
    for c in (["curl", "--version"], ["ssh", "-V"]):
        try:
            rc, out, err = run_proc(c, timeout=10)
            tool.append((out or err).splitlines()[0].strip())
        except Exception:
            pass
    return dict(arch=platform.machine(), cpu=cpu, cores=os.cpu_count(), kernel=platform.release(),
                clients=", ".join(t.split(" (")[0] if t.startswith("curl") else t for t in tool))


def main():
    ap = argparse.ArgumentParser(description="siftpd vs peers benchmark (run through bench/run.sh)")
    ap.add_argument("--lab", help="lab.json written by run.sh")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="regex over row ids and titles")
    ap.add_argument("--servers", help="comma list of server names")
    ap.add_argument("--report", help="re-render .md/.svg from this results json and exit")
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            doc = json.load(f)
        stem = os.path.splitext(os.path.basename(a.report))[0]
        print(write_outputs(doc, os.path.dirname(os.path.abspath(a.report)), stem))
        return 0
    if not a.lab:
        ap.error("--lab is required (start through bench/run.sh)")

    def interrupted_by(signum, frame):
        raise KeyboardInterrupt()
    # run.sh starts us in the background, where SIGINT arrives ignored
    signal.signal(signal.SIGINT, interrupted_by)
    signal.signal(signal.SIGTERM, interrupted_by)
    with open(a.lab) as f:
        lab = json.load(f)
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    mode = "quick" if a.quick else "full"
    # the profile says which S3 backend the run had: titles and notes name it
    prof = dict(PROFILES[mode], s3_backend=lab.get("s3_backend_name", "moto"))
    ctx = Ctx(lab, prof, a.quick)
    order = ["siftpd", *VARIANTS, "vsftpd", "proftpd", "pure-ftpd", "openssh", "rclone"]
    servers = [s for s in lab["servers"] if s.get("wanted")]
    if a.servers:
        keep = {x.strip().replace("pureftpd", "pure-ftpd") for x in a.servers.split(",")}
        servers = [s for s in servers if s["name"] in keep]
    servers.sort(key=lambda s: order.index(s["name"]) if s["name"] in order else 99)
    rows = ROWS
    if a.only:
        rx = re.compile(a.only, re.I)
        rows = [r for r in ROWS if rx.search(r.id) or rx.search(r.title)]
        for r in list(rows):  # a derived row needs its source row, a share its ceilings
            need = [r.source] if r.source else []
            if r.ceiling:
                need += ["ceil_aes_gcm", "ceil_chacha"]
            for rid in need:
                if all(x.id != rid for x in rows):
                    rows.append(row_by_id(rid))
        if not rows:
            ap.error(f"--only {a.only!r} matches no row; rows: " + ", ".join(r.id for r in ROWS))
    s3_rows_wanted = ctx.s3 is not None and any(r.is_s3() for r in rows)
    t0 = time.monotonic()
    load0 = loadavg()

    def log(msg):
        print(f"[{time.monotonic() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)
    log(f"{mode} run; servers: {', '.join(s['name'] for s in servers)}; rows: {len(rows)}")
    prepare_data(ctx)
    log("data ready (big.bin, mid.bin, sftp.bin, s3.bin, small/) on tmpfs")
    if s3_rows_wanted:
        prepare_s3(ctx, servers)
        log(f"S3 data ready in {S3_BACKENDS[prof['s3_backend']]['title']}'s bucket {ctx.s3b['bucket']!r}")
    # the budget counts from here; the S3 rows have one of their own on top
    ctx.deadline = time.monotonic() + prof["budget_s"] + (prof["s3_budget_s"] if s3_rows_wanted else 0)
    results = {}
    interrupted = False
    try:
        run_rows(ctx, rows, servers, results, log)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        interrupted = True
        log("interrupted: writing what was measured")
    results = {r.id: results[r.id] for r in ROWS if r.id in results}
    meta = machine_meta()
    meta.update(loadavg_start=load0, mode=mode, date=time.strftime("%Y-%m-%d %H:%M %Z"), runs=prof["runs"], profile=prof,
                only=a.only, servers=[s["name"] for s in servers], elapsed_s=round(time.monotonic() - t0, 1),
                server_info=[server_info(s) for s in servers],
                algorithms=ctx.algos, password_hash=lab.get("password_hash"), row_seconds=ctx.row_seconds,
                s3_backend={k: v for k, v in (ctx.s3b or {}).items() if k in ("name", "version", "bucket")} or None,
                tmpfs=("private tmpfs mount" if lab.get("tmpfs_private") else "directory under /dev/shm"),
                interrupted=interrupted)
    doc = dict(meta=meta, results=results)
    partial = bool(a.only) or len(servers) < len([s for s in lab["servers"] if s.get("wanted")]) or interrupted
    stem = meta["arch"] + ("-partial" if partial else "")
    md = write_outputs(doc, a.out, stem)
    print(md)
    log(f"wrote {os.path.join(a.out, stem)}.{{json,md,svg}}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
