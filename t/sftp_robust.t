#!/usr/bin/perl

# sftp_robust.t -- malformed SFTP packets sent raw over paramiko's channel
# (bad length, oversized, truncated inside and at the end, a request
# before INIT, an unknown type, bad handles) are answered or end only
# their own session, while another session on the same worker keeps
# reading a file; then 200 sessions open at once, each one used.

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
mkdir "$d/data/alice";

# one worker: the malformed sessions share it with the one that must live

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 1024; }
max_connections_per_address 1000;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 30s;
    }
}
EOF2

open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'add', 'alice', '--home', '/alice', '--perms',
    'list,download,upload,overwrite' or die;
print $fh "pw-alice\n";
close $fh;

system("ssh-keygen -q -t ed25519 -N '' -f $d/key") == 0 or die;
my $pub = $t->read_file('key.pub');
chomp $pub;
my $users = $t->read_file('users');
$users =~ s/^\[alice\]\n/[alice]\nssh_key = $pub\n/m;
$t->write_file('users', $users);

system("head -c 1048576 /dev/urandom > $d/data/alice/f") == 0 or die;

$t->run();
my $port = port(8022);

$t->write_file('client.py', <<'EOF2');
import os, sys, struct, socket, time, threading, paramiko

port, key, data, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
pkey = paramiko.Ed25519Key.from_private_key_file(key)
blob = open(data + '/f', 'rb').read()

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name
          + ('' if cond else ': ' + str(why)))
    sys.stdout.flush()

def login():
    tr = paramiko.Transport(('127.0.0.1', port))
    tr.banner_timeout = 30
    tr.connect(username='alice', pkey=pkey)
    return tr

def pkt(t, body, id_=None):
    if id_ is not None:
        body = struct.pack('>I', id_) + body
    return struct.pack('>IB', len(body) + 1, t) + body

def s(b):
    return struct.pack('>I', len(b)) + b

def recv_exact(ch, n):
    b = b''
    while len(b) < n:
        x = ch.recv(n - len(b))
        if not x:
            return None
        b += x
    return b

def reply(ch):
    h = recv_exact(ch, 4)
    if h is None:
        return None
    n = struct.unpack('>I', h)[0]
    return recv_exact(ch, n)

def raw(init=True):
    tr = login()
    ch = tr.open_session()
    ch.settimeout(15)
    ch.invoke_subsystem('sftp')
    if init:
        ch.sendall(pkt(1, struct.pack('>I', 3)))
        v = reply(ch)
        assert v[0] == 2, v
    return tr, ch

def closed(ch):
    # the server ends the session: EOF, no reply
    try:
        return reply(ch) is None
    except (socket.timeout, EOFError, paramiko.SSHException) as e:
        return not isinstance(e, socket.timeout)

def status(r):
    if r is None or r[0] != 101:
        return None
    return struct.unpack('>II', r[1:9])

if mode == 'malformed':
    # the session that must not notice: a file half read
    keep = login()
    sftp = paramiko.SFTPClient.from_transport(keep)
    kf = sftp.open('f', 'r')
    got = kf.read(100000)

    def alive(name):
        global got
        got += kf.read(100000)
        check(name + ': the other session goes on',
              got == blob[:len(got)] and sftp.stat('f').st_size == len(blob))

    tr, ch = raw()
    ch.sendall(struct.pack('>I', 0) + b'\x05' * 8)
    check('length 0 closes', closed(ch))
    tr.close()
    alive('length 0')

    tr, ch = raw()
    ch.sendall(struct.pack('>I', 3) + b'\x11\x00\x00')
    check('length 3 closes', closed(ch))
    tr.close()
    alive('length 3')

    tr, ch = raw()
    ch.sendall(struct.pack('>I', 300000) + b'\x05' * 4096)
    check('oversized (300000 > 256 KiB) closes', closed(ch))
    tr.close()
    alive('oversized')

    # a packet of the maximum size is fine: a WRITE to a bad handle
    tr, ch = raw()
    body = s(b'\xff\xff\xff\xff') + struct.pack('>Q', 0)
    body += s(b'x' * (262144 - 5 - len(body) - 4))
    ch.sendall(pkt(6, body, 7))
    check('262144-byte WRITE to a bad handle answered',
          status(reply(ch)) == (7, 4))
    tr.close()

    # truncated inside: OPEN's path string claims more than the packet has
    tr, ch = raw()
    ch.sendall(pkt(3, struct.pack('>I', 1000) + b'abc', 9))
    check('truncated OPEN closes', closed(ch))
    tr.close()
    alive('truncated inside')

    # truncated at the end: half a packet, then the channel's EOF
    tr, ch = raw()
    ch.sendall(struct.pack('>I', 100) + b'\x11' + b'\x00' * 40)
    ch.shutdown_write()
    check('half a packet, then EOF: closed', closed(ch))
    tr.close()
    alive('truncated at the end')

    tr, ch = raw(init=False)
    ch.sendall(pkt(17, s(b'f'), 3))
    check('request before INIT closes', closed(ch))
    tr.close()

    tr, ch = raw()
    ch.sendall(pkt(1, struct.pack('>I', 3)))
    check('a second INIT closes', closed(ch))
    tr.close()

    # answered, the session goes on
    tr, ch = raw()
    ch.sendall(pkt(99, b'whatever', 0x1234))
    check('unknown type: SSH_FX_OP_UNSUPPORTED',
          status(reply(ch)) == (0x1234, 8))
    ch.sendall(pkt(200, s(b'nothing@example.com'), 0x1235))
    check('unknown extension: SSH_FX_OP_UNSUPPORTED',
          status(reply(ch)) == (0x1235, 8))
    ch.sendall(pkt(5, s(b'\x00\x00\x00') + struct.pack('>QI', 0, 10), 0x1236))
    check('READ of a 3-byte handle: SSH_FX_FAILURE',
          status(reply(ch)) == (0x1236, 4))
    ch.sendall(pkt(4, s(b'\x00\x00\x00\x63'), 0x1237))
    check('CLOSE of an unknown handle: SSH_FX_FAILURE',
          status(reply(ch)) == (0x1237, 4))
    ch.sendall(pkt(17, s(b'f'), 0x1238))
    r = reply(ch)
    check('then STAT works', r is not None and r[0] == 105
          and struct.unpack('>I', r[1:5])[0] == 0x1238)
    tr.close()
    alive('answered errors')

    got += kf.read()
    check('the other session read the whole file', got == blob, len(got))
    kf.close()
    keep.close()

else:
    # 200 sessions open at once, each one used while all are open
    n = 200
    trs, sfs, errs = [None] * n, [None] * n, []
    lock = threading.Lock()
    start = time.time()

    def one(i):
        try:
            trs[i] = login()
            sfs[i] = paramiko.SFTPClient.from_transport(trs[i])
        except Exception as e:
            with lock:
                errs.append(repr(e))

    for base in range(0, n, 20):
        th = [threading.Thread(target=one, args=(i,))
              for i in range(base, min(base + 20, n))]
        for x in th: x.start()
        for x in th: x.join(60)
        if time.time() - start > 50:
            break

    up = [x for x in sfs if x is not None]
    check('200 sessions open at once', len(up) == n, (len(up), errs[:3]))
    good = 0
    for i, x in enumerate(up):
        try:
            with x.open('f', 'r') as f:
                f.seek(i * 1000)
                if f.read(1000) == blob[i * 1000:i * 1000 + 1000]:
                    good += 1
        except Exception as e:
            errs.append(repr(e))
    check('each of them reads', good == n, (good, errs[:3]))
    for x in trs:
        if x is not None:
            x.close()

print('done')
EOF2

sub client {
    my ($mode) = @_;
    my $out = `timeout 90 /usr/bin/python3 $d/client.py $port $d/key $d/data/alice $mode 2>&1`;
    my $n = 0;

    for my $l (split /\n/, $out) {
        if ($l =~ /^(not )?ok (.*)$/) {
            ok(!$1, $2);
            $n++;
        }
    }

    like($out, qr/^done$/m, "$mode client finished") or diag($out);
    return $n;
}

cmp_ok(client('malformed'), '>=', 20, 'all malformed-packet checks ran');

my $log = $t->read_file('error.log');
like($log, qr/client sent sftp packet of bad length 0\b/, 'bad length logged');
like($log, qr/client sent sftp packet of bad length 300000/,
    'oversized logged');
like($log, qr/client sent malformed sftp packet of type 3/,
    'truncated logged');

cmp_ok(client('many'), '==', 2, 'the 200-session checks ran');

my @w = $t->workers();
is(scalar @w, 1, 'the worker survived');

$t->done();
