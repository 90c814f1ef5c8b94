#!/usr/bin/perl

# process.t -- master and workers: reload (good, broken, under load and with
# a keep-alive client mid-request), a killed worker replaced, log reopen,
# graceful stop and -s signals.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep time/;
use Test::Siftpd qw/http_get http_raw port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

my $conf = <<'EOF';
%%TEST_GLOBALS%%
worker_processes 2;
worker_shutdown_timeout 10s;
events { worker_connections 64; }
http {
    keepalive_timeout 30s;
    server { listen 127.0.0.1:%%PORT_8080%%; }
}
EOF

$t->write_file_expand('siftpd.conf', $conf);
$t->run();

my $port = port(8080);

sub stats {
    my $r = http_get($port, '/api/v1/stats') // '';
    my ($body) = $r =~ /\r\n\r\n(.*)/s;
    return eval { decode_json($body // '') } || {};
}

sub status { ($_[0] // '') =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

ok($t->wait_for(sub { $t->workers() == 2 }), 'two workers started');
is(stats()->{processes}, 2, 'stats see two processes');

# -s signals use the pid file

my ($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'bogus');
is($rc, 1, '-s with an unknown signal fails');

# a worker killed with SIGKILL is replaced

my @before = $t->workers();
kill 'KILL', $before[0];
ok($t->wait_for(sub {
        my @w = $t->workers();
        @w == 2 && !grep { $_ == $before[0] } @w
    }), 'killed worker replaced');
ok($t->wait_log(qr/worker process $before[0] exited on signal 9/),
    'the death is logged');
is(stats()->{worker_respawns}, 1, 'respawn counted');
is(status(http_get($port, '/api/v1/stats')), 200, 'serving after respawn');

# reopen after moving the log

rename "$d/error.log", "$d/error.log.old";
($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'reopen');
is($rc, 0, '-s reopen');
ok($t->wait_for(sub { -e "$d/error.log" }), 'log reopened under its name');
ok($t->wait_log(qr/reopened/), 'reopen logged in the new file');

# reload with a broken configuration keeps the old one serving

@before = $t->workers();
$t->write_file_expand('siftpd.conf', $conf . "broken_directive;\n");
$t->reload();
ok($t->wait_log(qr/siftpd.conf:\d+: unknown directive "broken_directive"/),
    'broken reload: error logged with file:line');
ok($t->wait_log(qr/reload failed, the running configuration is kept/),
    'broken reload: kept');
is(join(' ', $t->workers()), join(' ', @before), 'broken reload: same workers');
is(status(http_get($port, '/api/v1/stats')), 200, 'broken reload: serving');

($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'reload');
is($rc, 1, '-s reload refuses a broken file');
like($out, qr/unknown directive "broken_directive"/, '... and says why');

# a keep-alive client in the middle of a request during a reload

$t->write_file_expand('siftpd.conf', $conf);

my $ka = IO::Socket::INET->new("127.0.0.1:$port") or die;
$ka->print("GET /api/v1/stats HTTP/1.1\r\nHost: a\r\n\r\n");
my $first = read_reply($ka);
is(status($first), 200, 'keep-alive: first reply');
like($first, qr/Connection: keep-alive/, 'keep-alive: kept open');

$ka->print("GET /api/v1/stats HTTP/1.1\r\nHo");

@before = $t->workers();
$t->reload();
ok($t->wait_for(sub { stats()->{reloads} == 1 }), 'reload done');
ok($t->wait_log(qr/gracefully shutting down/), 'old workers stop accepting');

$ka->print("st: a\r\n\r\n");
my $second = read_reply($ka);
is(status($second), 200, 'keep-alive: request across the reload answered');
like($second, qr/Connection: close/, 'keep-alive: then closed by old worker');
close $ka;

ok($t->wait_for(sub {
        my @w = $t->workers();
        @w == 2 && !grep { my $o = $_; grep { $_ == $o } @before } @w
    }, 15), 'old workers exited after their last session');

# a loop of requests across reloads loses none

my $loop_pid = open(my $loop, '-|');
die unless defined $loop_pid;

if ($loop_pid == 0) {
    my ($ok, $fail, $why) = (0, 0, '');
    my $end = time() + 20;
    for (1 .. 20000) {
        last if time() > $end || -e "$d/loop.stop";
        my $r = http_get($port, '/api/v1/stats');
        if (status($r) eq '200') {
            $ok++;
        } else {
            $fail++;
            $why = defined $r ? "reply '" . substr($r, 0, 40) . "'"
                              : "no connection: $!";
        }
    }
    print "$ok $fail $why\n";
    close STDOUT;
    POSIX::_exit(0);
}

for my $n (2 .. 4) {
    sleep 0.3;
    $t->reload();
    $t->wait_for(sub { (stats()->{reloads} // 0) >= $n });
}

sleep 0.3;
$t->write_file('loop.stop', '');

my $result = <$loop>;
close $loop;
my ($ok, $fail, $why) = split ' ', $result // '0 1', 3;
is($fail, 0, "request loop across 3 reloads: $ok ok, none failed")
    or diag("last failure: $why");
is(stats()->{reloads}, 4, 'the reloads happened while it ran');
ok($ok >= 50, 'request loop ran');

# graceful stop waits for a session in progress

my $slow = IO::Socket::INET->new("127.0.0.1:$port") or die;
$slow->print("GET /api/v1/stats HTTP/1.1\r\nHo");
sleep 0.2;

my $pid = $t->pid();
kill 'QUIT', $pid;
sleep 0.5;
ok(kill(0, $pid), 'quit: master waits for the session');
$slow->print("st: a\r\n\r\n");
is(status(read_reply($slow)), 200, 'quit: the session is answered');
close $slow;

ok($t->wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 10),
    'quit: master exits after the last session');
delete $t->{_pid};
ok(!-e "$d/siftpd.pid", 'quit: pid file removed');

# worker_shutdown_timeout ends a session that does not finish

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
worker_shutdown_timeout 500ms;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run();
my $stuck = IO::Socket::INET->new("127.0.0.1:$port") or die;
$stuck->print("GET /api/v1/stats HTTP/1.1\r\nHo");
sleep 0.2;
$pid = $t->pid();
my $t0 = time();
kill 'QUIT', $pid;
ok($t->wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 10),
    'shutdown timeout: exits with a stuck session');
delete $t->{_pid};
ok($t->wait_log(qr/worker_shutdown_timeout: closing 1 sessions/),
    'shutdown timeout: logged');

# -s stop

$t->run();
($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", '-s', 'stop');
is($rc, 0, '-s stop');
$pid = $t->pid();
ok($t->wait_for(sub { waitpid($pid, WNOHANG) == $pid }, 10), 'stopped');
delete $t->{_pid};

$t->done();


sub read_reply {
    my ($s) = @_;
    my $reply = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm(5);
        while ($reply !~ /\r\n\r\n/ || !complete($reply)) {
            my $n = $s->sysread(my $buf, 65536);
            last unless $n;
            $reply .= $buf;
        }
        alarm(0);
    };
    alarm(0);
    return $reply;
}

sub complete {
    my ($r) = @_;
    my ($h, $b) = split /\r\n\r\n/, $r, 2;
    my ($len) = $h =~ /Content-Length: (\d+)/i;
    return length($b // '') >= ($len // 0);
}
