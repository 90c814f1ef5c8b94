#!/usr/bin/perl

# bench_sigv4.t -- bench/bench.py signs its S3 requests as AWS does
# (radosgw, the S3 rows' Ceph backend, refuses any other signature): the
# signatures of AWS's own S3 SigV4 examples (GET Bucket lifecycle, a
# listing with a query to sort), the payload's hash sent; and the rows'
# titles name the backend in use, moto when a run does not say.

use warnings;
use strict;

use lib 't/lib';
use Test::More;

system('python3 -c 1') == 0 or plan(skip_all => 'no python3');

plan(tests => 5);

# AWS's example keys and time; lines: the two signatures, the payload
# hash of an empty body, the two titles
my $py = <<'PY';
import sys
sys.path.insert(0, "bench")
import bench
k, s = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
for q in ("lifecycle", "prefix=J&max-keys=2"):
    h = bench.sigv4("GET", "examplebucket.s3.amazonaws.com", "/", q, None, k, s, "us-east-1",
                    "20130524T000000Z")
    print(h["Authorization"].split("Signature=")[1])
print(h["x-amz-content-sha256"])
row = bench.row_by_id("ceil_s3_get")
print(bench.title(row, {"s3_backend": "ceph"}))
print(bench.title(row, {}))
PY

open(my $fh, '-|', 'python3', '-c', $py) or die "python3: $!";
my @got = map { chomp; $_ } <$fh>;
close($fh);

is($got[0], 'fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543',
    'GET ?lifecycle: the signature of the AWS example');
is($got[1], '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7',
    'GET ?max-keys=2&prefix=J: its query sorted, the AWS example signature');
is($got[2], 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    'the empty payload hash is sent');
like($got[3] // '', qr/^Ceiling: Ceph radosgw alone, one GET/,
    'the backend ceiling row is titled for Ceph');
like($got[4] // '', qr/^Ceiling: moto_server alone, one GET/,
    'a run that names no backend was on moto');
