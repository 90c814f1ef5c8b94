#!/usr/bin/perl

# s3_digest.t -- digests of objects of the s3 storage driver computed
# from its ranged GETs (moto_server behind the stand-in proxy): FTP HASH
# with SHA-256, SHA-1, MD5, SHA-512, CRC32 and CRC32C of an object of
# 5 MiB and 12345 bytes put straight into moto (no stored CRC-32C), with
# RANG ranges, and of one past the 16 MiB of a GET's window; SFTP
# check-file-name and check-file-handle with md5, sha256, sha1 and crc32,
# one hash and one per block; all compared to Python's hashlib and zlib
# of the bytes.  A client that leaves while its HASH waits for a GET the
# stand-in holds: the digest stops at once (logged), its reads are taken
# back, another session's HASH is answered meanwhile, and the server
# stops clean (no leak under the sanitizers).  Every process is stopped
# by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Cwd ();
use Test::Siftpd qw/port/;
use Test::Siftpd::S3 qw/s3_storage s3_proxied s3_put_bytes s3_bytes s3_ftp_sftp/;
use Test::Siftpd::FTP qw/ftp_login ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 's3_storage');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

my ($moto, $proxy) = s3_proxied($t);

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
@{[ s3_storage('cloud', $proxy, 's3_timeout 120s') ]}
@{[ s3_ftp_sftp('cloud') ]}
EOF

$t->user_add('bob', 'pw', perms => 'list,download', storage => 'cloud');
my $key = $t->user_key('bob');

# straight into moto: no stored CRC-32C; sizes no multiple of a chunk

my %size = (obj => 5 * 1024 * 1024 + 12345, long => 17 * 1024 * 1024 + 3,
    'stall-big' => 17 * 1024 * 1024 + 5);
my %seed = (obj => 11, long => 12, 'stall-big' => 13);

for my $name (sort keys %size) {
    s3_put_bytes($moto, "srv/bob/$name", $size{$name}, $seed{$name});
    $t->write_file($name, s3_bytes($seed{$name}, $size{$name}));
}

$t->run();

my $ftp = port(8021);
my $sftp = port(8022);

# the checks, against the bytes in the test's directory

$t->write_file('hash.py', <<'PY');
import ftplib, hashlib, struct, sys, zlib
sys.path.insert(0, sys.argv[2])
import sftp_raw
from crc32c import crc32c

ftp_port, d = int(sys.argv[1]), sys.argv[3]
data = {n: open(d + '/' + n, 'rb').read() for n in ('obj', 'long')}

def digest(algo, b):
    if algo == 'CRC32':
        return struct.pack('>I', zlib.crc32(b))
    if algo == 'CRC32C':
        return struct.pack('>I', crc32c(b))
    return hashlib.new(algo.replace('-', '').lower(), b).digest()

def check(what, got, want):
    sftp_raw.check(what, got == want, 'got %r, want %r' % (got, want))

# FTP: HASH with each algorithm, with RANG ranges

f = ftplib.FTP()
f.connect('127.0.0.1', ftp_port, timeout=120)
f.login('bob', 'pw')

obj = data['obj']
for algo in ('SHA-256', 'SHA-1', 'MD5', 'SHA-512', 'CRC32', 'CRC32C'):
    f.sendcmd('OPTS HASH ' + algo)
    check('HASH %s of the object' % algo, f.sendcmd('HASH obj'),
          '213 %s 0-%d %s obj' % (algo, len(obj) - 1,
                                  digest(algo, obj).hex()))

for algo, a, b in (('SHA-256', 1000, 2000000), ('MD5', 65535, 65536),
                   ('CRC32', 0, 0), ('SHA-512', 3 * 65536 + 7, 10 ** 9),
                   ('CRC32C', 4 * 1024 * 1024, 5 * 1024 * 1024)):
    f.sendcmd('OPTS HASH ' + algo)
    f.sendcmd('RANG %d %d' % (a, b))
    e = min(b, len(obj) - 1)
    check('HASH %s of RANG %d %d' % (algo, a, b), f.sendcmd('HASH obj'),
          '213 %s %d-%d %s obj' % (algo, a, e,
                                   digest(algo, obj[a:e + 1]).hex()))

f.sendcmd('RANG %d %d' % (len(obj), len(obj) + 10))
try:
    r = f.sendcmd('HASH obj')
except ftplib.all_errors as e:
    r = str(e)
check('HASH of a RANG past the end', r[:4], '554 ')

# past a GET's window (16 MiB): the reads restart the GET there

long = data['long']
f.sendcmd('OPTS HASH SHA-256')
check('HASH SHA-256 of 17 MiB', f.sendcmd('HASH long'),
      '213 SHA-256 0-%d %s long' % (len(long) - 1,
                                    hashlib.sha256(long).hexdigest()))
a, b = 16 * 1024 * 1024 - 100, 16 * 1024 * 1024 + 100
f.sendcmd('OPTS HASH MD5')
f.sendcmd('RANG %d %d' % (a, b))
check('HASH MD5 across the window', f.sendcmd('HASH long'),
      '213 MD5 %d-%d %s long' % (a, b, hashlib.md5(long[a:b + 1]).hexdigest()))
f.quit()
PY

$t->write_file('check.py', <<'PY');
import hashlib, struct, sys, zlib
import paramiko
from paramiko.sftp import CMD_EXTENDED
sys.path.insert(0, sys.argv[3])
import sftp_raw

sftp_port, key, d = int(sys.argv[1]), sys.argv[2], sys.argv[4]
obj = open(d + '/obj', 'rb').read()

def digest(algo, b):
    if algo == 'crc32':
        return struct.pack('>I', zlib.crc32(b))
    return hashlib.new(algo, b).digest()

def check(what, got, want):
    sftp_raw.check(what, got == want, 'got %r, want %r' % (got, want))

# SFTP: check-file-name and check-file-handle, one hash and blocks

class Raw(paramiko.SFTPAttributes):
    # paramiko packs every int as uint64: the uint32 block size goes raw
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

t = sftp_raw.login(sftp_port, key, 'bob')
s = paramiko.SFTPClient.from_transport(t)

def check_file(kind, target, algo, start, length, block):
    _, msg = s._request(CMD_EXTENDED, kind, target, algo,
                        Raw(struct.pack('>QQI', start, length, block)))
    return msg.get_text(), msg.get_text(), msg.get_remainder()

def want(algo, b, start, length, block):
    b = b[start:start + length] if length else b[start:]
    if not block:
        return digest(algo, b)
    return b''.join(digest(algo, b[i:i + block])
                    for i in range(0, len(b), block))

for algo, start, length, block in (('md5', 0, 0, 0),
                                   ('sha256', 0, 0, 1024 * 1024),
                                   ('sha256', 12345, 3000000, 0),
                                   ('crc32', 0, 0, 65536 + 1)):
    got = check_file('check-file-name', 'obj', algo, start, length, block)
    check('check-file-name %s %d %d %d' % (algo, start, length, block),
          got, ('check-file', algo, want(algo, obj, start, length, block)))

with s.open('obj', 'rb') as fh:
    for algo, start, length, block in (('sha1', 100, 2 ** 22, 256 * 1024),
                                       ('md5', 0, 0, 300000)):
        got = check_file('check-file-handle', fh.handle, algo, start,
                         length, block)
        check('check-file-handle %s %d %d %d' % (algo, start, length, block),
              got, ('check-file', algo,
                    want(algo, obj, start, length, block)))

s.close()
t.close()
PY

my ($n, $out) = $t->python_checks('hash.py', $ftp, Cwd::getcwd() . '/t/lib',
    $d);
is($n, 14, 'the HASH checks ran') or diag($out);

($n, $out) = $t->python_checks('check.py', $sftp, $key,
    Cwd::getcwd() . '/t/lib', $d);
is($n, 6, 'the check-file checks ran') or diag($out);

# the object's GETs that reached S3, from the stand-in's log
sub gets {
    my ($name) = @_;
    my $log = `curl -s --max-time 30 http://127.0.0.1:$proxy/__log`;
    return scalar(grep { m{^GET /files/srv/bob/\Q$name\E(\?|$)} }
        split(/\n/, $log));
}

# a whole object is read ahead in one GET, a RANG in windows of 16 MiB:
# HASH long, then its RANG across the first window's end

is(gets('long'), 2, 'HASH of a whole object: one GET');

# a client leaves while its HASH of a RANG waits: the first 16 MiB
# window is hashed, the GET of the rest held by the stand-in

sub held {
    return `curl -s --max-time 10 http://127.0.0.1:$proxy/__held` // 0;
}

my $s = ftp_login($ftp, 'bob', 'pw');
ftp_cmd($s, "RANG 0 @{[ $size{'stall-big'} - 1 ]}");
print $s "HASH stall-big\r\n";
ok($t->wait_for(sub { held() == 1 }, 120), 'the HASH waits for a GET');
close $s;

ok($t->wait_log(qr/digest of "stall-big" stopped after \d+ bytes: not wanted any more/, 120),
    'the digest stopped when its client left, the GET still held')
    or diag($t->read_file('error.log'));
my ($after) = $t->read_file('error.log')
    =~ /digest of "stall-big" stopped after (\d+) bytes/;
ok(defined $after && $after >= 16 * 1024 * 1024 - 4 * 65536
   && $after <= 16 * 1024 * 1024,
   'stopped at the end of the first window') or diag($after);

$s = ftp_login($ftp, 'bob', 'pw');
ftp_cmd($s, 'OPTS HASH SHA-1');
ftp_cmd($s, 'RANG 0 9');
like(ftp_cmd($s, 'HASH obj'), qr/^213 SHA-1 0-9 [0-9a-f]{40} obj\r$/m,
    'another session answered meanwhile');
close $s;

is(held(), 1, 'the stalled GET was still held');
`curl -s --max-time 10 http://127.0.0.1:$proxy/__release`;

$t->done();
