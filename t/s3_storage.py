#!/usr/bin/python3

# s3_storage.py -- the servers of t/s3_storage.t, in one process: moto's
# S3 (its in-process server, filled through moto's own API so that 20,000
# keys take seconds, not minutes) on 127.0.0.1:PORT, and on PORT2 a
# stand-in that refuses every request's keys with 403 InvalidAccessKeyId.
# Keys or prefixes with "broken" in them are answered 500 InternalError.
# Writes DIR/big (the 20 MiB object's bytes), prints "ready", and serves
# until it is stopped.  Its access log (stderr) counts the GETs.  With a
# fourth argument "upload", the bucket holds only what t/s3_storage_upload.t
# appends to: "six" (6 MiB, its bytes in DIR/six) and "small".

import http.server
import random
import sys
import threading

from moto.server import ThreadedMotoServer
from moto.s3.models import s3_backends

port, refuse_port, testdir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


class Refuse(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def answer(self):
        status, code = 403, b'InvalidAccessKeyId'
        if 'broken' in self.path:
            status, code = 500, b'InternalError'
        body = (b'<?xml version="1.0" encoding="UTF-8"?><Error>'
                b'<Code>' + code + b'</Code><Message>refused</Message>'
                b'</Error>')
        self.send_response(status)
        self.send_header('Content-Type', 'application/xml')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    do_GET = do_HEAD = do_PUT = do_DELETE = do_POST = answer

    def log_message(self, *args):
        pass


server = ThreadedMotoServer(ip_address='127.0.0.1', port=port)
server.start()

refuse = http.server.ThreadingHTTPServer(('127.0.0.1', refuse_port), Refuse)
threading.Thread(target=refuse.serve_forever, daemon=True).start()

s3 = s3_backends['123456789012']['global']
s3.create_bucket('files', 'us-east-1')

p = 'srv/bob/'

if sys.argv[4:] == ['upload']:
    six = random.Random(3).randbytes(6 * 1024 * 1024)
    with open(testdir + '/six', 'wb') as f:
        f.write(six)
    s3.put_object('files', p + 'six', six)
    s3.put_object('files', p + 'small', b'small')
    print('ready', flush=True)
    threading.Event().wait()

big = random.Random(1).randbytes(20 * 1024 * 1024)
with open(testdir + '/big', 'wb') as f:
    f.write(big)

s3.put_object('files', p + 'zero', b'')
s3.put_object('files', p + 'small', random.Random(2).randbytes(5000))
small = s3.get_object('files', p + 'small')
small.set_metadata({'x-amz-meta-mtime': '1000000000'})
s3.put_object('files', p + 'big', big)
s3.put_object('files', p + 'sub/a.txt', b'hello\n')
s3.put_object('files', p + 'sub/deeper/b.txt', b'b\n')
s3.put_object('files', p + 'emptydir/', b'')
s3.put_object('files', p + 'gone/', b'')
s3.put_object('files', p + 'full/', b'')
s3.put_object('files', p + 'full/x', b'x')
s3.put_object('files', p + 'odd//x', b'x')
s3.put_object('files', p + 'odd/y', b'y')

for i in range(20000):
    s3.put_object('files', p + 'many/f%05d' % i, b'')

print('ready', flush=True)
threading.Event().wait()
