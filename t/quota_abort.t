#!/usr/bin/perl

# quota_abort.t -- an upload cut mid-way (the client's control connection
# closed during STOR) leaves nothing under its name and gives back what
# it charged to the user's quota, once: on S3 (a multipart upload
# aborted) and on a posix disk (a temporary file removed), the usage the
# admin API shows is the one before the upload; a complete upload after
# it is charged as usual.  An append cut mid-way gives back its growth
# on S3, which keeps the object as it was, and keeps it charged on
# posix, which keeps the bytes.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep time/;
use Test::Siftpd qw/port http_raw/;
use Test::Siftpd::FTP qw/ftp_upload_start/;
use Test::Siftpd::S3 qw/s3_proxied s3_keys s3_put s3_storage/;

my $t = Test::Siftpd->new()->has('ftp', 'http', 's3_storage');
my $d = $t->testdir();

my ($moto) = s3_proxied($t);

mkdir "$d/data";
mkdir "$d/data/pat";

my $cloud = s3_storage('cloud', $moto, 's3_part_size 5m');

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
$cloud
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage cloud; } }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

my $perms = 'list,download,upload,overwrite,delete';
$t->user_add('bob', 'pw', perms => $perms, storage => 'cloud');
$t->user_add('pat', 'pw', perms => $perms, storage => 'local');
my $users = $t->read_file('users');
$users =~ s/^(\[(bob|pat)\]\n)/$1quota_bytes = 10000000\nquota_files = 10\n/mg;
$t->write_file('users', $users);

$t->write_file('empty', '');
s3_put($moto, 'srv/bob/', "$d/empty");
$t->write_file('f100000', 'x' x 100000);

$t->run();

# the usage the admin API shows for a user: "BYTES FILES", '' until known
sub usage {
    my ($user) = @_;
    my $r = http_raw(port(8080), "GET /api/v1/users/$user HTTP/1.1\r\n"
        . "Host: x\r\nConnection: close\r\n\r\n") // '';
    return $r =~ /"usage":\s*\{[^}]*"bytes":\s*(\d+),\s*"files":\s*(\d+)/
        ? "$1 $2" : '';
}

# the same once it is $want (or anything but $want, with $not), within 10 s
sub usage_until {
    my ($user, $want, $not) = @_;
    my ($v, $end) = ('', time() + 10);
    while (time() < $end) {
        $v = usage($user);
        last if $not ? $v ne '' && $v ne $want : $v eq $want;
        sleep 0.1;
    }
    return $v;
}

# STOR (or $verb) of $name left running with 300000 bytes sent; once the
# usage shows their charge, the control connection closed before the data
# one
sub cut_upload {
    my ($user, $name, $before, $verb) = @_;
    my ($s, $dc) = ftp_upload_start(port(8021), $user, 'pw', $name,
        'y' x 300000, $verb);
    my $raised = usage_until($user, $before, 1);
    close $s;
    close $dc;
    return $raised;
}

for my $u (['bob', 'S3'], ['pat', 'posix']) {
    my ($user, $kind) = @$u;
    my $url = "ftp://$user:pw\@127.0.0.1:" . port(8021) . '/first';
    my $out = `curl -sS --max-time 60 -T $d/f100000 $url 2>&1`;
    is($? >> 8, 0, "$kind: 100000 bytes stored") or diag($out);
    is(usage_until($user, '100000 1'), '100000 1',
        "$kind: the usage is 100000 bytes in 1 file");

    my $raised = cut_upload($user, 'cut', '100000 1');
    like($raised, qr/^\d+ 2$/, "$kind: the cut upload was charged "
        . "($raised)");
    is(usage_until($user, '100000 1'), '100000 1',
        "$kind: cut, it gave back what it charged");
    ok($t->wait_log(qr/"cut" \d+ bytes, aborted/, 10),
        "$kind: the upload was aborted");

    $url =~ s{/first$}{/second};
    $out = `curl -sS --max-time 60 -T $d/f100000 $url 2>&1`;
    is($? >> 8, 0, "$kind: 100000 bytes more stored") or diag($out);
    is(usage_until($user, '200000 2'), '200000 2',
        "$kind: charged once more, nothing of the cut upload left");
}

my %k = s3_keys($moto, 'srv/bob/');
is(join(' ', sort grep { $_ ne 'srv/bob/' } keys %k),
    'srv/bob/first srv/bob/second',
    'S3: no object of the cut upload');
ok(!-e "$d/data/pat/cut", 'posix: no file of the cut upload');

# an append cut mid-way: S3 keeps the object as it was (its upload is
# staged), so the growth is given back; posix keeps the bytes written,
# and their charge

my $raised = cut_upload('bob', 'first', '200000 2', 'APPE');
like($raised, qr/^\d+ 2$/, "S3: the cut append was charged ($raised)");
is(usage_until('bob', '200000 2'), '200000 2',
    'S3: cut, the append gave back its growth');
%k = s3_keys($moto, 'srv/bob/');
is($k{'srv/bob/first'}, 100000, 'S3: the object is as it was');

$raised = cut_upload('pat', 'first', '200000 2', 'APPE');
my $size = -s "$d/data/pat/first";
ok($size > 100000, "posix: the cut append left the file at $size bytes");
is(usage_until('pat', 100000 + $size . ' 2'), 100000 + $size . ' 2',
    'posix: and its growth stays charged');

$t->done();
