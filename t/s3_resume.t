#!/usr/bin/perl

# s3_resume.t -- uploads resumed on the s3 storage driver without
# sending the old bytes again, against moto (t/s3_storage.py): OpenSSH
# sftp reput after a first upload of a prefix, of a 7 MiB file (its old
# bytes copied by S3) and of a 300 KB one (read into the first part);
# reget of a download cut short; curl -C - and ftplib REST + STOR at the
# end of a small object; paramiko opens without TRUNC (WinSCP's resume)
# writing at the object's end, at 0 (a new object that replaces it
# whole), elsewhere (refused as unsupported with the message, the
# object unchanged), and not at all (unchanged).  Each result is read
# back through moto's API, byte-identical.  Every process is stopped by
# pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_object s3_bytes s3_ftp_sftp/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $s3, 's3_part_size 5m', 's3_retries 1', 's3_timeout 30s') ]}
@{[ s3_ftp_sftp('cloud') ]}
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
my $key = $t->user_key('bob');

# what moto holds, read through its API, not through siftpd

sub object {
    return s3_object($s3, "srv/bob/$_[0]") // 'none';
}

$t->run();

my $ftp = port(8021);
my $sftp = port(8022);

# OpenSSH sftp: a first upload cut short (a prefix), then reput

my $seven = s3_bytes(7, 7 * 1024 * 1024);
my $small = s3_bytes(3, 300 * 1000);
$t->write_file('seven', $seven);
$t->write_file('seven.part', substr($seven, 0, 6 * 1024 * 1024));
$t->write_file('small', $small);
$t->write_file('small.part', substr($small, 0, 100 * 1000));

my ($rc, $out) = $t->sftp_batch($sftp, 'bob',
    "put $d/seven.part seven\nput $d/small.part small2\n");
is($rc, 0, 'the first uploads, of prefixes') or diag($out);
ok(object('seven') eq substr($seven, 0, 6 * 1024 * 1024)
    && object('small2') eq substr($small, 0, 100 * 1000),
    'the prefixes are in the bucket');

($rc, $out) = $t->sftp_batch($sftp, 'bob',
    "reput $d/seven seven\nreput $d/small small2\n");
is($rc, 0, 'OpenSSH sftp reput ran') or diag($out);
ok(object('seven') eq $seven,
    'reput of a 7 MiB file after 6 MiB: byte-identical');
ok(object('small2') eq $small,
    'reput of a 300 KB file after 100 KB: byte-identical');

# reget: a download cut short goes on from its end

$t->write_file('seven.got', substr($seven, 0, 3 * 1024 * 1024));
($rc, $out) = $t->sftp_batch($sftp, 'bob', "reget seven $d/seven.got\n");
is($rc, 0, 'OpenSSH sftp reget ran') or diag($out);
ok($t->read_file('seven.got') eq $seven, 'reget: byte-identical');

# FTP: curl -C - and ftplib REST + STOR at the end of a small object

my $c200 = s3_bytes(2, 200 * 1000);
$t->write_file('c200', $c200);
$t->write_file('c200.part', substr($c200, 0, 50 * 1000));
system("curl -s --max-time 60 -T $d/c200.part ftp://bob:pw\@127.0.0.1:$ftp/c200");
system("curl -s --max-time 60 -C - -T $d/c200 ftp://bob:pw\@127.0.0.1:$ftp/c200");
is($? >> 8, 0, 'curl -C - ran');
ok(object('c200') eq $c200, 'curl -C - after 50 KB: byte-identical');

$t->write_file('rest.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=30)
f.login('bob', 'pw')
data = open(sys.argv[2], 'rb').read()
f.storbinary('STOR rest', io.BytesIO(data[:1000]))
print(f.storbinary('STOR rest', io.BytesIO(data[1000:]), rest=1000))
f.quit()
PY
$out = `timeout 60 /usr/bin/python3 $d/rest.py $ftp $d/c200 2>&1`;
like($out, qr/^226/m, 'REST 1000 + STOR: 226') or diag($out);
ok(object('rest') eq $c200, 'REST + STOR after 1000 bytes: byte-identical');

# SFTP opens without TRUNC: the first write decides

$t->write_file('open.py', <<'PY');
import paramiko, sys
sys.path.insert(0, sys.argv[4])
import sftp_raw

port, key, testdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
data = open(testdir + '/c200', 'rb').read()

t = sftp_raw.login(port, key, 'bob')
s = paramiko.SFTPClient.from_transport(t)

with s.open('wins', 'wb') as f:
    f.write(data[:70000])

with s.open('wins', 'r+') as f:             # WRITE, no TRUNC
    f.seek(70000)
    f.write(data[70000:])
sftp_raw.check('an open without TRUNC, written at the end, closed', True)

with s.open('wins', 'r+') as f:
    pass
sftp_raw.check('an open without TRUNC and no write, closed', True)
sftp_raw.check('no write: the object unchanged',
               s.stat('wins').st_size == len(data))

try:
    with s.open('wins', 'r+') as f:
        f.seek(500)
        f.write(b'x' * 100)
        f.flush()
    sftp_raw.check('a write in the middle refused', False)
except IOError as e:
    sftp_raw.check('a write in the middle refused: ' + str(e),
                   'not supported' in str(e))

with s.open('over', 'wb') as f:
    f.write(data)
with s.open('over', 'r+') as f:
    f.write(b'new start')
sftp_raw.check('an open without TRUNC, written at 0, closed', True)

s.close()
t.close()
PY
my ($n, $pyout) = $t->python_checks('open.py', $sftp, $key, $d,
    Cwd::getcwd() . '/t/lib');
ok($n == 5, 'the SFTP open checks ran') or diag($pyout);
ok(object('wins') eq $c200,
    'written at the end without TRUNC: the old bytes and the new ones');
ok($t->wait_log(qr/"srv\/bob\/wins" is written at 0 \(a new object\) or at its end \(200000\) only, not at 500/),
    'a write in the middle: its line');
is(object('over'), 'new start',
    'written at 0 without TRUNC: a new object, the old one replaced');

$t->done();
