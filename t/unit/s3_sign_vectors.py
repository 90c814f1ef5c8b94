#!/usr/bin/env python3
# s3_sign_vectors.py -- prints the Authorization headers botocore's
# S3SigV4Auth gives for the requests of t/unit/test_s3_sign.c, at a fixed
# time, so the C signer is checked against the reference implementation.
# Run it again after changing a request there and paste what it prints.

import datetime
from unittest import mock
from urllib.parse import quote, urlencode

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

NOW = datetime.datetime(2026, 12, 1, 18, 40, 34)

VECTORS = [
    # name, method, scheme://host, path, query pairs, headers, body,
    # payload signed, session token, region
    ('get_ranged_unsigned', 'GET', 'https://s3.eu-west-3.amazonaws.com',
     '/bucket/dir/a b+c~\u00e9.txt', [], {'Range': 'bytes=0-99'}, b'',
     False, None, 'eu-west-3'),
    ('put_hashed_token', 'PUT', 'http://127.0.0.1:9000',
     '/files/up/load.bin', [],
     {'Content-Type': 'application/octet-stream',
      'X-Amz-Meta-Note': '  two   spaces  here '}, b'hello, world\n',
     True, 'FwoGZXIvYXdzEtoken/with+chars=', 'us-east-1'),
    ('list_v2_query', 'GET', 'http://127.0.0.1:9000', '/files',
     [('list-type', '2'), ('prefix', 'dir/'), ('delimiter', '/'),
      ('max-keys', '5'), ('continuation-token', 'a+b/c=d')], {}, b'',
     True, None, 'us-east-1'),
    ('initiate_multipart', 'POST', 'https://files.s3.us-east-1.amazonaws.com',
     '/big.iso', [('uploads', '')], {'If-None-Match': '*'}, b'',
     False, None, 'us-east-1'),
    ('upload_part_copy', 'PUT', 'http://127.0.0.1:9000', '/files/new',
     [('uploadId', 'abc/def=='), ('partNumber', '2')],
     {'x-amz-copy-source': '/files/old%20name',
      'x-amz-copy-source-range': 'bytes=0-5242879'}, b'',
     True, None, 'us-east-1'),
]


def sign(name, method, base, path, query, headers, body, signed, token,
         region):
    url = base + quote(path.encode(), safe='/~')
    if query:
        url += '?' + urlencode(query, quote_via=quote, safe='~')
    req = AWSRequest(method=method, url=url, data=body, headers=headers)
    req.context['client_config'] = Config(
        s3={'payload_signing_enabled': signed})
    creds = Credentials('AKIDEXAMPLE',
                        'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', token)
    with mock.patch('botocore.auth.get_current_datetime', return_value=NOW):
        S3SigV4Auth(creds, 's3', region).add_auth(req)
    print('%s\n    %s\n    %s' % (name, req.headers['X-Amz-Content-SHA256'],
                                  req.headers['Authorization']))


for v in VECTORS:
    sign(*v)
