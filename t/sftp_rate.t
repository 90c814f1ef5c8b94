#!/usr/bin/perl

# sftp_rate.t -- a user's download_rate and upload_rate over SFTP: with
# 200k each, 1 MiB downloaded and uploaded with OpenSSH's sftp (64 READs
# or WRITEs of up to 255 KiB in flight) takes no less than 4 seconds
# each way and arrives byte for byte; a user without rates is not held
# back (only checked to complete).  Lower bounds only.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Time::HiRes qw/time/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client')
    unless system('sftp -h 2>/dev/null; ssh-keygen -? 2>/dev/null') != -1
        && -x '/usr/bin/sftp';

mkdir "$d/data";
mkdir "$d/data/slow";
mkdir "$d/data/fast";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF2

my $perms = 'list,download,upload,overwrite,delete';
$t->user_add('slow', 'pw', perms => $perms);
$t->user_add('fast', 'pw', perms => $perms);
$t->user_key('slow');
$t->user_key('fast');

my $users = $t->read_file('users');
$users =~ s/^\[slow\]\n/[slow]\ndownload_rate = 200k\nupload_rate = 200k\n/m
    or die;
$t->write_file('users', $users);

my $data = join('', map { pack('N', $_ * 2654435761 % 4294967296) }
                    0 .. 262143);
$t->write_file('one', $data);
$t->write_file('data/slow/one', $data);
$t->write_file('data/fast/one', $data);

$t->run();
my $port = port(8022);

# the sftp batch's exit code, its output and how long it took
sub sftp {
    my ($user, $batch) = @_;
    my $start = time();
    my ($rc, $out) = $t->sftp_batch($port, $user, $batch);
    return ($rc, $out, time() - $start);
}

my ($rc, $out, $took) = sftp('slow', "get one $d/got-slow\n");
is($rc, 0, 'rate-limited download') or diag($out);
ok($took >= 4, 'download_rate 200k: 1 MiB in no less than 4 s')
    or diag("took $took s");
note("download: $took s");
is($t->read_file('got-slow'), $data, 'the limited download is the file');

($rc, $out, $took) = sftp('slow', "put $d/one up\n");
is($rc, 0, 'rate-limited upload') or diag($out);
ok($took >= 4, 'upload_rate 200k: 1 MiB in no less than 4 s')
    or diag("took $took s");
is($t->read_file('data/slow/up'), $data, 'the limited upload is the file');

($rc, $out) = sftp('fast', "get one $d/got-fast\nput $d/one up\n");
is($rc, 0, 'a user without rates downloads and uploads') or diag($out);
is($t->read_file('got-fast'), $data, 'the download is the file');
is($t->read_file('data/fast/up'), $data, 'the upload is the file');

$t->done();

