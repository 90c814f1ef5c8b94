#!/usr/bin/perl

# reload_zones.t -- a reload that fails after its shared memory zones were
# made (a new buffer pool for another chunk size, then a listen address
# already taken) frees them and leaves every module on the running zones:
# the master takes back a dead worker's share, the respawned worker serves.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use JSON::PP qw/decode_json/;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');

my $conf = <<'EOF';
%%TEST_GLOBALS%%
worker_processes 1;
transfer_chunk_bytes 256k;
http {
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
EOF

$t->write_file_expand('siftpd.conf', $conf);
$t->run();
my $port = port(8080);

sub status { ($_[0] // '') =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

is(status(http_get($port, '/api/v1/stats')), 200, 'serving');

# an address the new configuration cannot bind: held here

my $taken = IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => 0,
    Listen => 1, ReuseAddr => 0) or die "listen: $!";
my $busy = $taken->sockport();

(my $bad = $conf) =~ s/256k/128k/;
$bad =~ s/(server \{ listen 127\.0\.0\.1:%%PORT_8080%%; \})/$1\n    server { listen 127.0.0.1:$busy; }/;
$t->write_file_expand('siftpd.conf', $bad);
$t->reload();
ok($t->wait_log(qr/bind\(\) to 127\.0\.0\.1:$busy failed/),
    'the new address is taken');
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'the reload failed after its zones were made');
$t->write_file_expand('siftpd.conf', $conf);
close($taken);

my ($old) = $t->workers();
kill 'KILL', $old;
ok($t->wait_for(sub { my @w = $t->workers(); @w == 1 && $w[0] != $old }, 10),
    'the killed worker respawned');
ok(kill(0, $t->pid()), 'the master lives');

my $r = http_get($port, '/api/v1/stats');
is(status($r), 200, 'the respawned worker serves');
my ($body) = ($r // '') =~ /\r\n\r\n(.*)$/s;
is((eval { decode_json($body // '') } || {})->{worker_respawns}, 1,
    'and counts the respawn in the running statistics');

$t->done();
