#!/usr/bin/perl

# storage_caps.t -- a storage whose driver lacks capabilities: the example
# module's "hello_flat" driver (the posix operations without renaming,
# links, modes, writes at an offset, appending or descriptors).  FTP and
# SFTP refuse what needs them at once with a reply that names it, and
# logged with client and user; downloads, uploads and copy-data still
# work, through the pooled copy since there is no descriptor to sendfile
# or splice, and copy-data reads and writes without a driver copy.
# The storage names the thread pool its operations run on; an unknown one
# is refused with file:line.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Basename qw/dirname/;
use File::Spec;
use Test::Siftpd qw/http_get port/;

my $t = Test::Siftpd->new()->has('ftp', 'sftp', 'http');
my $d = $t->testdir();
my $objs = File::Spec->rel2abs($ENV{TEST_SIFTPD_OBJS}
    || dirname($t->binary()));
my $hello = "$objs/modules/sft_hello_module.so";

plan(skip_all => "no $hello (configure --add-dynamic-module=modules/hello)")
    unless -f $hello;
plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

mkdir "$d/flat";
mkdir "$d/flat/bob";

$t->write_file_expand('siftpd.conf', <<"EOF");
load_module $hello;
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
thread_pool flatio threads=2;
storage local {
    driver hello_flat;
    root %%TESTDIR%%/flat;
    thread_pool flatio;
}
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

my $conf = $t->read_file('siftpd.conf');
(my $bad = $conf) =~ s/thread_pool flatio;/thread_pool nosuch;/;
$t->write_file('bad.conf', $bad);
my $line = 1 + (() = substr($bad, 0, index($bad, 'nosuch')) =~ /\n/g);
my ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/unknown thread pool "nosuch" in \Q$d\E\/bad\.conf:$line\b/,
    'a storage naming an unknown thread pool: refused with file:line');

$t->user_add('bob', 'pw', perms => 'all');
my $key = $t->user_key('bob');

$t->write_file('flat/bob/f', 'x' x 5000);
my $mode = (stat "$d/flat/bob/f")[2] & 0777;

$t->run();

# FTP: each command needing a capability the driver lacks

my $out = $t->ftp_commands(port(8021), 'bob', 'RNFR f', 'RNTO g',
    'SITE CHMOD 600 f', 'TYPE I', 'PASV', 'APPE f', 'REST 10', 'PASV',
    'STOR f');

like($out, qr/^RNFR f 550$/m, 'FTP RNFR: 550');
like($out, qr/^RNTO g 503$/m, 'FTP RNTO after it: no rename pending');
like($out, qr/^SITE CHMOD 600 f 550$/m, 'FTP SITE CHMOD: 550');
like($out, qr/^APPE f 550$/m, 'FTP APPE: 550');
like($out, qr/^STOR f 550$/m, 'FTP REST+STOR: 550');
ok(-f "$d/flat/bob/f" && -s "$d/flat/bob/f" == 5000 && !-e "$d/flat/bob/g",
    'FTP: the file untouched');

# the replies' texts

$t->write_file('ftp_text.py', <<'PY');
import ftplib, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
f.login('bob', 'pw')
for c in ('RNFR f', 'SITE CHMOD 600 f'):
    try:
        print(f.sendcmd(c))
    except ftplib.all_errors as e:
        print(e)
f.quit()
PY

(undef, $out) = Test::Siftpd::_output('timeout', 30, 'python3',
    "$d/ftp_text.py", port(8021));
like($out, qr/^550 Renaming is not supported by this storage\.$/m,
    'FTP: the reply names what is missing');
like($out, qr/^550 Changing modes is not supported by this storage\.$/m,
    'FTP: SITE CHMOD likewise');

# SFTP

$t->write_file('sftp.py', <<'PY');
import sys, struct, paramiko

port, key = int(sys.argv[1]), sys.argv[2]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def unsupported(what, call):
    try:
        call()
        check(what + ' refused', False, 'it was done')
    except IOError as e:
        check(what + ': ' + str(e), 'not supported by this storage' in str(e),
              e)

tr = paramiko.Transport(('127.0.0.1', port))
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)

# the VERSION reply offers no extension the storage cannot serve

ch = tr.open_session()
ch.settimeout(20)
ch.invoke_subsystem('sftp')
ch.sendall(struct.pack('>IBI', 5, 1, 3))

def recv_exact(n):
    b = b''
    while len(b) < n:
        d = ch.recv(n - len(b))
        if not d:
            break
        b += d
    return b

(n,) = struct.unpack('>I', recv_exact(4))
body = recv_exact(n)
ext, pos = [], 5
while pos + 4 <= len(body):
    (l,) = struct.unpack('>I', body[pos:pos + 4])
    ext.append(body[pos + 4:pos + 4 + l].decode())
    pos += 4 + l
names = ext[0::2]
ch.close()
check('VERSION: no posix-rename', 'posix-rename@openssh.com' not in names,
      names)
check('VERSION: no hardlink', 'hardlink@openssh.com' not in names, names)
check('VERSION: copy-data (read and write serve it)', 'copy-data' in names,
      names)
check('VERSION: names and versions in pairs', len(ext) % 2 == 0, ext)

unsupported('rename', lambda: sftp.rename('f', 'g'))
unsupported('posix-rename', lambda: sftp.posix_rename('f', 'g'))
unsupported('symlink', lambda: sftp.symlink('f', 'l'))
unsupported('setstat mode', lambda: sftp.chmod('f', 0o600))
unsupported('open for writing in place', lambda: sftp.open('f', 'r+'))

def write_at_offset():
    with sftp.open('h', 'w') as w:
        w.write(b'abc')
        w.seek(100)
        w.write(b'def')
        w.flush()
unsupported('write at an offset', write_at_offset)

def change_size():
    with sftp.open('t', 'w') as w:
        w.write(b'abc')
        w.truncate(1)
unsupported('size change of an open file', change_size)

with sftp.open('t2', 'w') as w:
    w.write(b'abc')
    w.truncate(3)
check('size set to what it is: done', sftp.stat('t2').st_size == 3)

with sftp.open('f', 'r') as r:
    got = r.read()
check('download', got == b'x' * 5000, len(got))

# no server-side copy: copy-data reads and writes a chunk at a time

class Raw(paramiko.SFTPAttributes):
    # the uint64s as they go, whatever paramiko makes of an int
    def __init__(self, b):
        self.b = b
    def _pack(self, msg):
        msg.add_bytes(self.b)

src = sftp.open('f', 'r')
dst = sftp.open('cp', 'w')
sftp._request(paramiko.sftp.CMD_EXTENDED, 'copy-data', src.handle,
              Raw(struct.pack('>QQ', 0, 0)), dst.handle,
              Raw(struct.pack('>Q', 0)))
dst.close()
src.close()
check('copy-data, read and written', sftp.stat('cp').st_size == 5000)

with sftp.open('up', 'w') as w:
    w.write(b'y' * 70000)
check('upload', sftp.stat('up').st_size == 70000)

sftp.close()
tr.close()
print('done')
PY

my $n;
($n, $out) = $t->python_checks('sftp.py', port(8022), $key);
is($n, 15, 'all SFTP checks ran') or diag($out);

ok(!-e "$d/flat/bob/g" && !-e "$d/flat/bob/l"
    && ((stat "$d/flat/bob/f")[2] & 0777) == $mode
    && -s "$d/flat/bob/f" == 5000, 'SFTP: nothing changed');

# FTP downloads and uploads, by the pooled copy

$t->write_file('ftp_xfer.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
f.login('bob', 'pw')
b = io.BytesIO()
f.retrbinary('RETR f', b.write)
print('retr', b.getvalue() == b'x' * 5000)
f.storbinary('STOR up2', io.BytesIO(b'z' * 9000))
print('stor ok')
f.quit()
PY

(undef, $out) = Test::Siftpd::_output('timeout', 30, 'python3',
    "$d/ftp_xfer.py", port(8021));
like($out, qr/^retr True$/m, 'FTP download') or diag($out);
like($out, qr/^stor ok$/m, 'FTP upload') or diag($out);
is(-s "$d/flat/bob/up2", 9000, 'FTP upload committed');

sub metric {
    my ($name, $labels) = @_;
    my $m = http_get(port(8080), '/metrics') // '';
    return $m =~ /^siftp_\Q$name\E\{\Q$labels\E\} (\d+)$/m ? $1 : 0;
}

sub path { metric('transfers_total', "direction=\"$_[0]\",path=\"$_[1]\"") }

ok($t->wait_for(sub { path('download', 'pooled') >= 1
        && path('upload', 'pooled') >= 1 }, 10),
    'FTP: the transfers took the pooled copy');
is(path('download', 'sendfile') + path('upload', 'splice'), 0,
    'FTP: neither sendfile nor splice without a descriptor');

my $refused = qr/Renaming is not supported by storage "local"/;
like($t->read_file('error.log'),
    qr/$refused.*client: 127\.0\.0\.1.*user: "bob"/,
    'a refusal logged with client and user');

$t->done();
