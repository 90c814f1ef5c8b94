#!/usr/bin/perl

# s3_attrs.t -- times, modes and stored checksums of the s3 storage
# driver against moto (t/s3_storage.py, its "upload" bucket) through the
# stand-in proxy, whose request log shows what reached S3: FTP MFMT and
# SFTP SETSTAT set the time MDTM and stat show, keeping the object's
# content type and bytes, above s3_copy_threshold by a multipart copy
# onto itself; a directory's time and SITE CHMOD refused as
# unsupported, SFTP chmod with SSH_FX_OP_UNSUPPORTED, SITE CHMOD taken
# with s3_ignore_chmod on; OpenSSH "put -p" of a multipart object keeps
# its time; HASH CRC32C of a PutObject, of a multipart object and of it
# after APPE is the CRC-32C of the bytes, answered without a GET of the
# object; SFTP check-file crc32c the same.  Every process is stopped by
# pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use Digest::MD5 qw/md5_hex/;
use Test::Siftpd::S3 qw/s3_storage s3_storage_moto s3_standin s3_put
    s3_head s3_object s3_bytes s3_ftp_sftp/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
my $proxy = port(8902);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');
s3_standin($t, $proxy, $s3);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $proxy, 's3_part_size 5m', 's3_retries 1', 's3_timeout 30s') ]}
@{[ s3_storage('loose', $proxy, 's3_part_size 5m', 's3_ignore_chmod on') ]}
@{[ s3_storage('parted', $proxy, 's3_part_size 5m', 's3_copy_threshold 5m') ]}
@{[ s3_ftp_sftp('cloud') ]}
EOF

$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');
$t->user_add('eve', 'pw', perms => 'all', storage => 'loose',
    home => '/bob');
$t->user_add('ann', 'pw', perms => 'all', storage => 'parted',
    home => '/bob');
my $key = $t->user_key('bob');
$t->user_key('eve');

# an object's type, length, stored mtime and CRC-32C, as moto has them
sub head {
    my $h = s3_head($s3, "srv/bob/$_[0]") or return 'none';
    return join(' ', map { $h->{$_} // '-' } 'content-type',
        'content-length', 'x-amz-meta-mtime', 'x-amz-meta-crc32c');
}

# CRC-32C (Castagnoli), a table and 64 KiB at a time

my @table = map {
    my $c = $_;
    $c = $c & 1 ? ($c >> 1) ^ 0x82f63b78 : $c >> 1 for 1 .. 8;
    $c;
} 0 .. 255;

sub crc32c {
    my ($data) = @_;
    my $crc = 0xffffffff;

    for (my $off = 0; $off < length($data); $off += 65536) {
        for my $b (unpack('C*', substr($data, $off, 65536))) {
            $crc = $table[($crc ^ $b) & 0xff] ^ ($crc >> 8);
        }
    }

    return sprintf('%08x', $crc ^ 0xffffffff);
}

# the object's GETs and HEADs that reached S3, from the stand-in's log
sub requests {
    my ($method, $name) = @_;
    my $log = `curl -s --max-time 30 http://127.0.0.1:$proxy/__log`;
    my @l = grep { m{^$method /files/srv/bob/\Q$name\E(\?|$)} }
        split(/\n/, $log);
    return scalar(@l);
}

$t->run();

my $ftp = port(8021);
my $sftp = port(8022);

# one FTP session: each command and its whole reply, on a line

$t->write_file('ftp.py', <<'PY');
import ftplib, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=60)
f.login(sys.argv[2], 'pw')
for c in sys.argv[3:]:
    try:
        if c.startswith('STOR ') or c.startswith('APPE '):
            verb, name, src = c.split(' ')
            with open(src, 'rb') as fh:
                r = f.storbinary(verb + ' ' + name, fh)
        else:
            r = f.sendcmd(c)
    except ftplib.all_errors as e:
        r = str(e)
    print(c.split(' /')[0] + ' => ' + r.replace('\r\n', ' '))
f.quit()
PY

sub ftp {
    my ($user, @commands) = @_;

    open(my $fh, '-|', 'timeout', 120, '/usr/bin/python3', "$d/ftp.py",
         $ftp, $user, @commands) or die "ftp.py: $!";
    local $/;
    my $out = <$fh>;
    close($fh);

    return $out // '';
}

# uploads: one PutObject, one multipart (5 MiB + 100 KiB)

my $small = s3_bytes(5, 5000);
my $multi = s3_bytes(6, 5 * 1024 * 1024 + 102400);
$t->write_file('small', $small);
$t->write_file('multi', $multi);
$t->write_file('tail', 'the tail of the object');

my $all = $multi . 'the tail of the object';
my $crc_all = crc32c($all);

my $out = ftp('bob', "STOR small $d/small", "STOR multi $d/multi");
like($out, qr/^STOR small => 226/m, 'STOR of a PutObject');
like($out, qr/^STOR multi => 226/m, 'STOR of a multipart object')
    or diag($out);

# HASH CRC32C from the stored value: a HEAD, no GET

my $gets = requests('GET', 'multi') + requests('GET', 'small');

$out = ftp('bob', 'OPTS HASH CRC32C', 'HASH small', 'HASH multi');
like($out, qr/^HASH small => 213 CRC32C 0-4999 (\S+) small$/m,
    'HASH CRC32C of a PutObject answered') or diag($out);
my ($h1) = $out =~ /^HASH small => 213 CRC32C \S+ (\S+)/m;
is(lc($h1 // ''), crc32c($small), 'HASH CRC32C of a PutObject: its CRC-32C');
my ($h2) = $out =~ /^HASH multi => 213 CRC32C \S+ (\S+)/m;
is(lc($h2 // ''), crc32c($multi),
    'HASH CRC32C of a multipart object: its CRC-32C') or diag($out);
is(requests('GET', 'multi') + requests('GET', 'small'), $gets,
    'HASH CRC32C: no GET of the objects');

# after APPE (a copy of the old bytes, then the new ones)

$out = ftp('bob', "APPE multi $d/tail", 'OPTS HASH CRC32C', 'HASH multi');
my ($h3) = $out =~ /^HASH multi => 213 CRC32C \S+ (\S+)/m;
is(lc($h3 // ''), $crc_all,
    'HASH CRC32C after APPE: the CRC-32C of the concatenation')
    or diag($out);

# times: MFMT, MDTM; the content type and bytes kept

$t->write_file('typed', 'typed bytes');
s3_put($s3, 'srv/bob/typed', "$d/typed", 'text/plain');
$out = ftp('bob', 'MFMT 20200102030405 typed', 'MDTM typed',
    'MFMT 20010203040506 small', 'MDTM small', 'MKD dir',
    'MFMT 20200102030405 dir', 'MFMT 20200102030405 none',
    'SITE CHMOD 600 small');
like($out, qr/^MFMT \d+ typed => 213 Modify=20200102030405; typed$/m,
    'MFMT of an object');
like($out, qr/^MDTM typed => 213 20200102030405$/m, 'MDTM: the time set');
is(head('typed'), 'text/plain 11 1577934245 -',
    'MFMT: the content type kept, x-amz-meta-mtime set');
is(md5_hex(s3_object($s3, 'srv/bob/typed') // ''), md5_hex('typed bytes'),
    'MFMT: the bytes kept');
like($out, qr/^MDTM small => 213 20010203040506$/m, 'MDTM of a PutObject');
is(head('small'), 'binary/octet-stream 5000 981173106 '
    . crc32c($small), 'MFMT: the stored CRC-32C kept');
like($out, qr/^MFMT 20200102030405 dir => 550/m,
    'MFMT of a directory: refused');
ok($t->wait_log(qr/the time of "srv\/bob\/dir" is not set: a directory has/),
    'MFMT of a directory: the reason logged');
like($out, qr/^MFMT 20200102030405 none => 550/m,
    'MFMT of a missing name: 550');
like($out, qr/^SITE CHMOD 600 small => 550 Changing modes is not supported/m,
    'SITE CHMOD: refused with the reason');

$out = ftp('eve', 'SITE CHMOD 600 small', 'SITE CHMOD 600 none');
like($out, qr/^SITE CHMOD 600 small => 200/m,
    'SITE CHMOD with s3_ignore_chmod on: taken');
like($out, qr/^SITE CHMOD 600 none => 550/m,
    'SITE CHMOD with s3_ignore_chmod on: a missing name 550');

# MFMT of an object above s3_copy_threshold: a multipart copy onto
# itself (CreateMultipartUpload with the new time and the content type,
# UploadPartCopy, CompleteMultipartUpload), the bytes kept

$t->write_file('big', s3_bytes(7, 6 * 1024 * 1024));
s3_put($s3, 'srv/bob/big', "$d/big", 'application/x-big');
my $posts = requests('POST', 'big');
$out = ftp('ann', 'MFMT 20200102030405 big', 'MDTM big');
like($out, qr/^MFMT \d+ big => 213 Modify=20200102030405; big$/m,
    'MFMT above the copy threshold') or diag($out);
like($out, qr/^MDTM big => 213 20200102030405$/m,
    'MFMT above the copy threshold: MDTM');
is(head('big'), 'application/x-big 6291456 1577934245 -',
    'MFMT above the copy threshold: the content type kept, the time set');
is(md5_hex(s3_object($s3, 'srv/bob/big') // ''),
   md5_hex($t->read_file('big')),
   'MFMT above the copy threshold: the bytes kept');
like((s3_head($s3, 'srv/bob/big') // {})->{etag} // '', qr/-1"?$/,
    'MFMT above the copy threshold: a multipart object of one part');
ok(requests('POST', 'big') >= $posts + 2,
    'MFMT above the copy threshold: created and completed');

# OpenSSH put -p: FSETSTAT with the mode and the times before CLOSE of a
# multipart upload

$t->write_file('putp', $multi);
utime(1234567890, 1234567890, "$d/putp");
my ($rc, $sout) = $t->sftp_batch($sftp, 'eve', "put -p $d/putp putp\n");
is($rc, 0, 'OpenSSH sftp put -p ran') or diag($sout);

# SFTP: SETSTAT of the times, chmod refused, check-file crc32c

$t->write_file('sftp.py', <<'PY');
import paramiko, struct, sys
sys.path.insert(0, sys.argv[3])
import sftp_raw

port, key, crc = int(sys.argv[1]), sys.argv[2], sys.argv[4]

def check(cond, what):
    sftp_raw.check(what, cond)

t = sftp_raw.login(port, key, 'bob')
s = paramiko.SFTPClient.from_transport(t)

check(s.stat('putp').st_mtime == 1234567890,
      'put -p of a multipart object: the time kept')
s.utime('small', (1500000000, 1600000000))
check(s.stat('small').st_mtime == 1600000000, 'SETSTAT: the time set')

try:
    s.chmod('small', 0o600)
    check(False, 'chmod refused')
except IOError as e:
    check('not supported' in str(e), 'chmod refused: ' + str(e))

class Raw(paramiko.SFTPAttributes):
    # paramiko packs every int as uint64: the uint32 block size goes raw
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

# offset, length (0: to the end), block size (0: one hash), as the draft
with s.open('multi', 'rb') as f:
    _, msg = s._request(paramiko.sftp.CMD_EXTENDED, 'check-file-handle',
                        f.handle, 'crc32c',
                        Raw(struct.pack('>QQI', 0, 0, 0)))
    msg.get_text()
    msg.get_text()
    got = msg.get_remainder().hex()
check(got == crc, 'check-file crc32c: the CRC-32C (%s)' % got)

s.close()
t.close()
PY

my ($c, $pyout) = $t->python_checks('sftp.py', $sftp, $key,
    Cwd::getcwd() . '/t/lib', $crc_all);
ok($c == 4, 'the SFTP checks ran') or diag($pyout);
is(md5_hex(s3_object($s3, 'srv/bob/putp') // ''), md5_hex($multi),
    'put -p: the bytes');

$t->done();
