#!/usr/bin/perl

# http_api_token.t -- GET /api/v1/token: the name and scope of the token a
# request carries ("read" or "admin"; a line without a scope is admin, a
# token without a name "line N"), "loopback" with the admin scope where no
# token file is configured; 401 without a token, GET only, "api off" 404.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');

my $reader = 'read-token-0123456789abcdef';
my $admin = 'admin-token-0123456789abcdef';
my $bare = 'bare-token-0123456789abcdef';
$t->write_file('tokens', "$reader read viewer\n$admin admin ops\n$bare\n");

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
http {
    server { listen 127.0.0.1:%%PORT_8080%%; api_token_file tokens; }
    server { listen 127.0.0.1:%%PORT_8081%%; }
    server { listen 127.0.0.1:%%PORT_8082%%; api off; }
}
EOF2

$t->run();

my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub req {
    my ($method, $port, $token) = @_;
    my %h;
    $h{Authorization} = "Bearer $token" if defined $token;
    my $r = $http->request($method,
        'http://127.0.0.1:' . port($port) . '/api/v1/token',
        { headers => \%h });
    $r->{json} = eval { decode_json($r->{content}) } if length $r->{content};
    return $r;
}

my $r = req('GET', 8080, $reader);
is($r->{status}, 200, 'read token: 200');
is_deeply($r->{json}, { name => 'viewer', scope => 'read' },
    'read token: its name and scope');
is_deeply(req('GET', 8080, $admin)->{json}, { name => 'ops',
    scope => 'admin' }, 'admin token');
is_deeply(req('GET', 8080, $bare)->{json}, { name => 'line 3',
    scope => 'admin' }, 'a token without a scope is admin');
is(req('GET', 8080)->{status}, 401, 'no token: 401');
is(req('GET', 8080, 'wrong-token-0123456789abcdef')->{status}, 401,
    'a wrong token: 401');
$r = req('POST', 8080, $admin);
is($r->{status}, 405, 'POST: 405');
is($r->{headers}{allow}, 'GET, HEAD', 'Allow: GET, HEAD');
is(req('POST', 8080, $reader)->{status}, 403, 'a read token may not POST');
is_deeply(req('GET', 8081)->{json}, { name => 'loopback', scope => 'admin' },
    'no token file: loopback, admin');
is(req('GET', 8082, $admin)->{status}, 404, 'api off: 404');

$t->stop();

done_testing();
