#!/usr/bin/perl

# ftps_records.t -- who seals the TLS records of FTPS downloads. OpenSSL
# hands over the write key as it would to kernel TLS: where the kernel has
# the tls ULP it takes the key and files go out with sendfile(2)
# (path="ktls"), elsewhere siftpd seals the records itself
# (path="tls_sealed"). Downloads with each TLS 1.3 cipher and each TLS 1.2
# AEAD suite, through a client that reads slowly (the socket fills while
# records wait), of an empty file, of many small files and listings with
# ftplib, all compared byte for byte and counted in /metrics. "ssl_ktls
# off" leaves the records to OpenSSL (path="tls"). Uploads are read by
# OpenSSL either way.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port http_get/;
use Test::Ftps qw/add_user passive_range same py_run/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c "import ssl"') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/alice/small";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
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
        data_timeout         20s;
    }
    server {
        listen 127.0.0.1:%%PORT_8062%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        storage local;
        ssl_certificate      %%TESTDIR%%/tls/cert.pem;
        ssl_certificate_key  %%TESTDIR%%/tls/key.pem;
        ssl_ktls             off;
        data_timeout         20s;
    }
}
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

passive_range($t, 8100);

# 5 MiB + 7 bytes: many full records and a short last one
system("head -c 5242887 /dev/urandom > $d/data/alice/big") == 0 or die;
system("cp $d/data/alice/big $d/big") == 0 or die;
$t->write_file('data/alice/empty', '');

for my $i (1 .. 40) {
    $t->write_file("data/alice/small/f$i", ("$i " x (50 * $i)) . "\n");
}

add_user($t, 'alice', 'pw-a', '--home', '/alice',
    '--perms', 'list,download,upload,overwrite,mkdir');

$t->run();

my $port = port(8061);
my $curl = "curl -sS -k --max-time 60 -u alice:pw-a --ssl-reqd";

sub metric {
    my ($path) = @_;
    my $m = http_get(port(8080), '/metrics') // '';
    return $m =~ /^siftp_transfers_total\{direction="download",path="$path"\} (\d+)$/m
        ? $1 : 0;
}

# TLS 1.3, each cipher: records sealed by siftpd

my $n = 0;

for my $suite (qw/TLS_AES_256_GCM_SHA384 TLS_AES_128_GCM_SHA256
                  TLS_CHACHA20_POLY1305_SHA256/)
{
    unlink "$d/got";
    my $out = `$curl --tls13-ciphers $suite -o $d/got ftp://127.0.0.1:$port/big 2>&1`;
    is($?, 0, "$suite: curl download") or diag($out);
    ok(same("$d/got", "$d/big"), "$suite: byte for byte");
    $n++;
}

# the kernel loads its tls ULP on the first request, if it has one; it
# may still refuse a cipher it has no implementation of, and siftpd seals
# those records itself

my $ulp = `cat /proc/sys/net/ipv4/tcp_available_ulp 2>/dev/null` // '';

if ($ulp =~ /\btls\b/) {
    cmp_ok(metric('ktls'), '>', 0, 'kTLS: the kernel sealed records');
} else {
    is(metric('ktls'), 0, 'no kTLS here: none sealed by the kernel');
}

sub sealed { metric('ktls') + metric('tls_sealed') }

is(sealed(), $n, 'downloads counted with path="ktls" or "tls_sealed"');

# a slow reader: the socket is full while sealed records wait, then the
# last ones and close_notify go out when it drains

unlink "$d/got";
my $out = `$curl --limit-rate 4M -o $d/got ftp://127.0.0.1:$port/big 2>&1`;
is($?, 0, 'slow reader: curl download') or diag($out);
ok(same("$d/got", "$d/big"), 'slow reader: byte for byte');

# an empty file: close_notify is the only record

unlink "$d/got";
$out = `$curl -o $d/got ftp://127.0.0.1:$port/empty 2>&1`;
is($?, 0, 'empty file downloaded') or diag($out);
ok(-e "$d/got" && -s "$d/got" == 0, 'empty file is empty');

is(sealed(), $n + 2, 'those counted too');

# ftplib with session reuse: listings and 40 small files, then an upload
# (OpenSSL reads it) downloaded again

$out = py_run($t, <<"PY");
f = open_tls(Reuse, $port)
f.prot_p()
names = sorted(f.nlst('small'))
print('names', len(names))
lines = []
f.retrlines('LIST small', lines.append)
print('list', len(lines))
ok = 0
for i in range(1, 41):
    b = io.BytesIO()
    f.retrbinary('RETR small/f%d' % i, b.write)
    want = (('%d ' % i) * (50 * i) + '\\n').encode()
    ok += b.getvalue() == want
print('small', ok)
f.storbinary('STOR up', io.BytesIO(big))
b = io.BytesIO()
f.retrbinary('RETR up', b.write)
print('roundtrip', b.getvalue() == big)
f.quit()
PY

like($out, qr/^names 40$/m, 'ftplib: NLST over sealed records');
like($out, qr/^list 40$/m, 'ftplib: LIST over sealed records');
like($out, qr/^small 40$/m, 'ftplib: 40 small files byte for byte');
like($out, qr/^roundtrip True$/m, 'ftplib: upload and download again')
    or diag($out);

is(sealed(), $n + 2 + 41, 'ftplib downloads counted');

# TLS 1.2, each AEAD suite: sealed by siftpd too

for my $suite (qw/ECDHE-ECDSA-AES128-GCM-SHA256 ECDHE-ECDSA-AES256-GCM-SHA384
                  ECDHE-ECDSA-CHACHA20-POLY1305/)
{
    unlink "$d/got";
    $out = `$curl --tls-max 1.2 --ciphers $suite -o $d/got ftp://127.0.0.1:$port/big 2>&1`;
    is($?, 0, "TLS 1.2 $suite: curl download") or diag($out);
    ok(same("$d/got", "$d/big"), "TLS 1.2 $suite: byte for byte");
}

is(sealed(), $n + 2 + 41 + 3, 'TLS 1.2 downloads sealed too');

# ssl_ktls off: OpenSSL seals

unlink "$d/got";
my $off = port(8062);
$out = `$curl -o $d/got ftp://127.0.0.1:$off/big 2>&1`;
is($?, 0, 'ssl_ktls off: curl download') or diag($out);
ok(same("$d/got", "$d/big"), 'ssl_ktls off: byte for byte');

is(metric('tls'), 1, 'ssl_ktls off counted with path="tls"');
is(sealed(), $n + 2 + 41 + 3, 'and not as sealed');
note('sealed by the kernel: ', metric('ktls'), ', by siftpd: ', metric('tls_sealed'));

$t->stop();

unlike($t->read_file('error.log'), qr/\[(alert|crit|emerg)\]/,
    'no alert in the error log');

done_testing();
