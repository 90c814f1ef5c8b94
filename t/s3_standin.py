#!/usr/bin/env python3
# s3_standin.py PORT [UPSTREAM] -- a stand-in S3 endpoint for the S3 tests
# on 127.0.0.1.  Alone: GET of a key answers 503 SlowDown twice, then 200
# "ok"; POST always answers 503 SlowDown; under /latest/ it is an IMDSv2
# instance metadata service whose role keys expire 4 s after each fetch.
# A POST to / with Action=AssumeRoleWithWebIdentity is STS: keys that
# expire 4 s later, their session token naming the web identity token it
# was sent (so a test sees the token file was read again); the token
# "rejected" is answered 400 InvalidIdentityToken, a signed request 400.
# With UPSTREAM (moto's port): a proxy to it that answers 500 to the first
# two UploadPart requests of each key with "flaky" in its name and to all
# of those with "broken" in it, 500 to every copy (CopyObject,
# UploadPartCopy) to a key with "broken" in it, answers 400 BadDigest to
# a body that is not what its Content-MD5 says (moto does not check it),
# answers GET /__log with the request lines it forwarded (GET
# /__log?ranges: with their Range headers after a tab) and GET /__tokens
# with the session tokens (x-amz-security-token) they came with, and puts in the
# listings of multipart uploads the times they were really initiated
# (moto says 2010-11-10 for all).  As a proxy it also holds every request
# of a key with "hang" in its name, unanswered, until GET /__release (at
# most 300 s; GET /__held tells how many it holds), and the same with
# the ranged GETs of a key with "stall" in its name that do not start at
# its first byte (a download stalled midway), and answers every request
# of a key with "slowdown" in its name 503 SlowDown.  It answers a GET's
# response-content-disposition with that Content-Disposition, as S3 does
# (moto does not), but for a key with "noecho" in its name; a GET of a
# key with "archived" in its name it answers 403 InvalidObjectState, as
# S3 does for an object in an archive storage class (its HEAD answers).
# A GET of a whole object (200) of a key with "chunked" in its name it
# sends chunked, without Content-Length, as some S3 servers and proxies do.

import base64
import datetime
import hashlib
import http.client
import json
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer
from http.server import ThreadingHTTPServer

ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s'
         b'</Code><Message>%s</Message>'
         b'<RequestId>standin</RequestId></Error>')
SLOW = ERROR % (b'SlowDown', b'Please reduce your request rate.')
INTERNAL = ERROR % (b'InternalError', b'We encountered an internal error.')

STS_ERROR = ('<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
             '<Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message>'
             '</Error><RequestId>standin-sts</RequestId></ErrorResponse>')

STS_KEYS = ('<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws'
            '.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>'
            '<Credentials><AccessKeyId>ASIASTS%d</AccessKeyId>'
            '<SecretAccessKey>sts-secret</SecretAccessKey>'
            '<SessionToken>sts-session-%s</SessionToken>'
            '<Expiration>%s</Expiration></Credentials>'
            '</AssumeRoleWithWebIdentityResult>'
            '</AssumeRoleWithWebIdentityResponse>')

seen = {}
fetches = [0]
assumed = [0]
TOKEN = 'imds-session-token'
ROLE = '/latest/meta-data/iam/security-credentials/'


class Answer(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def answer(self, status, body):
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def log_message(self, *args):
        pass


class Handler(Answer):

    def do_PUT(self):
        if (self.path == '/latest/api/token'
                and self.headers.get('X-aws-ec2-metadata-token-ttl-seconds')):
            self.answer(200, TOKEN.encode())
        else:
            self.answer(400, b'')

    def imds(self):
        if self.headers.get('X-aws-ec2-metadata-token') != TOKEN:
            self.answer(401, b'')
        elif self.path == ROLE:
            self.answer(200, b'siftp-role\n')
        elif self.path == ROLE + 'siftp-role':
            fetches[0] += 1
            until = (datetime.datetime.now(datetime.timezone.utc)
                     + datetime.timedelta(seconds=4))
            self.answer(200, json.dumps({
                'Code': 'Success', 'Type': 'AWS-HMAC',
                'AccessKeyId': 'ASIAIMDS%d' % fetches[0],
                'SecretAccessKey': 'imds-secret',
                'Token': 'imds-token-%d' % fetches[0],
                'Expiration': until.strftime('%Y-%m-%dT%H:%M:%SZ')}).encode())
        else:
            self.answer(404, b'')

    def do_GET(self):
        if self.path.startswith('/latest/'):
            return self.imds()
        seen[self.path] = seen.get(self.path, 0) + 1
        if seen[self.path] <= 2:
            self.answer(503, SLOW)
        else:
            self.answer(200, b'ok')

    def sts(self, form):
        token = form.get('WebIdentityToken', [''])[0]
        if self.headers.get('Authorization'):
            self.answer(400, (STS_ERROR % ('InvalidRequest',
                                           'STS wants no signature')).encode())
        elif token == 'rejected':
            self.answer(400, (STS_ERROR % ('InvalidIdentityToken',
                                           'Incorrect token audience')).encode())
        else:
            assumed[0] += 1
            until = (datetime.datetime.now(datetime.timezone.utc)
                     + datetime.timedelta(seconds=4))
            self.answer(200, (STS_KEYS % (
                assumed[0], token,
                until.strftime('%Y-%m-%dT%H:%M:%SZ'))).encode())

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length)
        form = urllib.parse.parse_qs(body.decode('ascii', 'replace'))
        if (self.path == '/'
                and form.get('Action') == ['AssumeRoleWithWebIdentity']):
            return self.sts(form)
        self.answer(503, SLOW)


class Proxy(Answer):
    lines = []
    tokens = []
    failed = {}
    initiated = {}
    lock = threading.Lock()
    held = [0]
    release = threading.Event()

    # a slow or overloaded S3: True when the request was answered here
    def slow(self, path):
        if self.command == 'GET' and path.endswith('/__held'):
            with self.lock:
                self.answer(200, b'%d' % self.held[0])
        elif self.command == 'GET' and path.endswith('/__release'):
            self.release.set()
            self.answer(200, b'released')
        elif 'slowdown' in path:
            self.answer(503, SLOW)
        elif 'hang' in path or self.stalled(path):
            with self.lock:
                self.held[0] += 1
            self.release.wait(300)
            with self.lock:
                self.held[0] -= 1
            return False
        else:
            return False
        return True

    def stalled(self, path):
        return ('stall' in path and self.command == 'GET'
                and not self.headers.get('Range', 'bytes=0-').startswith(
                    'bytes=0-'))

    def forward(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''

        if self.command == 'GET' \
                and self.path.partition('?')[0].endswith('/__log'):
            ranges = self.path.endswith('?ranges')
            with self.lock:
                return self.answer(200, '\n'.join(
                    l if ranges else l.partition('\t')[0]
                    for l in self.lines).encode())

        if self.slow(self.path.partition('?')[0]):
            return
        if self.command == 'GET' and self.path.endswith('/__tokens'):
            with self.lock:
                return self.answer(200, '\n'.join(self.tokens).encode())

        md5 = self.headers.get('Content-MD5')
        if md5 and base64.b64decode(md5) != hashlib.md5(body).digest():
            return self.answer(400, ERROR % (b'BadDigest', b'Content-MD5'))

        path, _, query = self.path.partition('?')
        with self.lock:
            self.lines.append('%s %s\t%s' % (self.command, self.path,
                                              self.headers.get('Range', '')))
            copy = (self.command == 'PUT'
                    and 'x-amz-copy-source' in self.headers)
            token = self.headers.get('x-amz-security-token')
            if token and token not in self.tokens:
                self.tokens.append(token)
            part = (self.command == 'PUT' and 'partNumber=' in query
                    and not copy)
            if part and ('flaky' in path or 'broken' in path):
                self.failed[path] = self.failed.get(path, 0) + 1
                if self.failed[path] <= 2 or 'broken' in path:
                    return self.answer(500, INTERNAL)
            if copy and 'broken' in path:
                return self.answer(500, INTERNAL)
            if self.command == 'GET' and 'archived' in path:
                return self.answer(403, ERROR % (
                    b'InvalidObjectState', b'The operation is not valid '
                    b'for the object\'s storage class'))

        up = http.client.HTTPConnection('127.0.0.1', UPSTREAM, timeout=60)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('connection', 'expect')}
        up.request(self.command, self.path, body=body, headers=headers)
        res = up.getresponse()
        data = res.read()
        if res.status == 200 and re.search(r'(^|&)uploads(=|&|$)', query):
            data = self.initiation(data)
        self.send_response(res.status)
        for k, v in res.getheaders():
            if k.lower() not in ('connection', 'transfer-encoding',
                                 'content-length', 'server', 'date'):
                self.send_header(k, v)
        q = urllib.parse.parse_qs(query)
        if self.command == 'GET' and res.status in (200, 206) \
                and 'response-content-disposition' in q \
                and 'noecho' not in path:
            self.send_header('Content-Disposition',
                             q['response-content-disposition'][0])
        # a HEAD's length is the object's, as moto said; a whole object
        # of a key with "chunked" in its name comes chunked, no length
        chunked = (self.command == 'GET' and res.status == 200
                   and 'chunked' in path)
        if chunked:
            self.send_header('Transfer-Encoding', 'chunked')
        else:
            self.send_header('Content-Length',
                             res.getheader('Content-Length', '0')
                             if self.command == 'HEAD' else str(len(data)))
        self.end_headers()
        if chunked:
            for i in range(0, len(data), 8192):
                piece = data[i:i + 8192]
                self.wfile.write(b'%x\r\n%s\r\n' % (len(piece), piece))
            self.wfile.write(b'0\r\n\r\n')
        elif self.command != 'HEAD':
            self.wfile.write(data)
        up.close()

    def initiation(self, data):
        text = data.decode()
        with self.lock:
            if self.command == 'POST':
                m = re.search(r'<UploadId>([^<]+)</UploadId>', text)
                if m:
                    self.initiated[m.group(1)] = time.time()
                return data

            def real(m):
                t = self.initiated.get(m.group(2))
                if t is None:
                    return m.group(0)
                return re.sub(r'<Initiated>[^<]*</Initiated>',
                              time.strftime('<Initiated>%Y-%m-%dT%H:%M:%S'
                                            '.000Z</Initiated>',
                                            time.gmtime(t)), m.group(0))

            return re.sub(r'<Upload>(.*?<UploadId>([^<]+)</UploadId>.*?)'
                          r'</Upload>', real, text).encode()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = forward


if len(sys.argv) > 2:
    UPSTREAM = int(sys.argv[2])
    ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])),
                        Proxy).serve_forever()
else:
    HTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
