#!/usr/bin/perl

# http_token.t -- bearer tokens for the admin API: api_token_file (several
# tokens, comments, re-read on reload, a broken file keeps the old ones),
# 401 with WWW-Authenticate for a missing or wrong token, metrics_auth,
# loopback clients without a token file, and the configuration checks.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/http_raw port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $tok1 = 'k3Yq0-first.token_AAAAAAAAAAAA';
my $tok2 = 'second/token+with~chars==';
my $tok3 = 'third-token-after-reload-0123456789';

$t->write_file('tokens', "# admin API tokens\n\n  $tok1  \n$tok2\n");

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
# wrong tokens count as failed logins: this test sends many
login_max_failures 1000;
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
    }
    server {
        listen 127.0.0.1:%%PORT_8081%%;
        api_token_file tokens;
        metrics_auth off;
    }
    server {
        listen 127.0.0.1:%%PORT_8082%%;
    }
}
EOF

$t->run();

my $port = port(8080);

sub get {
    my ($p, $path, $auth) = @_;
    return http_raw($p, "GET $path HTTP/1.1\r\nHost: a\r\n"
        . (defined $auth ? "Authorization: $auth\r\n" : '')
        . "Connection: close\r\n\r\n") // '';
}

sub status { $_[0] =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

# accepted

is(status(get($port, '/api/v1/stats', "Bearer $tok1")), 200, 'first token');
is(status(get($port, '/api/v1/stats', "Bearer $tok2")), 200, 'second token');
is(status(get($port, '/api/v1/stats', "bearer   $tok1 ")), 200,
    'scheme in any case, spaces around the token');
like(get($port, '/api/v1/stats', "Bearer $tok1"), qr/"connections":/,
    'stats body');

# refused

my $r = get($port, '/api/v1/stats');
is(status($r), 401, 'no header: 401');
like($r, qr/\r\nWWW-Authenticate: Bearer realm="siftpd"\r\n/,
    'no header: challenge without an error');
unlike($r, qr/"connections":/, 'no header: no stats');

$r = get($port, '/api/v1/stats', 'Bearer wrong-token-0123456789');
is(status($r), 401, 'wrong token: 401');
like($r, qr/\r\nWWW-Authenticate: Bearer realm="siftpd", error="invalid_token"\r\n/,
    'wrong token: invalid_token');
ok($t->wait_log(qr/admin API refused: wrong bearer token, client: 127\.0\.0\.1/),
    'wrong token logged with the client');
unlike($t->read_file('error.log'), qr/wrong-token/, 'token not logged');

is(status(get($port, '/api/v1/stats', 'Bearer ' . substr($tok1, 0, -1))),
    401, 'a prefix of a token: 401');
is(status(get($port, '/api/v1/stats', "Bearer ${tok1}A")), 401,
    'a token plus one more character: 401');
is(status(get($port, '/api/v1/stats', "Basic $tok1")), 401,
    'another scheme: 401');
is(status(get($port, '/api/v1/stats', 'Bearer')), 401, 'scheme only: 401');

is(status(get($port, '/api/v2/nothing')), 401,
    'unknown /api/ path without a token: 401, not 404');
is(status(get($port, '/api/v2/nothing', "Bearer $tok1")), 404,
    'unknown /api/ path with a token: 404');

# metrics_auth: on by default, off on the second server

is(status(get($port, '/metrics')), 401, 'metrics without a token: 401');
like(get($port, '/metrics', "Bearer $tok2"), qr/^siftp_workers 2$/m,
    'metrics with a token');
is(status(get(port(8081), '/metrics')), 200, 'metrics_auth off: open');
is(status(get(port(8081), '/api/v1/stats')), 401,
    'metrics_auth off: the API still needs a token');

# no token file: loopback clients are served

is(status(get(port(8082), '/api/v1/stats')), 200,
    'no token file: loopback client served');
is(status(get(port(8082), '/metrics')), 200,
    'no token file: metrics to loopback');

# the file is read again on reload

$t->write_file('tokens', "$tok3\n");
$t->reload();
ok($t->wait_for(sub {
    status(get($port, '/api/v1/stats', "Bearer $tok3")) eq "200" }, 20),
    'reload: new token accepted');
ok($t->wait_for(sub {
    status(get($port, '/api/v1/stats', "Bearer $tok1")) eq "401" }, 20),
    'reload: removed token refused');

# a broken file on reload: the reload fails, the old tokens stay

$t->write_file('tokens', "short\n");
$t->reload();
ok($t->wait_log(qr/tokens:1: a token is 16 to 1024 characters/, 20),
    'reload with a bad token file: error logged');
is(status(get($port, '/api/v1/stats', "Bearer $tok3")), 200,
    'reload with a bad token file: old tokens kept');

# configuration checks (siftpd -t: nothing is bound)

sub conf_test {
    my ($http) = @_;
    $t->write_file('test.conf', "error_log $d/test.log info;\n"
        . "http { server { $http } }\n");
    return $t->siftpd('-t', '-c', "$d/test.conf");
}

$t->write_file('empty', "# nothing\n\n");
my ($rc, $out) = conf_test('listen 127.0.0.1:1; api_token_file empty;');
isnt($rc, 0, 'a file without tokens is refused');
like($out, qr/no token in ".*empty"/, 'a file without tokens: message');

($rc, $out) = conf_test('listen 127.0.0.1:1; api_token_file missing;');
isnt($rc, 0, 'a missing file is refused');

($rc, $out) = conf_test('listen 0.0.0.0:1;');
is($rc, 0, 'wildcard listen without tokens: accepted');
like($out, qr/no "api_token_file": its API is served to loopback clients only/,
    'wildcard listen without tokens: warned');

($rc, $out) = conf_test('listen 127.0.0.1:1;');
unlike($out, qr/api_token_file/, 'loopback listen without tokens: no warning');

$t->done();
