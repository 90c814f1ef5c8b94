#!/usr/bin/perl

# ftp_workers.t -- two workers with FTP clients on both: every passive
# port a worker opens is in that worker's own slice of passive_ports
# (found from the process that holds each listening socket), and the
# admin stats summed over the workers agree with what the clients did
# and with /metrics.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use JSON::PP;
use Test::Siftpd qw/http_get port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_login/;

my $t = Test::Siftpd->new()->has(qw/ftp http/);
my $d = $t->testdir();

plan(skip_all => 'no /proc/net/tcp') unless -r '/proc/net/tcp';

# 40 passive ports: worker slots 0 and 1 get 20 each

my $lo = port(8100);
my $hi = $lo + 39;

ftp_conf($t, workers => 2, connections => 256,
    main => "max_connections_per_address 256;\n"
            . "http { server { listen 127.0.0.1:%%PORT_8080%%; } }",
    server => "passive_ports $lo-$hi;");
ftp_user($t, 'alice', 'pw-a', 'list,download');

my $fsize = 100000;
$t->write_file('data/alice/f.bin', 'y' x $fsize);

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);
my @workers = $t->workers();
is(scalar @workers, 2, 'two workers');

# the worker that holds the listening socket on a port

sub owner {
    my ($p) = @_;
    my $hex = sprintf(':%04X', $p);
    my $inode;

    open my $tcp, '<', '/proc/net/tcp' or return 0;
    while (<$tcp>) {
        my @f = split;
        next unless defined $f[9];
        if ($f[1] =~ /\Q$hex\E$/ && $f[3] eq '0A') {
            $inode = $f[9];
            last;
        }
    }
    close $tcp;
    return 0 unless $inode;

    for my $pid (@workers) {
        for my $fd (glob("/proc/$pid/fd/*")) {
            my $l = readlink($fd) // '';
            return $pid if $l eq "socket:[$inode]";
        }
    }

    return 0;
}

# 40 sessions open at once, 20 on each worker: an idle worker first in
# the listener's wait queue takes every connection, so each half is
# opened while the other worker is stopped; then each session does PASV
# with its port's owner noted, and a download. Stopping one worker while
# the other slept on in epoll_wait(2) left connections in the queue on a
# loaded machine (the stopped one still took the listener's wake-ups), so
# both are stopped and the serving one resumed, which waits afresh; a
# half that still stalls is tried again, at most 5 times. A half stalls
# when its 20 logins take more than 20 s: logins are slow under the
# sanitizers on a loaded machine, and 5 s were not always enough.

sub asleep {
    my ($pid) = @_;

    for my $task (glob("/proc/$pid/task/*")) {
        open my $st, '<', "$task/stat" or return 0;
        my $state = (split ' ', (<$st> // '') =~ s/^.*\) //r)[0] // '';
        close $st;
        return 0 unless $state eq 'S';
    }

    return 1;
}

my (@s, $connects);
$connects = 0;

for my $stopped (@workers) {
    my $want = @s + 20;

    for my $try (1 .. 5) {
        for (1 .. 100) {
            last if asleep($stopped);
            select(undef, undef, undef, 0.05);
        }

        # both stopped, then the other one goes on: it enters
        # epoll_wait(2) again while this one stays stopped
        kill 'STOP', @workers;
        kill 'CONT', grep { $_ != $stopped } @workers;
        eval {
            local $SIG{ALRM} = sub { die "timeout\n" };
            alarm(20);
            while (@s < $want) {
                $connects++;
                my $s = ftp_login($port, 'alice', 'pw-a');
                ftp_cmd($s, 'TYPE I');
                push @s, $s;
            }
            alarm(0);
        };
        alarm(0);
        kill 'CONT', $stopped;

        last if @s == $want;
        select(undef, undef, undef, 0.3);
    }
}
is(scalar @s, 40, '40 sessions');

my (%ports, $all_owned, $got);
$all_owned = 0;
$got = 0;

for my $round (1 .. 3) {
    for my $s (@s) {
        my $r = ftp_cmd($s, 'PASV');
        $r =~ /\((\d+),(\d+),(\d+),(\d+),(\d+),(\d+)\)/ or next;
        my $p = $5 * 256 + $6;
        my $pid = owner($p);
        $all_owned++ if $pid;
        push @{$ports{$pid}}, $p;

        my $dc = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
            Timeout => 20) or next;
        ftp_cmd($s, 'RETR f.bin');
        my $data = '';
        while (sysread($dc, $data, 65536, length $data)) { }
        close $dc;
        my $end = <$s>;
        $got++ if $data eq 'y' x $fsize && $end =~ /^226 /;
    }
}

is($all_owned, 120, 'each of 120 passive ports is held by a worker');
is($got, 120, '120 downloads whole');
is(scalar(grep { $_ } keys %ports), 2, 'clients on both workers');

# each worker's ports fall in one half of the range, a different half

my %half;
for my $pid (grep { $_ } keys %ports) {
    my %h = map { (($_ - $lo) < 20 ? 0 : 1) => 1 } @{$ports{$pid}};
    is(scalar(keys %h), 1, "worker $pid: all its ports in one slice");
    my ($which) = keys %h;
    $half{$which} = $pid;
    ok(!grep({ $_ < $lo || $_ > $hi } @{$ports{$pid}}),
        "worker $pid: all in passive_ports");
}
is(scalar(keys %half), 2, 'the two workers have different slices');

ftp_cmd($_, 'QUIT') for @s;
close $_ for @s;

# stats summed over both workers

my ($stats, $k);
for (1 .. 50) {
    $k++;
    my $r = http_get(port(8080), '/api/v1/stats');
    my ($body) = $r =~ /\r\n\r\n(.*)/s;
    $stats = eval { decode_json($body) };
    last if $stats && $stats->{connections}{active} == 1;
    select undef, undef, undef, 0.1;
}

ok($stats, 'stats');
is($stats->{workers}, 2, 'stats: two workers');
is($stats->{connections}{active}, 1,
    'stats: only this request is active once the sessions are gone');

# the listeners accepted the FTP control connections (40, and one for
# each stalled try) on both workers and $k HTTP ones; passive data
# connections are not listener accepts
is($stats->{connections}{accepted}, $connects + $k,
    'stats: connections accepted, summed over both workers, exact');
is($stats->{bytes}{sent}, 120 * $fsize,
    'stats: bytes sent: the 120 downloads, exact');

my $m = http_get(port(8080), '/metrics');
my ($acc) = $m =~ /^siftp_connections_accepted_total (\d+)$/m;
ok(defined $acc && $acc >= $stats->{connections}{accepted},
    '/metrics agrees (and counts at least the requests since)');

$t->done();
