#!/usr/bin/perl

# fleet_passive.t -- passive FTP through a load balancer: Debian's HAProxy
# in TCP mode in front of two siftpd nodes (127.0.0.11 and 127.0.0.12, one
# storage directory between them), the control port balanced round-robin
# over both, each node's passive port range forwarded to it, every
# connection with a PROXY protocol v2 header.  Clients on 127.0.0.2:
# Python's ftplib (PASV, trusting the address the 227 names: the
# balancer's, from "pasv_address proxy") and curl (EPSV, and PASV with
# --disable-epsv) upload and download byte-identical files over several
# sessions, served by both nodes; the nodes' logs name the client
# 127.0.0.2, not the balancer; a data connection through the balancer
# from another client (127.0.0.3) is refused and the right one still gets
# the data; a data connection straight from a peer not in
# proxy_protocol_from (127.0.0.4, with a header claiming to be the client)
# is refused too.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port port_range/;
use Test::Siftpd::HAProxy qw/haproxy_binary haproxy_ftp/;

plan(skip_all => 'no haproxy') unless haproxy_binary();
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;
plan(skip_all => 'no python3') unless -x '/usr/bin/python3';

my $n1 = Test::Siftpd->new()->has('ftp');
my $n2 = Test::Siftpd->new();
my $d = $n1->testdir();

my $ctl = port(8020);
my @node = (
    { t => $n1, addr => '127.0.0.11', port => port(8021) },
    { t => $n2, addr => '127.0.0.12', port => port(8022) },
);
@{$node[0]}{qw/lo hi/} = port_range(4);
@{$node[1]}{qw/lo hi/} = port_range(4);

# one storage directory for both nodes, as a fleet shares its object store

mkdir "$d/shared";
mkdir "$d/shared/alice";

for my $n (@node) {
    $n->{t}->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root $d/shared; }
ftp {
    server {
        listen $n->{addr}:$n->{port} proxy_protocol;
        proxy_protocol_from 127.0.0.1;
        passive_ports $n->{lo}-$n->{hi};
        pasv_address proxy;
        storage local;
    }
}
EOF
    $n->{t}->user_add('alice', 'pw-a', perms => 'all');
}

my $blob = join('', map { chr(int(rand(256))) } 1 .. 300000);
$n1->write_file('blob.bin', $blob);

$n1->run();
$n2->run();

my ($hpid, $up) = haproxy_ftp($n1, $ctl, @node);
ok($up, 'a greeting through HAProxy') or diag($n1->read_file('haproxy.out'));

$n1->write_file('fleet.py', <<'PY');
import sys, socket, struct, ftplib, io

ctl = int(sys.argv[1])
ranges = {1: (int(sys.argv[2]), int(sys.argv[3])),
          2: (int(sys.argv[4]), int(sys.argv[5]))}
nodes = {1: sys.argv[6], 2: sys.argv[7]}
blob = open(sys.argv[8], 'rb').read()

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name + ('' if cond else ': %r' % (why,)))
    sys.stdout.flush()

def node_of(port):
    for n, (lo, hi) in ranges.items():
        if lo <= port <= hi:
            return n
    return 0

def login(source='127.0.0.2'):
    f = ftplib.FTP(timeout=20, source_address=(source, 0))
    f.trust_server_pasv_ipv4_address = True
    f.connect('127.0.0.1', ctl)
    f.login('alice', 'pw-a')
    f.voidcmd('TYPE I')
    return f

def pasv(f):
    host, port = ftplib.parse227(f.sendcmd('PASV'))
    return host, port

def retr_on(f, port, name):
    # the data connection first, as a client behind the balancer makes it
    d = socket.create_connection(('127.0.0.1', port), timeout=20,
                                 source_address=('127.0.0.2', 0))
    f.sendcmd('RETR ' + name)
    data = b''
    while True:
        chunk = d.recv(65536)
        if not chunk:
            break
        data += chunk
    d.close()
    f.voidresp()
    return data

def refused(s):
    # closed without a byte (a reset, when what it sent was left unread)
    s.settimeout(20)
    try:
        return s.recv(100) == b''
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False

# several sessions: round robin puts them on both nodes; each uploads
# through the balancer and downloads what the one before put there

served = set()
hosts = set()
good = True
for i in range(4):
    f = login()
    host, port = pasv(f)
    hosts.add(host)
    served.add(node_of(port))
    f.storbinary('STOR up%d.bin' % i, io.BytesIO(blob))
    got = io.BytesIO()
    f.retrbinary('RETR up%d.bin' % (i - 1 if i else 0), got.write)
    good = good and got.getvalue() == blob
    f.quit()

check('PASV names the balancer\'s address (pasv_address proxy)',
      hosts == {'127.0.0.1'}, hosts)
check('sessions landed on both nodes', served == {1, 2}, served)
check('ftplib PASV: uploads and downloads byte-identical through the balancer',
      good)

# a data connection through the balancer from another client

f = login()
host, port = pasv(f)
b = socket.create_connection(('127.0.0.1', port), timeout=20,
                             source_address=('127.0.0.3', 0))
check('another client\'s data connection through the balancer is closed',
      refused(b))
b.close()
check('the client\'s own data connection on that port still gets the file',
      retr_on(f, port, 'up0.bin') == blob)
f.quit()

# straight to the node from a peer not in proxy_protocol_from, with a
# header that claims to be the client

f = login()
host, port = pasv(f)
n = node_of(port)
body = socket.inet_aton('127.0.0.2') + socket.inet_aton('127.0.0.1') \
    + struct.pack('!HH', 40000, port)
header = b'\r\n\r\n\x00\r\nQUIT\n\x21\x11' + struct.pack('!H', len(body)) + body
b = socket.create_connection((nodes[n], port), timeout=20,
                             source_address=('127.0.0.4', 0))
b.sendall(header)
check('a header from a peer not in proxy_protocol_from is refused',
      refused(b))
b.close()
check('... and the client still gets the file through the balancer',
      retr_on(f, port, 'up1.bin') == blob)
f.quit()
PY

my ($n, $pyout) = $n1->python_checks('fleet.py', $ctl,
    $node[0]{lo}, $node[0]{hi}, $node[1]{lo}, $node[1]{hi},
    $node[0]{addr}, $node[1]{addr}, "$d/blob.bin");
is($n, 7, 'every python check ran') or diag($pyout);

# curl: EPSV (its default) and PASV, up and down, twice each so both
# nodes serve it

my $url = "ftp://alice:pw-a\@127.0.0.1:$ctl";

for my $i (1 .. 2) {
    for my $m (['EPSV', qr/^< 229 /m], ['PASV', qr/^< 227 /m, '--disable-epsv']) {
        my ($name, $re, @opt) = @$m;
        my $out = `curl -v -s -S --max-time 30 --interface 127.0.0.2 @opt -T $d/blob.bin $url/curl-$name-$i.bin 2>&1`;
        is($? >> 8, 0, "curl $name upload $i") or diag($out);
        like($out, $re, "... over $name");
        $out = `curl -s -S --max-time 30 --interface 127.0.0.2 @opt -o $d/curl-$name-$i.out $url/curl-$name-$i.bin 2>&1`;
        is($? >> 8, 0, "curl $name download $i") or diag($out);
        ok($n1->read_file("curl-$name-$i.out") eq $blob,
            "... byte-identical");
    }
}

kill 'TERM', $hpid;
waitpid($hpid, 0);

# the logs: both nodes served, every line names the client, not HAProxy

my @log = map { $_->{t}->read_file('error.log') } @node;

for my $i (0, 1) {
    my $srv = "$node[$i]{addr}:$node[$i]{port}";
    like($log[$i], qr/ftp session closed, client: 127\.0\.0\.2, server: \Q$srv\E, user: "alice"/,
        "node " . ($i + 1) . " served sessions of client 127.0.0.2");
    like($log[$i], qr/PROXY protocol from 127\.0\.0\.1: client 127\.0\.0\.2, client: 127\.0\.0\.2, server: \Q$srv\E, user: "alice"/,
        "node " . ($i + 1) . ": a data connection's header names the client");
    unlike($log[$i], qr/client: 127\.0\.0\.1,/,
        "node " . ($i + 1) . ": no session line names the balancer");
}

my $all = join('', @log);
like($all, qr/data connection from a different address 127\.0\.0\.3:\d+ refused, client: 127\.0\.0\.2/,
    'log: the other client\'s data connection, by its real address');
like($all, qr/data connection from a different address 127\.0\.0\.4:\d+ refused, client: 127\.0\.0\.2/,
    'log: the peer not in proxy_protocol_from, by its own address');

# node 2's closing checks here, node 1's in done()

$n2->stop_checked('node 2: ');

$n1->done();
