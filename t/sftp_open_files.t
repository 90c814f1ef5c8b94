#!/usr/bin/perl

# sftp_open_files.t -- what SFTP does to a file through its open handle:
# FSETSTAT of a size charges the growth to the byte quota and credits a
# cut, exactly, for an upload and for a file written in place; growth past
# the quota is refused and leaves the file as it was; fsync@openssh.com
# answers OK; FSETSTAT of a mode keeps only the permission bits.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/bob";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF2

$t->user_add('bob', 'pw',
    perms => 'list,download,upload,overwrite,delete,rename,chmod');
my $key = $t->user_key('bob');
$t->write_file('users', $t->read_file('users') . "quota_bytes = 100000\n");

$t->write_file('sftp.py', <<'PY');
import sys, os, paramiko

port, key, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

def put(name, n):
    try:
        f = sftp.open(name, 'w')
        f.write(b'u' * n)
        f.close()
        return True
    except IOError:
        return False

def size(name):
    return os.path.getsize(data + '/' + name)

def truncate(name, n):
    f = sftp.open(name, 'r+')
    f.truncate(n)
    f.close()

def truncate_refused(name, f, n):
    try:
        f.truncate(n)
        check(name, False, 'accepted')
    except IOError:
        check(name, True)

# 60000 of 100000 bytes used; cut in place to 10000: 90000 left
check('60000 bytes stored', put('a', 60000) and size('a') == 60000)
truncate('a', 10000)
check('cut in place to 10000', size('a') == 10000, size('a'))
check('the cut credited: 90000 bytes fit', put('b', 90000), 'refused')
check('and not one byte more', not put('c', 1), 'accepted')
check('nothing left of the refused upload', not os.path.exists(data + '/c'))

# growth past the quota is refused, the file keeps its size
f = sftp.open('b', 'r+')
truncate_refused('growth past the quota refused', f, 90001)
f.close()
check('the refused growth left the size', size('b') == 90000, size('b'))

# growth within the quota is charged: cut b by 20000, grow a by 15000
truncate('b', 70000)
truncate('a', 25000)
check('growth in place', size('a') == 25000, size('a'))
check('the growth charged: 5000 bytes fit', put('d', 5000), 'refused')
check('and not one byte more after it', not put('e', 1), 'accepted')

# an upload (a temporary file) grown and cut through its handle
sftp.remove('d')
f = sftp.open('g', 'w')
f.write(b'g' * 1000)
f.truncate(5000)
truncate_refused('an upload grown past the quota refused', f, 5001)
f.truncate(2000)
f.close()
check('the upload has the last size', size('g') == 2000, size('g'))
check('its cut credited: 3000 bytes fit', put('h', 3000), 'refused')
check('and not one byte more after the upload', not put('i', 1), 'accepted')

# fsync@openssh.com of an open upload, and a mode with setuid
sftp.remove('h')
f = sftp.open('j', 'w')
f.write(b'j')
t, msg = sftp._request(paramiko.sftp.CMD_EXTENDED, 'fsync@openssh.com',
                       f.handle)
check('fsync of an upload: OK', t == paramiko.sftp.CMD_STATUS
      and msg.get_int() == 0)
f.chmod(0o4777)
f.close()
check('FSETSTAT 04777 of an upload: 0777',
      os.stat(data + '/j').st_mode & 0o7777 == 0o777,
      oct(os.stat(data + '/j').st_mode))

sftp.close()
tr.close()
print('done')
PY

$t->run();

my ($n, $out) = $t->python_checks('sftp.py', port(8022), $key, "$d/data/bob");

is($n, 16, 'all SFTP checks ran') or diag($out);
like($out, qr/^done$/m, 'the SFTP client finished') or diag($out);

like($t->read_file('error.log'),
    qr/quota exceeded: "[^"]*" not extended.*client: 127\.0\.0\.1.*bob/,
    'the refused growth logged with client and user');

$t->done();
