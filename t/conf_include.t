#!/usr/bin/perl

# conf_include.t -- include loops and deep include chains are errors with
# file:line, for -t and for a reload, which keeps the running configuration.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my ($rc, $out);

# a file that includes itself

$t->write_file('self.conf', "daemon off;\ninclude self.conf;\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/self.conf");
is($rc, 1, 'self-include: -t exits 1');
like($out, qr/self.conf:2: include of "\Q$d\E\/self.conf" makes a loop/,
    'self-include: file:line');

# two files that include each other, one through another path

$t->write_file('a.conf', "include b.conf;\n");
$t->write_file('b.conf', "\n\ninclude ./a.conf;\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/a.conf");
is($rc, 1, 'two-file loop: -t exits 1');
like($out, qr/b.conf:3: include of "\Q$d\E\/.\/a.conf" makes a loop/,
    'two-file loop: file:line');

# a chain of distinct files deeper than the limit

for my $i (1 .. 40) {
    $t->write_file("d$i.conf", "include d" . ($i + 1) . ".conf;\n");
}
$t->write_file('d41.conf', "\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/d1.conf");
is($rc, 1, 'deep chain: -t exits 1');
like($out, qr/d\d+.conf:1: includes nested deeper than \d+ levels/,
    'deep chain: file:line');

$t->write_file('d10.conf', "\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/d1.conf");
is($rc, 0, 'ten levels: fine') or diag($out);

# a reload with a loop changes nothing

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run();
like(http_get(port(8080), '/metrics'), qr/^HTTP\/1.1 200/, 'serving');

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
include a.conf;
http { server { listen 127.0.0.1:%%PORT_8081%%; } }
EOF

$t->reload();
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'reload with a loop: refused');
like($t->read_file('error.log'), qr/b.conf:3: include of .* makes a loop/,
    'reload with a loop: file:line logged');
ok(kill(0, $t->pid()), 'reload with a loop: master alive');
like(http_get(port(8080), '/metrics'), qr/^HTTP\/1.1 200/,
    'reload with a loop: old configuration serves');

$t->done();
