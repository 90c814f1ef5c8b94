#!/usr/bin/perl

# ftps_clients.t -- FTPS with more of what real clients do: resume over
# TLS (curl -C - both ways, ftplib REST + STOR with session reuse), active
# mode over TLS (ftplib PORT; curl 7.88 -P fails on its own side: "sa_addr
# inet_ntop() failed"), lftp mirroring a tree up and down
# with ftp:ssl-force and ftp:ssl-protect-data, a TLS handshake that
# stalls halfway timing out while another session goes on, and uploads to
# tmpfs (written on the event loop), also resumed; a control session
# older than the session timeout whose data connections still resume it.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use File::Temp qw/tempdir/;
use Test::Siftpd qw/port/;
use Test::Ftps qw/add_user passive_range same py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

my $have_lftp = system('lftp --version >/dev/null 2>&1') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

# a storage on tmpfs when there is one
my $shm = `stat -f -c %T /dev/shm 2>/dev/null` =~ /^tmpfs/
    ? tempdir('siftpd-shm-XXXXXXXXXX', DIR => '/dev/shm', CLEANUP => 1)
    : "$d/data";
mkdir "$shm/carol";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
storage shm { driver posix; root %%SHM%%; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8051%%;
        listen 127.0.0.1:%%PORT_8052%% ssl;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        login_timeout        10s;
        data_timeout         10s;
    }

    # sessions that expire soon: a long control session must renew them
    server {
        listen 127.0.0.1:%%PORT_8053%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_session_timeout  3s;
    }
}
EOF

my $conf = $t->read_file('siftpd.conf');
$conf =~ s/%%SHM%%/$shm/g;
$t->write_file('siftpd.conf', $conf);
passive_range($t, 8100);

add_user($t, 'alice', 'pw-a', '--home', '/alice', '--perms',
    'list,download,upload,overwrite,delete,rename,mkdir');
add_user($t, 'carol', 'pw-c', '--home', '/carol', '--storage', 'shm',
    '--perms', 'list,download,upload,overwrite');

$t->run();

my $port = port(8051);
my $iport = port(8052);

system("head -c 3000000 /dev/urandom > $d/big");
system("cp $d/big $d/data/alice/big");

my $curl = "curl -sS -k --max-time 60 -u alice:pw-a --ssl-reqd";

# resume over TLS

system("head -c 1000000 $d/big > $d/part");
my $out = `$curl -C - -o $d/part ftp://127.0.0.1:$port/big 2>&1`;
ok(same("$d/big", "$d/part"), 'curl -C -: download resumed over TLS')
    or diag($out);

system("head -c 1200000 $d/big > $d/data/alice/up");
$out = `$curl -C - -T $d/big ftp://127.0.0.1:$port/up 2>&1`;
ok(same("$d/big", "$d/data/alice/up"), 'curl -C -: upload resumed over TLS')
    or diag($out);

# Python ftplib FTP_TLS reusing the control session: passive and active,
# REST + STOR

my $r = py_run($t, <<"EOF");
f = Reuse(context=ctx, timeout=20)
f.connect('127.0.0.1', $port)
f.auth(); f.login('alice', 'pw-a'); f.prot_p()
for pasv in (True, False):
    f.set_pasv(pasv)
    b = io.BytesIO(); f.retrbinary('RETR big', b.write)
    print('retr', pasv, b.getvalue() == big)
    f.storbinary('STOR py%d' % pasv, io.BytesIO(big))
    print('stor', pasv, open('data/alice/py%d' % pasv, 'rb').read() == big)
open('data/alice/rest', 'wb').write(big[:500000])
f.set_pasv(True)
f.storbinary('STOR rest', io.BytesIO(big[500000:]), rest=500000)
print('rest-stor', open('data/alice/rest', 'rb').read() == big)
print('reused', f.sock.session_reused, f.sock.version())
f.quit()
EOF
like($r, qr/^retr True True$/m, 'ftplib with session reuse: passive RETR')
    or diag($r);
like($r, qr/^stor True True$/m, 'ftplib with session reuse: passive STOR');
like($r, qr/^retr False True$/m, 'ftplib with session reuse: active RETR');
like($r, qr/^stor False True$/m, 'ftplib with session reuse: active STOR');
like($r, qr/^rest-stor True$/m, 'ftplib: REST + STOR over TLS');
unlike($t->read_file('error.log'), qr/did not resume/,
    'every data connection resumed the control session');

# a control session older than the session timeout: its data connections
# still resume it (a new ticket on the control connection at PASV/EPSV)

$r = py_run($t, <<"EOF");
import time
f = open_tls(Reuse, @{[ port(8053) ]})
f.prot_p()
for i in range(3):
    b = io.BytesIO(); f.retrbinary('RETR big', b.write)
    print('long', i, b.getvalue() == big, f.sock.version())
    time.sleep(2.5)
f.quit()
EOF
like($r, qr/^long 0 True TLSv1.3$/m, 'long session: first transfer')
    or diag($r);
like($r, qr/^long 2 True TLSv1.3$/m,
    'long session: a transfer after twice the session timeout');
unlike($t->read_file('error.log'), qr/did not resume/,
    'long session: every data connection resumed');

# lftp mirrors a tree up and down

SKIP: {
    skip 'no lftp', 2 unless $have_lftp;

    mkdir "$d/tree";
    mkdir "$d/tree/a";
    mkdir "$d/tree/a/b";
    system("head -c 200000 /dev/urandom > $d/tree/one");
    system("head -c 70000 /dev/urandom > $d/tree/a/two");
    system("head -c 1 /dev/urandom > $d/tree/a/b/three");
    $t->write_file('tree/a/b/empty', '');

    my $lftp = "set ssl:verify-certificate no; set ftp:ssl-force true; "
        . "set ftp:ssl-protect-data true; set ftp:ssl-protect-list true; "
        . "set net:timeout 10; set net:max-retries 1; "
        . "set net:reconnect-interval-base 1; "
        . "open -u alice,pw-a -p $port 127.0.0.1; "
        . "mirror -R tree tree; mirror tree back";
    $out = `cd $d && timeout 120 lftp -c '$lftp' 2>&1`;
    is(system("diff -r $d/tree $d/data/alice/tree >/dev/null"), 0,
        'lftp mirror -R: the tree went up') or diag($out);
    is(system("diff -r $d/tree $d/back >/dev/null"), 0,
        'lftp mirror: and came back down');
}

# uploads to tmpfs: pwrite(2) on the event loop, also resumed

SKIP: {
    skip 'no tmpfs at /dev/shm', 3 if $shm eq "$d/data";

    my $cc = "curl -sS -k --max-time 60 -u carol:pw-c --ssl-reqd";

    $out = `$cc -T $d/big ftp://127.0.0.1:$port/up 2>&1`;
    ok(same("$d/big", "$shm/carol/up"), 'tmpfs: upload identical')
        or diag($out);

    system("head -c 1300000 $d/big > $shm/carol/part");
    $out = `$cc -C - -T $d/big ftp://127.0.0.1:$port/part 2>&1`;
    ok(same("$d/big", "$shm/carol/part"), 'tmpfs: upload resumed')
        or diag($out);

    like($t->read_file('error.log'), qr/STOR "up" 3000000 bytes, complete/,
        'tmpfs: upload logged complete');
}

# a TLS handshake that stalls halfway: closed after login_timeout, another
# session meanwhile unaffected

sub stall {
    my ($sock) = @_;
    # the first bytes of a ClientHello, then nothing
    print $sock "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" . ("\x11" x 20);
}

my $imp = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$iport",
    Timeout => 10) or die;
stall($imp);

my $exp = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port",
    Timeout => 10) or die;
<$exp>;
print $exp "AUTH TLS\r\n";
my $auth = <$exp>;
like($auth, qr/^234 /, 'explicit: AUTH TLS');
stall($exp);

$out = `$curl -o $d/during ftp://127.0.0.1:$port/big 2>&1`;
ok(same("$d/big", "$d/during"), 'another session works meanwhile')
    or diag($out);

sub closed_within {
    my ($sock, $secs) = @_;
    my $closed = 0;
    eval {
        local $SIG{ALRM} = sub { die "timeout\n" };
        alarm($secs);
        my $buf;
        while (1) {
            my $n = sysread($sock, $buf, 4096);
            if (!defined $n || $n == 0) { $closed = 1; last; }
        }
        alarm(0);
    };
    alarm(0);
    return $closed;
}

ok(closed_within($imp, 40), 'implicit: stalled handshake closed');
ok(closed_within($exp, 40), 'explicit: stalled handshake closed');

$out = `curl -sS -k --max-time 60 -u alice:pw-a -o $d/after ftps://127.0.0.1:$iport/big 2>&1`;
ok(same("$d/big", "$d/after"), 'the server serves on after them')
    or diag($out);

$t->done();
