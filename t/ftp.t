#!/usr/bin/perl

# ftp.t -- the FTP module with real clients (Python ftplib, curl) and raw
# control lines: login, the pre-login allow-list, limits, directory
# commands, listings, RETR with REST, STOR, APPE, aborted uploads, path
# escapes, a read-only user, two workers with passive port slices, and a
# reload during a download.

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
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/ro";
symlink '/etc', "$d/data/alice/escape";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8021%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        login_timeout 30s;
    }
}
EOF

# the passive range: 40 ports from a free one
my $lo = port(8100);
my $conf = $t->read_file('siftpd.conf');
$conf =~ s/passive_ports $lo-$lo/"passive_ports $lo-" . ($lo + 40)/e;
$t->write_file('siftpd.conf', $conf);

for (['alice', 'pw-a', '/alice',
      'list,download,upload,overwrite,delete,rename,mkdir,rmdir'],
     ['ro', 'pw-r', '/ro', 'list,download'])
{
    my ($u, $pw, $home, $perms) = @$_;
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', 'add', $u, '--home', $home, '--perms', $perms or die;
    print $fh "$pw\n";
    close $fh;
}

$t->run();
my $port = port(8021);
$t->wait_for(sub { scalar($t->workers()) == 2 }, 10);

# a raw control connection: send lines, read replies

sub ctl {
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
        Timeout => 10) or die "connect: $!";
    my $greet = <$s>;
    return ($s, $greet);
}

sub py {
    my ($code) = @_;
    open my $fh, '>', "$d/t.py" or die;
    print $fh "import ftplib, io, sys, os, time\n"
        . "f = ftplib.FTP(); f.connect('127.0.0.1', $port, timeout=20)\n"
        . $code;
    close $fh;
    my $out = `cd $d && python3 t.py 2>&1`;
    return $out;
}

# greeting, pre-login allow-list, unknown and bad commands

my ($s, $g) = ctl();
like($g, qr/^220 /, 'greeting');
like(ftp_cmd($s, 'SYST'), qr/^215 UNIX/, 'SYST before login');
like(ftp_cmd($s, 'FEAT'), qr/^211-.*\n MLST type\*;size\*;.*\n EPSV\r?\n|EPSV/s,
    'FEAT before login');
like(ftp_cmd($s, 'PWD'), qr/^530 Please login/, 'PWD before login: 530');
like(ftp_cmd($s, 'RETR x'), qr/^530 /, 'RETR before login: 530');
like(ftp_cmd($s, 'XYZZ'), qr/^500 Unknown command/, 'unknown verb: 500');
like(ftp_cmd($s, "NO\0OP"), qr/^500 NUL/, 'NUL refused');
like(ftp_cmd($s, 'AUTH TLS'), qr/^502 /, 'AUTH: 502 for now');
like(ftp_cmd($s, 'noop'), qr/^200 /, 'lower-case verb, bare LF');
print $s 'A' x 2000 . "\r\n";
like(scalar <$s>, qr/^500 Command line too long/, 'too long line: 500');
is(scalar <$s>, undef, 'and closed');

# login: bad password delayed, good one

($s) = ctl();
ftp_cmd($s, 'USER alice');
my $t0 = time();
like(ftp_cmd($s, 'PASS wrong'), qr/^530 Login incorrect/, 'bad password: 530');
ok(time() - $t0 >= 0.9, 'after a delay');
ftp_cmd($s, 'USER nobody');
like(ftp_cmd($s, 'PASS wrong'), qr/^530 Login incorrect/,
    'unknown user: the same 530');
ftp_cmd($s, 'USER alice');
like(ftp_cmd($s, 'PASS pw-a'), qr/^230 /, 'good password: 230');
like(ftp_cmd($s, 'PWD'), qr/^257 "\/" /, 'PWD');
like(ftp_cmd($s, 'MKD a"b'), qr/^257 "\/a""b" created/, 'MKD quotes doubled');
like(ftp_cmd($s, 'CWD a"b'), qr/^250 /, 'CWD');
like(ftp_cmd($s, 'XPWD'), qr/^257 "\/a""b"/, 'XPWD');
like(ftp_cmd($s, 'CDUP'), qr/^250 /, 'CDUP');
like(ftp_cmd($s, 'RMD a"b'), qr/^250 /, 'RMD');
like(ftp_cmd($s, 'CWD ../../..'), qr/^250 /, 'CWD ../../.. stays in the root');
like(ftp_cmd($s, 'PWD'), qr/^257 "\/" /, 'at the root');
like(ftp_cmd($s, 'CWD escape'), qr/^550 /, 'symlink out of the root refused');
like(ftp_cmd($s, 'RNTO x'), qr/^503 /, 'RNTO without RNFR: 503');
like(ftp_cmd($s, 'SIZE nothing'), qr/^550 /, 'SIZE missing file: 550');
like(ftp_cmd($s, 'RETR x'), qr/^425 /, 'RETR without PASV: 425');
like(ftp_cmd($s, 'PORT 10,0,0,1,4,1'), qr/^500 Illegal PORT/,
    'PORT to another host: 500');
like(ftp_cmd($s, 'TYPE I'), qr/^200 /, 'TYPE I');
like(ftp_cmd($s, 'MODE S'), qr/^200 /, 'MODE S');
like(ftp_cmd($s, 'STRU F'), qr/^200 /, 'STRU F');
like(ftp_cmd($s, 'REST abc'), qr/^501 /, 'REST syntax');
like(ftp_cmd($s, 'EPSV'), qr/^229 Entering Extended Passive Mode \(\|\|\|(\d+)\|\)/,
    'EPSV');
like(ftp_cmd($s, 'QUIT'), qr/^221 /, 'QUIT');

# transfers with ftplib

system("head -c 5242880 /dev/urandom > $d/big");
my $r = py(<<'EOF');
f.login('alice', 'pw-a')
big = open('big', 'rb').read()
f.storbinary('STOR big.bin', io.BytesIO(big))
print('stor', open('data/alice/big.bin', 'rb').read() == big)
b = io.BytesIO(); f.retrbinary('RETR big.bin', b.write)
print('retr', b.getvalue() == big)
b = io.BytesIO(); f.retrbinary('RETR big.bin', b.write, rest=1000000)
print('rest', b.getvalue() == big[1000000:])
f.storbinary('APPE big.bin', io.BytesIO(b'tail'))
print('appe', open('data/alice/big.bin', 'rb').read() == big + b'tail')
print('size', f.size('big.bin'))
print('mdtm', f.sendcmd('MDTM big.bin'))
f.mkd('sub')
print('nlst', sorted(f.nlst()))
lines = []; f.retrlines('LIST -la', lines.append)
print('list', lines)
print('mlsd', dict(f.mlsd()).get('big.bin'))
print('mlst', f.sendcmd('MLST big.bin'))
f.rename('big.bin', 'b2.bin')
print('renamed', os.path.exists('data/alice/b2.bin'))
f.delete('b2.bin')
print('deleted', not os.path.exists('data/alice/b2.bin'))
try:
    f.retrbinary('RETR ../../etc/passwd', lambda x: None)
except ftplib.error_perm as e:
    print('escape', e)
try:
    f.retrbinary('RETR escape/passwd', lambda x: None)
except ftplib.error_perm as e:
    print('symlink', e)
# an upload that stops half way: no file under the name
c = f.transfercmd('STOR cut.bin')
c.sendall(big[:1000000]); c.close()
print('cut-reply', f.getresp())
f.quit()
EOF
like($r, qr/^stor True$/m, 'STOR 5 MiB byte-identical');
like($r, qr/^retr True$/m, 'RETR 5 MiB byte-identical');
like($r, qr/^rest True$/m, 'RETR with REST');
like($r, qr/^appe True$/m, 'APPE');
like($r, qr/^size 5242884$/m, 'SIZE');
like($r, qr/^mdtm 213 \d{14}$/m, 'MDTM');
like($r, qr/^nlst \['big.bin', 'escape', 'sub'\]$/m, 'NLST');
like($r, qr/'-rw-r--r-- +1 ftp +ftp +5242884 \w{3} [ \d]\d \d\d:\d\d big.bin'/,
    'LIST -la');
like($r, qr/'drwx.*sub'/, 'LIST has the directory');
like($r, qr/'type': 'file', 'size': '5242884', 'modify': '\d{14}', 'perm': 'rawdf'/,
    'MLSD facts');
like($r, qr/^mlst 250-.*type=file;size=5242884;.* \/big.bin/ms, 'MLST');
like($r, qr/^renamed True$/m, 'RNFR/RNTO');
like($r, qr/^deleted True$/m, 'DELE');
like($r, qr/^escape 550/m, 'RETR ../../etc/passwd refused');
like($r, qr/^symlink 550/m, 'RETR through a symlink out refused');
like($r, qr/^cut-reply 226/m, 'a closed upload is a complete upload');

# ABOR during an upload: 426 then 226, nothing under the name

$r = py(<<'EOF');
f.login('alice', 'pw-a')
c = f.transfercmd('STOR aborted.bin')
c.sendall(b'x' * 100000)
f.putcmd('ABOR')
print('abor1', f.getline())
print('abor2', f.getline())
c.close()
f.quit()
EOF
like($r, qr/^abor1 426 /m, 'ABOR: 426');
like($r, qr/^abor2 226 /m, 'ABOR: then 226');

# the temporary file may be removed after the reply: wait for it (a bound
# only a file that stays reaches), then check that nothing else is left

sub upload_temps {
    opendir(my $dh, "$d/data/alice") or die;
    return grep { /sft-/ } readdir $dh;
}

$t->wait_for(sub { !upload_temps() }, 10);
ok(!-e "$d/data/alice/aborted.bin", 'aborted upload leaves no file');
is(join(' ', upload_temps()), '', 'and no temporary file');

# the read-only user

$r = py(<<'EOF');
f.login('ro', 'pw-r')
for c in ('MKD x', 'DELE x'):
    try: f.sendcmd(c)
    except ftplib.error_perm as e: print(c[:4], e)
try: f.storbinary('STOR x', io.BytesIO(b'x'))
except ftplib.error_perm as e: print('STOR', e)
f.quit()
EOF
like($r, qr/^MKD\s+550 Permission denied/m, 'read-only: MKD 550');
like($r, qr/^DELE\s+550/m, 'read-only: DELE 550');
like($r, qr/^STOR 550 Permission denied/m, 'read-only: STOR 550');

# curl

$t->write_file('data/alice/c.txt', "hello curl\n");
is(`curl -s ftp://alice:pw-a\@127.0.0.1:$port/c.txt`, "hello curl\n",
    'curl download');
system("curl -s -T $d/big ftp://alice:pw-a\@127.0.0.1:$port/curl.bin");
is(-s "$d/data/alice/curl.bin", 5242880, 'curl upload');

# 20 sequential passive transfers over two workers

$r = py(<<'EOF');
ok = 0
for i in range(20):
    g = ftplib.FTP(); g.connect('127.0.0.1', f.port, timeout=20)
    g.login('alice', 'pw-a')
    b = io.BytesIO(); g.retrbinary('RETR c.txt', b.write)
    ok += b.getvalue() == b'hello curl\n'
    g.quit()
print('seq', ok)
EOF
like($r, qr/^seq 20$/m, '20 passive transfers over two workers');

# a reload during a slow 20 MiB download does not cut it

system("head -c 20971520 /dev/urandom > $d/data/alice/huge.bin");
$r = py(<<'EOF');
import signal
f.login('alice', 'pw-a')
f.voidcmd('TYPE I')
c = f.transfercmd('RETR huge.bin')
n = 0; t0 = time.time(); reloaded = False
while True:
    d = c.recv(65536)
    if not d: break
    n += len(d)
    if not reloaded and n > 1000000:
        os.kill(int(open('siftpd.pid').read()), signal.SIGHUP); reloaded = True
    if time.time() - t0 < 1.5: time.sleep(0.01)
c.close()
print('reload', n, f.voidresp())
f.quit()
EOF
like($r, qr/^reload 20971520 226 /m, 'reload during a download');

$t->done();
