#!/usr/bin/perl

# sftp_pool.t -- SFTP READs and WRITEs take their memory from the shared
# buffer pool (buffer_pool_bytes) and wait for it like FTP transfers.  In
# a pool of 16 chunks, 200 sessions at once (50 in the slower sanitizer
# build) each send 64 READs of 255 KiB of a file whose pages they drop
# (so that READs go to the thread pool or io_uring, into chunks), then as
# many sessions upload with 32 WRITEs in flight; every byte of every reply
# and of every upload is checked, the pool was waited on and has every
# chunk back at the end.  Then, with every chunk held by an idle FTP
# upload in text mode, an SFTP WRITE waits unanswered (and a session that
# leaves while its WRITE waits disturbs nothing) until an FTP upload ends
# and gives its chunk back.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use File::Spec;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has('sftp')->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;

# the sanitizer build is several times slower: fewer sessions there; the
# time limits are for a machine busy with other tests (prove -j), not a
# speed bound: 200 sessions move 3.3 GB of READs through 4 MiB
my $san = `@{[ $t->binary() ]} -V 2>&1` =~ /--with-sanitizers/;
my $sessions = $san ? 50 : 200;

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 1;
buffer_pool_bytes 4m;
events { worker_connections 1024; }
max_connections_per_address 1000;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        tls_login off;
        tls_data off;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
        login_grace_time 60s;
    }
}
EOF2

$t->user_add('alice', 'pw-alice',
    perms => 'list,download,upload,overwrite,delete');
my $key = $t->user_key('alice');

# 3 MiB and a bit: READs of 255 KiB at 64 KiB steps, some short at the end
system("head -c 3200000 /dev/urandom > $d/data/alice/big") == 0 or die;

$t->run();
my $port = port(8022);

sub stats {
    my ($body) = (http_get(port(8080), '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    return eval { decode_json($body // '') } || {};
}

my $pool = stats()->{buffer_pool} // {};
is($pool->{total}, 16, 'a pool of 16 chunks');

$t->write_file('load.py', <<'EOF2');
import os, sys, struct, threading, multiprocessing
sys.path.insert(0, sys.argv[6])
from sftp_raw import pkt, s, reply
import sftp_raw

port, key, data = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mode, n = sys.argv[4], int(sys.argv[5])
big = data + '/big'
blob = open(big, 'rb').read()
READ = 255 * 1024
PROCS = 4

def handle_of(r):
    assert r is not None and r[0] == 102, r and r[:20]
    return r[9:9 + struct.unpack('>I', r[5:9])[0]]

def cold():
    fd = os.open(big, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)

def reads(i, ch):
    ch.sendall(pkt(3, s(b'big') + struct.pack('>II', 1, 0), 1))
    h = handle_of(reply(ch))
    cold()
    offs = [((i * 7 + k) * 65536) % len(blob) for k in range(64)]
    ch.sendall(b''.join(pkt(5, s(h) + struct.pack('>QI', offs[k], READ),
                            100 + k) for k in range(64)))
    bad = 0
    for _ in range(64):
        r = reply(ch)
        k = struct.unpack('>I', r[1:5])[0] - 100
        if r[0] != 103 or not 0 <= k < 64:
            bad += 1
            continue
        m = struct.unpack('>I', r[5:9])[0]
        want = blob[offs[k]:offs[k] + READ]
        # a short answer is allowed; every byte must be the file's
        if m == 0 or m > READ or r[9:9 + m] != want[:m]:
            bad += 1
    return bad

def writes(i, ch):
    name = b'up%d' % i
    body = bytes([(i * 31 + j) % 251 for j in range(251)]) * 4178
    ch.sendall(pkt(3, s(name) + struct.pack('>II', 0x1a, 0), 1))
    h = handle_of(reply(ch))
    step = 32768
    ch.sendall(b''.join(pkt(6, s(h) + struct.pack('>Q', o)
                            + s(body[o:o + step]), 100 + o // step)
                        for o in range(0, len(body), step)))
    bad = 0
    for _ in range(0, len(body), step):
        r = reply(ch)
        if r is None or r[0] != 101 or struct.unpack('>I', r[5:9])[0] != 0:
            bad += 1
    ch.sendall(pkt(4, s(h), 2))
    r = reply(ch)
    if r is None or struct.unpack('>I', r[5:9])[0] != 0:
        bad += 1
    if open(data + '/up%d' % i, 'rb').read() != body:
        bad += 1
    return bad

def session(i, out):
    try:
        tr = sftp_raw.login(port, key)
        ch = sftp_raw.channel(tr)
        ch.settimeout(600)
        bad = (reads if mode == 'read' else writes)(i, ch)
        tr.close()
        out.append(bad)
    except Exception as e:
        out.append('%d: %r' % (i, e))

def proc(first, q):
    out = []
    ts = [threading.Thread(target=session, args=(i, out))
          for i in range(first, n, PROCS)]
    for th in ts:
        th.start()
    for th in ts:
        th.join(800)
    q.put(out)

q = multiprocessing.Queue()
ps = [multiprocessing.Process(target=proc, args=(p, q)) for p in range(PROCS)]
for p in ps:
    p.start()
res = []
for p in ps:
    res += q.get(timeout=850)
for p in ps:
    p.join(10)
done = [r for r in res if r == 0]
print('sessions %d fine %d' % (n, len(done)))
for r in res:
    if r != 0:
        print('failed', r)
EOF2

my $lib = File::Spec->rel2abs('t/lib');

for my $mode ('read', 'write') {
    my $t0 = time();
    my $out = `timeout 900 /usr/bin/python3 $d/load.py $port $key $d/data/alice $mode $sessions $lib 2>&1`;
    like($out, qr/^sessions $sessions fine $sessions$/m,
        "$sessions sessions, 64 READs or 32 WRITEs each in flight: $mode")
        or diag(substr($out, 0, 2000));
    diag("$mode: " . (time() - $t0) . ' s, pool '
        . encode_json(stats()->{buffer_pool} // {}));
}

ok((stats()->{buffer_pool}{waits} // 0) > 0, 'SFTP waited for pool chunks');

$t->wait_for(sub { (stats()->{buffer_pool}{in_use} // -1) == 0 }, 20);
is(stats()->{buffer_pool}{in_use}, 0, 'every chunk back in the pool');

# the pool held by FTP uploads in text mode, one chunk each

$t->write_file('hold.py', <<'EOF2');
import sys, time, socket, struct, ftplib, json, urllib.request
sys.path.insert(0, sys.argv[5])
from sftp_raw import check, pkt, s, reply, status, channel
import sftp_raw

fport, sport, hport, key = (int(sys.argv[1]), int(sys.argv[2]),
                            int(sys.argv[3]), sys.argv[4])
data = sys.argv[6]

def pool():
    u = 'http://127.0.0.1:%d/api/v1/stats' % hport
    return json.load(urllib.request.urlopen(u, timeout=10))['buffer_pool']

def until(cond, secs=30):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return False

held = []
for i in range(pool()['total']):
    f = ftplib.FTP(timeout=30)
    f.connect('127.0.0.1', fport)
    f.login('alice', 'pw-alice')
    f.voidcmd('TYPE A')
    held.append((f, f.transfercmd('STOR held%d' % i)))
check('idle FTP text uploads hold every chunk',
      until(lambda: pool()['free'] == 0), pool())

def opened(ch, name):
    ch.sendall(pkt(3, s(name) + struct.pack('>II', 0x1a, 0), 1))
    r = reply(ch)
    return r[9:9 + struct.unpack('>I', r[5:9])[0]]

body = bytes(range(256)) * 400
tr = sftp_raw.login(sport, key)
ch = channel(tr)
h = opened(ch, b'w1')
waits = pool()['waits']
ch.sendall(pkt(6, s(h) + struct.pack('>Q', 0) + s(body), 10))
check('the WRITE waits for a chunk',
      until(lambda: pool()['waits'] > waits and pool()['waiters'] == 1),
      pool())
ch.settimeout(1)
try:
    r = reply(ch)
except socket.timeout:
    r = None
check('no answer while the pool is empty', r is None, r)

# a session that leaves while its WRITE waits
tr2 = sftp_raw.login(sport, key)
ch2 = channel(tr2)
h2 = opened(ch2, b'w2')
waits = pool()['waits']
ch2.sendall(pkt(6, s(h2) + struct.pack('>Q', 0) + s(body), 10))
check('a second WRITE waits', until(lambda: pool()['waits'] > waits), pool())
tr2.close()

# an FTP upload ends: its chunk goes to the WRITE
f, conn = held.pop()
conn.sendall(b'text\n' * 100)
conn.close()
f.voidresp()
ch.settimeout(30)
check('the WRITE goes on once a chunk is back', status(reply(ch)) == (10, 0))
ch.sendall(pkt(4, s(h), 11))
check('closed', status(reply(ch)) == (11, 0))
check('written', open(data + '/w1', 'rb').read() == body)

for f, conn in held:
    conn.close()
    f.voidresp()
    f.quit()
check('every chunk back', until(lambda: pool()['in_use'] == 0), pool())
check('nobody waits', pool()['waiters'] == 0, pool())
tr.close()
EOF2

$t->python_checks('hold.py', port(8021), $port, port(8080), $key, $lib,
    "$d/data/alice");

$t->done();
