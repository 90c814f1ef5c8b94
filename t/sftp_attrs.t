#!/usr/bin/perl

# sftp_attrs.t -- modes and times, with workers that run as nobody: no
# way a client sets a mode (SETSTAT, FSETSTAT, lsetstat, OPEN and MKDIR
# attributes, FTP SITE CHMOD) leaves a setuid, setgid or sticky bit; the
# owner changes the mode and times of a file it cannot read (0200);
# FSTAT of a file open for writing reports the mode FSETSTAT set, and
# SETSTAT sets the atime as well as the mtime.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;
plan(skip_all => 'not root') unless $> == 0;

my @pw = getpwnam('nobody');
plan(skip_all => 'no user nobody') unless @pw;

mkdir "$d/data";
mkdir "$d/data/bob";
chown $pw[2], -1, "$d/data", "$d/data/bob";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
user nobody;
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
    perms => 'list,download,upload,overwrite,mkdir,chmod');
my $key = $t->user_key('bob');

$t->write_file('sftp.py', <<'PY');
import sys, os, stat, paramiko
from paramiko.sftp import CMD_EXTENDED
from paramiko.sftp_attr import SFTPAttributes

port, key, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def mode(name):
    return stat.S_IMODE(os.lstat(data + '/' + name).st_mode)

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

# SETSTAT
with sftp.open('s', 'w') as f:
    f.write(b's')
for m in (0o6755, 0o1777, 0o4700):
    sftp.chmod('s', m)
    check('SETSTAT %o: %o on disk' % (m, m & 0o777), mode('s') == m & 0o777,
          oct(mode('s')))

# FSETSTAT of a file open for writing, then FSTAT of it
f = sftp.open('fs', 'w')
f.write(b'f')
f.chmod(0o6755)
st = f.stat()
check('FSTAT of an upload: the mode FSETSTAT set',
      stat.S_IMODE(st.st_mode) == 0o755, oct(st.st_mode))
check('FSTAT of an upload: a regular file', stat.S_ISREG(st.st_mode),
      oct(st.st_mode))
f.chmod(0o600)
st = f.stat()
check('FSTAT of an upload: 0600 after FSETSTAT 0600',
      stat.S_IMODE(st.st_mode) == 0o600, oct(st.st_mode))
check('FSTAT of an upload: its size', st.st_size == 1, st.st_size)
check('FSTAT of an upload: its owner is the worker\'s',
      st.st_uid == os.stat(data).st_uid, st.st_uid)
f.chmod(0o1777)
f.close()
check('FSETSTAT 1777: 0777 on disk', mode('fs') == 0o777, oct(mode('fs')))

# FSETSTAT of a file open for reading
with sftp.open('s', 'r') as f:
    f.chmod(0o2755)
check('FSETSTAT of a read handle 2755: 0755 on disk', mode('s') == 0o755,
      oct(mode('s')))

# lsetstat@openssh.com
a = SFTPAttributes()
a.st_mode = 0o4755
sftp._request(CMD_EXTENDED, 'lsetstat@openssh.com', 's', a)
check('lsetstat 4755: 0755 on disk', mode('s') == 0o755, oct(mode('s')))

# OPEN and MKDIR attributes
a = SFTPAttributes()
a.st_mode = 0o6777
t, msg = sftp._request(paramiko.sftp.CMD_OPEN, 'o', 0x1a, a)
h = msg.get_binary()
sftp._request(paramiko.sftp.CMD_CLOSE, h)
check('OPEN with 6777: no setuid bits', mode('o') & 0o7000 == 0,
      oct(mode('o')))
sftp.mkdir('d', 0o3777)
check('MKDIR with 3777: no setgid or sticky bit', mode('d') & 0o7000 == 0,
      oct(mode('d')))

# the owner's own 0200 file: its mode and times change
with sftp.open('w', 'w') as f:
    f.write(b'w')
os.chmod(data + '/w', 0o200)
try:
    sftp.chmod('w', 0o600)
    check('chmod 600 of a 0200 file', mode('w') == 0o600, oct(mode('w')))
except IOError as e:
    check('chmod 600 of a 0200 file', False, e)
os.chmod(data + '/w', 0o200)
try:
    sftp.utime('w', (1000000000, 1100000000))
    st = os.stat(data + '/w')
    check('utime of a 0200 file', st.st_mtime == 1100000000, st.st_mtime)
except IOError as e:
    check('utime of a 0200 file', False, e)

# SETSTAT sets the atime too
sftp.utime('s', (1200000000, 1300000000))
st = os.stat(data + '/s')
check('SETSTAT: mtime set', st.st_mtime == 1300000000, st.st_mtime)
check('SETSTAT: atime set', st.st_atime == 1200000000, st.st_atime)

# for FTP's SITE CHMOD
with sftp.open('c', 'w') as f:
    f.write(b'c')

sftp.close()
tr.close()
print('done')
PY

$t->run();

my ($n, $out) = $t->python_checks('sftp.py', port(8022), $key,
    "$d/data/bob");

is($n, 17, 'all SFTP checks ran') or diag($out);
like($out, qr/^done$/m, 'the SFTP client finished') or diag($out);

$out = $t->ftp_commands(port(8021), 'bob', 'SITE CHMOD 6755 c');
like($out, qr/^SITE CHMOD 6755 c 200$/m, 'SITE CHMOD 6755: 200');
is(sprintf('%o', (stat "$d/data/bob/c")[2] & 07777), '755',
    'SITE CHMOD 6755: 0755 on disk');

$t->done();
