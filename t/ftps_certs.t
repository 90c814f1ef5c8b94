#!/usr/bin/perl

# ftps_certs.t -- certificates for FTPS, all made here with the openssl CLI:
# an RSA and an ECDSA server pair served by key type, new files picked up
# on reload, "siftpd -t" failing on a missing, broken, mismatched or
# expired certificate, and client certificates (ssl_verify_client on and
# optional, ssl_client_user subject_cn, ssl_client_login password and
# certificate) accepted and refused with curl --cert/--key.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;
use Test::Ftps qw/add_user passive_range same/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no openssl') unless system('openssl version >/dev/null') == 0;
plan(skip_all => 'no curl') unless system('curl --version >/dev/null') == 0;

mkdir "$d/data";
mkdir "$d/data/alice";
mkdir "$d/data/bob";
mkdir "$d/pki";

sub ossl {
    my ($args) = @_;
    my $out = `cd $d/pki && openssl $args 2>&1`;
    die "openssl $args:\n$out" if $?;
}

my $ec = '-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes';

# two CAs; server pairs; client certificates: good, another CA's, expired
ossl("req -x509 $ec -keyout ca.key -out ca.pem -days 30 -subj /CN=test-ca");
ossl("req -x509 $ec -keyout ca2.key -out ca2.pem -days 30 -subj /CN=other-ca");
ossl("req -x509 -newkey rsa:2048 -nodes -keyout rsa.key -out rsa.pem "
    . "-days 30 -subj /CN=server-rsa");
ossl("req -x509 $ec -keyout ecdsa.key -out ecdsa.pem -days 30 "
    . "-subj /CN=server-ecdsa");

sub client {
    my ($name, $cn, $ca) = @_;
    ossl("req $ec -keyout $name.key -out $name.csr -subj /CN=$cn");
    ossl("x509 -req -in $name.csr -CA $ca.pem -CAkey $ca.key "
        . "-CAcreateserial -days 30 -out $name.pem");
}

client('alice', 'alice', 'ca');
client('stranger', 'alice', 'ca2');

# an expired one needs explicit dates: "openssl ca"
open my $cnf, '>', "$d/pki/ca.cnf" or die;
print $cnf <<'EOF';
[ ca ]
default_ca = tca
[ tca ]
dir = .
database = index.txt
new_certs_dir = .
serial = serial
default_md = sha256
policy = any
[ any ]
commonName = supplied
EOF
close $cnf;
$t->write_file('pki/index.txt', '');
$t->write_file('pki/serial', "1000\n");
ossl("req $ec -keyout old.key -out old.csr -subj /CN=alice");
ossl('ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key '
    . '-startdate 20200101000000Z -enddate 20200201000000Z '
    . '-in old.csr -out old.pem -notext');

# the served pairs are copies, replaced before a reload below
system("cp $d/pki/rsa.pem $d/pki/rsa.key $d/pki/ecdsa.pem $d/pki/ecdsa.key "
    . "$d/") == 0 or die;

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
events { worker_connections 64; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    storage                 local;
    ssl_client_certificate  %%TESTDIR%%/pki/ca.pem;
    ssl_client_user         subject_cn;
    data_timeout            10s;

    # a certificate and the user's password; RSA and ECDSA pairs
    server {
        listen 127.0.0.1:%%PORT_8041%%;
        listen 127.0.0.1:%%PORT_8042%% ssl;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        ssl_certificate      %%TESTDIR%%/rsa.pem;
        ssl_certificate_key  %%TESTDIR%%/rsa.key;
        ssl_certificate      %%TESTDIR%%/ecdsa.pem;
        ssl_certificate_key  %%TESTDIR%%/ecdsa.key;
        ssl_verify_client    on;
    }

    # a certificate alone logs its user in; without one, the password
    server {
        listen 127.0.0.1:%%PORT_8043%%;
        passive_ports %%PORT_8100%%-%%PORT_8100%%;
        ssl_certificate      %%TESTDIR%%/ecdsa.pem;
        ssl_certificate_key  %%TESTDIR%%/ecdsa.key;
        ssl_verify_client    optional;
        ssl_client_login     certificate;
    }
}
EOF

passive_range($t, 8100);

for (['alice', 'pw-a'], ['bob', 'pw-b']) {
    my ($u, $pw) = @$_;
    add_user($t, $u, $pw, '--home', "/$u", '--perms', 'list,download,upload');
}

system("head -c 300000 /dev/urandom > $d/data/alice/f");
system("cp $d/data/alice/f $d/data/bob/f");

$t->run();

my $port = port(8041);
my $iport = port(8042);
my $oport = port(8043);

my $n = 0;

# curl: (user:password, cert name or '', port); the file it got, or ''
sub get {
    my ($userpw, $cert, $p, $scheme) = @_;
    $scheme //= 'ftp';
    my $out = "$d/got" . $n++;
    my $c = $cert ? "--cert $d/pki/$cert.pem --key $d/pki/$cert.key" : '';
    my $u = (split /:/, $userpw)[0];
    my $log = `curl -sS -k --max-time 30 --ssl-reqd $c -u '$userpw' -o $out $scheme://127.0.0.1:$p/f 2>&1`;
    return (-e $out && same("$d/data/$u/f", $out)) ? 'ok' : "failed: $log";
}

# client certificates, the password still needed

is(get('alice:pw-a', 'alice', $port), 'ok',
    'verify on: good certificate and password');
like(get('alice:pw-a', '', $port), qr/failed/, 'verify on: no certificate');
like(get('alice:pw-a', 'stranger', $port), qr/failed/,
    'verify on: another CA\'s certificate');
like(get('alice:pw-a', 'old', $port), qr/failed/,
    'verify on: an expired certificate');
like(get('alice:wrong', 'alice', $port), qr/failed.*530/s,
    'verify on: good certificate, wrong password');
like(get('bob:pw-b', 'alice', $port), qr/failed.*530/s,
    'verify on: alice\'s certificate for bob');
like($t->read_file('error.log'),
    qr/client certificate of "alice" used for "bob", refused/,
    'the mismatch is logged');
is(get('alice:pw-a', 'alice', $iport, 'ftps'), 'ok',
    'verify on: implicit FTPS with a certificate');

# ssl_client_login certificate under verify optional

is(get('alice:', 'alice', $oport), 'ok',
    'client_login certificate: no password with the certificate');
like($t->read_file('error.log'),
    qr/user "alice" logs in with a client certificate/,
    'certificate login logged');
like(get('bob:', 'alice', $oport), qr/failed.*530/s,
    'client_login certificate: another user\'s name refused');
is(get('alice:pw-a', '', $oport), 'ok',
    'verify optional: no certificate, the password');
like(get('alice:', '', $oport), qr/failed/,
    'verify optional: no certificate, no password');
like(get('alice:', 'stranger', $oport), qr/failed/,
    'verify optional: another CA\'s certificate refused');

# the served certificate follows the client's signature algorithms

sub served {
    my ($sigalgs) = @_;
    my $out = `echo | timeout 20 openssl s_client -connect 127.0.0.1:$iport -sigalgs $sigalgs -cert $d/pki/alice.pem -key $d/pki/alice.key 2>&1`;
    return $out =~ /^subject=.*CN\s*=\s*(\S+)/m ? $1 : "none: $out";
}

is(served('rsa_pss_rsae_sha256:rsa_pkcs1_sha256'), 'server-rsa',
    'an RSA client gets the RSA certificate');
is(served('ecdsa_secp256r1_sha256'), 'server-ecdsa',
    'an ECDSA client gets the ECDSA certificate');

# reload: the new ECDSA pair is served

ossl("req -x509 $ec -keyout ecdsa2.key -out ecdsa2.pem -days 30 "
    . "-subj /CN=server-ecdsa-new");
system("cp $d/pki/ecdsa2.pem $d/ecdsa.pem && cp $d/pki/ecdsa2.key "
    . "$d/ecdsa.key") == 0 or die;
$t->reload();
ok($t->wait_for(sub {
        served('ecdsa_secp256r1_sha256') eq 'server-ecdsa-new' }, 20),
    'reload: the replaced certificate is served');
is(served('rsa_pss_rsae_sha256'), 'server-rsa', 'reload: RSA unchanged');

# siftpd -t: what is wrong with a certificate is said

sub check {
    my ($cert, $key, $extra) = @_;
    $t->write_file_expand('test.conf', <<"EOF");
%%TEST_GLOBALS%%
events { worker_connections 16; }
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp {
    server {
        listen 127.0.0.1:%%PORT_8044%%;
        storage local;
        ssl_certificate      $cert;
        ssl_certificate_key  $key;
        $extra
    }
}
EOF
    return $t->siftpd('-t', '-c', "$d/test.conf");
}

$t->write_file('garbage.pem', "-----BEGIN CERTIFICATE-----\nnot base64!\n"
    . "-----END CERTIFICATE-----\n");

my ($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key", '');
is($rc, 0, '-t: a good pair passes') or diag($out);

($rc, $out) = check("$d/nonexistent.pem", "$d/ecdsa.key", '');
isnt($rc, 0, '-t: a missing certificate fails');
like($out, qr/test.conf:\d+: cannot read certificate ".*nonexistent\.pem" \(\d+: No such file or directory\)/,
    '-t: ... naming the file, file:line and the reason');
unlike($out, qr/SSL:|fopen/, '-t: ... in plain words, without OpenSSL\'s');

($rc, $out) = check("$d/garbage.pem", "$d/ecdsa.key", '');
isnt($rc, 0, '-t: a broken certificate fails');
like($out, qr/cannot load certificate ".*garbage\.pem"/, '-t: ... said');

($rc, $out) = check("$d/ecdsa.pem", "$d/garbage.pem", '');
isnt($rc, 0, '-t: a broken key fails');
like($out, qr/cannot load certificate key ".*garbage\.pem"/, '-t: ... said');

($rc, $out) = check("$d/ecdsa.pem", "$d/pki/alice.key", '');
isnt($rc, 0, '-t: a mismatched pair fails');
like($out, qr/test.conf:\d+: certificate ".*ecdsa\.pem" and key ".*alice\.key" do not match/,
    '-t: ... said with file:line');

($rc, $out) = check("$d/pki/old.pem", "$d/pki/old.key", '');
isnt($rc, 0, '-t: an expired certificate fails');
like($out, qr/test.conf:\d+: certificate ".*old\.pem" expired on Feb  1 00:00:00 2020/,
    '-t: ... with its date and file:line');

($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key",
    "ssl_certificate $d/rsa.pem;");
isnt($rc, 0, '-t: a certificate without its key fails');
like($out, qr/2 "ssl_certificate" but 1 "ssl_certificate_key"/,
    '-t: ... said');

($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key",
    "ssl_certificate $d/pki/ecdsa2.pem; "
    . "ssl_certificate_key $d/pki/ecdsa2.key;");
isnt($rc, 0, '-t: two ECDSA certificates fail');
like($out, qr/certificates ".*ecdsa\.pem" and ".*ecdsa2\.pem" have the same key type/,
    '-t: ... said');

($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key",
    'ssl_verify_client on;');
like($out, qr/no "ssl_client_certificate" for "ssl_verify_client"/,
    '-t: verify_client without CAs');

($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key",
    "ssl_client_certificate $d/garbage.pem; ssl_verify_client on;");
isnt($rc, 0, '-t: broken client CAs fail');
like($out, qr/cannot load client certificate CAs/, '-t: ... said');

# a server without a certificate accepts logins in clear: said, as
# "tls_login off" is

($rc, $out) = check("$d/ecdsa.pem", "$d/ecdsa.key",
    "}\n    server {\n        listen 127.0.0.1:%%PORT_8045%%;\n"
    . "        storage local;");
is($rc, 0, '-t: a second server without a certificate passes') or diag($out);
like($out, qr/\[warn\] .*test.conf:\d+: no "ssl_certificate" in the ftp server of "listen 127.0.0.1:\d+": ftp passwords and data cross the network in clear/,
    '-t: ... with a warning');

$t->done();
