#!/usr/bin/perl

# proxy_protocol.t -- "listen ... proxy_protocol": FTP, SFTP and the admin
# API behind a PROXY protocol header (v1 and v2, whole and byte by byte,
# with the client's first bytes right behind it: FTP commands, an SSH
# banner, a TLS ClientHello on implicit FTPS) see the header's source:
# in /api/v1/sessions, in the log lines, for the API's loopback rule, for
# the FTP data connection's peer check and for login bans (the source is
# banned, not the balancer, and another source still logs in); a peer not
# in proxy_protocol_from, malformed headers and a silent peer are closed
# with one log line each; a listener without proxy_protocol_from is
# refused with its file and line; and, where Debian's haproxy is
# installed, FTP through a real HAProxy sending v2.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_connect ftp_cmd/;
use Test::Siftpd::HAProxy qw/haproxy_binary haproxy_start/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp http/);
my $d = $t->testdir();

plan(skip_all => 'no paramiko')
    unless system('/usr/bin/python3 -c "import paramiko" 2>/dev/null') == 0;
plan(skip_all => 'not root') unless $> == 0;

my @pw = getpwnam('nobody');
plan(skip_all => 'no user nobody') unless @pw;

mkdir "$d/data";
for my $u (qw/alice bob/) {
    mkdir "$d/data/$u";
    chown $pw[2], -1, "$d/data/$u";
}
chown $pw[2], -1, "$d/data";
$t->write_file('data/alice/hello.txt', "hello\n");

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
user nobody;
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
login_max_failures 2;
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%% proxy_protocol;
        proxy_protocol_from 127.0.0.1/32 ::1;
        proxy_protocol_timeout 1s;
        storage local;
    }
    server {
        listen 127.0.0.1:%%PORT_8023%% proxy_protocol;
        proxy_protocol_from 10.0.0.0/8;
        storage local;
    }
    server {
        listen 127.0.0.1:%%PORT_8024%% ssl proxy_protocol;
        proxy_protocol_from 127.0.0.1;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        storage local;
    }
}
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%% proxy_protocol;
        proxy_protocol_from 127.0.0.1;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
http {
    server { listen 127.0.0.1:%%PORT_8080%%; }
    server {
        listen 127.0.0.1:%%PORT_8081%% proxy_protocol;
        proxy_protocol_from 127.0.0.1;
    }
}
EOF

$t->user_add('alice', 'alice-pw', perms => 'list,download');
$t->user_add('bob', 'bob-pw', perms => 'list,download');
my $key = $t->user_key('bob');

# the configuration errors: no proxy_protocol_from, a bad network

my $conf = $t->read_file('siftpd.conf');
my $bin = $t->binary();
my $other = port(8023);

(my $bad = $conf) =~ s/proxy_protocol_from 10\.0\.0\.0\/8;//;
$t->write_file('bad.conf', $bad);
my $line = 1 + (() = substr($bad, 0,
    index($bad, "server {\n        listen 127.0.0.1:$other")) =~ /\n/g);
my $out = `$bin -p $d/ -c $d/bad.conf -t 2>&1`;
like($out, qr/\[emerg\] \S*bad\.conf:$line: "listen 127\.0\.0\.1:$other proxy_protocol" without "proxy_protocol_from"/,
    'proxy_protocol without proxy_protocol_from: refused at its file and line')
    or diag($out);

($bad = $conf) =~ s/10\.0\.0\.0\/8/10.0.0.0\/33/;
$t->write_file('bad.conf', $bad);
$out = `$bin -p $d/ -c $d/bad.conf -t 2>&1`;
like($out, qr/bad\.conf:\d+: invalid network "10\.0\.0\.0\/33" in "proxy_protocol_from"/,
    'a bad network in proxy_protocol_from is refused') or diag($out);

$t->run();

$t->write_file('pp.py', <<'PY');
import sys, socket, struct, time, ftplib, json, urllib.request, ssl, paramiko

ftp_port, other_port, sftp_port, api_port, papi_port, ftps_port = \
    map(int, sys.argv[1:7])
key = sys.argv[7]

def check(name, cond, why=''):
    print(('ok ' if cond else 'not ok ') + name + ('' if cond else ': %r' % (why,)))
    sys.stdout.flush()

def v1(src, sport, dport):
    return ('PROXY TCP4 %s 127.0.0.1 %d %d\r\n' % (src, sport, dport)).encode()

def v2(src, sport, dport, tlv=b''):
    body = socket.inet_aton(src) + socket.inet_aton('127.0.0.1') \
        + struct.pack('!HH', sport, dport) + tlv
    return b'\r\n\r\n\x00\r\nQUIT\n\x21\x11' + struct.pack('!H', len(body)) + body

def v2_local():
    return b'\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00'

def connect(port, header, bytewise=False, extra=b''):
    s = socket.create_connection(('127.0.0.1', port), timeout=20)
    if bytewise:
        for i in range(len(header)):
            s.sendall(header[i:i + 1])
            time.sleep(0.005)
        s.sendall(extra)
    else:
        s.sendall(header + extra)
    return s

def ftp_over(s, source):
    f = ftplib.FTP(timeout=20)
    f.sock = s
    f.af = s.family
    f.host = '127.0.0.1'
    f.source_address = (source, 0)
    f.file = s.makefile('r', encoding='latin-1')
    f.welcome = f.getresp()
    return f

def api(path):
    with urllib.request.urlopen('http://127.0.0.1:%d/api/v1/%s' % (api_port, path),
                                timeout=20) as r:
        return json.loads(r.read())

def sessions(**match):
    return [x for x in api('sessions')
            if all(x.get(k) == v for k, v in match.items())]

def gone(user):
    end = time.time() + 10
    while time.time() < end and sessions(user=user):
        time.sleep(0.05)

def closed(s):
    # the connection ends without a byte of the protocol
    s.settimeout(20)
    try:
        return s.recv(100) == b''
    except ConnectionResetError:
        return True

# FTP, v1 in one piece: the data connection must come from the source
f = ftp_over(connect(ftp_port, v1('127.0.0.5', 40001, ftp_port)), '127.0.0.5')
check('ftp v1: greeting', f.welcome.startswith('220'), f.welcome)
f.login('alice', 'alice-pw')
check('ftp v1: PASV listing from the source address',
      f.nlst() == ['hello.txt'])
p = sessions(user='alice')
check('ftp v1: the session has the source address and port',
      len(p) == 1 and p[0]['address'] == '127.0.0.5' and p[0]['port'] == 40001, p)
f.quit()
gone('alice')

# FTP, v2 byte by byte, and the USER command right behind the header
s = connect(ftp_port, v2('127.0.0.6', 40002, ftp_port), True, b'USER alice\r\n')
f = ftp_over(s, '127.0.0.6')
check('ftp v2 byte by byte: greeting', f.welcome.startswith('220'), f.welcome)
r = f.getresp()
check('ftp v2: the bytes after the header reached FTP', r.startswith('331'), r)
r = f.sendcmd('PASS alice-pw')
check('ftp v2: logged in', r.startswith('230'), r)
p = sessions(user='alice')
check('ftp v2: the session has the source address',
      len(p) == 1 and p[0]['address'] == '127.0.0.6' and p[0]['port'] == 40002, p)
f.quit()
gone('alice')

# v2 with a TLV, then LOCAL (a health check keeps the balancer's address)
tlv = b'\x04\x00\x05xxxxx'
f = ftp_over(connect(ftp_port, v2('127.0.0.8', 40008, ftp_port, tlv)), '127.0.0.8')
f.login('alice', 'alice-pw')
p = [x['address'] for x in sessions(user='alice')]
check('ftp v2 with a TLV: logged in from the source', p == ['127.0.0.8'], p)
f.quit()
gone('alice')

f = ftp_over(connect(ftp_port, v2_local()), '127.0.0.1')
f.login('alice', 'alice-pw')
p = [x['address'] for x in sessions(user='alice')]
check('ftp v2 LOCAL: the balancer\'s own address', p == ['127.0.0.1'], p)
f.quit()
gone('alice')

# SFTP: the header prepended to paramiko's first send, its SSH banner
class PPSocket(socket.socket):
    header = b''
    def send(self, data, *a):
        if self.header:
            h, self.header = self.header, b''
            self.sendall(h + data)
            return len(data)
        return super().send(data, *a)

ss = PPSocket(socket.AF_INET, socket.SOCK_STREAM)
ss.settimeout(20)
ss.connect(('127.0.0.1', sftp_port))
ss.header = b'PROXY TCP6 2001:db8::7 ::1 40003 22\r\n'
tr = paramiko.Transport(ss)
tr.connect(username='bob', pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(tr)
check('sftp v1 TCP6 with the SSH banner behind the header: listing',
      sftp.listdir('.') == [])
p = sessions(user='bob')
check('sftp: the session has the header\'s IPv6 source',
      len(p) == 1 and p[0]['address'] == '2001:db8::7' and p[0]['port'] == 40003, p)
tr.close()

# implicit FTPS: the ClientHello in the same segment as the header
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
tls = ctx.wrap_bio(inc, out)
s = socket.create_connection(('127.0.0.1', ftps_port), timeout=20)
first = v2('127.0.0.10', 40010, ftps_port)
greeting = b''
while b'\r\n' not in greeting:
    try:
        if tls.version() is None:
            tls.do_handshake()
        greeting += tls.read(4096)
    except ssl.SSLWantReadError:
        s.sendall(first + out.read())
        first = b''
        chunk = s.recv(65536)
        if not chunk:
            break
        inc.write(chunk)
check('ftps: TLS and the 220 with the ClientHello behind the header',
      greeting.startswith(b'220'), greeting)
s.close()

# the admin API's loopback rule sees the source
def api_via(src):
    s = connect(papi_port, v1(src, 40009, papi_port),
                extra=b'GET /api/v1/stats HTTP/1.0\r\nHost: x\r\n\r\n')
    s.settimeout(20)
    data = b''
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return data.split(b'\r\n', 1)[0].decode('latin-1')

r = api_via('127.0.0.9')
check('http: a loopback source is served', ' 200 ' in r, r)
r = api_via('192.0.2.7')
check('http: a remote source is not', ' 200 ' not in r and r.startswith('HTTP/1.'), r)

# refused: a peer not in proxy_protocol_from, malformed headers, silence
check('a peer not in proxy_protocol_from is closed',
      closed(connect(other_port, v1('127.0.0.5', 1, 2))))

for name, h in [
        ('bad signature', b'PROXZ TCP4 1.2.3.4 1.2.3.4 1 2\r\n'),
        ('v1 over 107 bytes', b'PROXY TCP4 ' + b'1' * 120),
        ('v2 length too large', b'\r\n\r\n\x00\r\nQUIT\n\x21\x11\x10\x00' + b'\x00' * 64),
        ('garbage ports', b'PROXY TCP4 1.2.3.4 1.2.3.4 x1 2\r\n'),
        ('missing CRLF', b'PROXY TCP4 1.2.3.4 1.2.3.4 1 2\n')]:
    check('malformed header closed: ' + name, closed(connect(ftp_port, h)))

check('a peer that sends no header is closed after proxy_protocol_timeout',
      closed(connect(ftp_port, b'')))

# a ban earned through the balancer bans the source, not the balancer
for i in range(2):
    f = ftp_over(connect(ftp_port, v1('127.0.0.20', 41000 + i, ftp_port)), '127.0.0.20')
    try:
        f.login('alice', 'wrong')
    except ftplib.error_perm:
        pass
    f.close()

s = connect(ftp_port, v1('127.0.0.20', 41005, ftp_port))
s.settimeout(20)
g = s.makefile('r', encoding='latin-1').readline()
check('the source that failed twice is banned', g.startswith('421'), g)
s.close()

f = ftp_over(connect(ftp_port, v1('127.0.0.21', 41006, ftp_port)), '127.0.0.21')
r = f.login('alice', 'alice-pw')
check('another source through the same balancer still logs in',
      r.startswith('230'), r)
f.quit()

bans = [b['address'] for b in api('bans')]
check('the ban is the source\'s, not the balancer\'s', bans == ['127.0.0.20'], bans)
PY

my ($n, $pyout) = $t->python_checks('pp.py', port(8021), $other,
    port(8022), port(8080), port(8081), port(8024), $key);
is($n, 24, 'every python check ran') or diag($pyout);

# through a real HAProxy, where it is installed: it sends v2 with the
# address the client connected from

SKIP: {
    skip 'no haproxy', 3 unless haproxy_binary();

    $t->write_file_expand('haproxy.cfg', <<'EOF');
global
    maxconn 16
defaults
    mode tcp
    timeout connect 10s
    timeout client 30s
    timeout server 30s
frontend ftp
    bind 127.0.0.1:%%PORT_8031%%
    default_backend siftpd
backend siftpd
    server s1 127.0.0.1:%%PORT_8021%% send-proxy-v2
EOF

    my $pid = haproxy_start($t, 'haproxy.cfg');

    my ($s, $g);
    for (1 .. 100) {
        ($s, $g) = eval { ftp_connect(port(8031), '127.0.0.31') };
        last if $s && defined $g;
        select(undef, undef, undef, 0.1);
    }

    like($g // '', qr/^220 /, 'haproxy: the greeting through it');
    ftp_cmd($s, 'USER alice');
    like(ftp_cmd($s, 'PASS alice-pw'), qr/^230 /, 'haproxy: logged in');
    ftp_cmd($s, 'QUIT');
    close $s;

    kill 'TERM', $pid;
    waitpid($pid, 0);

    like($t->read_file('error.log'),
        qr/ftp session closed, client: 127\.0\.0\.31, server: 127\.0\.0\.1:@{[port(8021)]}, user: "alice"/,
        'haproxy: the session is the client\'s address');
}

my $log = $t->read_file('error.log');
my $f = port(8021);
like($log, qr/PROXY protocol on 127\.0\.0\.1:$other from 127\.0\.0\.1 refused: peer not in proxy_protocol_from/,
    'log: the peer not allowed');
for my $r ('bad signature', 'v1 header longer than 107 bytes',
    'v2 length too large', 'v1 port malformed', 'v1 header without CRLF',
    'PROXY protocol header timed out')
{
    like($log, qr/PROXY protocol on 127\.0\.0\.1:$f from 127\.0\.0\.1 refused: \Q$r\E/,
        "log: $r");
}
like($log, qr/client: 127\.0\.0\.5, server: 127\.0\.0\.1:$f, user: "alice"/,
    'log: the FTP session\'s lines name the source');
like($log, qr/PROXY protocol from 127\.0\.0\.1: client 127\.0\.0\.10\n/,
    'log: the FTPS connection\'s source');
like($log, qr/client: 2001:db8::7, server: 127\.0\.0\.1:@{[port(8022)]}, user: "bob"/,
    'log: the SFTP session\'s lines name the source');

$t->stop();

done_testing();
