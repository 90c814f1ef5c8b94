#!/usr/bin/perl

# s3_storage_upload.t -- uploads into the s3 storage driver against moto
# (t/s3_storage.py, its "upload" bucket): FTP STOR (curl -T) of 0 bytes,
# 5000 bytes and 20 MiB (a multipart upload of 5 MiB parts) read back
# byte-identical from moto and listed; OpenSSH sftp put and paramiko
# pipelined writes of 12 MiB; paramiko writes out of order within the
# window taken, one far behind refused as unsupported with nothing left
# under the name; a data connection cut half-way leaves no object and no
# multipart upload; APPE to a 6 MiB object and REST + STOR at its end
# give the concatenation, and so does APPE to a small one (its bytes
# read into the first part); an exclusive SFTP open of an existing name
# refused; a multipart
# upload older than s3_multipart_sweep_age aborted by the worker's start,
# with one line; the worker's peak memory during a 200 MiB upload under
# two parts and a margin; renames of files by FTP and SFTP (one onto an
# existing name), of an empty directory.  Every process is stopped by
# pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_object s3_status
    s3_uploads s3_create_upload s3_head s3_bytes s3_ftp_sftp/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $s3, 's3_part_size 5m', 's3_multipart_sweep_age 1s', 's3_retries 1', 's3_timeout 30s') ]}
@{[ s3_ftp_sftp('cloud') ]}
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('carol', 'pw', perms => 'list,download,upload,rename',
    storage => 'cloud', home => '/bob');
my $key = $t->user_key('bob');

# what moto holds, read through its API, not through siftpd

sub object {
    return s3_object($s3, "srv/bob/$_[0]") // 'none';
}

sub status {
    return s3_status($s3, "srv/bob/$_[0]");
}

sub multipart_uploads {
    return s3_uploads($s3);
}

# a multipart upload left behind, older than the sweep's age at the start

s3_create_upload($s3, 'srv/bob/stale');
is(multipart_uploads(), 1, 'a multipart upload left behind');
sleep(2);

$t->run();

ok($t->wait_log(qr/\[info\] .*S3 storage "cloud": 1 multipart uploads older than 1s aborted under "srv\/"/, 30),
    'the sweep at the start: one line with the count');
is(multipart_uploads(), 0, 'the sweep at the start: the upload aborted');

my $ftp = port(8021);
my $sftp = port(8022);

# FTP STOR: a PutObject, and a multipart upload of four parts

my $big = s3_bytes(7, 20 * 1024 * 1024);

for my $case (['zero', ''], ['s5000', s3_bytes(5, 5000)], ['s20m', $big]) {
    my ($name, $data) = @$case;
    $t->write_file("up-$name", $data);
    system("curl -s --max-time 120 -T $d/up-$name ftp://bob:pw\@127.0.0.1:$ftp/$name");
    is($? >> 8, 0, "curl STOR of " . length($data) . " bytes");
    ok(object($name) eq $data,
        "STOR of " . length($data) . " bytes: byte-identical in the bucket");
}

my $list = `curl -s --max-time 60 -l ftp://bob:pw\@127.0.0.1:$ftp/`;
ok($list =~ /^zero\r?$/m && $list =~ /^s5000\r?$/m && $list =~ /^s20m\r?$/m,
    'the uploads are listed') or diag($list);
is(multipart_uploads(), 0, 'no multipart upload left behind');

# a data connection cut half-way: nothing, and no multipart upload

$t->write_file('cut.py', <<'PY');
import ftplib, socket, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=30)
f.login('bob', 'pw')
f.voidcmd('TYPE I')
c = f.transfercmd('STOR cut')
chunk = b'x' * 65536
for i in range(160):                      # 10 MiB of a larger file
    c.sendall(chunk)
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b'\x01\x00\x00\x00\x00\x00\x00\x00')
c.close()
try:
    print(f.getresp())
except ftplib.all_errors as e:
    print(str(e))
f.close()
PY
my $cut = `timeout 60 /usr/bin/python3 $d/cut.py $ftp 2>&1`;
ok($t->wait_for(sub { multipart_uploads() == 0 }, 30),
    'a cut upload: its multipart upload aborted') or diag($cut);
is(status('cut'), '404', 'a cut upload: no object');

# APPE and REST + STOR at the end of a 6 MiB object: copies, then the rest

my $six = $t->read_file('six');

$t->write_file('tail', 'tail-of-the-object');
system("curl -s --max-time 60 -T $d/tail --append ftp://bob:pw\@127.0.0.1:$ftp/six");
ok(object('six') eq $six . 'tail-of-the-object',
    'APPE to a 6 MiB object: the concatenation');

$t->write_file('rest.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=30)
f.login('bob', 'pw')
f.storbinary('STOR six', io.BytesIO(b'more'), rest=int(sys.argv[2]))
try:
    f.storbinary('STOR six', io.BytesIO(b'more'), rest=100)
    print('accepted')
except ftplib.all_errors as e:
    print(str(e))
f.quit()
PY
my $rest = `timeout 60 /usr/bin/python3 $d/rest.py $ftp @{[ length($six) + 18 ]} 2>&1`;
ok(object('six') eq $six . 'tail-of-the-objectmore',
    'REST at the end + STOR: the concatenation') or diag($rest);
like($rest, qr/^55\d/m, 'REST elsewhere + STOR: refused');

my $out = `curl -s -S --max-time 60 -T $d/tail --append ftp://bob:pw\@127.0.0.1:$ftp/small 2>&1`;
is($? >> 8, 0, 'APPE to a small object: accepted') or diag($out);
is(object('small'), 'smalltail-of-the-object',
    'APPE to a small object: its bytes, then the new ones');

# SFTP: OpenSSH put, paramiko pipelined and out of order, refusals

my $twelve = s3_bytes(12, 12 * 1024 * 1024);
$t->write_file('twelve', $twelve);

my ($rc, $sout) = $t->sftp_batch($sftp, 'bob', "put $d/twelve put12\n");
is($rc, 0, 'OpenSSH sftp put ran') or diag($sout);
ok(object('put12') eq $twelve, 'OpenSSH sftp put of 12 MiB: byte-identical');

$t->write_file('sftp.py', <<'PY');
import paramiko, sys
sys.path.insert(0, sys.argv[4])
import sftp_raw

port, key, testdir = int(sys.argv[1]), sys.argv[2], sys.argv[3]
twelve = open(testdir + '/twelve', 'rb').read()

def check(cond, what):
    sftp_raw.check(what, cond)

t = sftp_raw.login(port, key, 'bob')
s = paramiko.SFTPClient.from_transport(t)

with s.open('pipe12', 'wb') as f:
    f.set_pipelined(True)
    for off in range(0, len(twelve), 65536):
        f.write(twelve[off:off + 65536])
check(True, 'paramiko pipelined writes of 12 MiB closed')

# out of order within the window: each pair of 64 KiB pieces swapped

data = twelve[:2 * 1024 * 1024]
with s.open('swap', 'wb') as f:
    for off in range(0, len(data), 131072):
        f.seek(off + 65536)
        f.write(data[off + 65536:off + 131072])
        f.seek(off)
        f.write(data[off:off + 65536])
check(True, 'paramiko writes out of order closed')

try:
    with s.open('back', 'wb') as f:
        f.write(twelve[:11 * 1024 * 1024])
        f.seek(0)
        f.write(b'x' * 100)
        f.flush()
    check(False, 'a write far back refused')
except IOError as e:
    check('support' in str(e).lower() or 'offset' in str(e).lower(),
          'a write far back refused: ' + str(e))

try:
    s.open('six', 'wx')
    check(False, 'an exclusive open of an existing name refused')
except IOError as e:
    check(True, 'an exclusive open of an existing name refused: ' + str(e))

s.close()
t.close()
PY

my ($c, $pyout) = $t->python_checks('sftp.py', $sftp, $key, $d,
    Cwd::getcwd() . '/t/lib');
ok($c == 4, 'the SFTP checks ran') or diag($pyout);
ok(object('pipe12') eq $twelve,
    'paramiko pipelined writes of 12 MiB: byte-identical');
ok(object('swap') eq substr($twelve, 0, 2 * 1024 * 1024),
    'paramiko writes out of order within the window: byte-identical');
ok($t->wait_for(sub { status('back') eq '404' && multipart_uploads() == 0 },
        30), 'a write far back: nothing under the name, no upload left');
ok(object('six') eq $six . 'tail-of-the-objectmore',
    'an exclusive open: the object unchanged');

# renames: CopyObject and DELETE, replacing an existing name when the
# user may overwrite; a directory (t/s3_rename.t has more)

my $out2 = $t->ftp_commands($ftp, 'bob', 'RNFR s5000', 'RNTO renamed',
    'MKD d', 'RNFR d', 'RNTO d2');
like($out2, qr/^RNTO renamed 250$/m, 'FTP rename of a file: 250');
ok(object('renamed') eq $t->read_file('up-s5000')
    && status('s5000') eq '404', 'FTP rename: the object moved');
like($out2, qr/^RNTO d2 250$/m, 'FTP rename of an empty directory: 250');
is(status('d2/'), '200', 'FTP rename of an empty directory: its marker moved');

$out2 = $t->ftp_commands($ftp, 'carol', 'RNFR renamed', 'RNTO zero');
like($out2, qr/^RNTO zero 550$/m,
    'FTP rename onto an existing name without overwrite: 550');
ok(object('renamed') eq $t->read_file('up-s5000') && object('zero') eq '',
    'FTP rename without overwrite: both objects unchanged');

$t->write_file('rename.py', <<'PY');
import paramiko, sys
sys.path.insert(0, sys.argv[3])
import sftp_raw

t = sftp_raw.login(int(sys.argv[1]), sys.argv[2], 'bob')
s = paramiko.SFTPClient.from_transport(t)
s.rename('put12', 'sftp12')
sftp_raw.check('SFTP rename of a file', True)
s.posix_rename('pipe12', 'six')
sftp_raw.check('SFTP posix-rename onto an existing name', True)
s.close()
t.close()
PY
($c, $pyout) = $t->python_checks('rename.py', $sftp, $key,
    Cwd::getcwd() . '/t/lib');
ok($c == 2, 'the SFTP rename checks ran') or diag($pyout);
ok(object('sftp12') eq $twelve && status('put12') eq '404',
    'SFTP rename: the object moved');
ok(object('six') eq $twelve && status('pipe12') eq '404',
    'SFTP posix-rename: the object replaced, the old name gone');

# memory: a 200 MiB upload holds two parts of 5 MiB at most, so the
# worker's peak grows by that and a margin, not by the object

sub hwm {
    my ($pid) = $t->workers();
    open(my $fh, '<', "/proc/$pid/status") or return 0;
    my ($kb) = join('', <$fh>) =~ /^VmHWM:\s+(\d+)/m;
    return $kb // 0;
}

SKIP: {
    skip("AddressSanitizer's quarantine keeps what is freed", 2)
        if `$t->{_binary} -V 2>&1` =~ /--with-sanitizers/;

    # the peak so far is the earlier uploads': it starts again from here

    my ($pid) = $t->workers();
    my $cr;
    skip("the peak cannot be reset: $!", 2)
        unless open($cr, '>', "/proc/$pid/clear_refs")
               && syswrite($cr, "5\n");
    close($cr);
    my $before = hwm();
    system("head -c 209715200 /dev/zero | curl -s --max-time 300 -T - ftp://bob:pw\@127.0.0.1:$ftp/huge");
    is(s3_head($s3, 'srv/bob/huge')->{'content-length'}, 209715200,
        'an upload of 200 MiB');
    my $grew = hwm() - $before;
    ok($grew < (2 * 5 + 16) * 1024,
        "the worker's peak grew by $grew KiB (< 2 parts of 5 MiB + 16 MiB)");
}

$t->done();
