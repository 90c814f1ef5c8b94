#!/usr/bin/env python3
# s3_hostile.py PORT UPSTREAM SEED [SHARE] -- a hostile S3 endpoint on
# 127.0.0.1: a proxy to moto (UPSTREAM is its port) that mangles a share
# of the answers (SHARE, 0.3 unless given), each request's choice drawn
# from random.Random(SEED) in the order requests come, so a seed replays
# the same choices.  A mangle either fails the request (the connection
# cut, a malformed status line or length, 5xx/4xx, random or cut XML, a
# drip slower than the client waits): then a request that changes the
# bucket (PUT, POST, DELETE) is not forwarded, so that a failure seen by
# the client is a failure in moto too; or it lies in an answer that may
# still pass (bytes past Content-Length, no ETag, a wrong checksum, many
# headers, a range of other bytes, another object's whole answer): then
# it is forwarded first.  libcurl
# takes bytes past a Content-Length for the answer to its next request on
# that connection, so that request is cut, not forwarded.
#
# GET /__calm stops mangling, GET /__rage starts it again (it starts
# raging); GET /__count answers how many answers were mangled, by kind, as
# JSON; GET /__force?kind=K&key=S&count=N forces mangle K on the next N
# requests it applies to whose path (with its query) has S in it (N 1 unless given), calm
# or not (count=0 forgets what was forced for the key); GET /__seed?seed=N
# starts the draws of seed N again; GET /__log answers the mangles done, one "KIND METHOD PATH" a
# line.  The kinds "hold" and "body_flip" are only forced, never drawn:
# a held request is answered by nothing until GET /__release (at most
# 120 s), then cut; a flipped one has the last byte of its body changed.
# It answers a GET's response-content-disposition with that
# Content-Disposition, as S3 does (moto does not): an answer it takes
# from another request's (range_object, whole_object) has none.

import http.client
import json
import random
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s'
         b'</Code><Message>%s</Message>'
         b'<RequestId>hostile</RequestId></Error>')

# kind: (what it does to the request: "fail" or "lie", where it applies)
KINDS = {
    'drop': ('fail', 'any'),            # closed, no answer
    'status_close': ('fail', 'any'),    # a status line, then closed
    'headers_cut': ('fail', 'any'),     # headers without their end
    'body_short': ('fail', 'body'),     # fewer bytes than Content-Length
    'body_long': ('lie', 'body'),       # more, on a kept-alive connection
    'bad_status': ('fail', 'any'),      # a malformed status line
    'length_nan': ('fail', 'any'),      # Content-Length: twelve
    'length_neg': ('fail', 'any'),      # Content-Length: -5
    'err_500': ('fail', 'any'),
    'err_503': ('fail', 'any'),
    'err_400': ('fail', 'any'),
    'err_403': ('fail', 'any'),
    'ok_garbage': ('fail', 'xml'),      # 200, random bytes for XML
    'ok_cutxml': ('fail', 'xml'),       # 200, XML cut short
    'ok_error': ('fail', 'xml200'),     # 200 with an <Error> document
    'long_header': ('fail', 'any'),     # a header line of 100 KiB
    'many_headers': ('lie', 'any'),     # 3000 headers
    'etag_missing': ('lie', 'etag'),
    'etag_empty': ('lie', 'etag'),
    'etag_bad': ('lie', 'etag'),
    'range_other': ('lie', 'range'),    # bytes of another offset, said so
    'range_total': ('lie', 'range'),    # Content-Range of another size
    'range_bad': ('lie', 'range'),      # Content-Range malformed
    'range_none': ('lie', 'range'),     # no Content-Range
    'range_object': ('lie', 'range'),   # bytes of another object
    'whole_object': ('lie', 'whole'),   # a GET of the whole object: another's
    'crc_wrong': ('lie', 'crc'),        # x-amz-checksum-crc32c wrong
    'drip': ('fail', 'any'),            # a byte every 100 ms
    'chunked_bad': ('fail', 'any'),     # chunked, a malformed chunk size
    'hold': ('fail', 'any'),            # no answer until /__release
    'body_flip': ('lie', 'crc'),        # a byte of a GET's body changed
}

# forced only: hold, and body_flip (no client can tell a changed byte of
# a ranged GET without a checksum, which S3 sends only for a whole object)
CHOICE = sorted(k for k in KINDS if k not in ('hold', 'body_flip'))


class State:
    lock = threading.Lock()
    rng = None
    share = 0.3
    raging = True
    counts = {}
    log = []
    forced = []                         # [kind, key, count]
    released = threading.Event()        # the holds end
    keys = {}                           # path: when last served by a GET
    served = 0


def what(method, path, query, headers):
    """the places of KINDS this request is"""
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    copy = 'x-amz-copy-source' in headers
    places = {'any'}
    if method not in ('HEAD',):
        places.add('body')
    if method in ('HEAD', 'PUT', 'GET') and 'uploadId' not in q \
            or method == 'PUT' and 'partNumber' in q:
        places.add('etag')
    if method in ('HEAD', 'GET'):
        places.add('crc')
    xml = (method == 'GET' and ('list-type' in q or 'uploads' in q)
           or method == 'POST' and ('uploads' in q or 'uploadId' in q)
           or method == 'PUT' and copy)
    if xml:
        places.add('xml')
    if (method == 'POST' and 'uploadId' in q) or (method == 'PUT' and copy):
        places.add('xml200')
    if method == 'GET' and headers.get('Range'):
        places.add('range')
    elif method == 'GET' and not xml:
        places.add('whole')
    return places


class Hostile(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *args):
        pass

    def raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def cut(self):
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def control(self, path, query):
        q = urllib.parse.parse_qs(query)
        with State.lock:
            if path == '/__calm':
                State.raging = False
            elif path == '/__rage':
                State.raging = True
            elif path == '/__count':
                return self.answer(200, json.dumps(State.counts).encode())
            elif path == '/__log':
                return self.answer(200, '\n'.join(State.log).encode())
            elif path == '/__release':
                State.released.set()
            elif path == '/__seed':
                State.rng = random.Random(int(q['seed'][0]))
            elif path == '/__force':
                n = int(q.get('count', ['1'])[0])
                State.forced = [f for f in State.forced
                                if f[1] != q['key'][0]]
                if n > 0:
                    State.forced.append([q['kind'][0], q['key'][0], n])
            else:
                return self.answer(404, b'')
        self.answer(200, b'ok')

    def choose(self, places):
        with State.lock:
            for f in State.forced:
                if f[2] > 0 and f[1] in self.path \
                        and KINDS[f[0]][1] in places:
                    f[2] -= 1
                    return f[0]
            if not State.raging:
                return None
            # one draw each for "whether" and "which" (of those that
            # apply), whatever the answer: two draws a request
            hit = State.rng.random() < State.share
            pick = State.rng.choice([k for k in CHOICE
                                     if KINDS[k][1] in places])
            return pick if hit else None

    def forward(self):
        path, _, query = self.path.partition('?')
        if path.startswith('/__'):
            return self.control(path, query)

        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        places = what(self.command, path, query, self.headers)
        kind = 'drop' if getattr(self, 'tainted', False) else \
            self.choose(places)
        changes = self.command in ('PUT', 'POST', 'DELETE')

        if kind:
            with State.lock:
                State.counts[kind] = State.counts.get(kind, 0) + 1
                State.log.append('%s %s %s' % (kind, self.command, self.path))

        if kind == 'drop' and getattr(self, 'tainted', False):
            return self.cut()
        if kind and KINDS[kind][0] == 'fail' and changes:
            return self.mangle(kind, 200, [], b'')

        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('connection', 'expect')}
        if kind in ('range_other', 'range_object'):
            headers = self.other_range(kind, path, headers)
        elif kind == 'whole_object':
            headers = self.other_object(path, headers)
        try:
            status, rh, data = self.upstream(self.command, self.path, body,
                                             headers)
        except OSError:
            return self.cut()
        if self.command == 'GET' and status in (200, 206):
            with State.lock:
                State.served += 1
                State.keys[path] = State.served
        if kind:
            return self.mangle(kind, status, rh, data)
        self.send(status, rh, data)

    def upstream(self, method, url, body, headers):
        up = http.client.HTTPConnection('127.0.0.1', UPSTREAM, timeout=60)
        up.request(method, url, body=body, headers=headers)
        res = up.getresponse()
        data = res.read()
        rh = [(k, v) for k, v in res.getheaders()
              if k.lower() not in ('connection', 'transfer-encoding',
                                   'content-length', 'server', 'date')]
        self.upstream_cr = res.getheader('Content-Range')
        q = urllib.parse.parse_qs(url.partition('?')[2])
        if method == 'GET' and res.status in (200, 206) \
                and 'response-content-disposition' in q:
            rh.append(('Content-Disposition',
                       q['response-content-disposition'][0]))
        if method == 'HEAD':
            rh.append(('Content-Length', res.getheader('Content-Length',
                                                       '0')))
        up.close()
        return res.status, rh, data

    def other_range(self, kind, path, headers):
        m = re.match(r'bytes=(\d+)-(\d*)', headers.get('Range', ''))
        if not m:
            return headers
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) else None
        shift = 1000 if a == 0 else -min(a, 1000)
        a += shift
        if b is not None:
            b += shift
        headers = dict(headers)
        headers['Range'] = 'bytes=%d-%s' % (a, '' if b is None else b)
        headers.pop('If-Match', None)
        self.asked = m.group(0)
        if kind == 'range_object':
            headers = self.other_object(path, headers)
            headers['Range'] = self.asked
        return headers

    def other_object(self, path, headers):
        """the request made of the other object the proxy served last,
        without the ETag it asks for"""
        with State.lock:
            others = sorted((n, k) for k, n in State.keys.items()
                            if k != path)
        headers = dict(headers)
        headers.pop('If-Match', None)
        if others:
            self.path = others[-1][1]
        return headers

    def send(self, status, rh, data, length=None):
        self.send_response_only(status)
        for k, v in rh:
            if self.command == 'HEAD' or k.lower() != 'content-length':
                self.send_header(k, v)
        if self.command != 'HEAD':
            self.send_header('Content-Length',
                             str(len(data)) if length is None else length)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(data)
        self.wfile.flush()

    def head(self, status, rh):
        lines = ['HTTP/1.1 %d %s' % (status, self.responses.get(
            status, ('Whatever',))[0])]
        lines += ['%s: %s' % (k, v) for k, v in rh]
        return ('\r\n'.join(lines) + '\r\n').encode()

    def mangle(self, kind, status, rh, data):
        rng = random.Random(len(data) + status)
        noise = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
        if kind == 'drop':
            return self.cut()
        if kind == 'hold':
            State.released.wait(120)
            return self.cut()
        if kind == 'body_flip':
            if data:
                data = data[:-1] + bytes([data[-1] ^ 0x01])
            return self.send(status, rh, data)
        if kind == 'status_close':
            self.raw(b'HTTP/1.1 %d OK\r\n' % status)
            return self.cut()
        if kind == 'headers_cut':
            self.raw(self.head(status, rh + [('Content-Length', '10')]))
            return self.cut()
        if kind == 'body_short':
            self.raw(self.head(status, [h for h in rh if h[0].lower()
                                        != 'content-length']
                               + [('Content-Length', str(len(data) + 10))])
                     + b'\r\n' + data[:len(data) // 2])
            return self.cut()
        if kind == 'body_long':
            # libcurl 7.88 reads what is past the length as the answer to
            # its next request on the connection: that one is not forwarded
            # (or closed after 1 s idle, so that no later phase gets it)
            self.tainted = True
            self.connection.settimeout(1)
            return self.send(status, rh, data + b'garbage past the length',
                             str(len(data)))
        if kind == 'bad_status':
            self.raw(b'HTTP/1.1 2x0 Fine\r\nContent-Length: 0\r\n\r\n')
            return self.cut()
        if kind in ('length_nan', 'length_neg'):
            self.raw(self.head(status, [h for h in rh if h[0].lower()
                                        != 'content-length']
                               + [('Content-Length', 'twelve'
                                   if kind == 'length_nan' else '-5')])
                     + b'\r\n' + data)
            return self.cut()
        if kind.startswith('err_'):
            code = int(kind[4:])
            body = rng.choice([ERROR % (b'SlowDown' if code == 503
                                        else b'InternalError' if code == 500
                                        else b'AccessDenied' if code == 403
                                        else b'InvalidRequest',
                                        b'hostile'), b'', noise])
            return self.answer(code, body)
        if kind == 'ok_garbage':
            return self.answer(200, noise)
        if kind == 'ok_cutxml':
            xml = data if data.startswith(b'<') else (
                b'<?xml version="1.0"?><InitiateMultipartUploadResult>'
                b'<Bucket>files</Bucket><Key>k</Key><UploadId>'
                b'hostile-upload-id</UploadId></InitiateMultipartUploadResult>')
            return self.answer(200, xml[:rng.randint(1, max(1, len(xml) - 1))])
        if kind == 'ok_error':
            return self.answer(200, ERROR % (b'InternalError', b'hostile'))
        if kind == 'long_header':
            return self.send(status, rh + [('x-amz-hostile',
                                            'a' * 100 * 1024)], data)
        if kind == 'many_headers':
            return self.send(status, rh + [('x-amz-meta-h%d' % i, 'v')
                                           for i in range(3000)], data)
        if kind.startswith('etag_'):
            rh = [h for h in rh if h[0].lower() != 'etag']
            if kind == 'etag_empty':
                rh.append(('ETag', ''))
            elif kind == 'etag_bad':
                rh.append(('ETag', '"unclosed'))
            return self.send(status, rh, data)
        if kind.startswith('range_'):
            return self.ranged(kind, status, rh, data)
        if kind == 'crc_wrong':
            rh = [h for h in rh if h[0].lower() != 'x-amz-checksum-crc32c']
            return self.send(status, rh + [('x-amz-checksum-crc32c',
                                            'AAAAAA==')], data)
        if kind == 'drip':
            out = self.head(status, rh + [('Content-Length',
                                           str(len(data)))]) + b'\r\n' + data
            try:
                for i in range(min(len(out), 600)):
                    self.raw(out[i:i + 1])
                    time.sleep(0.1)
            except OSError:
                pass
            return self.cut()
        if kind == 'chunked_bad':
            self.raw(self.head(status, rh + [('Transfer-Encoding', 'chunked')])
                     + b'\r\nzz9\r\n' + data[:100])
            return self.cut()
        self.send(status, rh, data)

    def ranged(self, kind, status, rh, data):
        rh = [h for h in rh if h[0].lower() != 'content-range']
        real = self.upstream_cr
        if kind == 'range_total' and real:
            real = re.sub(r'/(\d+)$', lambda m: '/%d' % (int(m.group(1)) + 7),
                          real)
        elif kind == 'range_bad':
            real = 'bytes garbage'
        elif kind == 'range_none':
            real = None
        if real:
            rh.append(('Content-Range', real))
        return self.send(status, rh, data)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


if __name__ == '__main__':
    UPSTREAM = int(sys.argv[2])
    State.rng = random.Random(int(sys.argv[3]))
    if len(sys.argv) > 4:
        State.share = float(sys.argv[4])
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])),
                        Hostile).serve_forever()
