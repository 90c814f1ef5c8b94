#!/usr/bin/perl

# rename_links.t -- a relative symbolic link keeps inside the home when it
# is renamed: over SFTP and FTP, renaming a link, or a directory holding
# one, to where its target would climb out of the home is refused and
# logged with client and user; other renames of links go through.

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
mkdir "$d/data/bob/d";
mkdir "$d/data/bob/d/e";

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

$t->user_add('bob', 'pw', perms => 'list,download,upload,rename');
my $key = $t->user_key('bob');

$t->write_file('sftp.py', <<'PY');
import sys, paramiko

port, key = int(sys.argv[1]), sys.argv[2]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def renamed(a, b):
    try:
        sftp.posix_rename(a, b)
        return True
    except IOError as e:
        return e

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

sftp.symlink('../../x', 'd/e/up2')
r = renamed('d/e/up2', 'up2')
check('a link renamed out of reach refused', isinstance(r, PermissionError), r)
r = renamed('d/e', 'e')
check('its directory moved up refused', isinstance(r, PermissionError), r)
check('both stay', sftp.readlink('d/e/up2') == '../../x')
check('renamed at its level', renamed('d/e/up2', 'd/e/up3') is True)
check('moved deeper', renamed('d/e', 'd/e/../f') is True
      and renamed('d/f', 'd/e') is True)

sftp.close()
tr.close()
print('done')
PY

$t->run();

my ($n, $out) = $t->python_checks('sftp.py', port(8022), $key);

is($n, 5, 'all SFTP checks ran') or diag($out);

$out = $t->ftp_commands(port(8021), 'bob', 'RNFR d/e/up3', 'RNTO up3',
    'RNFR d/e/up3', 'RNTO d/e/up4');
like($out, qr/^RNTO up3 550$/m, 'FTP: a link renamed out of reach: 550');
ok(-l "$d/data/bob/d/e/up4" && !-e "$d/data/bob/up3",
    "FTP: it stayed, and was renamed where it stays inside");
like($out, qr/^RNTO d\/e\/up4 250$/m, 'FTP: a rename keeping it inside: 250');

my $refused = qr/rename of "bob\/d\/e\/up2" refused: a symbolic link/;
like($t->read_file('error.log'), qr/$refused.*client: 127\.0\.0\.1.*bob/,
    'the refusal logged with client and user');

$t->done();
