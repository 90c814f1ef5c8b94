#!/usr/bin/perl

# offsets.t -- offsets and lengths a client sends are range-checked before
# any arithmetic: SFTP READ and WRITE at offsets near 2^63 and 2^64, an
# FSETSTAT size, check-file and copy-data ranges, FTP REST and RANG past
# the largest offset are refused with the protocol's error, and the byte
# quota still holds after them (no overflow resets the usage).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/bob";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF

$t->user_add('bob', 'pw',
    perms => 'list,download,upload,overwrite,delete,rename');
my $key = $t->user_key('bob');
$t->write_file('users', $t->read_file('users') . "quota_bytes = 1000000\n");

$t->write_file('sftp.py', <<'PY');
import sys, struct, paramiko

port, key = int(sys.argv[1]), sys.argv[2]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def refused(name, fn):
    try:
        fn()
    except (IOError, OSError, paramiko.SFTPError) as e:
        check(name, 'out of range' in str(e), e)
        return
    check(name, False, 'accepted')

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

f = sftp.open('first', 'w')
f.write(b'a' * 900000)
f.close()
check('900000 bytes stored', sftp.stat('first').st_size == 900000)

def write_at(off):
    def fn():
        f = sftp.open('big', 'w')
        try:
            f.seek(off)
            f.write(b'x' * 4096)
            f.flush()
        finally:
            try:
                f.close()
            except IOError:
                pass
    return fn

refused('write at 2^63-1-4096', write_at(2**63 - 1 - 4096))
refused('write at 2^64-4096', write_at(2**64 - 4096))
refused('write at 2^60', write_at(2**60))

def read_at(off):
    def fn():
        f = sftp.open('first', 'r')
        try:
            f.seek(off)
            f.read(10)
        finally:
            f.close()
    return fn

refused('read at 2^63-5', read_at(2**63 - 5))
refused('read at 2^64-1', read_at(2**64 - 1))

def truncate_to(size):
    def fn():
        f = sftp.open('trunc', 'w')
        try:
            f.truncate(size)
        finally:
            f.close()
    return fn

refused('FSETSTAT size 2^63-1', truncate_to(2**63 - 1))

# the uint64 fields go raw: paramiko would pack the uint32 one as uint64
class Raw(paramiko.SFTPAttributes):
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

def check_file(start, length):
    def fn():
        sftp._request(paramiko.sftp.CMD_EXTENDED, 'check-file-name', 'first',
                      'md5', Raw(struct.pack('>QQI', start, length, 0)))
    return fn

refused('check-file from 2^63', check_file(2**63, 10))
refused('check-file length past 2^63', check_file(10, 2**63 - 1))

# the quota is what it was: 100000 bytes left
try:
    f = sftp.open('second', 'w')
    f.write(b'b' * 200000)
    f.close()
    check('an upload over the quota refused', False, 'accepted')
except IOError as e:
    check('an upload over the quota refused', True)

f = sftp.open('third', 'w')
f.write(b'c' * 50000)
f.close()
check('an upload within the quota', sftp.stat('third').st_size == 50000)

sftp.close()
tr.close()
print('done')
PY

$t->run();

my ($n, $out) = $t->python_checks('sftp.py', port(8022), $key);

is($n, 11, 'all SFTP checks ran') or diag($out);
like($out, qr/^done$/m, 'the SFTP client finished') or diag($out);
ok(!-e "$d/data/bob/second", 'nothing left of the refused upload');

$out = $t->ftp_commands(port(8021), 'bob', 'REST 1152921504606846976',
    'REST 1152921504606846977', 'REST 9223372036854771711',
    'REST 99999999999999999999', 'RANG 0 9223372036854775806',
    'RANG 0 1023');

like($out, qr/^REST 1152921504606846976 350$/m, 'REST at 2^60 accepted');
like($out, qr/^REST 1152921504606846977 501$/m, 'REST past 2^60: 501');
like($out, qr/^REST 9223372036854771711 501$/m, 'REST near 2^63: 501');
like($out, qr/^REST 99999999999999999999 501$/m, 'REST past 2^64: 501');
like($out, qr/^RANG 0 9223372036854775806 501$/m, 'RANG past 2^60: 501');
like($out, qr/^RANG 0 1023 350$/m, 'a RANG within range: 350');

my $log = $t->read_file('error.log');
like($log, qr/client sent an offset out of range.*client: 127\.0\.0\.1.*bob/,
    'the refusal logged with client and user');

$t->done();
