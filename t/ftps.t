#!/usr/bin/perl

# ftps.t -- FTPS (RFC 4217) with real clients: curl (explicit --ssl-reqd and
# implicit ftps://), lftp, Python ftplib.FTP_TLS with and without data
# session reuse; the policy (login and data need TLS, data connections
# must resume the control connection's session), CCC refused, a TLS
# upload cut without close_notify is not committed.  The certificate is
# made by the server itself (ssl_self_signed on).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use Time::HiRes qw/time sleep/;
use Test::Siftpd qw/port/;
use Test::Ftps qw/add_user passive_range same py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

my $have_lftp = system('lftp --version >/dev/null 2>&1') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

# server 1: the secure defaults; server 2: each policy relaxed explicitly
$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    ssl_certificate      %%TESTDIR%%/tls/cert.pem;
    ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
    ssl_self_signed      on;
    storage              local;

    server {
        listen 127.0.0.1:%%PORT_8031%%;
        listen 127.0.0.1:%%PORT_8032%% ssl;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        data_timeout 10s;
    }

    server {
        listen 127.0.0.1:%%PORT_8033%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        data_timeout 10s;
        tls_login optional;
        tls_data optional;
        tls_data_reuse off;
    }
}
EOF

passive_range($t, 8100);
add_user($t, 'alice', 'pw-a', '--home', '/alice', '--perms',
    'list,download,upload,overwrite,delete,rename,mkdir');

$t->run();

my $port = port(8031);
my $iport = port(8032);
my $rport = port(8033);

ok(-s "$d/tls/cert.pem" && -s "$d/tls/key.pem",
    'self-signed certificate created');
like($t->read_file('stderr'), qr/"tls_data_reuse off": ftp data/,
    'a relaxed policy is logged');

system("head -c 5242880 /dev/urandom > $d/big");
system("cp $d/big $d/data/alice/big");

# raw control lines (plaintext part)

sub ctl {
    my ($p) = @_;
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$p",
        Timeout => 10) or die "connect: $!";
    my $greet = <$s>;
    return ($s, $greet);
}

sub cmd {
    my ($s, $line) = @_;
    print $s "$line\r\n";
    my $r = '';
    while (defined(my $l = <$s>)) {
        $r .= $l;
        last if $l =~ /^\d{3} /;
    }
    return $r;
}

my ($s, $g) = ctl($port);
like($g, qr/^220 /, 'explicit: plaintext greeting');
my $feat = cmd($s, 'FEAT');
like($feat, qr/^ AUTH TLS\r$/m, 'FEAT: AUTH TLS');
like($feat, qr/^ PBSZ\r$/m, 'FEAT: PBSZ');
like($feat, qr/^ PROT\r$/m, 'FEAT: PROT');
like($feat, qr/^ EPSV\r$/m, 'FEAT: the rest');
like(cmd($s, 'USER alice'), qr/^530 Policy requires SSL/,
    'USER before AUTH TLS: 530');
like(cmd($s, 'PASS pw-a'), qr/^530 Policy requires SSL/,
    'PASS before AUTH TLS: 530');
like(cmd($s, 'PBSZ 0'), qr/^503 /, 'PBSZ before AUTH: 503');
like(cmd($s, 'PROT P'), qr/^503 /, 'PROT before AUTH: 503');
like(cmd($s, 'AUTH KERBEROS'), qr/^504 /, 'AUTH KERBEROS: 504');
like(cmd($s, 'AUTH TLS'), qr/^234 /, 'AUTH TLS: 234');
close $s;

($s) = ctl($rport);
cmd($s, 'USER alice');
like(cmd($s, 'PASS pw-a'), qr/^230 /,
    'tls_login optional: login in clear');
close $s;

# garbage on the implicit port costs only its own connection
{
    my $bad = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$iport",
        Timeout => 10) or die;
    print $bad "USER alice\r\n" . ("x" x 2000) . "\r\n";
    my $r = '';
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm(10);
        while (sysread($bad, my $buf, 4096)) { $r .= $buf; }
        alarm(0);
    };
    alarm(0);
    unlike($r, qr/^220/, 'implicit: no plaintext greeting, closed');
}

# curl

my $curl = "curl -sS -k --max-time 60 -u alice:pw-a";

my $out = `$curl --ssl-reqd -o $d/c1 ftp://127.0.0.1:$port/big 2>&1`;
ok(same("$d/big", "$d/c1"), 'curl --ssl-reqd: 5 MiB download identical')
    or diag($out);

$out = `$curl --ssl-reqd -T $d/big ftp://127.0.0.1:$port/up1 2>&1`;
ok(same("$d/big", "$d/data/alice/up1"),
    'curl --ssl-reqd: 5 MiB upload identical') or diag($out);

$out = `$curl -o $d/c2 ftps://127.0.0.1:$iport/big 2>&1`;
ok(same("$d/big", "$d/c2"), 'curl ftps:// (implicit): download identical')
    or diag($out);

$out = `$curl -T $d/big ftps://127.0.0.1:$iport/up2 2>&1`;
ok(same("$d/big", "$d/data/alice/up2"),
    'curl ftps:// (implicit): upload identical') or diag($out);

$out = `$curl --ssl-reqd --list-only ftp://127.0.0.1:$port/ 2>&1`;
like($out, qr/^up1\r?$/m, 'curl --ssl-reqd: listing');

$out = `$curl --ssl-reqd ftp://127.0.0.1:$port/ -Q 'CCC' 2>&1`;
like($out, qr/533|QUOT/, 'CCC refused');

ok($t->read_file('error.log') =~ /ftp control TLS: TLSv1\.3/,
    'control channel on TLS 1.3');
unlike($t->read_file('error.log'), qr/did not resume/,
    'curl resumed the control session on every data connection');

# lftp (GnuTLS)

SKIP: {
    skip 'no lftp', 4 unless $have_lftp;

    my $lftp = "set ssl:verify-certificate no; set ftp:ssl-force true; "
        . "set ftp:ssl-protect-data true; set ftp:ssl-protect-list true; "
        . "set net:timeout 10; set net:max-retries 1; "
        . "set net:reconnect-interval-base 1; "
        . "open -u alice,pw-a -p $port 127.0.0.1";

    $lftp .= '; ls; get big -o l1; put big -o up3';
    $out = `cd $d && timeout 90 lftp -c '$lftp' 2>&1`;
    like($out, qr/\bup1\b/, 'lftp: ls');
    ok(same("$d/big", "$d/l1"), 'lftp: get identical') or diag($out);
    ok(same("$d/big", "$d/data/alice/up3"), 'lftp: put identical')
        or diag($out);
    unlike($t->read_file('error.log'), qr/did not resume/,
        'lftp resumed the control session');
}

# Python ftplib: FTP_TLS does not reuse the session on data connections

my $r = py_run($t, <<"EOF");
f = open_tls(ftplib.FTP_TLS, $port)
f.prot_p()
try:
    b = io.BytesIO(); f.retrbinary('RETR big', b.write)
    print('noreuse-retr accepted')
except Exception as e:
    print('noreuse-retr', type(e).__name__, e)
try:
    f.storbinary('STOR nr.bin', io.BytesIO(big))
    print('noreuse-stor accepted')
except ftplib.error_perm as e:
    print('noreuse-stor', type(e).__name__, e)
except Exception as e:
    # the refused upload's sendall() failed first: the reply follows
    try:
        f.getresp()
    except ftplib.error_perm as e:
        print('noreuse-stor', type(e).__name__, e)
print('nr-exists', os.path.exists('data/alice/nr.bin'))
# refused before any storage effect: a file keeps its content, a missing
# directory is not even looked at (522, not 550)
open('data/alice/keep.bin', 'wb').write(b'old content')
before = sorted(os.listdir('data/alice'))
for cmd, rest in (('STOR keep.bin', None), ('APPE keep.bin', None),
                  ('STOR keep.bin', 3), ('STOR nodir/x.bin', None)):
    try:
        f.storbinary(cmd, io.BytesIO(big), rest=rest)
        print('refused', cmd, rest, 'accepted')
    except ftplib.error_perm as e:
        print('refused', cmd, rest, str(e)[:3])
    except Exception:
        try:
            f.getresp()
        except ftplib.error_perm as e:
            print('refused', cmd, rest, str(e)[:3])
print('keep', open('data/alice/keep.bin', 'rb').read() == b'old content')
print('same-files', sorted(os.listdir('data/alice')) == before)
print('noop', f.voidcmd('NOOP'))
try:
    f.sendcmd('PROT C')
except ftplib.error_perm as e:
    print('protc', e)
f.quit()

f = open_tls(Reuse, $port)
f.prot_p()
b = io.BytesIO(); f.retrbinary('RETR big', b.write)
print('reuse-retr', b.getvalue() == big)
f.storbinary('STOR pr.bin', io.BytesIO(big))
print('reuse-stor', open('data/alice/pr.bin', 'rb').read() == big)
print('reuse-nlst', 'pr.bin' in f.nlst())
b = io.BytesIO(); f.retrbinary('RETR big', b.write, rest=1000000)
print('reuse-rest', b.getvalue() == big[1000000:])
f.quit()

f = open_tls(Reuse, $port)
f.sendcmd('PBSZ 0')
try:
    f.retrbinary('RETR big', lambda x: None)
    print('clear-retr accepted')
except ftplib.error_perm as e:
    print('clear-retr', e)
f.quit()
EOF
like($r, qr/^noreuse-retr error_perm 522 /m,
    'FTP_TLS without session reuse: RETR refused with 522') or diag($r);
like($r, qr/^noreuse-stor error_perm 522 /m,
    'FTP_TLS without session reuse: STOR refused with 522');
like($r, qr/^nr-exists False$/m, 'refused STOR left no file');
like($r, qr/^refused STOR keep.bin None 522$/m, 'refused STOR over a file');
like($r, qr/^refused APPE keep.bin None 522$/m, 'refused APPE');
like($r, qr/^refused STOR keep.bin 3 522$/m, 'refused REST + STOR');
like($r, qr/^refused STOR nodir\/x.bin None 522$/m,
    'refused before the storage is asked (522, not 550)');
like($r, qr/^keep True$/m, 'the target keeps its content');
like($r, qr/^same-files True$/m, 'no file created');
like($r, qr/^noop 200 /m, 'the session goes on after 522');
like($r, qr/^protc 534 /m, 'PROT C refused: 534');
like($t->read_file('error.log'),
    qr/data connection did not resume the control connection's TLS session/,
    'the refusal is logged');
like($r, qr/^reuse-retr True$/m, 'FTP_TLS with session reuse: RETR');
like($r, qr/^reuse-stor True$/m, 'FTP_TLS with session reuse: STOR');
like($r, qr/^reuse-nlst True$/m, 'FTP_TLS with session reuse: NLST');
like($r, qr/^reuse-rest True$/m, 'FTP_TLS with session reuse: REST');
like($r, qr/^clear-retr 521 /m, 'transfer without PROT P: 521');

# tls_data_reuse off: plain FTP_TLS works; a TLS upload cut without
# close_notify is not committed

$r = py_run($t, <<"EOF");
f = open_tls(ftplib.FTP_TLS, $rport)
f.prot_p()
f.storbinary('STOR py.bin', io.BytesIO(big))
print('stor', open('data/alice/py.bin', 'rb').read() == big)
b = io.BytesIO(); f.retrbinary('RETR py.bin', b.write)
print('retr', b.getvalue() == big)
c = f.transfercmd('STOR cut.bin')
c.sendall(big[:3000000])
# a FIN without close_notify: drain what the server sent (tickets) so
# that the close is not a reset
raw = socket.socket(fileno=os.dup(c.fileno()))
raw.settimeout(0.3)
try:
    for i in range(100):
        if not raw.recv(65536):
            break
except (socket.timeout, BlockingIOError):
    pass
raw.shutdown(socket.SHUT_WR)
try:
    print('cut-reply', f.getresp())
except Exception as e:
    print('cut-reply', e)
print('cut-exists', os.path.exists('data/alice/cut.bin'))
raw.close(); c.close()
f.prot_c()
b = io.BytesIO(); f.retrbinary('RETR py.bin', b.write)
print('clear', b.getvalue() == big)
f.quit()
EOF
like($r, qr/^stor True$/m, 'reuse off: FTP_TLS STOR identical') or diag($r);
like($r, qr/^retr True$/m, 'reuse off: FTP_TLS RETR identical');
like($r, qr/^cut-reply 426 /m, 'TLS upload cut without close_notify: 426');
like($r, qr/^cut-exists False$/m, 'and not committed');
like($t->read_file('error.log'), qr/upload cut without TLS close_notify/,
    'the truncation is logged');
like($r, qr/^clear True$/m, 'tls_data optional: PROT C transfer');

# a data connection without any resumption from openssl s_client

SKIP: {
    skip 'no openssl', 1 unless system('openssl version >/dev/null') == 0;

    ($s) = ctl($port);
    $r = py_run($t, <<"EOF");
import subprocess
f = open_tls(Reuse, $port)
f.prot_p()
r = f.sendcmd('EPSV')
p = int(r.split('|||')[1].split('|')[0])
f.putcmd('RETR big')
s = subprocess.Popen(['openssl', 's_client', '-quiet', '-connect',
    '127.0.0.1:%d' % p], stdin=subprocess.DEVNULL,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print('150', f.getline().strip())
print('final', f.getline().strip())
s.wait(timeout=20)
f.quit()
EOF
    like($r, qr/^final 522 /m, 'openssl s_client as data client: 522')
        or diag($r);
    close $s;
}

$t->done();
