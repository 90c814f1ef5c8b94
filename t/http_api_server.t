#!/usr/bin/perl

# http_api_server.t -- GET /api/v1/server (version and configure arguments
# as "siftpd -V" prints them, the modules, workers and start time) and GET
# /api/v1/server/config (the text "siftpd -T" prints, included files too),
# for read tokens (which may not POST: 403); POST /api/v1/server/reload:
# a good configuration loads and takes effect ({"ok":true}), a broken one
# answers {"ok":false} with its file and line while the running one keeps
# serving, each in the audit log; "api off" 404.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $reader = 'read-token-0123456789abcdef';
my $admin = 'admin-token-0123456789abcdef';
$t->write_file('tokens', "$reader read viewer\n$admin admin ops\n");

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
include %%TESTDIR%%/http.conf;
EOF
$t->write_file_expand('http.conf', <<'EOF');
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;   # a comment stays
        api_audit_log audit.log;
    }
    server {
        listen 127.0.0.1:%%PORT_8081%%;
        api_token_file tokens;
        api off;
    }
}
EOF

my $bin = $t->binary();
my $version = `$bin -V 2>&1`;
my ($configure) = $version =~ /^configure arguments: ?(.*)$/m;
($version) = $version =~ /^siftpd version: siftpd\/(\S+)$/m;
my $dump = `$bin -p $d/ -c $d/siftpd.conf -T 2>/dev/null`;

my $before = time();
$t->run();

my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub req {
    my ($method, $path, $port, $token) = @_;
    return $http->request($method,
        'http://127.0.0.1:' . port($port // 8080) . "/api/v1/server$path",
        { headers => { Authorization => 'Bearer ' . ($token // $reader) } });
}

my $r = req('GET', '');
is($r->{status}, 200, 'server: 200 for a read token');
my $s = eval { decode_json($r->{content}) } // {};
is($s->{version}, $version, 'the version');
is($s->{configure}, $configure, 'the configure arguments');
is($s->{workers}, 2, 'the workers');
ok($s->{started} >= $before - 60 && $s->{started} <= time(),
    'the start time');
ok((grep { $_ eq 'sft_http_api_module' } @{$s->{modules} // []})
    && (grep { $_ eq 'sft_core_module' } @{$s->{modules} // []}),
    'the modules') or diag($r->{content});

$r = req('GET', '/config');
is($r->{status}, 200, 'config: 200');
like($r->{headers}{'content-type'}, qr{^text/plain}, 'config: text');
ok(length $dump > 0, 'siftpd -T printed the configuration');
is($r->{content}, $dump, 'config: what siftpd -T prints');
like($r->{content}, qr/# a comment stays/, 'the included file is there');

is(req('POST', '')->{status}, 403, 'POST with a read token: 403');
is(req('GET', '', 8081)->{status}, 404, 'api off: 404');
is(req('GET', '/config', 8081)->{status}, 404, 'api off: config 404');

# reloads

is(req('POST', '/reload')->{status}, 403, 'a read token cannot reload');

my $conf = $t->read_file('siftpd.conf');
(my $one = $conf) =~ s/worker_processes 2;/worker_processes 1;/;
$t->write_file('siftpd.conf', $one);

$r = req('POST', '/reload', 8080, $admin);
is($r->{status}, 200, 'reload: 200');
is_deeply(eval { decode_json($r->{content}) }, { ok => JSON::PP::true },
    'reload: ok') or diag($r->{content});
ok($t->wait_for(sub {
        (eval { decode_json(req('GET', '')->{content}) } // {})->{workers}
        // 0 == 1 }),
    'the new configuration serves');

my $http_conf = $t->read_file('http.conf');
$t->write_file('http.conf', $http_conf . "bogus_directive on;\n");
my $bad_line = 1 + ($http_conf =~ tr/\n//);

$r = req('POST', '/reload', 8080, $admin);
is($r->{status}, 422, 'a broken configuration: 422');
my $j = eval { decode_json($r->{content}) } // {};
is($j->{ok}, JSON::PP::false, 'not ok');
like($j->{error} // '', qr/\Q$d\E\/http\.conf:$bad_line: unknown directive "bogus_directive"/,
    'the error with its file and line');
is((eval { decode_json(req('GET', '')->{content}) } // {})->{workers}, 1,
    'the running configuration still serves');

my $audit = $t->read_file('audit.log');
like($audit, qr/ token=ops method=POST route=\/api\/v1\/server\/reload user=- status=200$/m,
    'audit: a reload');
like($audit, qr/ token=ops method=POST route=\/api\/v1\/server\/reload user=- status=422 reason=".*unknown directive 'bogus_directive'"$/m,
    'audit: a failed reload with its reason');

$t->stop();

done_testing();
