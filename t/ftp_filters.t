#!/usr/bin/perl

# ftp_filters.t -- a user's deny and hide patterns through FTP: hidden names
# are left out of listings, denied names can be neither fetched nor created.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
for my $f ('visible.txt', 'secret.txt', 'tool.exe') {
    $t->write_file("data/$f", "content of $f\n");
}

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
EOF

open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'add', 'alice', '--perms', 'list,download,upload,overwrite'
    or die;
print $fh "pw\n";
close $fh;

my $users = $t->read_file('users');
$users =~ s/^(\[alice\]\n)/$1deny = \\.exe\$\nhide = ^secret\n/m;
$t->write_file('users', $users);

$t->run();

my $port = port(8021);
my $out = `python3 - <<'PY' 2>&1
import ftplib, io
f = ftplib.FTP()
f.connect('127.0.0.1', $port, timeout=15)
f.login('alice', 'pw')
print('NLST', ' '.join(sorted(f.nlst())))
for cmd in ('RETR visible.txt', 'RETR tool.exe'):
    try:
        b = io.BytesIO()
        f.retrbinary(cmd, b.write)
        print(cmd, 'ok')
    except ftplib.error_perm as e:
        print(cmd, str(e).split()[0])
try:
    f.storbinary('STOR new.exe', io.BytesIO(b'x'))
    print('STOR new.exe ok')
except ftplib.error_perm as e:
    print('STOR new.exe', str(e).split()[0])
f.storbinary('STOR new.txt', io.BytesIO(b'x'))
print('STOR new.txt ok')
f.quit()
PY`;

like($out, qr/^NLST visible\.txt$/m, 'hidden and denied names not listed');
like($out, qr/^RETR visible\.txt ok$/m, 'an ordinary file downloads');
like($out, qr/^RETR tool\.exe 550$/m, 'a denied name cannot be fetched');
like($out, qr/^STOR new\.exe 55\d$/m, 'nor created');
like($out, qr/^STOR new\.txt ok$/m, 'an ordinary upload works');
ok(!-e "$d/data/new.exe", 'no denied file on disk');

$t->done();
