#!/usr/bin/perl

# login_ban.t -- a banned client is told why before it is disconnected:
# FTP and implicit FTPS answer 421 with the reason (FTPS after the TLS
# handshake), SFTP sends an SSH disconnect message that OpenSSH's client
# prints; each refused connection is logged once, and other addresses are
# served as before.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp sftp/);

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no OpenSSH client') unless -x '/usr/bin/sftp';

ftp_conf($t, main => <<'MAIN', ftp => <<'FTPS');
login_max_failures 2;
sftp {
    server {
        listen 127.0.0.1:%%PORT_8023%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
MAIN
server {
    listen 127.0.0.1:%%PORT_8022%% ssl;
    storage local;
    ssl_certificate      %%TESTDIR%%/tls/cert.pem;
    ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
    ssl_self_signed      on;
}
FTPS
ftp_user($t, 'alice', 'pw-a', 'list');

$t->run();

my $port = port(8021);

# two failed logins from 127.0.0.2 ban it

for (1 .. 2) {
    my $s = ftp_connect($port, '127.0.0.2');
    ftp_cmd($s, 'USER alice');
    like(ftp_cmd($s, 'PASS wrong'), qr/^530 /, "failed login $_");
    close $s;
}

my ($s, $g) = ftp_connect($port, '127.0.0.2');
like($g, qr/^421 Too many login failures from your address/,
    'FTP: 421 with the reason at the greeting');
is(scalar <$s>, undef, 'FTP: then closed');
close $s;

my $iport = port(8022);
my $ftps = `python3 - 2>&1 <<'EOF'
import socket, ssl
s = socket.create_connection(('127.0.0.1', $iport), timeout=20,
                             source_address=('127.0.0.2', 0))
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
t = c.wrap_socket(s)
print(t.recv(512).decode(), end='')
EOF`;
like($ftps, qr/^421 Too many login failures from your address/,
    'implicit FTPS: 421 with the reason after the handshake');

my $sport = port(8023);
my $sftp = `timeout 60 sftp -F /dev/null -o BindAddress=127.0.0.2 \\
    -o BatchMode=yes -o StrictHostKeyChecking=no \\
    -o UserKnownHostsFile=/dev/null -P $sport -b /dev/null \\
    alice\@127.0.0.1 2>&1`;
note($sftp);
like($sftp, qr/disconnect.*Too many login failures from your address/i,
    'SFTP: a disconnect message with the reason');

($s, $g) = ftp_connect($port);
like($g, qr/^220 /, '127.0.0.1 is greeted as before');
close $s;

my @logged = $t->read_file('error.log') =~ /address is banned/g;
is(scalar @logged, 3, 'each refused connection logged once');

$t->done();
