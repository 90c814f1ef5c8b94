#!/usr/bin/perl

# fault_nofile.t -- a worker out of descriptors (worker_rlimit_nofile 128,
# the least it should be) with a hundred FTP clients holding their
# connections: it stops accepting for a while instead of spinning (its CPU
# time stays low), logs a bounded number of lines, and a new FTP login
# succeeds once the clients leave.  A limit the worker could not even start
# under is warned about by the configuration check.  accept_limit.t checks the
# same pause over HTTP.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use POSIX qw/sysconf/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_login ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp');

my $held = 100;         # clients holding a connection: more than the 50
                        # or so descriptors left to connections
my $period = 4;         # seconds the worker is watched while out of fds

ftp_conf($t, connections => 300, main => <<'EOF2');
worker_rlimit_nofile 128;
max_connections_per_address 1000;
EOF2
ftp_user($t, 'alice', 'pw-a', 'list');

# a worker inherits 64 wake-up descriptors of the buffer pool: with a limit
# of 64 it failed to create its epoll instance and was respawned every 10 s

my $small = $t->read_file('siftpd.conf');
$small =~ s/worker_rlimit_nofile 128/worker_rlimit_nofile 64/;
$t->write_file('small.conf', $small);
my (undef, $out) = $t->siftpd('-t', '-c', $t->testdir() . '/small.conf');
like($out, qr/\[warn\] "worker_rlimit_nofile" is under 128: .* may not start/,
    'a limit a worker cannot start under is warned about');

local $SIG{ALRM} = sub { die "timeout\n" };
alarm(60);

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);
my ($worker) = $t->workers();
my $port = port(8021);

ftp_cmd(ftp_login($port, 'alice', 'pw-a'), 'QUIT');

# user + system CPU time of a process, in clock ticks
sub cpu_ticks {
    open my $fh, '<', "/proc/$_[0]/stat" or return 0;
    my ($rest) = <$fh> =~ /\) (.*)/;
    my @f = split ' ', $rest;
    return $f[11] + $f[12];
}

my @clients;
for (1 .. $held) {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Timeout => 5) or last;
    push @clients, $s;
}
is(scalar(@clients), $held, "$held clients connected");

ok($t->wait_log(qr/accept4\(\) on \S+ failed/), 'out of descriptors: logged');

my $hz = sysconf(POSIX::_SC_CLK_TCK) || 100;
my $before = cpu_ticks($worker);
sleep $period;
my $used = (cpu_ticks($worker) - $before) / $hz;

# a worker retrying accept4() in a loop burns the whole period
cmp_ok($used, '<', $period / 4,
    sprintf('out of descriptors: %.2f s of CPU in %d s', $used, $period));

my $lines = () = $t->read_file('error.log') =~ /accept4\(\) on/g;
cmp_ok($lines, '<=', 10 * $period,
    "out of descriptors: $lines log lines, not a flood");
cmp_ok(-s $t->testdir() . '/error.log', '<', 64 * 1024,
    'the error log stays small');

close $_ for @clients;
@clients = ();

my $r = '';
$t->wait_for(sub {
    my $s = eval { ftp_login($port, 'alice', 'pw-a') } or return 0;
    $r = ftp_cmd($s, 'PWD');
    ftp_cmd($s, 'QUIT');
    return 1;
}, 30);
like($r, qr/^257 /, 'a new FTP login succeeds once the clients leave');

alarm(0);
$t->done();
