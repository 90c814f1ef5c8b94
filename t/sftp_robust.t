#!/usr/bin/perl

# sftp_robust.t -- malformed SFTP packets sent raw over paramiko's channel
# (bad length, oversized, truncated inside and at the end, a request
# before INIT, an unknown type, bad handles) are answered or end only
# their own session, while another session on the same worker keeps
# reading a file; then 200 sessions open at once, each one used; then
# hundreds of pipelined WRITEs and READs in flight, more than siftpd runs
# at once, answered in full (WRITEs in order); the sftp channel closed
# with the connection kept (paramiko opens another, rclone exits 0); ten
# channels at once, each with its own handles, an eleventh refused; OPENs
# cut off in flight by a disconnect leave no descriptor and no temporary
# file behind.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use File::Spec;
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
sys.path.insert(0, sys.argv[5])
from sftp_raw import check, pkt, s, reply, status, channel
import sftp_raw

port, key, data, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
blob = open(data + '/f', 'rb').read()

def login():
    return sftp_raw.login(port, key)

def raw(init=True):
    tr = login()
    return tr, channel(tr, init)

def closed(ch):
    # the server ends the session: EOF, no reply
    try:
        return reply(ch) is None
    except (socket.timeout, EOFError, paramiko.SSHException) as e:
        return not isinstance(e, socket.timeout)

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

elif mode == 'pipeline':
    # 512 WRITEs of 32 KiB in flight, then 512 READs: a client that
    # never waits must not wait forever either
    blob = os.urandom(16 * 1024 * 1024)
    tr = login()
    sftp = paramiko.SFTPClient.from_transport(tr)
    sftp.get_channel().settimeout(30)
    try:
        with sftp.open('big', 'w') as f:
            f.set_pipelined(True)
            f.write(blob)
        ok = open(data + '/big', 'rb').read() == blob
        check('16 MiB of pipelined WRITEs stored, byte-identical', ok)
    except Exception as e:
        check('16 MiB of pipelined WRITEs stored, byte-identical', False,
              repr(e))
    try:
        with sftp.open('big', 'r') as f:
            f.prefetch(len(blob))
            got = f.read()
        check('16 MiB of prefetched READs byte-identical', got == blob,
              len(got))
    except Exception as e:
        check('16 MiB of prefetched READs byte-identical', False, repr(e))
    tr.close()

elif mode == 'inflight':
    # 300 small WRITEs in one go, then 300 READs: far more than the
    # requests siftpd runs at once, all of them already received
    n, size = 300, 1024
    blob = os.urandom(n * size)
    tr = login()
    ch = channel(tr)
    ch.sendall(pkt(3, s(b'small') + struct.pack('>II', 0x1a, 0), 1))
    r = reply(ch)
    handle = r[9:9 + struct.unpack('>I', r[5:9])[0]]
    ch.sendall(b''.join(pkt(6, s(handle) + struct.pack('>Q', i * size)
                            + s(blob[i * size:(i + 1) * size]), 100 + i)
                        for i in range(n)))
    ids = []
    try:
        for i in range(n):
            r = reply(ch)
            ids.append(struct.unpack('>II', r[1:9]))
    except Exception as e:
        ids.append(repr(e))
    check('%d pipelined WRITEs answered, in order, all OK' % n,
          ids == [(100 + i, 0) for i in range(n)], ids[-3:])
    ch.sendall(pkt(4, s(handle), 2))
    check('CLOSE after them', reply(ch)[1:9] == struct.pack('>II', 2, 0))
    check('the file byte-identical',
          open(data + '/small', 'rb').read() == blob)
    ch.sendall(pkt(3, s(b'small') + struct.pack('>II', 1, 0), 3))
    r = reply(ch)
    handle = r[9:9 + struct.unpack('>I', r[5:9])[0]]
    ch.sendall(b''.join(pkt(5, s(handle) + struct.pack('>QI', i * size, size),
                            1000 + i) for i in range(n)))
    got = {}
    try:
        for i in range(n):
            r = reply(ch)
            got[struct.unpack('>I', r[1:5])[0]] = r[9:]
    except Exception as e:
        pass
    check('%d pipelined READs answered with the data' % n,
          b''.join(got.get(1000 + i, b'') for i in range(n)) == blob,
          len(got))
    tr.close()

elif mode == 'opens':
    # OPENs for writing sent at once, the connection gone before their
    # replies: the ones still running must not leave anything behind
    tr = login()
    ch = channel(tr)
    ch.sendall(b''.join(pkt(3, s(b'o%d' % i) + struct.pack('>II', 0x1a, 0),
                            10 + i) for i in range(240)))
    tr.close()

elif mode == 'chanclose':
    # the sftp channel closed, the connection kept: another channel on it
    tr = login()
    sftp = paramiko.SFTPClient.from_transport(tr)
    with sftp.open('c1', 'w') as f:
        f.write(b'one')
    sftp.close()
    try:
        sftp = paramiko.SFTPClient.from_transport(tr)
        sftp.get_channel().settimeout(15)
        with sftp.open('c1', 'r') as f:
            got = f.read()
        sftp.close()
    except Exception as e:
        got = repr(e)
    check('after the sftp channel is closed, another on the connection',
          got == b'one', got)
    # closed with requests in flight: their replies have no one to go to
    ch = channel(tr)
    ch.sendall(b''.join(pkt(17, s(b'f'), i) for i in range(200)))
    ch.close()
    try:
        ch = channel(tr)
        ch.sendall(pkt(17, s(b'f'), 1))
        r = reply(ch)
    except Exception as e:
        r = repr(e)
    check('closed with requests in flight, the connection stays',
          r is not None and r[0] == 105, r)
    tr.close()

elif mode == 'channels':
    # ten sftp channels at once on one connection (max_channels' default),
    # each with its own handles; an eleventh refused until one closes
    tr = login()
    chs = [channel(tr) for i in range(10)]
    for i, ch in enumerate(chs):
        ch.sendall(pkt(3, s(b'f') + struct.pack('>II', 1, 0), i))
    hs = []
    for i, ch in enumerate(chs):
        r = reply(ch)
        hs.append(r[9:9 + struct.unpack('>I', r[5:9])[0]]
                  if r and r[0] == 102 else None)
    check('ten channels open the file', None not in hs, hs)
    for i, ch in enumerate(chs):
        ch.sendall(pkt(5, s(hs[i]) + struct.pack('>QI', i * 1000, 1000),
                       100 + i))
    ok = all(reply(ch)[9:] == blob[i * 1000:i * 1000 + 1000]
             for i, ch in enumerate(chs))
    check('each reads its part through its own handle', ok)
    # the same handle in each channel's own table: closed in one, the
    # others still read through it
    chs[0].sendall(pkt(4, s(hs[0]), 7))
    c0 = status(reply(chs[0]))
    chs[1].sendall(pkt(5, s(hs[0]) + struct.pack('>QI', 0, 10), 8))
    r = reply(chs[1])
    check('handles are per channel', len(set(hs)) == 1 and c0 == (7, 0)
          and r is not None and r[9:] == blob[:10], (hs, c0, r))
    try:
        tr.open_session(timeout=15)
        refused = False
    except paramiko.ChannelException as e:
        refused = True
    check('an eleventh channel refused', refused)
    chs[2].close()
    try:
        ch = channel(tr)
        ch.sendall(pkt(17, s(b'f'), 9))
        r = reply(ch)
        check('then one more opens, once one is closed',
              r is not None and r[0] == 105)
    except Exception as e:
        check('then one more opens, once one is closed', False, repr(e))
    tr.close()

else:
    # 200 sessions open at once, each one used while all are open; the
    # time limits are for a machine busy with other tests (prove -j),
    # not a speed bound: each login is a key exchange in Python
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
        for x in th: x.join(300)
        if time.time() - start > 400:
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

my $lib = File::Spec->rel2abs('t/lib');

sub client {
    my ($mode, $limit) = @_;
    $limit //= 90;
    my $out = `timeout $limit /usr/bin/python3 $d/client.py $port $d/key $d/data/alice $mode $lib 2>&1`;
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

cmp_ok(client('many', 600), '==', 2, 'the 200-session checks ran');

cmp_ok(client('pipeline'), '==', 2, 'the pipeline checks ran');
cmp_ok(client('inflight'), '==', 4, 'the in-flight checks ran');

cmp_ok(client('chanclose'), '==', 2, 'the channel close checks ran');
cmp_ok(client('channels'), '==', 5, 'the channels checks ran');
my $bad = $t->read_file('siftpd.conf');
$bad =~ s/(storage local;\n)/$1        max_channels 0;\n/;
$t->write_file('bad.conf', $bad);
like(($t->siftpd('-t', '-c', "$d/bad.conf"))[1],
    qr/"max_channels" must be at least 1/, 'max_channels 0 refused');
like($t->read_file('error.log'), qr/channel refused: max_channels \(10\)/,
    'the refused channel logged');
like($t->read_file('error.log'), qr/client closed channel/,
    'the channel end logged');

SKIP: {
    skip 'no rclone', 2 unless system('rclone version >/dev/null 2>&1') == 0;

    # Go's SSH library waits for the channel's close to be answered
    local $ENV{RCLONE_CONFIG_S_TYPE} = 'sftp';
    local $ENV{RCLONE_CONFIG_S_HOST} = '127.0.0.1';
    local $ENV{RCLONE_CONFIG_S_PORT} = $port;
    local $ENV{RCLONE_CONFIG_S_USER} = 'alice';
    local $ENV{RCLONE_CONFIG_S_KEY_FILE} = "$d/key";
    local $ENV{RCLONE_CONFIG_S_SHELL_TYPE} = 'none';
    local $ENV{RCLONE_CONFIG_S_DISABLE_HASHCHECK} = 'true';
    my $rc = "timeout 60 rclone --config $d/rclone.conf --contimeout 10s"
        . " --timeout 30s";

    $t->write_file('rclone.conf', '');
    $t->write_file('r1', "rclone data\n");
    my $out = `$rc copyto $d/r1 s:r1 2>&1`;
    is($?, 0, 'rclone copyto exits 0') or diag($out);
    $out = `$rc cat s:r1 2>&1`;
    is($out, "rclone data\n", 'rclone cat exits 0 with the data');
}

# the worker's descriptors before and after OPENs cut off in flight; the
# temporary files of the uploads they began

my ($w) = $t->workers();
my $fds = sub { opendir my $dh, "/proc/$w/fd" or return -1;
    my $n = () = grep { !/^\./ } readdir $dh; $n };
my $left = sub { opendir my $dh, "$d/data/alice" or return -1;
    my $n = () = grep { /^\.?o\d+/ } readdir $dh; $n };
my $sessions = sub { my $log = $t->read_file('error.log');
    my $n = () = $log =~ /sftp session started/g;
    my $c = () = $log =~ /sftp session closed/g; $n == $c };

$t->wait_for($sessions, 30);
my $before = $fds->();

client('opens');
ok($t->wait_for(sub { $sessions->() && $fds->() <= $before }, 30),
    'descriptors of OPENs completed after the disconnect are closed')
    or diag("$before descriptors before, " . $fds->() . ' after');
ok($t->wait_for(sub { $left->() == 0 }, 30),
    'no temporary file of theirs is left') or diag($left->() . ' left');

my @w = $t->workers();
is(scalar @w, 1, 'the worker survived');

$t->done();
