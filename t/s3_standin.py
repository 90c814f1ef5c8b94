#!/usr/bin/env python3
# s3_standin.py PORT -- a stand-in S3 endpoint for t/s3_client.t on
# 127.0.0.1: GET of a key answers 503 SlowDown twice, then 200 "ok";
# POST always answers 503 SlowDown.  Under /latest/ it is an IMDSv2
# instance metadata service whose role keys expire 4 s after each fetch.
# A POST to / with Action=AssumeRoleWithWebIdentity is STS: keys that
# expire 4 s later, their session token naming the web identity token it
# was sent (so a test sees the token file was read again); the token
# "rejected" is answered 400 InvalidIdentityToken, a signed request 400.

import datetime
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, HTTPServer

ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown'
         b'</Code><Message>Please reduce your request rate.</Message>'
         b'<RequestId>standin</RequestId></Error>')

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
        self.answer(503, ERROR)

    def log_message(self, *args):
        pass


HTTPServer(('127.0.0.1', int(sys.argv[1])), Handler).serve_forever()
