#!/usr/bin/perl

# http_api_recount.t -- POST /api/v1/users/NAME/recount: files put into a
# user's home or taken out of it behind the server's back leave the quota
# usage stale until a recount; the recount answers the exact bytes and
# files, GET /api/v1/users/NAME shows them, and the next upload is refused
# or allowed by them in every worker; scopes, unknown users and odd names,
# the audit line.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http')->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';

$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n");

mkdir "$d/data";
mkdir "$d/data/bob";
$t->write_file('data/bob/old', 'o' x 3000);

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
        api_audit_log audit.log;
    }
}
EOF

$t->user_add('bob', 'pw',
    perms => 'list,download,upload,overwrite,delete');
$t->write_file('users', $t->read_file('users')
    . "quota_bytes = 10000\nquota_files = 5\n");

# one FTP session: "stor:NAME=SIZE" each, a line "ACTION CODE|ok" each
$t->write_file('ftp.py', <<'PY');
import ftplib, io, sys
f = ftplib.FTP()
f.connect('127.0.0.1', int(sys.argv[1]), timeout=15)
f.login('bob', 'pw')
for a in sys.argv[2:]:
    name, size = a.split(':', 1)[1].split('=')
    try:
        f.storbinary('STOR ' + name, io.BytesIO(b'x' * int(size)))
        print(a, 'ok')
    except ftplib.all_errors as e:
        print(a, str(e)[:3])
f.quit()
PY

$t->run();

my $base = 'http://127.0.0.1:' . port(8080) . '/api/v1/users';
my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub req {
    my ($method, $path, $token) = @_;
    my %o = (headers => {});
    $o{headers}{Authorization} = "Bearer $token" if defined $token;
    my $r = $http->request($method, "$base$path", \%o);
    $r->{json} = eval { decode_json($r->{content}) } if length $r->{content};
    return $r;
}

sub usage { req('GET', '/bob', $admin)->{json}{usage} }

sub stor {
    my $out = `timeout 30 python3 $d/ftp.py @{[ port(8021) ]} @_ 2>&1`;
    chomp $out;
    return $out;
}

is(usage(), undef, 'usage unknown before the home was counted');

is(stor('stor:up1=1000'), 'stor:up1=1000 ok', 'an upload counts the home');
is_deeply(usage(), { bytes => 4000, files => 2, sessions => 0 },
    'usage after the first upload');

# behind the server's back

$t->write_file('data/bob/big', 'b' x 5500);
is_deeply(usage(), { bytes => 4000, files => 2, sessions => 0 },
    'a file written to disk directly: usage stale');

# scopes and names

is(req('POST', '/bob/recount')->{status}, 401, 'no token: 401');
is(req('POST', '/bob/recount', $reader)->{status}, 403, 'read token: 403');
is(req('GET', '/bob/recount', $admin)->{status}, 404,
    'GET is no recount');
my $r = req('POST', '/nobody/recount', $admin);
is($r->{status}, 404, 'unknown user: 404');
is($r->{json}{error}, 'no such user', 'unknown user: the reason');
is(req('POST', '/..%2fbob/recount', $admin)->{status}, 404,
    'an encoded slash in the name: 404');
is(req('POST', '/../recount', $admin)->{status}, 404, '"..": 404');
is(req('POST', '/bob/x/recount', $admin)->{status}, 405,
    'two segments are no user name');
is(req('POST', '/b%01b/recount', $admin)->{status}, 404,
    'a control byte in the name: 404');

# the recount

$r = req('POST', '/bob/recount', $admin);
is($r->{status}, 200, 'recount: 200');
is_deeply($r->{json}, { bytes => 9500, files => 3 },
    'recount: the exact bytes and files');
is_deeply(usage(), { bytes => 9500, files => 3, sessions => 0 },
    'the user shows the recount');

is(stor('stor:up2=1000'), 'stor:up2=1000 552',
    'an upload over the recounted quota is refused');
ok(!-e "$d/data/bob/up2", 'and leaves nothing');

unlink "$d/data/bob/big";
$r = req('POST', '/bob/recount', $admin);
is_deeply($r->{json}, { bytes => 4000, files => 2 },
    'a file removed behind the back: recounted');

# two sessions: the second may run in the other worker
is(stor('stor:up3=1000', 'stor:up4=1000'),
    "stor:up3=1000 ok\nstor:up4=1000 ok", 'room again after the recount');
is(stor('stor:up5=1000'), 'stor:up5=1000 ok', 'a third file');
is(stor('stor:up6=1000'), 'stor:up6=1000 552',
    'the file quota counts the recount and the uploads after it');
is_deeply(usage(), { bytes => 7000, files => 5, sessions => 0 },
    'usage after the uploads');

my $audit = $t->read_file('audit.log');
like($audit, qr/ token=ops method=POST route=\/api\/v1\/users\/bob\/recount user=bob status=200$/m,
    'audit: the recount');
like($audit, qr/ token=ops method=POST route=\/api\/v1\/users\/nobody\/recount user=nobody status=404 reason="no such user"$/m,
    'audit: an unknown user');
like($t->read_file('error.log'),
    qr/usage of "bob" recounted: 9500 bytes in 3 files/,
    'error log: the recount');

$t->stop();

done_testing();
