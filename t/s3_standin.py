#!/usr/bin/env python3
# s3_standin.py PORT -- a stand-in S3 endpoint for t/s3_client.t on
# 127.0.0.1: GET of a key answers 503 SlowDown twice, then 200 "ok";
# POST always answers 503 SlowDown.

import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

ERROR = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown'
         b'</Code><Message>Please reduce your request rate.</Message>'
         b'<RequestId>standin</RequestId></Error>')

seen = {}


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def answer(self, status, body):
        self.send_response(status)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
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
