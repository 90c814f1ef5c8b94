#!/usr/bin/perl

# http_admin.t -- the admin HTTP endpoint: stats and metrics over two
# workers, keep-alive and pipelining, and the error replies for requests
# that break the rules or the limits.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use Test::Siftpd qw/http_get http_raw port/;

my $t = Test::Siftpd->new()->has('http');

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
http {
    client_header_buffer_size 1k;
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        client_max_body_size 100;
    }
    server {
        listen 127.0.0.1:%%PORT_8081%%;
        api off;
        metrics off;
    }
}
EOF

$t->run();

my $port = port(8080);

$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);
is(scalar($t->workers()), 2, 'two workers');

# requests spread over both workers are all counted

for (1 .. 20) {
    http_get($port, '/api/v1/stats');
}

my $r = http_get($port, '/api/v1/stats');
like($r, qr/^HTTP\/1.1 200 OK\r\n/, 'stats: 200');
like($r, qr/\r\nContent-Type: application\/json\r\n/, 'stats: json');

my ($body) = $r =~ /\r\n\r\n(.*)/s;
my $s = eval { decode_json($body) };
ok($s, 'stats: valid JSON') or diag($body);
is($s->{workers}, 2, 'stats: workers');
is($s->{processes}, 2, 'stats: processes');
like($s->{version}, qr/^\d+\.\d+\.\d+$/, 'stats: version');
ok($s->{uptime} >= 0, 'stats: uptime');
ok($s->{connections}{accepted} >= 21, 'stats: connections summed');
ok($s->{http}{requests} >= 21, 'stats: requests summed over workers');
is($s->{connections}{active}, 1, 'stats: this connection is active');
ok($s->{buffer_pool}{total} > 0, 'stats: buffer pool chunks');
is($s->{buffer_pool}{free}, $s->{buffer_pool}{total},
    'stats: buffer pool all free');

$r = http_get($port, '/metrics');
like($r, qr/Content-Type: text\/plain; version=0.0.4/, 'metrics: type');
like($r, qr/^# TYPE siftp_http_requests_total counter$/m,
    'metrics: TYPE line');
like($r, qr/^siftp_http_requests_total (\d+)$/m, 'metrics: counter');
my ($n) = $r =~ /^siftp_http_requests_total (\d+)$/m;
ok($n >= 22, 'metrics: total over workers');
like($r, qr/^siftp_workers 2$/m, 'metrics: workers');
like($r, qr/^siftp_build_info\{version="[\d.]+"\} 1$/m, 'metrics: build');

# keep-alive and pipelining: three requests in one write

$r = http_raw($port,
    "GET /api/v1/stats HTTP/1.1\r\nHost: a\r\n\r\n"
    . "HEAD /metrics HTTP/1.1\r\nHost: a\r\n\r\n"
    . "GET /nothing HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
my @status = $r =~ /^HTTP\/1.1 (\d+)/mg;
is("@status", "200 200 404", 'pipelined: three replies in order');
like($r, qr/Connection: keep-alive.*Connection: keep-alive.*Connection: close/s,
    'pipelined: keep-alive until close');
my ($head) = $r =~ /HTTP\/1.1 200 OK\r\n(.*?)\r\n\r\nHTTP\/1.1 404/s;
ok(defined $head && $head =~ /Content-Length: [1-9]/,
    'HEAD: length without a body');

# a request split across writes

{
    my $sock = IO::Socket::INET->new("127.0.0.1:$port") or die;
    $sock->print("GET /api/v1/st");
    select(undef, undef, undef, 0.2);
    $sock->print("ats HTTP/1.1\r\nHo");
    select(undef, undef, undef, 0.2);
    $sock->print("st: a\r\nConnection: close\r\n\r\n");
    local $/;
    my $reply = <$sock>;
    like($reply, qr/^HTTP\/1.1 200 /, 'split request');
}

# errors

sub status { ($_[0] // '') =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

is(status(http_raw($port, "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    until => qr/\r\n\r\n.*\}/s)), 404, '404 unknown path');
is(status(http_raw($port,
    "DELETE /metrics HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")),
    405, '405 wrong method');
like(http_raw($port,
    "POST /api/v1/stats HTTP/1.1\r\nHost: a\r\nConnection: close\r\n"
    . "Content-Length: 0\r\n\r\n"), qr/\r\nAllow: GET, HEAD\r\n/,
    '405 names the allowed methods');
is(status(http_raw($port, "GARBAGE\r\n\r\n")), 400, '400 bad request line');
is(status(http_raw($port, "GET /x HTTP/1.1\r\n\r\n")), 400,
    '400 HTTP/1.1 without Host');
is(status(http_raw($port, "POST /api/v1/stats HTTP/1.1\r\n"
    . "Content-Length: 0\r\n\r\n")), 400,
    '400 HTTP/1.1 without Host, with a Content-Length');
is(status(http_raw($port, "GET /x HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n")),
    400, '400 bad header line');
is(status(http_raw($port, "GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n")),
    400, '400 obsolete line folding');
is(status(http_raw($port,
    "GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n")),
    400, '400 conflicting Content-Length');
is(status(http_raw($port, "GET /x HTTP/2.0\r\nHost: a\r\n\r\n")), 505,
    '505 other HTTP version');
is(status(http_raw($port, "BREW /x HTTP/1.1\r\nHost: a\r\n\r\n")), 501,
    '501 unknown method');
is(status(http_raw($port,
    "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")),
    501, '501 chunked body');
is(status(http_raw($port, "POST /api/v1/stats HTTP/1.1\r\nHost: a\r\n"
    . "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n"
    . "5\r\nhello\r\n0\r\n\r\n")), 501,
    '501 chunked body, whatever its Content-Length');
is(status(http_raw($port,
    "POST /api/v1/stats HTTP/1.1\r\nHost: a\r\nContent-Length: 101\r\n\r\n"
    . ("x" x 101))), 413, '413 body over client_max_body_size');
is(status(http_raw($port, "GET /" . ("a" x 2000) . " HTTP/1.1\r\n")), 414,
    '414 request line over the buffer');
is(status(http_raw($port, "GET / HTTP/1.1\r\nHost: a\r\nX-Big: "
    . ("b" x 2000) . "\r\n\r\n")), 431, '431 headers over the buffer');

# a body within the limit is read, and the connection stays usable
$r = http_raw($port,
    "POST /api/v1/stats HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n"
    . "0123456789"
    . "GET /api/v1/stats HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
@status = $r =~ /^HTTP\/1.1 (\d+)/mg;
is("@status", "405 200", 'body consumed, next request served');

# disabled endpoints on the second server
is(status(http_get(port(8081), '/api/v1/stats')), 404, 'api off: 404');
is(status(http_get(port(8081), '/metrics')), 404, 'metrics off: 404');

# the server still answers after all that
is(status(http_get($port, '/api/v1/stats')), 200, 'still serving');

$t->done();
