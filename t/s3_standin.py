#!/usr/bin/env python3
# s3_standin.py PORT -- a stand-in S3 endpoint for t/s3_client.t on
# 127.0.0.1: GET of a key answers 503 SlowDown twice, then 200 "ok";
# POST always answers 503 SlowDown.  Under /latest/ it is an IMDSv2
# instance metadata service whose role keys expire 4 s after each fetch.

import datetime
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown'
         b'</Code><Message>Please reduce your request rate.</Message>'
         b'<RequestId>standin</RequestId></Error>')

seen = {}
fetches = [0]
TOKEN = 'imds-session-token'
ROLE = '/latest/meta-data/iam/security-credentials/'


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def answer(self, status, body):
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

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
            self.answer(503, ERROR)
        else:
            self.answer(200, b'ok')

    def do_POST(self):
        length = int(self.headers.get('Content-Length') or 0)
        self.rfile.read(length)
        self.answer(503, ERROR)

    def log_message(self, *args):
        pass


HTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
