#!/usr/bin/perl

# process_options.t -- daemon, master_process off, user, worker_rlimit_nofile,
# worker_connections, and listening sockets added and removed by a reload.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use POSIX qw/:sys_wait_h/;
use Time::HiRes qw/sleep/;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

sub status { ($_[0] // '') =~ /^HTTP\/1.1 (\d+)/ ? $1 : 'none' }

sub proc_field {
    my ($pid, $file, $re) = @_;
    open my $fh, '<', "/proc/$pid/$file" or return undef;
    local $/;
    my $c = <$fh>;
    return $c =~ $re ? $1 : undef;
}

# listening sockets: a reload opens new ones and closes removed ones, and
# the one kept is never closed

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
worker_rlimit_nofile 4000;
events { worker_connections 20; }
http {
    server { listen 127.0.0.1:%%PORT_8080%%; }
    server { listen 127.0.0.1:%%PORT_8081%%; }
}
EOF

$t->run();

is(status(http_get(port(8080), '/metrics')), 200, 'first listener');
is(status(http_get(port(8081), '/metrics')), 200, 'second listener');

my ($w) = $t->workers();
is(proc_field($w, 'limits', qr/Max open files\s+(\d+)/), 4000,
    'worker_rlimit_nofile applied in the worker');

# worker_connections: 20 + a few internal slots; more clients are dropped
# and counted, and the worker survives

my @held;
for (1 .. 40) {
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8080),
        Timeout => 2) or last;
    $s->print("GET /metrics HTTP/1.1\r\nHo");   # hold it open, unfinished
    push @held, $s;
}
sleep 0.5;
ok($t->wait_log(qr/worker_connections are not enough/),
    'over worker_connections: logged');
@held = ();
ok($t->wait_for(sub { status(http_get(port(8080), '/api/v1/stats')) eq '200' }),
    'over worker_connections: serving again when clients leave');
like(http_get(port(8080), '/metrics'),
    qr/^siftp_connections_dropped_total [1-9]/m, 'drops counted');

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
http {
    server { listen 127.0.0.1:%%PORT_8080%%; }
    server { listen 127.0.0.1:%%PORT_8082%%; }
}
EOF

my $before = () = $t->read_file('error.log') =~ /start worker/g;
$t->reload();
ok($t->wait_log(qr/closed listening socket 127.0.0.1:${\ port(8081)}/),
    'reload: removed listener closed');
ok($t->wait_for(sub { status(http_get(port(8082), '/metrics')) eq '200' }),
    'reload: new listener serves');
ok($t->wait_for(sub {
        !IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . port(8081),
                               Timeout => 1) }),
    'reload: removed listener refuses');
is(status(http_get(port(8080), '/metrics')), 200, 'reload: kept listener');

$t->stop();

# daemon on: the master detaches, writes its pid, stops on -s stop

$t->write_file_expand('daemon.conf', <<'EOF');
daemon on;
pid %%TESTDIR%%/siftpd.pid;
error_log %%TESTDIR%%/error.log info;
worker_processes 1;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

# (the daemon keeps stderr, so it must not be a pipe this test reads)
my $rc = system($t->binary() . " -p $d/ -c $d/daemon.conf 2>>$d/stderr") >> 8;
is($rc, 0, 'daemon: the starting process returns');
my $out;
ok($t->wait_for(sub { -s "$d/siftpd.pid" }), 'daemon: pid file');
my $dpid = $t->read_file('siftpd.pid') + 0;
ok($dpid && kill(0, $dpid), 'daemon: master runs detached');
is(proc_field($dpid, 'stat', qr/^\d+ \(.*?\) \S \d+ \d+ (\d+)/), $dpid,
    'daemon: own session');
is(status(http_get(port(8080), '/metrics')), 200, 'daemon: serving');
($rc, $out) = $t->siftpd('-c', "$d/daemon.conf", '-s', 'stop');
is($rc, 0, 'daemon: -s stop');
ok($t->wait_for(sub { !kill(0, $dpid) }), 'daemon: stopped');

# master_process off: one process serves

$t->write_file_expand('single.conf', <<'EOF');
%%TEST_GLOBALS%%
master_process off;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->run('single.conf');
is(scalar($t->workers()), 0, 'single: no worker processes');
is(status(http_get(port(8080), '/api/v1/stats')), 200, 'single: serving');
$t->stop();

# user: workers drop to it when the master runs as root

SKIP: {
    skip 'not root', 3 if $> != 0;
    my @pw = getpwnam('nobody');
    skip 'no user nobody', 3 unless @pw;

    $t->write_file_expand('user.conf', <<'EOF');
%%TEST_GLOBALS%%
user nobody;
worker_processes 1;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

    $t->run('user.conf');
    ok($t->wait_for(sub { scalar($t->workers()) == 1 }), 'user: worker up');
    # the worker drops privileges right after fork: give it a moment
    my $uid;
    $t->wait_for(sub {
        my ($uw) = $t->workers();
        $uid = defined $uw ? proc_field($uw, 'status', qr/^Uid:\s+(\d+)/m)
                           : undef;
        defined $uid && $uid == $pw[2];
    }, 10);
    is($uid, $pw[2], 'user: worker runs as nobody');
    is(proc_field($t->pid(), 'status', qr/^Uid:\s+(\d+)/m), 0,
        'user: master stays root');
}

$t->done();
