#!/usr/bin/perl

# sftp_ext.t -- SFTP requests and OpenSSH extensions at the request level,
# with paramiko: READLINK, SYMLINK (and a symlink escape), statvfs,
# fstatvfs, fsync, lsetstat, limits, expand-path, home-directory,
# users-groups-by-id, an unknown extension; then OpenSSH sftp's df and
# ln -s.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no OpenSSH client or paramiko')
    unless -x '/usr/bin/sftp'
        && system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 20s;
    }
}
EOF2

open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'add', 'alice', '--home', '/alice', '--perms',
    'list,download,upload,overwrite,delete,rename,mkdir,rmdir,chmod' or die;
print $fh "pw-alice\n";
close $fh;

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('users');
$users =~ s/^\[alice\]\n/[alice]\nssh_key = $pub\n/mg;
$t->write_file('users', $users);

$t->write_file('data/alice/f', "hello\n" x 100);

$t->run();
my $port = port(8022);

# the client: one line per check, "ok NAME" or "not ok NAME: why"

$t->write_file('client.py', <<'EOF2');
import os, sys, struct, paramiko
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

fails('unknown extension', lambda: ext('nothing@example.com'))

# still usable after all of it
check('session alive', sftp.stat('f').st_size == 600)
sftp.close()
tr.close()
print('done')
EOF2

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

$t->stop();

done_testing();
