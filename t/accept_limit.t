#!/usr/bin/perl

# accept_limit.t -- a worker out of descriptors stops accepting for a while
# instead of retrying (and logging) in a loop, and serves again once
# clients leave.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw/sleep/;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');

sub status { ($_[0] // '') =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
worker_rlimit_nofile 128;
events { worker_connections 300; }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run();
is(status(http_get(port(8080), '/metrics')), 200, 'serving');

# more clients than descriptors: the kernel queues the rest

my @held;
for (1 .. 150) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080),
        Timeout => 2) or last;
    $s->print("GET /metrics HTTP/1.1\r\nHo");   # hold it open, unfinished
    push @held, $s;
}
is(scalar(@held), 150, 'clients connected');

ok($t->wait_log(qr/accept4\(\) on \S+ failed/), 'out of descriptors: logged');

# a few pauses of 500 ms each: a handful of lines, not millions

sleep 3;
my $lines = () = $t->read_file('error.log') =~ /accept4\(\) on/g;
cmp_ok($lines, '<=', 30, "out of descriptors: $lines log lines in 3 s");
cmp_ok(-s $t->testdir() . '/error.log', '<', 64 * 1024,
    'out of descriptors: error log stays small');

@held = ();
ok($t->wait_for(sub { status(http_get(port(8080), '/metrics')) eq '200' }),
    'serving again when clients leave');

$t->done();
