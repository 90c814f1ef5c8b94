#!/usr/bin/perl

# ftp_active.t -- the FTP module, second part: active mode (PORT, EPRT)
# with the bounce rules, IPv6 on [::1] (EPRT and EPSV), TYPE A with the
# newline conversion both ways (byte-exact), SIZE in ASCII mode, the
# pooled download path, and the idle and data timeouts.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw/time sleep/;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_cmd/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

# IPv6 only if ::1 can be bound here
my $v6 = system('python3 -c "import socket; s = socket.socket('
    . 'socket.AF_INET6); s.bind((\'::1\', 0))" 2>/dev/null') == 0;
my $v6listen = $v6 ? "listen [::1]:" . port(8022) . ";" : '';

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<"EOF");
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        $v6listen
        storage local;
    }
    server {
        listen 127.0.0.1:%%PORT_8023%%;
        storage local;
        idle_timeout 1s;
        data_timeout 1s;
    }
}
EOF

open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
    'user', 'add', 'alice', '--home', '/alice', '--perms',
    'list,download,upload,overwrite,delete,rename,mkdir,rmdir' or die;
print $fh "pw-a\n";
close $fh;

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 1 }, 10);

sub ctl {
    my ($p) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => '127.0.0.1:' . ($p || $port),
        Timeout => 10) or die "connect: $!";
    my $greet = <$s>;
    return $s;
}

# the next line from the server; undef at its end, or after $secs (a
# bound that only a server that never answers reaches)
sub line_within {
    my ($s, $secs) = @_;
    my $line;

    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm($secs);
        $line = <$s>;
        alarm(0);
    };
    alarm(0);

    return $line;
}

sub py {
    my ($code, $host, $p) = @_;
    $host ||= '127.0.0.1';
    $p ||= $port;
    open my $fh, '>', "$d/t.py" or die;
    print $fh "import ftplib, io, sys, os, time, socket\n"
        . "f = ftplib.FTP(); f.connect('$host', $p, timeout=20)\n"
        . "f.login('alice', 'pw-a')\n"
        . $code;
    close $fh;
    return `cd $d && timeout 60 python3 t.py 2>&1`;
}

# the bounce rules, on raw lines

my $s = ctl();
ftp_cmd($s, 'USER alice');
ftp_cmd($s, 'PASS pw-a');
like(ftp_cmd($s, 'PORT 10,0,0,1,39,16'), qr/^500 Illegal PORT command/,
    'PORT to another host: 500');
like(ftp_cmd($s, 'PORT 127,0,0,1,3,255'), qr/^500 Illegal PORT command/,
    'PORT to port 1023: 500');
like(ftp_cmd($s, 'EPRT |1|127.0.0.1|80|'), qr/^500 Illegal EPRT command/,
    'EPRT to port 80: 500');
like(ftp_cmd($s, 'EPRT |2|::1|5000|'), qr/^522 .*\(1\)/,
    'EPRT IPv6 on an IPv4 control connection: 522');
like(ftp_cmd($s, 'EPRT |9|x|5000|'), qr/^522 /, 'EPRT unknown family: 522');
like(ftp_cmd($s, 'PORT 127,0,0,1,4'), qr/^501 /, 'malformed PORT: 501');
like(ftp_cmd($s, 'EPRT |1|127.0.0.1|5000'), qr/^501 /, 'malformed EPRT: 501');

# a PORT nobody listens on: 425, and the file stays closed

my $l = IO::Socket::INET->new(LocalAddr => '127.0.0.1:0', Listen => 1)
    or die;
my $lp = $l->sockport();
close $l;
$t->write_file('data/alice/small.txt', "small\n");
like(ftp_cmd($s, sprintf('PORT 127,0,0,1,%d,%d', $lp >> 8, $lp & 255)),
    qr/^200 PORT command successful/, 'PORT to the peer: 200');
like(ftp_cmd($s, 'RETR small.txt'), qr/^(150 .*\r\n)?425 /,
    'nobody listening: 425');
like(ftp_cmd($s, 'RETR small.txt'), qr/^425 Use PORT or PASV first/,
    'a PORT is good for one transfer');
like(ftp_cmd($s, 'RNFR small.txt'), qr/^350 /, 'RNFR');
like(ftp_cmd($s, 'NOOP'), qr/^200 /, 'another command');
like(ftp_cmd($s, 'RNTO s2.txt'), qr/^503 /, 'cancels the RNFR');
like(ftp_cmd($s, 'EPSV ALL'), qr/^200 /, 'EPSV ALL');
like(ftp_cmd($s, 'PORT 127,0,0,1,4,1'), qr/^503 /, 'PORT after EPSV ALL: 503');
like(ftp_cmd($s, 'QUIT'), qr/^221 /, 'QUIT');
ok($t->wait_log(qr/PORT to 10\.0\.0\.1:10000 refused \(bounce attempt\)/, 5),
    'the bounce attempt is logged');

# active transfers with ftplib (PORT on IPv4)

system("head -c 3000000 /dev/urandom > $d/big");
my $r = py(<<'EOF');
f.set_pasv(False)
big = open('big', 'rb').read()
f.storbinary('STOR big.bin', io.BytesIO(big))
print('stor', open('data/alice/big.bin', 'rb').read() == big)
b = io.BytesIO(); f.retrbinary('RETR big.bin', b.write)
print('retr', b.getvalue() == big)
b = io.BytesIO(); f.retrbinary('RETR big.bin', b.write, rest=1234567)
print('rest', b.getvalue() == big[1234567:])
print('nlst', sorted(f.nlst()))
f.quit()
EOF
like($r, qr/^stor True$/m, 'active STOR byte-identical');
like($r, qr/^retr True$/m, 'active RETR byte-identical');
like($r, qr/^rest True$/m, 'active RETR with REST');
like($r, qr/^nlst \['big.bin', 'small.txt'\]$/m, 'active NLST');

# TYPE A: LF -> CRLF down, CRLF -> LF up, lone CRs kept

my $text = "one\ntwo\r\nthree\rfour\n\nlast";
$t->write_file('data/alice/t.txt', $text);

$r = py(<<'EOF');
lines = []; f.retrlines('RETR t.txt', lines.append)
print('retrlines', lines)
f.voidcmd('TYPE A')
c = f.transfercmd('RETR t.txt'); b = b''
while True:
    x = c.recv(65536)
    if not x: break
    b += x
c.close(); f.voidresp()
print('ascii', b)
try: f.size('t.txt')
except ftplib.error_perm as e: print('sizeA', e)
f.voidcmd('TYPE I')
b = io.BytesIO(); f.retrbinary('RETR t.txt', b.write)
print('binary', b.getvalue() == open('data/alice/t.txt', 'rb').read())
print('sizeI', f.size('t.txt'))
f.storlines('STOR up.txt', io.BytesIO(b'a\r\nb\nc\r\n'))
print('storlines', open('data/alice/up.txt', 'rb').read())
# raw ASCII upload, CR and LF in separate TCP segments
f.voidcmd('TYPE A')
c = f.transfercmd('STOR raw.txt')
for piece in (b'x\r', b'\ny\r', b'z\r', b'\r', b'\n', b'end\r'):
    c.sendall(piece); time.sleep(0.05)
c.close(); f.voidresp()
print('raw', open('data/alice/raw.txt', 'rb').read())
# a bigger ASCII file: several chunks, reads ahead of sends
big = bytes(((i * 7919) % 251 if (i * 7919) % 251 not in (10, 13) else 65)
            for i in range(3000000))
big = big.replace(b'AA', b'\n')
open('data/alice/bigt.txt', 'wb').write(big)
f.voidcmd('TYPE A')
c = f.transfercmd('RETR bigt.txt'); b = []
while True:
    x = c.recv(65536)
    if not x: break
    b.append(x)
c.close(); f.voidresp()
print('bigA', b''.join(b) == big.replace(b'\n', b'\r\n'))
c = f.transfercmd('STOR bigt2.txt')
c.sendall(big.replace(b'\n', b'\r\n')); c.close(); f.voidresp()
print('bigup', open('data/alice/bigt2.txt', 'rb').read() == big)
f.quit()
EOF
like($r, qr/^retrlines \['one', 'two', '', 'three', 'four', '', 'last'\]$/m,
    'retrlines of a TYPE A download');
like($r, qr/^ascii b'one\\r\\ntwo\\r\\r\\nthree\\rfour\\r\\n\\r\\nlast'$/m,
    'TYPE A download is byte-exact LF -> CRLF');
like($r, qr/^sizeA 550 /m, 'SIZE in TYPE A: 550');
like($r, qr/^binary True$/m, 'TYPE I download unchanged');
like($r, qr/^sizeI 25$/m, 'SIZE in TYPE I');
like($r, qr/^storlines b'a\\nb\\nc\\n'$/m, 'storlines: CRLF -> LF');
like($r, qr/^raw b'x\\ny\\rz\\r\\nend\\r'$/m,
    'TYPE A upload: split CRLF, lone CRs kept');
like($r, qr/^bigA True$/m, 'TYPE A 3 MB download through the buffer pool');
like($r, qr/^bigup True$/m, 'TYPE A 3 MB upload');

# IPv6: EPRT and EPSV on [::1]

SKIP: {
    skip 'no IPv6 on this machine', 4 unless $v6;

    $r = py(<<'EOF', '::1', port(8022));
b = io.BytesIO(); f.retrbinary('RETR small.txt', b.write)
print('epsv6', b.getvalue())
f.set_pasv(False)
b = io.BytesIO(); f.retrbinary('RETR small.txt', b.write)
print('eprt6', b.getvalue())
print('port6', f.sendcmd('EPRT |1|127.0.0.1|5000|') if False else '')
try: f.sendcmd('EPRT |1|127.0.0.1|5000|')
except ftplib.error_perm as e: print('fam', e)
try: f.sendcmd('EPRT |2|::2|5000|')
except ftplib.error_perm as e: print('other', e)
f.quit()
EOF
    like($r, qr/^epsv6 b'small\\n'$/m, 'EPSV on [::1]');
    like($r, qr/^eprt6 b'small\\n'$/m, 'EPRT on [::1]');
    like($r, qr/^fam 522 .*\(2\)/m, 'EPRT IPv4 on an IPv6 connection: 522');
    like($r, qr/^other 500 Illegal EPRT/m, 'EPRT to another IPv6 host: 500');
}

# timeouts: idle_timeout 1s closes with 421, data_timeout 1s gives 425

$s = ctl(port(8023));
ftp_cmd($s, 'USER alice');
ftp_cmd($s, 'PASS pw-a');
like(ftp_cmd($s, 'EPSV'), qr/^229 /, 'EPSV, then no connection');
my $t0 = time();
like(ftp_cmd($s, 'RETR small.txt'), qr/^150 /, 'RETR waits for the connection');
like(line_within($s, 60), qr/^425 /,
    'data_timeout: 425 without a data connection');
ok(time() - $t0 >= 0.9, 'not before the timeout');
$t0 = time();
like(line_within($s, 60), qr/^421 Timeout/, 'idle_timeout: 421');
ok(time() - $t0 > 0.5, 'not before the timeout either');
is(line_within($s, 60), undef, 'and closed');

$t->done();
