#!/usr/bin/perl

# ftp_sessions.t -- 1000 concurrent FTP sessions on one worker: all are
# greeted, all log in (one argon2id check, then the verification cache),
# all answer a command while the others stay open, a sample transfers
# files, and the worker still serves a new session afterwards.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use IO::Select;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

my $n = $ENV{TEST_FTP_SESSIONS} || 1000;

ftp_conf($t, connections => 1100,
    main => "worker_rlimit_nofile 4096;\nmax_connections_per_address 1100;");
ftp_user($t, 'alice', 'pw-a', 'list,download');

$t->write_file('data/alice/f.txt', "x" x 10000);

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);
my ($worker) = $t->workers();

# one reply line from each socket of a set, in any order, bounded by
# count and time; what is read past that line stays for the next call

my (%pending, %last);

sub replies {
    my ($socks, $re) = @_;
    my %left = map { ("$_" => $_) } @$socks;
    my $good = 0;
    my $sel = IO::Select->new();

    my $take = sub {
        my ($s) = @_;
        $pending{"$s"} //= '';
        return 0 unless $pending{"$s"} =~ s/^([^\n]*\n)//;
        $last{"$s"} = $1;
        $good++ if $1 =~ $re;
        delete $left{"$s"};
        return 1;
    };

    for my $s (@$socks) {
        $sel->add($s) unless $take->($s);
    }

    for (1 .. 2400) {
        last unless %left;
        for my $s ($sel->can_read(0.05)) {
            my $got = sysread($s, $pending{"$s"}, 4096,
                              length $pending{"$s"});
            if (!$got) {
                $sel->remove($s);
                delete $left{"$s"};
                next;
            }
            $sel->remove($s) if $take->($s);
        }
    }

    return $good;
}

# connect them all first, then read the greetings

my @s;
for (1 .. $n) {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Timeout => 20);
    last unless $s;
    push @s, $s;
}
is(scalar @s, $n, "$n control connections open at once");
is(replies(\@s, qr/^220 /), $n, "$n greetings");

# the first login runs argon2id and fills the cache; the rest hit it

syswrite($s[0], "USER alice\r\n");
replies([$s[0]], qr/^331 /);
syswrite($s[0], "PASS pw-a\r\n");
is(replies([$s[0]], qr/^230 /), 1, 'the first login');

syswrite($_, "USER alice\r\n") for @s[1 .. $#s];
is(replies([@s[1 .. $#s]], qr/^331 /), $n - 1, 'USER on all the others');
syswrite($_, "PASS pw-a\r\n") for @s[1 .. $#s];
is(replies([@s[1 .. $#s]], qr/^230 /), $n - 1,
    'all the others logged in (from the verification cache)');

my $log = $t->read_file('error.log');
my $cached = () = $log =~ /password accepted \(cached\)/g;
is($cached, $n - 1, 'the log says they came from the cache');

# every session answers while all are open

syswrite($_, "NOOP\r\n") for @s;
is(replies(\@s, qr/^200 /), $n, "NOOP on all $n sessions");

# one process serves them all

is(scalar($t->workers()), 1, 'still one worker');
my $fds = () = glob("/proc/$worker/fd/*");
ok($fds >= $n, "the worker holds $fds descriptors") if -d "/proc/$worker/fd";

# a sample of 20 downloads over passive connections, all at once

my @sample = @s[map { int($_ * $n / 20) } 0 .. 19];
my @dc;
syswrite($_, "TYPE I\r\n") for @sample;
replies(\@sample, qr/^200 /);
syswrite($_, "EPSV\r\n") for @sample;

is(replies(\@sample, qr/^229 /), 20, '20 EPSV replies');
my @ports = map { $last{"$_"} =~ /\(\|\|\|(\d+)\|\)/ ? $1 : 0 } @sample;

for my $p (@ports) {
    push @dc, IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
        Timeout => 20);
}
syswrite($_, "RETR f.txt\r\n") for @sample;
is(replies(\@sample, qr/^150 /), 20, '20 downloads started');

my $bytes_ok = 0;
for my $c (@dc) {
    next unless $c;
    my $data = '';
    while (sysread($c, $data, 65536, length $data)) { }
    $bytes_ok++ if $data eq "x" x 10000;
}
is($bytes_ok, 20, '20 files received whole');
is(replies(\@sample, qr/^226 /), 20, '20 transfers complete');

# all go away; a new session is served

syswrite($_, "QUIT\r\n") for @s;
is(replies(\@s, qr/^221 /), $n, "$n QUIT");
close $_ for @s;

my ($s, $g) = ftp_connect($port);
like($g, qr/^220 /, 'a new session afterwards');
like(ftp_cmd($s, 'QUIT'), qr/^221 /, 'QUIT');

$t->done();
