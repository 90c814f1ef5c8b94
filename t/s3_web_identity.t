#!/usr/bin/perl

# s3_web_identity.t -- "s3_credentials web_identity": siftpd -t refuses a
# token file it cannot read, a role that is not an ARN and the form
# without arguments when AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are
# not set, and takes it when they are; a storage on moto (through the
# stand-in proxy, which lists the session tokens requests came with)
# whose keys come from the stand-in's STS serves an upload and a
# download signed with them, and again after they expired (4 s) with
# keys fetched with the token file read again; a refused token is logged
# once, with STS's reason.  Every process is stopped by pid.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd::S3 qw/s3_storage_moto s3_standin/;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 's3_storage');
my $d = $t->testdir();

my $s3 = port(8900);
my $proxy = port(8902);
my $sts = port(8903);
s3_storage_moto($t, $s3, port(8901), $d, 'upload');
s3_standin($t, $proxy, $s3);
s3_standin($t, $sts);

my $role = 'arn:aws:iam::123456789012:role/siftp';

sub conf {
    my ($credentials) = @_;

    return <<"EOF";
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
storage cloud {
    driver s3;
    s3_endpoint http://127.0.0.1:$proxy;
    s3_bucket files;
    s3_prefix srv/;
    s3_credentials $credentials;
    s3_sts_endpoint http://127.0.0.1:$sts;
    s3_retries 1;
    s3_timeout 30s;
}
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage cloud; } }
EOF
}

# siftpd -t

$t->write_file_expand('bad.conf',
    conf("web_identity $role %%TESTDIR%%/none"));
my ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/bad\.conf:\d+: web identity token file ".*none" cannot be read/,
    'siftpd -t refuses a token file it cannot read, with file:line')
    or diag($msg);

$t->write_file('token', 'tok-1');
$t->write_file_expand('bad.conf',
    conf("web_identity role %%TESTDIR%%/token"));
($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/web identity role "role" is not an ARN/,
    'siftpd -t refuses a role that is not an ARN');

delete @ENV{qw/AWS_ROLE_ARN AWS_WEB_IDENTITY_TOKEN_FILE/};
$t->write_file_expand('bad.conf', conf('web_identity'));
($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
like($msg, qr/needs AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE/,
    'siftpd -t refuses web_identity alone without the environment');

{
    local $ENV{AWS_ROLE_ARN} = $role;
    local $ENV{AWS_WEB_IDENTITY_TOKEN_FILE} = "$d/token";
    ($rc, $msg) = $t->siftpd('-t', '-c', "$d/bad.conf");
    is($rc, 0, 'siftpd -t takes web_identity from the environment')
        or diag($msg);
}

$t->write_file_expand('siftpd.conf',
    conf("web_identity $role %%TESTDIR%%/token"));
$t->user_add('bob', 'pw', perms => 'all', storage => 'cloud');

$t->run();

my $ftp = port(8021);

sub tokens {
    return `curl -s --max-time 30 http://127.0.0.1:$proxy/__tokens`;
}

sub roundtrip {
    my ($name) = @_;
    my $data = "the bytes of $name\n" x 1000;

    $t->write_file("up-$name", $data);
    unlink("$d/down-$name");
    my $url = "ftp://bob:pw\@127.0.0.1:$ftp/$name";
    system("curl -s --max-time 60 -T $d/up-$name $url");
    system("curl -s --max-time 60 -o $d/down-$name $url");

    return $t->read_file("down-$name") eq $data;
}

ok($t->wait_for(sub { roundtrip('probe'); tokens() =~ /sts-session-tok-1/ },
        30), 'the first keys from STS');
ok(roundtrip('first'), 'an upload and a download with the keys of the role');
like(tokens(), qr/^sts-session-tok-1$/m, 'signed with the STS session token');

# the keys expire 4 s after issue: fetched again, the token file read again

$t->write_file('token', 'tok-2');
sleep(5);

ok(roundtrip('second'),
    'an upload and a download after the first keys expired');
like(tokens(), qr/^sts-session-tok-2$/m,
    'signed with new keys, of the token file read again');

# a refused token: one line with STS's reason, the old keys kept

$t->write_file('token', 'rejected');
my $refused = qr/AssumeRoleWithWebIdentity for role "\Q$role\E" failed: 400/;
ok($t->wait_log(qr/\[error\] .*$refused InvalidIdentityToken/, 30),
    'a refused token logged with the reason');
my $n = () = $t->read_file('error.log') =~ /InvalidIdentityToken/g;
is($n, 1, 'the refusal logged once');

$t->done();
