#!/usr/bin/perl

# http_remote.t -- the admin HTTP server to a client that is not on
# loopback.  It runs again in a network namespace of its own, where
# 10.200.0.1 is an address of lo: a request from there is from no
# loopback address.  Without api_token_file the API and /metrics answer
# 403, logged at warn with the address, and the configuration warns about
# a listener off loopback without a token file; with one, a request from
# there without a token gets 401, with a read token 200, and a read
# token may not change anything.

use warnings;
use strict;

use lib 't/lib';
use Test::More;

BEGIN {
    if (!$ENV{SIFTPD_TEST_NETNS}) {
        if ($> == 0 && system('unshare -n true 2>/dev/null') == 0) {
            $ENV{SIFTPD_TEST_NETNS} = 1;
            exec 'unshare', '-n', $^X, map({ "-I$_" } @INC), $0;
        }
        plan(skip_all => 'needs root and unshare -n');
    }
}

use HTTP::Tiny;
use Test::Siftpd qw/port/;

my $remote = '10.200.0.1';

plan(skip_all => 'cannot give lo an address in the namespace')
    unless system('ip link set lo up 2>/dev/null') == 0
        && system("ip addr add $remote/32 dev lo 2>/dev/null") == 0;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $reader = 'read-token-0123456789abcdef';
my $admin = 'admin-token-0123456789abcdef';
$t->write_file('tokens', "$reader read viewer\n$admin admin ops\n");

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
http {
    server { listen $remote:%%PORT_8080%%; }
    server { listen $remote:%%PORT_8081%%; api_token_file tokens; }
}
EOF

my $out = `${\ $t->binary()} -p $d/ -c $d/siftpd.conf -t 2>&1`;
like($out, qr/\[warn\].*not on loopback.*token|\[warn\].*token.*not on loopback/i,
    'siftpd -t warns: a listener off loopback without a token file')
    or diag($out);

$t->run();

my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0,
    local_address => $remote);

sub req {
    my ($method, $port, $path, $token) = @_;
    my %h;
    $h{Authorization} = "Bearer $token" if defined $token;
    return $http->request($method, "http://$remote:" . port($port) . $path,
        { headers => \%h, content => $method eq 'POST' ? '{}' : undef })
        ->{status};
}

is(req('GET', 8080, '/api/v1/stats'), 403,
    'no token file: the API refused to an address off loopback');
is(req('GET', 8080, '/metrics'), 403, 'no token file: /metrics refused');
is(req('GET', 8080, '/api/v1/users'), 403, 'no token file: users refused');
like($t->read_file('error.log'), qr/\[warn\].*$remote/,
    'the refusal logged at warn with the address');

is(req('GET', 8081, '/api/v1/stats'), 401, 'token file: no token, 401');
is(req('GET', 8081, '/api/v1/stats', $reader), 200,
    'token file: a read token from off loopback, 200');
is(req('POST', 8081, '/api/v1/server/reload', $reader), 403,
    'a read token from off loopback may not reload');

$t->stop();

done_testing();
