#!/usr/bin/perl

# stats_bytes.t -- siftp_bytes_sent_total and siftp_bytes_received_total
# count the file bytes of transfers once, the same way in every protocol:
# FTP (sendfile, splice, the pooled copy of TYPE A), FTPS (records over
# the pooled copy) and SFTP downloads and uploads of known sizes move the
# counters by exactly those sizes, not by the control connection, the
# TLS layer under the transfer or the SSH framing.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use JSON::PP;
use Test::Siftpd qw/port http_get/;
use Test::Ftps qw/py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;

my $down = 1048583;                 # not a multiple of any block size
my $up = 123457;

mkdir "$d/data";
mkdir "$d/data/alice";
$t->write_file('big', join('', map { chr(($_ * 7) % 251) } 1 .. $down));
system('cp', "$d/big", "$d/data/alice/down") == 0 or die;
$t->write_file('data/alice/text', "line\n" x 1000);
$t->write_file('up', 'u' x $up);

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    ssl_certificate      %%TESTDIR%%/tls/cert.pem;
    ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
    ssl_self_signed      on;

    server {
        listen 127.0.0.1:%%PORT_8021%%;
        storage local;
        tls_login optional;
        tls_data optional;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/host_key;
        storage local;
    }
}
EOF

$t->user_add('alice', 'pw-a', perms => 'list,download,upload,overwrite');
$t->user_key('alice');

$t->run();

sub bytes {
    my ($body) = (http_get(port(8080), '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    my $s = eval { decode_json($body // '') } || {};
    return ($s->{bytes}{sent} // -1, $s->{bytes}{received} // -1);
}

# the counters reach the sizes once the transfers have ended, and stay

sub moved {
    my ($before, $sent, $received, $name) = @_;
    my @want = ($before->[0] + $sent, $before->[1] + $received);

    $t->wait_for(sub {
        my @b = bytes();
        return $b[0] >= $want[0] && $b[1] >= $want[1];
    }, 20);

    my @got = bytes();
    is("$got[0] $got[1]", "$want[0] $want[1]",
        "$name: sent +$sent, received +$received");
}

my $port = port(8021);

# Python ftplib code run on a session (plain, or TLS with PROT P)

sub ftp_session {
    my ($tls, $code) = @_;
    my $open = $tls ? "f = open_tls(Reuse, $port)\nf.prot_p()\n"
                    : "f = ftplib.FTP(timeout=20)\n"
                      . "f.connect('127.0.0.1', $port)\n"
                      . "f.login('alice', 'pw-a')\n";
    return py_run($t, $open . $code . "f.quit()\n");
}

my @b = bytes();
is("@b", '0 0', 'nothing counted at the start');

my $r = ftp_session(0, <<'PY');
b = io.BytesIO(); f.retrbinary('RETR down', b.write)
print('ftp-retr', b.getvalue() == big)
f.storbinary('STOR up1', open('up', 'rb'))
PY
like($r, qr/^ftp-retr True$/m, 'FTP download') or diag($r);
moved([@b], $down, $up, 'FTP binary (sendfile, splice)');

@b = bytes();
$r = ftp_session(0, <<'PY');
lines = []
f.retrlines('RETR text', lines.append)
print('ftp-ascii', len(lines))
f.storlines('STOR up2', io.BytesIO(b'x\n' * 1000))
PY
like($r, qr/^ftp-ascii 1000$/m, 'FTP TYPE A download') or diag($r);
moved([@b], 6000, 3000, 'FTP TYPE A (the pooled copy, CRLF as sent)');

@b = bytes();
$r = ftp_session(1, <<'PY');
b = io.BytesIO(); f.retrbinary('RETR down', b.write)
print('ftps-retr', b.getvalue() == big)
f.storbinary('STOR up3', open('up', 'rb'))
PY
like($r, qr/^ftps-retr True$/m, 'FTPS download') or diag($r);
moved([@b], $down, $up, 'FTPS (TLS records under the transfer)');

SKIP: {
    skip 'no sftp', 2 unless -x '/usr/bin/sftp';

    @b = bytes();
    $t->write_file('batch', "get down $d/sgot\nput $d/up up4\n");
    my $sp = port(8022);
    my $o = `timeout 60 sftp -b $d/batch -P $sp -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -i $d/key alice\@127.0.0.1 2>&1`;
    ok($? == 0 && -s "$d/sgot" == $down, 'SFTP get and put') or diag($o);
    moved([@b], $down, $up, 'SFTP (READ and WRITE data)');
}

$t->done();
