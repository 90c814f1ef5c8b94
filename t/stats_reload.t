#!/usr/bin/perl

# stats_reload.t -- statistics across a reload that fails after the new
# configuration registered other statistics: a worker started later by the
# running configuration still counts each value in its own place.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Basename qw/dirname/;
use File::Spec;
use IO::Socket::INET;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');
my $objs = File::Spec->rel2abs($ENV{TEST_SIFTPD_OBJS} || dirname($t->binary()));
my $hello = "$objs/modules/sft_hello_module.so";

plan(skip_all => "no $hello (configure --add-dynamic-module=modules/hello)")
    unless -f $hello;

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run();
my $port = port(8080);

sub metric {
    my ($name) = @_;
    my ($v) = http_get($port, '/metrics') =~ /^siftp_$name (\d+)$/m;
    return $v;
}

ok(defined metric('http_requests_total'), 'counting before the reload');

# the new configuration loads a module that registers a counter before
# everyone else's, then fails: its second port is taken

my $busy = IO::Socket::INET->new(Proto => 'tcp', Listen => 1,
    LocalAddr => '127.0.0.1:' . port(8081))
    or BAIL_OUT("cannot listen on a test port: $!");

$t->write_file_expand('siftpd.conf', <<"EOF");
load_module $hello;
%%TEST_GLOBALS%%
worker_processes 1;
http {
    server { listen 127.0.0.1:%%PORT_8080%%; }
    server { listen 127.0.0.1:%%PORT_8081%%; }
}
EOF

$t->reload();
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'the reload failed');
close $busy;

# a worker of the running configuration, started after the failure

my @before = $t->workers();
kill 'KILL', $before[0];
ok($t->wait_for(sub {
        my @w = $t->workers();
        @w == 1 && $w[0] != $before[0]
    }), 'worker replaced');

# each GET /metrics counts itself before it answers

my $errors = metric('http_errors_total');
my $requests = metric('http_requests_total');
http_get($port, '/metrics') for 1 .. 3;

is(metric('http_errors_total'), $errors, 'answers without errors count none');
is(metric('http_requests_total'), $requests + 5,
    'each request counted as a request');
unlike(http_get($port, '/metrics'), qr/hello/,
    'nothing of the failed configuration shows');

$t->done();
