#!/usr/bin/perl

# s3_confined.t -- the s3 storage driver in workers confined as they are by
# default (seccomp on, Landlock), with endpoints named as real deployments
# name them: a host name from /etc/hosts, a host name from DNS, HTTPS with
# a certificate for that name trusted through s3_ca_file, and HTTPS
# trusted through libcurl's default CA bundle.  The test runs in private
# mount and network namespaces of its own: a hosts file, a resolv.conf
# (nameserver 127.0.0.53), an nsswitch.conf and the default CA bundle
# (the test's CA) are bind-mounted over the system's, a small DNS
# responder answers on 127.0.0.53:53 with two addresses (so the C library
# sorts them, through a netlink routing socket; 127.0.0.2 refuses and
# libcurl tries the next), and a TLS terminator with a certificate made
# at test time stands in front of moto.  Each storage: an FTP upload read
# back byte-identical, and no alert or emergency in the error log.
# Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;

BEGIN {
    # run again inside mount and network namespaces of our own
    if (!$ENV{SIFTPD_TEST_NETNS}) {
        if ($> == 0 && system('unshare -m -n true 2>/dev/null') == 0) {
            $ENV{SIFTPD_TEST_NETNS} = 1;
            exec 'unshare', '-m', '-n', '--propagation', 'private', $^X,
                map({ "-I$_" } @INC), $0;
        }
        plan(skip_all => 'needs root and unshare -m -n');
    }
}

use Test::Siftpd::S3 qw/s3_storage_moto/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 's3_storage');
my $d = $t->testdir();

plan(skip_all => 'no openssl') unless system('openssl version >/dev/null') == 0;
system('ip link set lo up') == 0 or plan(skip_all => 'no loopback');

my $name = 's3.siftpd.test';
my $dname = 'dns.siftpd.test';

# a CA and a certificate for the name, made now

$t->write_file('san.cnf', "subjectAltName=DNS:$name\n");
system("cd $d && openssl req -x509 -newkey ec -pkeyopt "
    . "ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.pem "
    . "-days 2 -subj /CN=siftpd-test-ca 2>/dev/null "
    . "&& openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
    . "-nodes -keyout tls.key -out tls.csr -subj /CN=$name 2>/dev/null "
    . "&& openssl x509 -req -in tls.csr -CA ca.pem -CAkey ca.key "
    . "-CAcreateserial -out tls.pem -days 2 -extfile san.cnf 2>/dev/null")
    == 0 or die "openssl failed";

# the names: /etc/hosts for one, DNS on 127.0.0.53 for the other (not
# 127.0.0.1, where the C library asks when it cannot read resolv.conf)

$t->write_file('hosts', "127.0.0.1 localhost\n127.0.0.1 $name\n");
$t->write_file('resolv.conf',
    "nameserver 127.0.0.53\noptions timeout:2 attempts:2\n");
$t->write_file('nsswitch.conf', "hosts: files dns\n");

for my $f (qw/hosts resolv.conf nsswitch.conf/) {
    system("mount --bind $d/$f /etc/$f") == 0
        or plan(skip_all => "cannot bind-mount /etc/$f");
}

# moto would take a host name's first label for a bucket
$ENV{S3_IGNORE_SUBDOMAIN_BUCKETNAME} = 'true';

my $s3 = port(8900);
my $tls = port(8902);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');

# names.py: the DNS responder (A records of the name, NXDOMAIN for any
# other) and the TLS terminator in front of moto

$t->write_file('names.py', <<'PY');
import socket, ssl, struct, sys, threading

name, tls, s3, d = sys.argv[1].encode(), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(('127.0.0.53', 53))
    while True:
        q, peer = s.recvfrom(512)
        qid, = struct.unpack('>H', q[:2])
        i, labels = 12, []
        while q[i]:
            labels.append(q[i + 1:i + 1 + q[i]])
            i += 1 + q[i]
        qtype, = struct.unpack('>H', q[i + 1:i + 3])
        question = q[12:i + 5]
        known = b'.'.join(labels).lower() == name
        addrs = ['127.0.0.1', '127.0.0.2'] if known and qtype == 1 else []
        answers = b''.join(b'\xc0\x0c' + struct.pack('>HHIH', 1, 1, 60, 4)
                           + socket.inet_aton(a) for a in addrs)
        flags = 0x8180 if known else 0x8183
        s.sendto(struct.pack('>HHHHHH', qid, flags, 1, len(addrs), 0, 0)
                 + question + answers, peer)

def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    for c in (a, b):
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

def client(c):
    try:
        c = ctx.wrap_socket(c, server_side=True)
    except (OSError, ssl.SSLError):
        c.close()
        return
    m = socket.create_connection(('127.0.0.1', s3))
    threading.Thread(target=pump, args=(m, c), daemon=True).start()
    pump(c, m)

ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(d + '/tls.pem', d + '/tls.key')
threading.Thread(target=dns, daemon=True).start()
ls = socket.create_server(('127.0.0.1', tls))
print('ready', flush=True)
while True:
    c, _ = ls.accept()
    threading.Thread(target=client, args=(c,), daemon=True).start()
PY

my $pid = fork() // die "fork: $!";

if ($pid == 0) {
    open(STDOUT, '>', "$d/names.log") or die;
    open(STDERR, '>&', \*STDOUT) or die;
    exec('python3', "$d/names.py", $dname, $tls, $s3, $d) or die;
}

END {
    local $?;
    if ($pid) { kill('TERM', $pid); waitpid($pid, 0); }
}

$t->wait_for(sub { $t->read_file('names.log') =~ /^ready/m }, 60)
    or die "names.py did not start:\n" . $t->read_file('names.log');

# libcurl's default CA bundle, named by curl's own verbose output, is
# the test's CA in this mount namespace

my ($cafile) = `curl -sv https://$name:$tls/ 2>&1` =~ /CAfile: (\S+)/;

ok(defined $cafile && -f $cafile
    && system("mount --bind $d/ca.pem $cafile") == 0,
    "libcurl's default CA bundle is the test's CA");

like(`curl -s -o /dev/null -w '%{http_code}' https://$name:$tls/files 2>&1`,
    qr/^[1-5]\d\d$/, 'the TLS terminator answers for the name');

# one storage a way of naming and trusting the endpoint

my @storages = (
    [byhosts => "s3_endpoint http://$name:$s3;"],
    [bydns => "s3_endpoint http://$dname:$s3;"],
    [tlsca => "s3_endpoint https://$name:$tls; s3_ca_file $d/ca.pem;"],
    [tlsdefault => "s3_endpoint https://$name:$tls;"],
);

my $storages = join('', map { <<"EOF" } @storages);
storage $_->[0] {
    driver s3;
    $_->[1]
    s3_bucket files;
    s3_credentials file $d/creds;
    s3_retries 1;
    s3_timeout 30s;
}
EOF

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
$storages
ftp { server { listen 127.0.0.1:%%PORT_8021%%; } }
EOF

@storages = map { $_->[0] } @storages;

for my $s (@storages) {
    $t->user_add($s, 'pw', perms => 'all', storage => $s);
}

$t->run();

ok($t->wait_log(qr/landlock: confined to \d+ paths/),
    'the worker is confined by Landlock');

my $data = join('', map { chr(($_ * 7 + 3) % 256) } 0 .. 300_000);
$t->write_file('up', $data);

my $ftp = 'ftp://%s:pw@127.0.0.1:' . port(8021) . '/f';

for my $s (@storages) {
    my $url = sprintf($ftp, $s);
    my $out = `curl -sS --max-time 60 -T $d/up $url 2>&1`;
    is($?, 0, "$s: upload") or diag($out);
    unlink "$d/down";
    $out = `curl -sS --max-time 60 -o $d/down $url 2>&1`;
    ok($? == 0 && -f "$d/down" && $t->read_file('down') eq $data,
        "$s: downloaded byte-identical") or diag($out);
}

unlike($t->read_file('error.log'), qr/\[(alert|emerg)\]/,
    'no alert or emergency in the error log');
unlike($t->read_file('error.log'),
    qr/S3 storage "\w+": (?!\d+ multipart uploads older than)/,
    'every bucket answered at the start');

$t->done();
