#!/usr/bin/perl

# digest_cancel.t -- a digest stops when its session goes away: with one
# thread in the pool, a HASH of a 1 TiB sparse file whose client left
# would hold the thread for many minutes; the next session's HASH is
# answered as soon as the first digest has stopped.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_cmd ftp_connect/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

ftp_conf($t, main => 'thread_pool default threads=1 max_queue=16;');
ftp_user($t, 'alice', 'pw-a', 'list,download');

$t->write_file('data/alice/check', '123456789');
truncate_big("$d/data/alice/big") or plan(skip_all => 'no sparse file');

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub truncate_big {
    my ($path) = @_;

    open my $f, '>', $path or return 0;
    my $ok = truncate($f, 1 << 40);
    close $f;

    return $ok;
}

sub login {
    my $s = ftp_connect($port);
    ftp_cmd($s, 'USER alice');
    return (ftp_cmd($s, 'PASS pw-a') =~ /^230 /) ? $s : undef;
}

# the first client asks for the digest of the big file and leaves

my $s = login();
ok($s, 'login');
print $s "HASH big\r\n";
select(undef, undef, undef, 0.5);
close $s;

# the second one is answered once the first digest has stopped: the
# limit is far above a stop, far below hashing a TiB

$s = login();
ok($s, 'a second login while the first digest runs');

local $SIG{ALRM} = sub { die "timeout\n" };
my $r = eval {
    alarm(60);
    my $reply = ftp_cmd($s, 'OPTS HASH CRC32') . ftp_cmd($s, 'HASH check');
    alarm(0);
    $reply;
} // '';

like($r, qr/^213 CRC32 0-8 cbf43926 check\r$/m,
    'HASH answered: the abandoned digest stopped');

close $s;

$t->done();
