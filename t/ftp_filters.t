#!/usr/bin/perl

# ftp_filters.t -- a user's deny and hide patterns through FTP: hidden names
# are left out of listings, denied names can be neither fetched nor created;
# a directory's own patterns apply to the names in it, whatever the
# session's current directory.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";
mkdir "$d/data/pub";
for my $f ('visible.txt', 'secret.txt', 'tool.exe', 'private.txt',
    'pub/private.txt', 'pub/open.txt')
{
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
$users .= "deny /pub = ^private\n";
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

def retr(name):
    try:
        b = io.BytesIO()
        f.retrbinary('RETR ' + name, b.write)
        return 'ok'
    except ftplib.error_perm as e:
        return str(e).split()[0]

print('ROOT', retr('private.txt'), retr('pub/private.txt'),
      retr('pub/open.txt'))
print('NLST pub', ' '.join(sorted(x.split('/')[-1] for x in f.nlst('pub'))))
f.cwd('pub')
print('PUB', retr('/private.txt'), retr('private.txt'))
print('NLST /', ' '.join(sorted(f.nlst('/'))))
f.quit()
PY`;

like($out, qr/^NLST private\.txt pub visible\.txt$/m,
    'hidden and denied names not listed');
like($out, qr/^RETR visible\.txt ok$/m, 'an ordinary file downloads');
like($out, qr/^RETR tool\.exe 550$/m, 'a denied name cannot be fetched');
like($out, qr/^STOR new\.exe 55\d$/m, 'nor created');
like($out, qr/^STOR new\.txt ok$/m, 'an ordinary upload works');
ok(!-e "$d/data/new.exe", 'no denied file on disk');

like($out, qr/^ROOT ok 550 ok$/m,
    'from /: /pub\'s pattern denies pub/private.txt only');
like($out, qr/^NLST pub open\.txt$/m, 'and leaves it out of pub\'s listing');
like($out, qr/^PUB ok 550$/m,
    'from /pub: /private.txt is allowed, private.txt denied');
like($out, qr/^NLST \/ new\.txt private\.txt pub visible\.txt$/m,
    'a listing of / from /pub uses /\'s patterns');

$t->done();
