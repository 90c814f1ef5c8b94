#!/usr/bin/perl

# xfer_pipes.t -- the worker's spare splice pipes: after many plaintext
# uploads, some at once, an upload the client cuts off and one stopped
# by the quota with bytes still in its pipe, the worker holds no more
# pipes than its 16 spares, and every upload after them arrives
# byte-identical (no pipe handed out with another upload's bytes in it).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Ftps qw/passive_range/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ftplib"') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/carol";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
max_connections_per_address 64;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
    }
}
EOF

# the passive ports of 20 data connections at once
passive_range($t, 8100);

my $perms = 'list,download,upload,overwrite,delete';
$t->user_add('alice', 'pw-a', perms => $perms);
$t->user_add('carol', 'pw-c', perms => $perms);
$t->write_file('users', $t->read_file('users') . "quota_bytes = 100000\n");

$t->run();
$t->wait_for(sub { scalar($t->workers()) == 1 }, 20);

my ($worker) = $t->workers();
my $port = port(8021);

$t->write_file('t.py', <<'PY');
import ftplib, os, socket, sys
port, worker = int(sys.argv[1]), sys.argv[2]

def pipes():
    n = 0
    for fd in os.listdir(f'/proc/{worker}/fd'):
        try:
            n += os.readlink(f'/proc/{worker}/fd/{fd}').startswith('pipe:')
        except OSError:
            pass
    return n

def login(user, pw):
    f = ftplib.FTP()
    f.connect('127.0.0.1', port, timeout=20)
    f.login(user, pw)
    f.voidcmd('TYPE I')
    return f

def stor(f, name, data):
    c = f.transfercmd(f'STOR {name}')
    c.sendall(data)
    c.close()
    f.voidresp()
    return open(f'data/alice/{name}', 'rb').read() == data

base = pipes()
f = login('alice', 'pw-a')
print('serial', sum(stor(f, f's{i}', os.urandom(20000 + i * 997))
                    for i in range(40)))

# 20 at once: 20 pipes in use, 16 kept as spares after
fs = [login('alice', 'pw-a') for _ in range(20)]
cs = [g.transfercmd(f'STOR p{i}') for i, g in enumerate(fs)]
datas = [os.urandom(50000 + i) for i in range(20)]
for c, data in zip(cs, datas):
    c.sendall(data[:25000])
for c, data in zip(cs, datas):
    c.sendall(data[25000:])
    c.close()
good = 0
for i, g in enumerate(fs):
    g.voidresp()
    good += open(f'data/alice/p{i}', 'rb').read() == datas[i]
    g.quit()
print('parallel', good)
print('spares', pipes() - base)

# cut with a reset mid-file: 426
c = f.transfercmd('STOR cut')
c.sendall(os.urandom(300000))
c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
             b'\x01\x00\x00\x00\x00\x00\x00\x00')
c.close()
try:
    print('cut', f.voidresp()[:3])
except ftplib.error_temp as e:
    print('cut', str(e)[:3])

# over the quota: stopped with bytes still in its pipe
q = login('carol', 'pw-c')
c = q.transfercmd('STOR big')
try:
    c.sendall(b'Q' * 400000)
except OSError:
    pass
c.close()
try:
    print('quota', q.voidresp()[:3])
except ftplib.error_perm as e:
    print('quota', str(e)[:3])
q.quit()

print('after', sum(stor(f, f'a{i}', os.urandom(30000 + i))
                   for i in range(20)))
print('spares', pipes() - base)
f.quit()
PY

my $out = `cd $d && timeout 120 python3 t.py $port $worker 2>&1`;

like($out, qr/^serial 40$/m, '40 uploads one after another, each whole');
like($out, qr/^parallel 20$/m, '20 uploads at once, each whole');
my @spares = $out =~ /^spares (\d+)$/mg;
ok(@spares == 2 && $spares[0] == 32,
    'after 20 at once: 16 spare pipes kept, the others closed')
    or diag($out);
like($out, qr/^cut 426$/m, 'an upload cut with a reset: 426');
like($out, qr/^quota 552$/m, 'an upload over the quota: 552');
like($out, qr/^after 20$/m,
    'the uploads after them are byte-identical') or diag($out);
ok(@spares == 2 && $spares[1] <= 32,
    'and the worker holds no more pipes than its spares');

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|crit|emerg)\]/,
    'no alert in the error log');

done_testing();
