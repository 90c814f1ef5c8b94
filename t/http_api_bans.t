#!/usr/bin/perl

# http_api_bans.t -- /api/v1/bans: a source banned after failed FTP logins
# is listed with its failures and the end of its ban, lifting the ban lets
# it log in again at once, a network of login_ban_exempt is never banned,
# read tokens may list but not lift (403), unknown and malformed addresses
# get 404 and 400, every lift is in the audit log; a bad exempt network is
# refused by "siftpd -t" with its file and line.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;
use Test::Siftpd::FTP qw/ftp_conf ftp_user ftp_connect ftp_cmd/;

my $t = Test::Siftpd->new()->has(qw/ftp http/);
my $d = $t->testdir();

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';

$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n");

ftp_conf($t, workers => 2, main => <<'MAIN');
login_max_failures 2;
login_ban_exempt 127.0.0.3/32 ::1/128;
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
        api_audit_log audit.log;
    }
}
MAIN
ftp_user($t, 'alice', 'pw-a', 'list');

# a network that is not one: refused where it is written

my $conf = $t->read_file('siftpd.conf');
(my $bad = $conf) =~ s/::1\/128/::1\/129/;
$t->write_file('bad.conf', $bad);
my $line = 1 + (() = substr($bad, 0, index($bad, '::1/129')) =~ /\n/g);
my $bin = $t->binary();
my $out = `$bin -p $d/ -c $d/bad.conf -t 2>&1`;
like($out, qr/\[emerg\] \S*bad\.conf:$line: invalid network "::1\/129" in "login_ban_exempt"/,
    'a bad network is refused with its file and line');

$t->run();

my $port = port(8021);
my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub req {
    my ($method, $path, $token) = @_;
    my $r = $http->request($method,
        'http://127.0.0.1:' . port(8080) . "/api/v1/bans$path",
        { headers => { Authorization => 'Bearer ' . ($token // $admin) } });
    $r->{json} = eval { decode_json($r->{content}) } if $r->{content};
    return $r;
}

# the gauge of addresses banned now, from /metrics
sub bans_active {
    my $r = HTTP::Tiny->new(timeout => 15)->get(
        'http://127.0.0.1:' . port(8080) . '/metrics',
        { headers => { Authorization => "Bearer $admin" } });
    return $r->{content} =~ /^siftp_auth_bans_active (\d+)$/m ? $1 : 'none';
}

sub fail_logins {
    my ($from, $n) = @_;
    for (1 .. $n) {
        my $s = ftp_connect($port, $from);
        ftp_cmd($s, 'USER alice');
        ftp_cmd($s, 'PASS wrong');
        close $s;
    }
}

sub login {
    my ($from) = @_;
    my ($s, $g) = ftp_connect($port, $from);
    return $g unless $g =~ /^220/;
    ftp_cmd($s, 'USER alice');
    my $r = ftp_cmd($s, 'PASS pw-a');
    close $s;
    return $r;
}

is_deeply(req('GET', '')->{json}, [], 'no bans at first');
is(bans_active(), 0, 'metrics: no ban active');

fail_logins('127.0.0.2', 2);
fail_logins('127.0.0.3', 3);

like(login('127.0.0.2'), qr/^421 /, 'banned after 2 failures');
like(login('127.0.0.3'), qr/^230 /, 'an exempt network is never banned');

my $r = req('GET', '', $reader);
is($r->{status}, 200, 'a read token lists');
my @b = @{$r->{json} // []};
is(scalar @b, 1, 'one ban') or diag($r->{content});
is($b[0]{address}, '127.0.0.2', 'its address');
is($b[0]{failures}, 2, 'its failures');
ok($b[0]{until} > time() && $b[0]{until} <= time() + 15 * 60 + 5,
    'banned until the ban time from now');
is(bans_active(), 1, 'metrics: one ban active');

is(req('DELETE', '/127.0.0.2', $reader)->{status}, 403,
    'a read token cannot lift a ban');
is(req('DELETE', '/not-an-address')->{status}, 400, 'malformed: 400');
is(req('DELETE', '/127.0.0.9')->{status}, 404, 'not banned: 404');

is(req('DELETE', '/127.0.0.2')->{status}, 204, 'lift: 204');
is_deeply(req('GET', '')->{json}, [], 'no ban left');
is(bans_active(), 0, 'metrics: the lifted ban is not active');
like(login('127.0.0.2'), qr/^230 /, 'the address logs in again');

my $audit = $t->read_file('audit.log');
like($audit, qr/ token=ops method=DELETE route=\/api\/v1\/bans\/127\.0\.0\.2 user=- status=204$/m,
    'audit: lift');
like($audit, qr/ route=\/api\/v1\/bans\/127\.0\.0\.9 user=- status=404 reason="not banned"$/m,
    'audit: not banned');
like($t->read_file('error.log'),
    qr/admin API: the ban of 127\.0\.0\.2 lifted, token "ops"/,
    'the lift is logged with the token');

$t->stop();

done_testing();
