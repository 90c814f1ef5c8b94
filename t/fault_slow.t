#!/usr/bin/perl

# fault_slow.t -- 500 connections that never log in, spread over FTP,
# implicit FTPS (a TLS handshake that stalls), SFTP (an SSH banner that
# never comes) and HTTP (a request that never ends), half of them sending
# one byte and then nothing: each is closed by its protocol's login or
# header timeout (3 s here), and a normal FTP login and SFTP login complete
# meanwhile.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Select;
use IO::Socket::INET;
use Time::HiRes qw/time sleep/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_login ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp http/);
my $d = $t->testdir();

plan(skip_all => 'no sftp') unless -x '/usr/bin/sftp';

my $n = 500;            # slow connections; the test holds them all
my $timeout = 3;        # seconds, every protocol's login timeout
my $grace = 30;         # seconds past the timeout for the last close

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/ssh";

$t->write_file_expand('siftpd.conf', <<"EOF2");
%%TEST_GLOBALS%%
worker_processes 1;
worker_rlimit_nofile 4096;
events { worker_connections 1024; }
users %%TESTDIR%%/users;
max_connections_per_address 1000;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    ssl_certificate      %%TESTDIR%%/tls/cert.pem;
    ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
    ssl_self_signed      on;
    storage              local;
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        listen 127.0.0.1:%%PORT_8990%% ssl;
        login_timeout ${timeout}s;
        tls_login optional;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time ${timeout}s;
    }
}
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        client_header_timeout ${timeout}s;
    }
}
EOF2

$t->user_add('alice', 'pw-a', perms => 'list,download');
my $key = $t->user_key('alice');

local $SIG{ALRM} = sub { die "timeout\n" };
alarm(150);

$t->run();

# each protocol: its port and the one byte a stalled client sends
my @protos = ([ftp => port(8021), 'U'], [ftps => port(8990), "\x16"],
    [sftp => port(8022), 'S'], [http => port(8080), 'G']);

my (@slow, %proto_of, %open_at);
my $opened = time();

for my $i (0 .. $n - 1) {
    my ($name, $port, $byte) = @{$protos[$i % @protos]};
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Timeout => 10) or last;
    $s->blocking(0);
    syswrite($s, $byte) if int($i / @protos) % 2;
    push @slow, $s;
    $proto_of{$s} = $name;
    $open_at{$s} = time();
}

is(scalar(@slow), $n, "$n slow connections open");

# meanwhile, real users log in

my $r = eval {
    my $s = ftp_login(port(8021), 'alice', 'pw-a');
    my $r = ftp_cmd($s, 'PWD');
    ftp_cmd($s, 'QUIT');
    $r;
} // "failed: $@";
like($r, qr/^257 /, 'an FTP login completes meanwhile');

$t->write_file('batch', "pwd\n");
my $port = port(8022);
my $o = `timeout 20 sftp -b $d/batch -P $port -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $key alice\@127.0.0.1 2>&1`;
like($o, qr{Remote working directory: /}, 'an SFTP login completes meanwhile')
    or diag($o);

# every slow connection is closed by the server

my $sel = IO::Select->new(@slow);
my (%closed, %buf);
my $soonest = $timeout;

while ($sel->count() && time() < $opened + $timeout + $grace) {
    for my $s ($sel->can_read(1)) {
        my $got = sysread($s, $buf{$s}, 4096, length($buf{$s} // ''));
        next if defined $got && $got > 0;
        next if !defined $got && $!{EAGAIN};
        $closed{$proto_of{$s}}++;
        $soonest = time() - $open_at{$s} if time() - $open_at{$s} < $soonest;
        $sel->remove($s);
    }
}

for my $p (@protos) {
    is($closed{$p->[0]} // 0, $n / @protos,
        "$p->[0]: every slow connection closed by its timeout");
}

# a lower bound only: a loaded machine closes them later, never sooner
cmp_ok($soonest, '>', $timeout - 1,
    sprintf('none closed before its timeout (the first after %.1f s)',
        $soonest));

my @ftp = grep { $proto_of{$_} eq 'ftp' } @slow;
is(scalar(grep { ($buf{$_} // '') =~ /^421 Login timeout/m } @ftp),
    scalar(@ftp), 'ftp: each told 421 before the close');

my $log = $t->read_file('error.log');
for my $l (['ftp', 'login timeout'], ['ftps', 'TLS handshake timed out'],
    ['sftp', 'login grace time over'], ['http', 'client timed out'])
{
    my $lines = () = $log =~ /\] \d+#\d+: \*\d+ \Q$l->[1]\E, client: /g;
    is($lines, $n / @protos, "$l->[0]: one log line per timeout");
}

close $_ for @slow;
alarm(0);

$t->done();
