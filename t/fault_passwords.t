#!/usr/bin/perl

# fault_passwords.t -- 200 wrong-password logins at once from 127.0.0.2,
# half over FTP, half over SFTP: the worker's memory stays bounded, the
# cap on password checks queued from one source refuses the excess (421
# over FTP, a failed authentication over SFTP, and a log line), and real
# users from 127.0.0.1 log in over FTP and SFTP meanwhile.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Select;
use POSIX qw/WNOHANG/;
use Time::HiRes qw/time sleep/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp/);
my $d = $t->testdir();

plan(skip_all => 'no curl with sftp')
    unless `curl -V 2>/dev/null` =~ /\bsftp\b/;

my $n_ftp = 100;        # wrong FTP logins from 127.0.0.2
my $n_sftp = 100;       # wrong SFTP logins from 127.0.0.2, a curl each
my $checks = 1;         # max_concurrent_password_checks

mkdir "$d/ssh";

ftp_conf($t, connections => 1024, main => <<"EOF2");
max_connections_per_address 512;
max_concurrent_password_checks $checks;
login_max_failures 10000;
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF2
ftp_user($t, 'alice', 'pw-a', 'list');

local $SIG{ALRM} = sub { die "timeout\n" };
alarm(170);

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);
my ($worker) = $t->workers();
my ($ftp, $sftp) = (port(8021), port(8022));
my $curl = 'curl -sS --max-time 120 --insecure';

sub rss_kib {
    open my $fh, '<', "/proc/$worker/status" or return 0;
    local $/;
    return <$fh> =~ /^VmRSS:\s+(\d+) kB/m ? $1 : 0;
}

# warm up: one check of each protocol, so the start counts its allocations

ok(system("$curl -o /dev/null ftp://alice:pw-a\@127.0.0.1:$ftp/") == 0
    && system("$curl -o /dev/null -u alice:pw-a sftp://127.0.0.1:$sftp/")
        == 0, 'logins work before the flood');
my $start = rss_kib();

# the flood: FTP connections that send their wrong password and wait, and
# a curl per SFTP login

my @flood;
for (1 .. $n_ftp) {
    my $s = ftp_connect($ftp, '127.0.0.2');
    ftp_cmd($s, 'USER alice');
    print $s "PASS wrong-$_\r\n";
    push @flood, $s;
}

my %kids;
for my $i (1 .. $n_sftp) {
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', '/dev/null';
        exec "$curl --interface 127.0.0.2 -u alice:wrong-$i "
            . "sftp://127.0.0.1:$sftp/";
        exit 127;
    }
    $kids{$pid} = 'flood';
}

# meanwhile, the real users from 127.0.0.1

my $began = time();
for my $proto ('ftp', 'sftp') {
    my $url = $proto eq 'ftp' ? "ftp://alice:pw-a\@127.0.0.1:$ftp/"
                              : "-u alice:pw-a sftp://127.0.0.1:$sftp/";
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        open STDOUT, '>', '/dev/null';
        open STDERR, '>', "$d/$proto.err";
        exec "$curl -o /dev/null $url";
        exit 127;
    }
    $kids{$pid} = $proto;
}

# wait for every client, watch the worker's memory, read the FTP replies

my (%rc, %took, %reply, %buf);
my $sel = IO::Select->new(@flood);
my $peak = 0;
my $sftp_failed = 0;

while (%kids || $sel->count()) {
    my $rss = rss_kib();
    $peak = $rss if $rss > $peak;

    while ((my $pid = waitpid(-1, WNOHANG)) > 0) {
        my $what = delete $kids{$pid} // next;
        if ($what eq 'flood') {
            $sftp_failed++ if $? >> 8 == 67;    # login denied
        } else {
            $rc{$what} = $? >> 8;
            $took{$what} = time() - $began;
        }
    }

    for my $f ($sel->can_read(0.2)) {
        my $got = sysread($f, $buf{$f}, 512, length($buf{$f} // ''));
        if ($buf{$f} =~ /^(\d{3}) / || !$got) {
            $reply{$1 // 'eof'}++;
            $sel->remove($f);
        }
    }
}
close $_ for @flood;

for my $proto ('ftp', 'sftp') {
    is($rc{$proto}, 0, "$proto: a login from 127.0.0.1 completes meanwhile")
        or diag($t->read_file("$proto.err"));
    cmp_ok($took{$proto} // 999, '<', 60, sprintf('%s: within 60 s (%.1f s)',
        $proto, $took{$proto} // 999));
}

# the queue holds a few checks of one source; argon2id's 64 MiB per check
# running comes on top of what the connections may take, and with the
# sanitizers AddressSanitizer's quarantine of freed memory (256 MiB)

my $asan = `@{[ $t->binary() ]} -V 2>&1` =~ /--with-sanitizers/ ? 256 : 0;
my $grew = ($peak - $start) / 1024;
diag(sprintf('VmRSS %d MiB at the start, %d MiB at the peak',
    $start / 1024, $peak / 1024));
cmp_ok($grew, '<', 64 + 64 * $checks + $asan,
    'the worker\'s memory stays bounded');

diag(join(', ', map { "$_: $reply{$_}" } sort keys %reply));
is(($reply{530} // 0) + ($reply{421} // 0), $n_ftp,
    'ftp: every wrong login answered 530 or 421');
cmp_ok($reply{421} // 0, '>=', $n_ftp / 2, 'ftp: the excess refused with 421');
is($sftp_failed, $n_sftp, 'sftp: every wrong login denied');

my $log = $t->read_file('error.log');
my $refused = () = $log =~ /password checks queued from this source, refused/g;
cmp_ok($refused, '>=', ($n_ftp + $n_sftp) / 2, "$refused refusals logged");
like($log, qr/sftp login failed for "alice"/, 'sftp: failures logged');

alarm(0);
$t->done();
