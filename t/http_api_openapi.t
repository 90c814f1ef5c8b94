#!/usr/bin/perl

# http_api_openapi.t -- docs/openapi.json kept true: it is what GET
# /api/v1/openapi.json serves (to a read token); every route the sources
# register is in it and everything in it is served; and every route,
# called with good input and with bad (malformed JSON, wrong types,
# unknown fields, a body over client_max_body_size, no token, a read
# token on a change, user names with "/", ".." or control bytes), answers
# a status the document lists for it with a body its schema accepts
# (t/lib/openapi_check.py).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http')->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless -x '/usr/bin/python3';

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';
$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n");

mkdir "$d/data";
mkdir "$d/data/$_" for qw/bob carol/;
$t->write_file('data/bob/f', 'x' x 100);

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
        client_max_body_size 1k;
    }
}
EOF2

$t->user_add('bob', 'pw', perms => 'list,download');

$t->run();

my $base = 'http://127.0.0.1:' . port(8080);
my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

my $r = $http->get("$base/api/v1/openapi.json",
    { headers => { Authorization => "Bearer $reader" } });
is($r->{status}, 200, 'the document: 200 for a read token');
like($r->{headers}{'content-type'}, qr{^application/json}, 'as JSON');
my $doc = do { local $/; open my $f, '<', 'docs/openapi.json' or die; <$f> };
is($r->{content}, $doc, 'the one of the tree, byte for byte');
is($http->get("$base/api/v1/openapi.json")->{status}, 401,
    'without a token: 401');

# an FTP session held open, so the sessions list has one
my $hold = open(my $hin, '|-', 'timeout', '60', 'python3', '-c', <<PY);
import ftplib, sys
f = ftplib.FTP()
f.connect('127.0.0.1', @{[ port(8021) ]}, timeout=30)
f.login('bob', 'pw')
print('in', flush=True)
sys.stdin.read()
PY
$t->wait_log(qr/ftp login.*user: "bob"/);

# a ban to list and lift: wrong tokens from 127.0.0.1 would ban the test
# itself, so none is provoked; the list is empty and a lift 404

my $big = encode_json({ name => 'big', home => '/' . ('x' x 2000) });
my @cases = (
    [ 'GET', '/api/v1/stats', 'read', undef, 200 ],
    [ 'GET', '/api/v1/stats', undef, undef, 401 ],
    [ 'POST', '/api/v1/stats', 'admin', undef, 405 ],
    [ 'POST', '/api/v1/stats', 'read', undef, 403 ],
    [ 'GET', '/metrics', 'read', undef, 200 ],
    [ 'GET', '/metrics', undef, undef, 401 ],
    [ 'GET', '/api/v1/token', 'read', undef, 200 ],
    [ 'GET', '/api/v1/token', 'admin', undef, 200 ],
    [ 'GET', '/api/v1/token', undef, undef, 401 ],
    [ 'DELETE', '/api/v1/token', 'admin', undef, 405 ],
    [ 'GET', '/api/v1/openapi.json', 'read', undef, 200 ],
    [ 'GET', '/api/v1/users', 'read', undef, 200 ],
    [ 'GET', '/api/v1/users?limit=1&offset=1&name=b', 'read', undef, 200 ],
    [ 'GET', '/api/v1/users?limit=0', 'read', undef, 400 ],
    [ 'GET', '/api/v1/users?limit=x', 'read', undef, 400 ],
    [ 'GET', '/api/v1/users?bogus=1', 'read', undef, 400 ],
    [ 'GET', '/api/v1/users', undef, undef, 401 ],
    [ 'POST', '/api/v1/users', 'admin',
      '{"name":"carol","password":"carol-pw-1","home":"/carol",'
      . '"rules":[{"path":"/","perms":"list,download"}],'
      . '"quota_bytes":1000}', 201 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":"carol"}', 409 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":', 400 ],
    [ 'POST', '/api/v1/users', 'admin', '[1,2]', 400 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":"dan","quota_bytes":"x"}',
      400 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":"dan","colour":"red"}',
      400 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":"dan","home":"rel"}', 422 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":"a/b"}', 422 ],
    [ 'POST', '/api/v1/users', 'admin', '{"name":".."}', 422 ],
    [ 'POST', '/api/v1/users', 'admin', "{\"name\":\"a\\u0001b\"}", 422 ],
    [ 'POST', '/api/v1/users', 'admin', $big, 413 ],
    [ 'POST', '/api/v1/users', 'read', '{"name":"dan"}', 403 ],
    [ 'POST', '/api/v1/users', undef, '{"name":"dan"}', 401 ],
    [ 'GET', '/api/v1/users/bob', 'read', undef, 200 ],
    [ 'GET', '/api/v1/users/nobody', 'read', undef, 404 ],
    [ 'GET', '/api/v1/users/a%2fb', 'read', undef, 404 ],
    [ 'GET', '/api/v1/users/..', 'read', undef, 404 ],
    [ 'GET', '/api/v1/users/a%01b', 'read', undef, 404 ],
    [ 'PATCH', '/api/v1/users/carol', 'admin', '{"quota_files":3}', 200 ],
    [ 'PUT', '/api/v1/users/carol', 'admin', '{"disabled":false}', 200 ],
    [ 'PUT', '/api/v1/users/carol', 'admin', '{"disabled":1}', 400 ],
    [ 'PATCH', '/api/v1/users/carol', 'admin', '{"max_sessions":-1}', 422 ],
    [ 'PATCH', '/api/v1/users/carol', 'admin', '{"max_sessions":1.5}', 400 ],
    [ 'PATCH', '/api/v1/users/carol', 'admin', '{"name":"dave"}', 422 ],
    [ 'PATCH', '/api/v1/users/carol', 'admin', '{"x":', 400 ],
    [ 'PATCH', '/api/v1/users/nobody', 'admin', '{"quota_files":3}', 404 ],
    [ 'PATCH', '/api/v1/users/carol', 'read', '{"quota_files":3}', 403 ],
    [ 'POST', '/api/v1/users/carol', 'admin', '{}', 405 ],
    [ 'POST', '/api/v1/users/bob/recount', 'admin', undef, 200 ],
    [ 'POST', '/api/v1/users/nobody/recount', 'admin', undef, 404 ],
    [ 'POST', '/api/v1/users/a%01b/recount', 'admin', undef, 404 ],
    [ 'POST', '/api/v1/users/bob/recount', 'read', undef, 403 ],
    [ 'GET', '/api/v1/users/bob', 'read', undef, 200 ],
    [ 'DELETE', '/api/v1/users/carol', 'read', undef, 403 ],
    [ 'DELETE', '/api/v1/users/carol', 'admin', undef, 204 ],
    [ 'DELETE', '/api/v1/users/carol', 'admin', undef, 404 ],
    [ 'GET', '/api/v1/nodes', 'read', undef, 200 ],
    [ 'GET', '/api/v1/nodes?x=1', 'read', undef, 400 ],
    [ 'GET', '/api/v1/nodes', undef, undef, 401 ],
    [ 'GET', '/api/v1/sessions', 'read', undef, 200 ],
    [ 'GET', '/api/v1/sessions?user=bob', 'read', undef, 200 ],
    [ 'GET', '/api/v1/sessions?user=a/b', 'read', undef, 400 ],
    [ 'GET', '/api/v1/sessions?who=bob', 'read', undef, 400 ],
    [ 'DELETE', '/api/v1/sessions', 'admin', undef, 400 ],
    [ 'DELETE', '/api/v1/sessions/0-0', 'admin', undef, 404 ],
    [ 'DELETE', '/api/v1/sessions?user=bob', 'read', undef, 403 ],
    [ 'DELETE', '/api/v1/sessions?user=bob', 'admin', undef, 200 ],
    [ 'GET', '/api/v1/bans', 'read', undef, 200 ],
    [ 'DELETE', '/api/v1/bans/not-an-address', 'admin', undef, 400 ],
    [ 'DELETE', '/api/v1/bans/192.0.2.1', 'admin', undef, 404 ],
    [ 'DELETE', '/api/v1/bans/192.0.2.1', 'read', undef, 403 ],
    [ 'GET', '/api/v1/server', 'read', undef, 200 ],
    [ 'GET', '/api/v1/server/config', 'read', undef, 200 ],
    [ 'POST', '/api/v1/server/reload', 'read', undef, 403 ],
    [ 'GET', '/api/v1/server/reload', 'admin', undef, 405 ],
    [ 'POST', '/api/v1/server/reload', 'admin', undef, 200 ],
);

$t->write_file('cases.json', encode_json(\@cases));

# the checker from the tree, run from the test directory
$t->write_file('openapi_check.py', do {
    local $/; open my $f, '<', 't/lib/openapi_check.py' or die; <$f> });

my ($n, $out) = $t->python_checks('openapi_check.py', Cwd::getcwd(),
    Cwd::getcwd() . '/docs/openapi.json', $base, $admin, $reader,
    "$d/cases.json");
cmp_ok($n, '>', scalar @cases, 'every case checked') or diag($out);

close $hin;
waitpid($hold, 0);

$t->stop();

done_testing();
