#!/usr/bin/perl

# sftp_ext.t -- SFTP requests and OpenSSH extensions at the request level,
# with paramiko: READLINK, SYMLINK (and a symlink escape), statvfs,
# fstatvfs, fsync, lsetstat, limits, expand-path, home-directory,
# users-groups-by-id, hardlink, check-file-name and -handle, an unknown
# extension; then OpenSSH sftp's
# df, ln -s and ln, and hardlink permissions.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use File::Temp;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client or paramiko')
    unless -x '/usr/bin/sftp'
        && system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

# a storage on tmpfs: READs of a file in memory are answered on the loop
my $shm = -d '/dev/shm' ? File::Temp::tempdir('/dev/shm/siftpd-test-XXXXXX',
    CLEANUP => 1) : "$d/shm";
mkdir $shm;
chmod 0755, $shm;
mkdir "$shm/m";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
storage shm { driver posix; root %%SHM%%; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 20s;
    }
}
EOF2

my $conf = $t->read_file('siftpd.conf');
$conf =~ s/%%SHM%%/$shm/;
$t->write_file('siftpd.conf', $conf);

open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'add', 'alice', '--home', '/alice', '--perms',
    'list,download,upload,overwrite,delete,rename,mkdir,rmdir,chmod' or die;
print $fh "pw-alice\n";
close $fh;

# the same home, fewer permissions: for hardlink's checks; one on tmpfs
for (['ro', 'list,download', '/alice'], ['wo', 'list,upload', '/alice'],
     ['mem', 'list,download,upload,overwrite', '/m', '--storage', 'shm'])
{
    open $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $_->[0], '--home', $_->[2], '--perms', $_->[1],
        @{$_}[3 .. $#$_] or die;
    print $fh "pw-$_->[0]\n";
    close $fh;
}

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('users');
$users =~ s/^\[(alice|ro|wo|mem)\]\n/[$1]\nssh_key = $pub\n/mg;
$t->write_file('users', $users);

$t->write_file('data/alice/f', "hello\n" x 100);

$t->run();
my $port = port(8022);

# the client: one line per check, "ok NAME" or "not ok NAME: why"

$t->write_file('client.py', <<'EOF2');
import os, sys, struct, hashlib, zlib, paramiko
from paramiko.sftp import CMD_EXTENDED, CMD_EXTENDED_REPLY

port, key, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def fails(name, fn, errno_=None):
    try:
        fn()
        check(name, False, 'no error')
    except IOError as e:
        check(name, errno_ is None or e.errno == errno_, repr(e))

def ext(name, *args):
    t, msg = sftp._request(CMD_EXTENDED, name, *args)
    return t, msg

def u64s(msg, n):
    return [msg.get_int64() for i in range(n)]

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='alice',
           pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

# READLINK, SYMLINK: OpenSSH's order, the target first
sftp.symlink('f', 'l1')
check('symlink made', os.readlink(data + '/l1') == 'f',
      os.readlink(data + '/l1'))
check('readlink', sftp.readlink('l1') == 'f', sftp.readlink('l1'))
check('lstat of the link', (sftp.lstat('l1').st_mode & 0o170000) == 0o120000)
sftp.symlink('/f', 'sub_l2')
check('absolute target kept inside',
      os.path.realpath(data + '/sub_l2') == os.path.realpath(data + '/f'),
      os.readlink(data + '/sub_l2'))
fails('symlink escape refused',
      lambda: sftp.symlink('../../../../etc/passwd', 'esc'), 13)
check('no escaping link', not os.path.lexists(data + '/esc'))
fails('readlink of a file', lambda: sftp.readlink('f'))
fails('readlink of nothing', lambda: sftp.readlink('nothing'), 2)

# statvfs, fstatvfs
t, msg = ext('statvfs@openssh.com', '/')
v = u64s(msg, 11)
check('statvfs', t == CMD_EXTENDED_REPLY and v[0] > 0 and v[2] > 0, v)
fh = sftp.open('f', 'r')
t, msg = ext('fstatvfs@openssh.com', fh.handle)
w = u64s(msg, 11)
check('fstatvfs', t == CMD_EXTENDED_REPLY and w[0] == v[0] and w[2] == v[2],
      w)
fails('fsync of a bad handle',
      lambda: ext('fsync@openssh.com', b'\xff\xff\xff\xff'))
fh.close()

# fsync
fh = sftp.open('g', 'w')
fh.write(b'x' * 10000)
t, msg = ext('fsync@openssh.com', fh.handle)
check('fsync', t == 101)
fh.close()
check('fsynced file', os.path.getsize(data + '/g') == 10000)
fails('fsync of a closed handle', lambda: ext('fsync@openssh.com', fh.handle))

# lsetstat
a = paramiko.SFTPAttributes()
a.st_mode = 0o600
t, msg = ext('lsetstat@openssh.com', 'g', a)
check('lsetstat', t == 101
      and (os.stat(data + '/g').st_mode & 0o777) == 0o600,
      oct(os.stat(data + '/g').st_mode))
fails('lsetstat of nothing',
      lambda: ext('lsetstat@openssh.com', 'nothing', a), 2)

# limits
t, msg = ext('limits@openssh.com')
l = u64s(msg, 4)
check('limits', l == [262144, 261120, 261120, 256], l)

# expand-path, home-directory
def name1(msg):
    n = msg.get_int()
    return n, msg.get_text()

t, msg = ext('expand-path@openssh.com', '~')
check('expand ~', name1(msg) == (1, '/'))
t, msg = ext('expand-path@openssh.com', '~/a/../b')
check('expand ~/a/../b', name1(msg) == (1, '/b'))
t, msg = ext('expand-path@openssh.com', 'x/y')
check('expand relative', name1(msg) == (1, '/x/y'))
fails('expand ~bob', lambda: ext('expand-path@openssh.com', '~bob'), 2)
t, msg = ext('home-directory', 'alice')
check('home-directory', name1(msg) == (1, '/'))
t, msg = ext('home-directory', '')
check('home-directory of the user', name1(msg) == (1, '/'))
fails('home-directory of another', lambda: ext('home-directory', 'bob'), 2)

# users-groups-by-id: the server's ids are "siftp", others ""
ids = struct.pack('>II', os.getuid(), 4242)
gids = struct.pack('>I', os.getgid())
t, msg = ext('users-groups-by-id@openssh.com', ids, gids)
u = paramiko.Message(msg.get_binary())
g = paramiko.Message(msg.get_binary())
un = [u.get_text(), u.get_text()]
gn = [g.get_text()]
check('users-groups-by-id', un == ['siftp', ''] and gn == ['siftp'],
      (un, gn))

# hardlink@openssh.com: the existing file, then the new name
t, msg = ext('hardlink@openssh.com', 'f', 'hl1')
check('hardlink', t == 101 and os.path.exists(data + '/hl1')
      and os.stat(data + '/hl1').st_ino == os.stat(data + '/f').st_ino
      and os.stat(data + '/f').st_nlink == 2)
fails('hardlink onto an existing name',
      lambda: ext('hardlink@openssh.com', 'f', 'g'))
check('existing name kept', os.path.getsize(data + '/g') == 10000)
fails('hardlink of nothing',
      lambda: ext('hardlink@openssh.com', 'nothing', 'hl2'), 2)
fails('hardlink of a symbolic link',
      lambda: ext('hardlink@openssh.com', 'l1', 'hl3'))
check('no link of a symbolic link', not os.path.lexists(data + '/hl3'))
sftp.mkdir('hd')
fails('hardlink of a directory',
      lambda: ext('hardlink@openssh.com', 'hd', 'hl4'))
fails('hardlink above the root',
      lambda: ext('hardlink@openssh.com', '../../../../etc/passwd', 'hl5'))
check('nothing linked from outside', not os.path.lexists(data + '/hl5'))
fails('hardlink into a missing directory',
      lambda: ext('hardlink@openssh.com', 'f', 'nodir/hl6'), 2)
t, msg = ext('hardlink@openssh.com', '/f', 'hd/hl7')
check('hardlink into a subdirectory', t == 101
      and os.stat(data + '/hd/hl7').st_ino == os.stat(data + '/f').st_ino)

# check-file-name, check-file-handle: hashes against hashlib and zlib
class Raw(paramiko.SFTPAttributes):
    # paramiko packs every int as uint64: the uint32 block size goes raw
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

def cf(kind, target, algos, start=0, length=0, block=0):
    t, msg = ext('check-file-' + kind, target, algos,
                 Raw(struct.pack('>QQI', start, length, block)))
    if t != CMD_EXTENDED_REPLY or msg.get_text() != 'check-file':
        return None, None
    return msg.get_text(), msg.get_remainder()

def crc(b):
    return struct.pack('>I', zlib.crc32(b) & 0xffffffff)

big = os.urandom(300000)
with open(data + '/big', 'wb') as f:
    f.write(big)

for a in ['md5', 'sha1', 'sha256', 'sha512']:
    r = cf('name', 'big', a)
    check('check-file-name ' + a, r == (a, hashlib.new(a, big).digest()), r)
r = cf('name', '/big', 'crc32')
check('check-file-name crc32', r == ('crc32', crc(big)), r)
r = cf('name', 'big', 'foo,sha256,md5')
check('check-file the first known algorithm',
      r == ('sha256', hashlib.sha256(big).digest()), r)
r = cf('name', 'big', 'sha1', 1000, 5000)
check('check-file start and length',
      r == ('sha1', hashlib.sha1(big[1000:6000]).digest()), r)
r = cf('name', 'big', 'crc32', 299000)
check('check-file length 0: to the end',
      r == ('crc32', crc(big[299000:])), r)
r = cf('name', 'big', 'md5', 0, 10 ** 9)
check('check-file length past the end',
      r == ('md5', hashlib.md5(big).digest()), r)
r = cf('name', 'big', 'md5', 300000)
check('check-file empty range', r == ('md5', hashlib.md5(b'').digest()), r)
r = cf('name', 'big', 'sha1', 0, 0, 65536)
want = b''.join(hashlib.sha1(big[i:i + 65536]).digest()
                for i in range(0, len(big), 65536))
check('check-file blocks', r == ('sha1', want), r and len(r[1]))
r = cf('name', 'big', 'crc32', 100, 2500, 1000)
want = crc(big[100:1100]) + crc(big[1100:2100]) + crc(big[2100:2600])
check('check-file blocks of a range', r == ('crc32', want), r)
r = cf('name', 'big', 'sha512', 0, 0, 256)
check('check-file 1172 blocks', r is not None and r[0] == 'sha512'
      and len(r[1]) == 1172 * 64
      and r[1][-64:] == hashlib.sha512(big[1171 * 256:]).digest(),
      r and len(r[1]))
fails('check-file unknown algorithms',
      lambda: cf('name', 'big', 'foo,bar'))
fails('check-file block size under 256',
      lambda: cf('name', 'big', 'md5', 0, 0, 255))
fails('check-file start past the end',
      lambda: cf('name', 'big', 'md5', 300001))
fails('check-file of nothing', lambda: cf('name', 'nothing', 'md5'), 2)
fails('check-file of a directory', lambda: cf('name', 'hd', 'md5'))
fails('check-file above the root',
      lambda: cf('name', '../../../../etc/passwd', 'md5'), 2)

fh = sftp.open('big', 'r')
fh.prefetch = None
r = cf('handle', fh.handle, 'sha256', 4096, 8192)
check('check-file-handle',
      r == ('sha256', hashlib.sha256(big[4096:12288]).digest()), r)
r = cf('handle', fh.handle, 'md5', 0, 0, 100000)
want = b''.join(hashlib.md5(big[i:i + 100000]).digest()
                for i in range(0, len(big), 100000))
check('check-file-handle blocks', r == ('md5', want), r)
check('read after check-file-handle', fh.read(5) == big[:5])
fh.close()
fails('check-file-handle of a closed handle',
      lambda: cf('handle', fh.handle, 'md5'))
fh = sftp.open('cfw', 'w')
fh.write(b'abc')
fails('check-file-handle of a write handle',
      lambda: cf('handle', fh.handle, 'md5'), 13)
fh.close()

# check-file crc32c: CRC-32C (Castagnoli, reflected 0x82f63b78), as GCS
def crc32c(b):
    c = 0xffffffff
    for x in b:
        c ^= x
        for k in range(8):
            c = (c >> 1) ^ (0x82f63b78 & -(c & 1))
    return struct.pack('>I', c ^ 0xffffffff)

check('crc32c reference', crc32c(b'123456789') == bytes.fromhex('e3069283'))
small = big[:20000]
r = cf('name', 'big', 'crc32c', 0, 20000)
check('check-file-name crc32c', r == ('crc32c', crc32c(small)), r)
r = cf('name', 'big', 'crc32c,md5', 777, 3000, 1000)
want = b''.join(crc32c(big[i:min(i + 1000, 3777)]) for i in range(777, 3777, 1000))
check('check-file crc32c blocks', r == ('crc32c', want), r)
r = cf('name', 'big', 'crc32')
check('crc32 still zlib\'s', r == ('crc32', crc(big)), r)

# copy-data: from a read handle to a write handle, compared byte for byte
def copy(rh, roff, rlen, wh, woff):
    t, msg = ext('copy-data', rh, Raw(struct.pack('>QQ', roff, rlen)), wh,
                 Raw(struct.pack('>Q', woff)))
    return t

src = sftp.open('big', 'r')
dst = sftp.open('cd1', 'w')
check('copy-data to the end', copy(src.handle, 0, 0, dst.handle, 0) == 101)
dst.close()
check('copy-data whole file', open(data + '/cd1', 'rb').read() == big)

dst = sftp.open('cd2', 'w')
copy(src.handle, 1000, 5000, dst.handle, 0)
check('copy-data range', copy(src.handle, 200000, 0, dst.handle, 5000) == 101)
dst.close()
check('copy-data ranges', open(data + '/cd2', 'rb').read()
      == big[1000:6000] + big[200000:], os.path.getsize(data + '/cd2'))

dst = sftp.open('cd3', 'w')
check('copy-data past the end', copy(src.handle, 400000, 0, dst.handle, 0)
      == 101)
check('copy-data length past the end',
      copy(src.handle, 299990, 100, dst.handle, 0) == 101)
dst.close()
check('copy-data past the end copies nothing left',
      open(data + '/cd3', 'rb').read() == big[299990:])

fails('copy-data from a write handle',
      lambda: copy(dst.handle, 0, 0, src.handle, 0))
w = sftp.open('cd4', 'w')
fails('copy-data from a write handle', lambda: copy(w.handle, 0, 0, w.handle, 0), 13)
fails('copy-data to a read handle', lambda: copy(src.handle, 0, 0, src.handle, 0), 13)
w.close()
fails('copy-data of a closed handle', lambda: copy(src.handle, 0, 0, w.handle, 0))

# the same file, read and written in place: ranges must not overlap
with open(data + '/cd5', 'wb') as f:
    f.write(big[:10000])
rw = sftp.open('cd5', 'r+')
rd = sftp.open('cd5', 'r')
check('copy-data within a file', copy(rd.handle, 0, 1000, rw.handle, 5000) == 101)
fails('copy-data overlapping ranges',
      lambda: copy(rd.handle, 0, 1000, rw.handle, 500))
check('copy-data to the end of itself',
      copy(rd.handle, 0, 0, rw.handle, 10000) == 101)
rw.close()
rd.close()
want = big[:5000] + big[:1000] + big[6000:10000]
check('copy-data within a file: bytes', open(data + '/cd5', 'rb').read()
      == want + want, os.path.getsize(data + '/cd5'))
src.close()

# FSETSTAT of an upload: mode and size now, times at CLOSE, after the rename
fh = sftp.open('fs1', 'w')
fh.write(b'y' * 5000)
fh.chmod(0o640)
fh.utime((1000000000, 1234567890))
fh.truncate(3000)
fh.seek(3000)
fh.write(b'z' * 10)
fh.close()
st = os.stat(data + '/fs1')
check('fsetstat mode of an upload', (st.st_mode & 0o777) == 0o640, oct(st.st_mode))
check('fsetstat times of an upload', st.st_mtime == 1234567890
      and st.st_atime == 1000000000, (st.st_mtime, st.st_atime))
check('fsetstat size of an upload', st.st_size == 3010
      and open(data + '/fs1', 'rb').read() == b'y' * 3000 + b'z' * 10,
      st.st_size)
fh = sftp.open('fs1', 'r+')
fh.truncate(100000)
fh.utime((1000000000, 1111111111))
fh.close()
st = os.stat(data + '/fs1')
check('fsetstat in place', st.st_size == 100000 and st.st_mtime == 1111111111,
      (st.st_size, st.st_mtime))

fails('unknown extension', lambda: ext('nothing@example.com'))

# still usable after all of it
check('session alive', sftp.stat('f').st_size == 600)
sftp.close()
tr.close()
print('done')
EOF2

# READs three ways: on the thread pool (the pages dropped, so RWF_NOWAIT
# says EAGAIN), on the loop from the page cache, on the loop from tmpfs

system("head -c 3000000 /dev/urandom > $d/data/alice/cold") == 0 or die;
system("cp $d/data/alice/cold $shm/m/cold") == 0 or die;

$t->write_file('reads.py', <<'EOF2');
import os, sys, paramiko
port, key, user, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
want = open(path, 'rb').read()
if user == 'alice':
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username=user, pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)
for i in range(2):
    with sftp.open('cold', 'r') as f:
        f.prefetch()
        got = f.read()
    print('ok' if got == want else 'differ %d' % len(got))
    with sftp.open('cold', 'r') as f:
        f.seek(2999990)
        print('ok' if f.read(100) == want[2999990:] else 'tail differs')
# WRITEs and an append (paramiko FSTATs an append handle before CLOSE)
up = os.path.dirname(path) + '/up'
with sftp.open('up', 'w') as f:
    f.set_pipelined(True)
    for i in range(0, len(want), 32768):
        f.write(want[i:i + 32768])
print('ok' if open(up, 'rb').read() == want else 'upload differs')
with sftp.open('up', 'a') as f:
    f.write(b'appended')
print('ok' if open(up, 'rb').read() == want + b'appended' else 'append differs')
tr.close()
EOF2

for (['alice', "$d/data/alice/cold", 'thread pool, then page cache'],
     ['mem', "$shm/m/cold", 'tmpfs'])
{
    my $r = `timeout 60 /usr/bin/python3 $d/reads.py $port $d/key $_->[0] $_->[1] 2>&1`;
    is($r, "ok\n" x 6, "READs from the $_->[2]; WRITEs");
}

my $py = "timeout 60 /usr/bin/python3 $d/client.py $port $d/key"
    . " $d/data/alice 2>&1";
my $out = `$py`;
my @lines = split /\n/, $out;
my $n = 0;

for my $l (@lines) {
    if ($l =~ /^(not )?ok (.*)$/) {
        ok(!$1, $2);
        $n++;
    }
}

cmp_ok($n, '>=', 25, 'all paramiko checks ran') or diag($out);
like($out, qr/^done$/m, 'paramiko client finished') or diag($out);

# OpenSSH's sftp: df (statvfs) and ln -s

my @opts = ('-o', 'StrictHostKeyChecking=no', '-o',
    'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o',
    'ConnectTimeout=10');

my $sftp = "timeout 20 sftp -b $d/batch -P $port @opts -i $d/key"
    . " alice\@127.0.0.1 2>&1";

$t->write_file('batch', "df -h\nln -s f l3\nls -l\n");
$out = `$sftp`;
is($? >> 8, 0, 'sftp df, ln -s') or diag($out);
like($out, qr/Size\s+Used\s+Avail/, 'df output');
is(readlink("$d/data/alice/l3"), 'f', 'ln -s made the link');
like($out, qr/^l.*l3/m, 'ls -l shows the link');

$t->write_file('batch', "ln -s ../../../../etc/passwd esc2\n");
$out = `$sftp`;
isnt($? >> 8, 0, 'sftp ln -s escape refused');
ok(!-l "$d/data/alice/esc2", 'no escaping link');

# ln without -s: hardlink@openssh.com

$t->write_file('batch', "ln f hl8\n");
$out = `$sftp`;
is($? >> 8, 0, 'sftp ln') or diag($out);
ok(-f "$d/data/alice/hl8"
    && (stat("$d/data/alice/hl8"))[1] == (stat("$d/data/alice/f"))[1],
    'ln made a hard link');

for my $u (['ro', 'without upload'], ['wo', 'without download']) {
    my $c = $sftp;
    $c =~ s/alice\@/$u->[0]\@/;
    $t->write_file('batch', "ln f hl9\n");
    $out = `$c`;
    isnt($? >> 8, 0, "sftp ln refused $u->[1]");
    like($out, qr/denied/i, "ln $u->[1]: permission denied");
    ok(!-e "$d/data/alice/hl9", "no link $u->[1]");
}

$t->done();
