#!/usr/bin/perl

# fault_reload.t -- 20 reloads while 50 transfers run (FTP downloads and
# uploads, SFTP downloads and uploads): none fails, every file arrives
# byte for byte, and the master ends with its two workers.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_login/;
use Test::Siftpd::Transfers;

my $t = Test::Siftpd->new()->has(qw/ftp sftp/);

plan(skip_all => 'curl without sftp')
    unless `curl -V 2>&1` =~ /^Protocols:.*\bsftp\b/m;

local $SIG{ALRM} = sub { die "fault_reload.t timed out\n" };
alarm(150);

my $reloads = 20;

Test::Siftpd::Transfers::conf($t);

$t->user_add('alice', 'pw-a', perms => 'list,download,upload,overwrite');
my $key = $t->user_key('alice');

# 2 MB at 100 KB/s: about 20 s each, the reloads come within them

my $ftp = port(8021);
my $x = Test::Siftpd::Transfers->new($t, n => 50, protos => [qw/ftp sftp/],
    ftp => $ftp, sftp => port(8022), key => $key, rate => 100 * 1024);

$t->run();
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 20), 'two workers');

close(ftp_login($ftp, 'alice', 'pw-a'));

$x->start();
ok($x->midway(), '50 transfers running');

# each reload is done (its workers started) before the next is sent

my $done = 0;

for my $k (1 .. $reloads) {
    $t->reload();
    last unless $t->wait_for(sub {
        $k == (() = $t->read_file('error.log') =~ /reconfiguring/g)
    }, 20);
    $done = $k;
}

is($done, $reloads, "$reloads reloads");

# not exited (a zombie has: its curl is not reaped yet)
sub running {
    my ($pid) = @_;
    open my $fh, '<', "/proc/$pid/stat" or return 0;
    return <$fh> =~ /\) [^Z]/;
}

my $running = grep { running($_->{pid}) } $x->list();
ok($running, "transfers still running after the reloads ($running)");

is(join("\n", $x->finish()), '', 'all 50 transfers complete, byte for byte');
unlike($t->read_file('error.log'), qr/reload failed/, 'no reload failed');
ok($t->wait_for(sub { scalar($t->workers()) == 2 }, 30),
    'the old workers are gone, two new ones serve');

alarm(0);
$t->done();
