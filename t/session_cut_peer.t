#!/usr/bin/perl

# session_cut_peer.t -- SFTP uploads and downloads cut by a disconnect while
# their operations are in flight, each followed at once by another
# client's session (which takes over the closed connection's slot): every
# transfer log line and every session log line of a cut session still
# names its own client and user (bob from 127.0.0.2, alice from
# 127.0.0.1); the same for FTP uploads cut by closing the control
# connection; in the sanitizer build, no report of memory used after the
# close.

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
mkdir "$d/data/alice";
mkdir "$d/data/bob";
system("head -c 4194304 /dev/zero > $d/data/bob/big") == 0 or die;
$t->write_file('data/alice/small', "x" x 1000);

# one worker: the next session reuses the connection the cut one closed

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
transfer_log %%TESTDIR%%/xferlog;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
EOF

for my $u (qw/alice bob/) {
    $t->user_add($u, "pw-$u", perms => 'list,download,upload,overwrite');
}
$t->user_key('alice');
my $key = $t->user_key('bob');

$t->run();

# waits until n sessions in all closed and n transfers were reported
sub settled {
    my ($n, $what) = @_;

    ok($t->wait_for(sub {
            my $c = () = $t->read_file('error.log') =~ /ftp session closed/g;
            $c >= $n
        }), "every $what session closed");
    ok($t->wait_for(sub {
            my $c = () = $t->read_file('xferlog') =~ /\n/g;
            $c >= $n
        }), "every $what transfer reported");
}

$t->write_file('cut.py', <<'EOF');
import socket, sys, paramiko

port, key, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pkey = paramiko.Ed25519Key.from_private_key_file(key)

def session(addr, user):
    s = socket.create_connection(('127.0.0.1', port), source_address=(addr, 0))
    tr = paramiko.Transport(s)
    tr.connect(username=user, pkey=pkey)
    return s, tr, paramiko.SFTPClient.from_transport(tr)

for i in range(rounds):
    s, tr, sftp = session('127.0.0.2', 'bob')
    if i % 2:
        f = sftp.open('big', 'r')
        f.prefetch()
    else:
        f = sftp.open('up%d' % i, 'w')
        f.set_pipelined(True)
        for j in range(32):
            f.write(b'y' * 32768)
    # cut: the socket goes, the operations are still running
    s.shutdown(socket.SHUT_RDWR)
    tr.close()

    s, tr, sftp = session('127.0.0.1', 'alice')
    with sftp.open('small', 'r') as f:
        f.read()
    sftp.close()
    tr.close()

print('ok %d rounds' % rounds)
EOF

my $out = `timeout 120 /usr/bin/python3 $d/cut.py @{[ port(8022) ]} $key 20 2>&1`;
like($out, qr/^ok 20 rounds/m, 'cut sessions and the next ones ran')
    or diag($out);

settled(40, 'sftp');

$t->write_file('ftpcut.py', <<'EOF');
import ftplib, socket, sys

port, rounds = int(sys.argv[1]), int(sys.argv[2])

for i in range(rounds):
    f = ftplib.FTP(source_address=('127.0.0.2', 0))
    f.connect('127.0.0.1', port)
    f.login('bob', 'pw-bob')
    d = f.transfercmd('STOR ftp%d' % i)
    d.sendall(b'z' * 65536)
    # cut: the control connection goes first, then the data
    f.sock.shutdown(socket.SHUT_RDWR)
    f.sock.close()
    d.close()

    f = ftplib.FTP(source_address=('127.0.0.1', 0))
    f.connect('127.0.0.1', port)
    f.login('alice', 'pw-alice')
    f.retrbinary('RETR small', lambda b: None)
    f.quit()

print('ok %d rounds' % rounds)
EOF

$out = `timeout 60 /usr/bin/python3 $d/ftpcut.py @{[ port(8021) ]} 10 2>&1`;
like($out, qr/^ok 10 rounds/m, 'cut ftp sessions and the next ones ran')
    or diag($out);

settled(60, 'ftp');

my @x = split /\n/, $t->read_file('xferlog');
my @bob = grep { / bob s?ftp / } @x;
my @alice = grep { / alice s?ftp / } @x;

is(scalar(@bob), 30, 'a transfer log line per cut transfer');
is(scalar(@alice), 30, 'and per following one');
is(join("\n", grep { !/ 127\.0\.0\.2 \d+ / } @bob), '',
    'cut transfers name their own client');
is(join("\n", grep { !/ 127\.0\.0\.1 \d+ / } @alice), '',
    'the following ones theirs');
is(scalar(grep { / i$/ } @bob), 30, 'the cut ones incomplete');

my @closed = grep { /ftp session closed/ }
    split /\n/, $t->read_file('error.log');
is(join("\n", grep { !/client: 127\.0\.0\.2, .*user: "bob"/ }
        grep { /127\.0\.0\.2|"bob"/ } @closed), '',
    'the session log of a cut session names its client and user');
is(scalar(grep { /client: 127\.0\.0\.2, .*user: "bob"/ } @closed), 30,
    'on every closing line');

$t->done();
