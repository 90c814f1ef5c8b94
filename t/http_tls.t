#!/usr/bin/perl

# http_tls.t -- the admin listener over TLS ("listen ... ssl" with the
# ssl_* directives): curl verifies the certificate and uses the API and
# the metrics with a token, keep-alive over one TLS connection, a
# plaintext request gets no HTTP answer, a stalled handshake is cut by
# client_header_timeout, and the configuration checks (no certificate;
# a plaintext listener off loopback is warned about).

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use IO::Socket::INET;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

plan(skip_all => 'no curl') unless -x '/usr/bin/curl';

my $token = 'tls-admin-token-0123456789abcdef';
$t->write_file('tokens', "$token admin ops\n");

system('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt',
    'ec_paramgen_curve:prime256v1', '-nodes', '-subj', '/CN=siftpd test',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2',
    '-keyout', "$d/key.pem", '-out', "$d/cert.pem") == 0
    or die "openssl req failed";
system("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1"
    . " -nodes -subj /CN=other -days 2 -keyout $d/other.key"
    . " -out $d/other.pem 2>/dev/null") == 0 or die "openssl req failed";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
http {
    server {
        listen 127.0.0.1:%%PORT_8443%% ssl;
        ssl_certificate      %%TESTDIR%%/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/key.pem;
        api_token_file       %%TESTDIR%%/tokens;
        client_header_timeout 2s;
    }
}
EOF

$t->write_file('users', '');
chmod 0600, "$d/users";
$t->run();

my $port = port(8443);
my $base = "https://127.0.0.1:$port";

sub curl {
    my (@args) = @_;
    my $out = `timeout 30 curl -sS --max-time 20 --cacert $d/cert.pem @args 2>&1`;
    return ($? >> 8, $out);
}

# the API and the metrics over verified TLS

my ($rc, $out) = curl('-H', "'Authorization: Bearer $token'",
    "$base/api/v1/stats");
is($rc, 0, 'curl verifies the certificate') or diag($out);
my $s = eval { decode_json($out) } // {};
like($s->{version} // '', qr/^\d+\.\d+\.\d+$/, 'stats over TLS');

($rc, $out) = curl('-H', "'Authorization: Bearer $token'",
    '-w', "'%{http_code} %{num_connects}\\n'", '-o', '/dev/null',
    "$base/metrics", '-o', '/dev/null', "$base/api/v1/stats");
is($out, "200 1\n200 0\n", 'two requests on one TLS connection');

($rc, $out) = curl('-w', "'%{http_code}'", '-o', '/dev/null',
    "$base/api/v1/stats");
is($out, '401', 'no token: 401 over TLS');

# a write through the API over TLS

($rc, $out) = curl('-X', 'POST', '-H', "'Authorization: Bearer $token'",
    '-H', "'Content-Type: application/json'",
    '--data', q('{"name":"carol","password":"a long enough pw","home":"/"}'),
    '-w', "'\\n%{http_code}'", "$base/api/v1/users");
like($out, qr/\n201$/, 'user created over TLS') or diag($out);
like($t->read_file('users'), qr/^\[carol\]$/m, 'in the user store');

# the wrong certificate authority is refused by the client

my $wrong = `timeout 30 curl -sS --max-time 20 --cacert $d/other.pem $base/api/v1/stats 2>&1`;
isnt($? >> 8, 0, 'another CA: curl refuses');

# plaintext HTTP to the TLS port: no HTTP reply

my $c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 10);
ok($c, 'plain connect');
print $c "GET /api/v1/stats HTTP/1.1\r\nHost: a\r\n\r\n";
$c->timeout(10);
my $reply = '';
eval {
    local $SIG{ALRM} = sub { die "alarm\n" };
    alarm 15;
    while (sysread($c, my $buf, 4096)) { $reply .= $buf; }
    alarm 0;
};
unlike($reply, qr/^HTTP\//, 'plaintext request: no HTTP answer');
close $c;

# a client that never starts the handshake is closed by the timeout

$c = IO::Socket::INET->new(PeerAddr => "127.0.0.1:$port", Timeout => 10);
my $closed = 0;
eval {
    local $SIG{ALRM} = sub { die "alarm\n" };
    alarm 30;
    my $n = sysread($c, my $buf, 1);
    $closed = defined $n && $n == 0 || !defined $n;
    alarm 0;
};
ok($closed, 'stalled handshake closed by client_header_timeout');
close $c;
ok($t->wait_log(qr/TLS handshake timed out/, 10),
    'the timeout is logged');

# the server keeps serving

($rc, $out) = curl('-H', "'Authorization: Bearer $token'",
    '-w', "'%{http_code}'", '-o', '/dev/null', "$base/api/v1/stats");
is($out, '200', 'still serving');

$t->stop();

# configuration checks (siftpd -t binds nothing)

sub check_conf {
    my ($conf) = @_;
    $t->write_file_expand('check.conf', $conf);
    my $bin = $t->binary();
    my $o = `$bin -t -p $d/ -c $d/check.conf 2>&1`;
    return ($? >> 8, $o);
}

($rc, $out) = check_conf(<<'EOF');
%%TEST_GLOBALS%%
http { server { listen 127.0.0.1:%%PORT_8443%% ssl; } }
EOF
isnt($rc, 0, 'listen ssl without a certificate: refused');
like($out, qr/no "ssl_certificate" in the http server of "listen [^"]+ ssl"/,
    'and said');

($rc, $out) = check_conf(<<'EOF');
%%TEST_GLOBALS%%
http { server { listen 0.0.0.0:%%PORT_8443%%; } }
EOF
is($rc, 0, 'a plaintext listener off loopback is allowed');
like($out, qr/\[warn\].*without "ssl" is not on loopback/,
    'and warned about');

($rc, $out) = check_conf(<<'EOF');
%%TEST_GLOBALS%%
http { server { listen 127.0.0.1:%%PORT_8443%%; } }
EOF
unlike($out, qr/not on loopback/, 'no warning on loopback');

done_testing();
