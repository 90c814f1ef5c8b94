#!/usr/bin/perl

# ftps_resume.t -- ten downloads over one FTPS control connection, TLS 1.3
# and 1.2, with session tickets and with the server cache alone: curl with
# ten URLs in one invocation (active mode only with curl 8 and later),
# lftp mget passive and active, ftplib offering the control connection's
# session or the previous data connection's; curl uploading ten files;
# every file identical, every transfer 226; a session of another control
# connection refused with 522.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Ftps qw/add_user passive_range same py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

my $have_lftp = system('lftp --version >/dev/null 2>&1') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8061%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_self_signed      on;
        data_timeout         10s;
    }

    # no session tickets: sessions in the server cache (a TLS 1.3 ticket
    # only names one)
    server {
        listen 127.0.0.1:%%PORT_8062%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_session_tickets  off;
        data_timeout         10s;
    }
}
EOF

passive_range($t, 8100);

add_user($t, 'alice', 'pw-a', '--home', '/alice', '--perms',
    'list,download,upload');

$t->run();

my @files = map { "f$_" } 0 .. 9;
for my $i (0 .. 9) {
    system("head -c " . (1000 + 70000 * $i)
        . " /dev/urandom > $d/data/alice/f$i");
}
system("cp $d/data/alice/f0 $d/big");     # py_run's prelude reads it

sub all_same {
    my ($dir) = @_;
    my $n = 0;
    for my $f (@files) {
        $n++ if same("$d/data/alice/$f", "$dir/$f");
    }
    return $n;
}

# one curl invocation of ten transfers: ten files in $dir, ten times 226
sub curl_ten {
    my ($name, $dir, $args) = @_;

    my $curl = "curl -sS -k --max-time 60 -u alice:pw-a --ssl-reqd "
        . "-w '%{response_code}\\n'";
    my $out = `$curl $args 2>&1`;
    my @codes = $out =~ /^(\d{3})$/mg;

    is(all_same($dir), 10, "$name: ten files identical") or diag($out);
    is(join(',', @codes), join(',', ('226') x 10),
        "$name: every transfer 226");
}

# curl: ten URLs over one control connection.  curl (OpenSSL's client
# session cache) uses a TLS 1.3 ticket once and then offers it without a
# PSK, unless a fresh one came on the control connection

(my $cv) = `curl --version` =~ /^curl (\d+)\./;
my $n = 0;

for my $port (port(8061), port(8062)) {
    for my $tls ('', '--tls-max 1.2') {
        for my $mode ('passive', 'active') {
            my $name = "curl $mode" . ($tls ? ' TLS 1.2' : ' TLS 1.3')
                . ($port == port(8062) ? ', no tickets' : '');

            SKIP: {
                # curl 7.x: "sa_addr inet_ntop() failed" on its own side
                skip "$name: curl 7 -P fails over TLS", 2
                    if $mode eq 'active' && $cv < 8;

                my $dir = "$d/curl" . $n++;
                mkdir $dir;

                my $urls = join ' ', map {
                    "ftp://127.0.0.1:$port/$_ -o $dir/$_"
                } @files;
                my $act = $mode eq 'active' ? '-P 127.0.0.1' : '';

                curl_ten($name, $dir, "$tls $act $urls");
            }
        }
    }
}

# curl uploading ten files over one control connection: an upload's data
# connection gets no ticket (SFT_SSL_NO_TICKETS), the next one resumes the
# ticket of the control connection

for my $tls ('', '--tls-max 1.2') {
    my $name = 'curl -T' . ($tls ? ' TLS 1.2' : ' TLS 1.3');
    my $up = 'up' . $n++;
    mkdir "$d/data/alice/$up";

    my $src = "$d/data/alice/{" . join(',', @files) . '}';

    curl_ten($name, "$d/data/alice/$up",
        "$tls -T '$src' ftp://127.0.0.1:" . port(8061) . "/$up/");
}

# lftp (GnuTLS): mget of ten files over one connection

for my $tls ('', 'set ssl:priority NORMAL:-VERS-TLS1.3; ') {
    for my $pasv ('true', 'false') {
        my $name = 'lftp mget' . ($tls ? ' TLS 1.2' : ' TLS 1.3')
            . ($pasv eq 'true' ? ' passive' : ' active');

        SKIP: {
            skip 'no lftp', 1 unless $have_lftp;

            my $dir = "$d/lftp" . $n++;
            mkdir $dir;

            my $lftp = "set ssl:verify-certificate no; "
                . "set ftp:ssl-force true; set ftp:ssl-protect-data true; "
                . "set net:timeout 10; set net:max-retries 1; "
                . "set net:reconnect-interval-base 1; "
                . "set ftp:passive-mode $pasv; $tls"
                . "open -u alice,pw-a -p " . port(8061) . " 127.0.0.1; "
                . "mget -O $dir " . join(' ', @files);
            my $out = `timeout 120 lftp -c '$lftp' 2>&1`;

            is(all_same($dir), 10, "$name: ten files identical")
                or diag($out);
        }
    }
}

# ftplib: ten RETR over one control connection, passive and active, TLS
# 1.3 and 1.2, each data connection offering the control connection's
# session (Reuse) or the previous data connection's (Chain); a data
# connection offering the session of another control connection (another
# login) is refused

my $r = py_run($t, <<"EOF");
class Chain(Reuse):
    last = None
    def ntransfercmd(self, cmd, rest=None):
        conn, size = ftplib.FTP.ntransfercmd(self, cmd, rest)
        conn = self.context.wrap_socket(conn, server_hostname=self.host,
            session=self.offer())
        self.last = conn.session
        return conn, size
    def offer(self):
        return self.last or self.sock.session
class Other(Chain):
    def offer(self):
        return self.other.sock.session
def login(cls, c, pasv):
    f = cls(context=c, timeout=20)
    f.connect('127.0.0.1', @{[ port(8061) ]})
    f.auth(); f.login('alice', 'pw-a'); f.prot_p()
    f.set_pasv(pasv)
    return f
def ten(f):
    ok = 0
    for i in range(10):
        b = io.BytesIO()
        r = f.retrbinary('RETR f%d' % i, b.write)
        if r.startswith('226') and \\
                b.getvalue() == open('data/alice/f%d' % i, 'rb').read():
            ok += 1
    return '%s %s %d' % (f.sock.version(), f.passiveserver, ok)
for ver in (ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2):
    c = ssl.create_default_context()
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
    c.maximum_version = ver
    for pasv in (True, False):
        f = login(Reuse, c, pasv)
        print('reuse', ten(f))
        g = login(Chain, c, pasv)
        print('chain', ten(g))
        h = login(Other, c, pasv)
        h.other = f
        try:
            h.retrbinary('RETR f1', io.BytesIO().write)
            print('other', h.sock.version(), pasv, 'accepted')
        except ftplib.error_perm as e:
            print('other', h.sock.version(), pasv, str(e)[:3])
        for x in (f, g, h):
            x.quit()
EOF

for my $v ('TLSv1.3', 'TLSv1.2') {
    for my $pasv ('True', 'False') {
        my $m = $pasv eq 'True' ? 'passive' : 'active';

        like($r, qr/^reuse $v $pasv 10$/m,
            "ftplib $v $m, the control session: ten files") or diag($r);
        like($r, qr/^chain $v $pasv 10$/m,
            "ftplib $v $m, the previous data connection's: ten files");
        like($r, qr/^other $v $pasv 522$/m,
            "ftplib $v $m: another control connection's session refused");
    }
}

like($t->read_file('error.log'),
    qr/TLS session \(another session\), refused.*user: "alice"/,
    'the refusal is logged with the user');

$t->done();
