#!/usr/bin/perl

# sftp_pool_chunk.t -- SFTP with buffer pool chunks smaller than its
# largest requests (transfer_chunk_bytes 16k): limits@openssh.com
# advertises what a chunk holds, a READ of 255 KiB that goes to the
# thread pool is answered short (the bytes of the file) and the client
# asks again, a WRITE larger than a chunk is still written whole, and
# OpenSSH's sftp moves a file both ways byte for byte.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Spec;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no paramiko or OpenSSH client')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0
        && -x '/usr/bin/sftp';

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
buffer_pool_bytes 64k;
transfer_chunk_bytes 16k;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF2

$t->user_add('alice', 'pw-alice', perms => 'list,download,upload,overwrite');
my $key = $t->user_key('alice');

system("head -c 4000000 /dev/urandom > $d/data/alice/f") == 0 or die;
system("cp $d/data/alice/f $d/f") == 0 or die;

$t->run();
my $port = port(8022);

$t->write_file('client.py', <<'EOF2');
import os, sys, struct
sys.path.insert(0, sys.argv[3])
from sftp_raw import check, pkt, s, reply, status, channel
import sftp_raw

port, key, data = int(sys.argv[1]), sys.argv[2], sys.argv[4]
blob = open(data + '/f', 'rb').read()
tr = sftp_raw.login(port, key)
ch = channel(tr)

ch.sendall(pkt(200, s(b'limits@openssh.com'), 1))
r = reply(ch)
check('limits: a READ and a WRITE of a chunk',
      r[0] == 201 and struct.unpack('>QQQQ', r[5:37])
      == (262144, 16384 - 13, 16384, 256), r[:40])

def opened(name, flags, id_):
    ch.sendall(pkt(3, s(name) + struct.pack('>II', flags, 0), id_))
    r = reply(ch)
    return r[9:9 + struct.unpack('>I', r[5:9])[0]]

# the pages dropped once the file is open (an open for reading asks the
# kernel to read its first 2 MiB ahead), and the READ past them: it goes
# to the thread pool, into a chunk
h = opened(b'f', 1, 2)
fd = os.open(data + '/f', os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
off = 3000000
ch.sendall(pkt(5, s(h) + struct.pack('>QI', off, 255 * 1024), 3))
r = reply(ch)
n = struct.unpack('>I', r[5:9])[0] if r[0] == 103 else -1
check('a READ longer than a chunk is answered short',
      0 < n <= 16384 - 13 and r[9:9 + n] == blob[off:off + n], n)

body = bytes(range(256)) * 400
w = opened(b'w', 0x1a, 4)
ch.sendall(pkt(6, s(w) + struct.pack('>Q', 0) + s(body), 5))
check('a WRITE larger than a chunk', status(reply(ch)) == (5, 0))
ch.sendall(pkt(4, s(w), 6))
check('closed', status(reply(ch)) == (6, 0))
check('written whole', open(data + '/w', 'rb').read() == body)
tr.close()
EOF2

my $lib = File::Spec->rel2abs('t/lib');
$t->python_checks('client.py', $port, $key, $lib, "$d/data/alice");

my ($rc, $out) = $t->sftp_batch($port, 'alice',
    "get f $d/got\nput $d/f up\n");
is($rc, 0, 'OpenSSH sftp get and put') or diag($out);
is(`cmp $d/f $d/got 2>&1`, '', 'downloaded byte for byte');
is(`cmp $d/f $d/data/alice/up 2>&1`, '', 'uploaded byte for byte');

$t->done();
