#!/usr/bin/perl

# http_api_users.t -- the users API: list, show, create, change and delete
# users through /api/v1/users with token scopes, validation answers (400,
# 404, 409, 412, 413, 422), ETag and If-Match, the audit log, and the
# effect on logins at once in every worker (FTP and SFTP); the users file
# stays readable by "siftpd user" and other users' entries stay as they
# were.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http')->has('ftp')->has('sftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

my $admin = 'admin-token-0123456789abcdef';
my $reader = 'read-token-0123456789abcdef';
my $bare = 'bare-token-0123456789abcdef';

$t->write_file('tokens', "$admin admin ops\n$reader read viewer\n$bare\n");

mkdir "$d/data";
mkdir "$d/data/$_" for qw/keeper bob carol/;

$t->write_file_expand('siftpd.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
login_max_failures 1000;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
sftp {
    server {
        listen 127.0.0.1:%%PORT_8022%%;
        host_key %%TESTDIR%%/ssh/host_ed25519_key;
        storage local;
    }
}
http {
    server {
        listen 127.0.0.1:%%PORT_8080%%;
        api_token_file tokens;
        api_audit_log audit.log;
        client_max_body_size 64k;
    }
    server {
        listen 127.0.0.1:%%PORT_8081%%;
        api off;
    }
}
EOF2

$t->user_add('keeper', 'keeper-pw');
$t->user_add('zed', 'zed-pw');

sub stanza {
    my ($name) = @_;
    my ($s) = $t->read_file('users') =~ /^(\[\Q$name\E\]\n(?:[^\[].*\n)*)/m;
    return $s // '';
}

my $keeper = stanza('keeper');
my $zed = stanza('zed');
ok(length $keeper && length $zed, 'users made by the CLI');

$t->run();

my $base = 'http://127.0.0.1:' . port(8080) . '/api/v1/users';
my $http = HTTP::Tiny->new(timeout => 30, keep_alive => 0);

sub req {
    my ($method, $path, $token, $body, %h) = @_;
    my %o = (headers => { %h });
    $o{headers}{Authorization} = "Bearer $token" if defined $token;
    if (defined $body) {
        $o{content} = ref $body ? encode_json($body) : $body;
        $o{headers}{'Content-Type'} = 'application/json';
    }
    my $r = $http->request($method, "$base$path", \%o);
    $r->{json} = eval { decode_json($r->{content}) } if length $r->{content};
    return $r;
}

# FTP: "ok" or the reply code to PASS
sub ftp_login { $t->ftp_login(port(8021), @_) }

sub ftp_logins {
    my ($user, $pass, $n) = @_;
    my %seen;
    $seen{ftp_login($user, $pass)}++ for 1 .. $n;
    return join ',', sort keys %seen;
}

# scopes

is(req('GET', '')->{status}, 401, 'no token: 401');
is(req('GET', '', 'wrong-token-0123456789abc')->{status}, 401,
    'wrong token: 401');
is(req('GET', '', $reader)->{status}, 200, 'read token lists');
is(req('POST', '', $reader, { name => 'nope', password => 'x' })->{status},
    403, 'read token cannot create');
is(req('DELETE', '/keeper', $reader)->{status}, 403,
    'read token cannot delete');
is(req('GET', '/nope', $admin)->{status}, 404, 'unknown user: 404');
is($http->get('http://127.0.0.1:' . port(8081) . '/api/v1/users')->{status},
    404, 'api off: the users routes are closed too');

# create

my $r = req('POST', '', $admin, { name => 'bob', password => 'bob-pw-1',
    home => '/bob', quota_bytes => 1000000, max_sessions => 4,
    rules => [ { path => '/', perms => 'list,download,upload' },
               { path => '/pub', perms => 'list', hide => '^\.' } ],
    allow_from => ['127.0.0.0/8'], disabled => JSON::PP::false });
is($r->{status}, 201, 'create: 201') or diag($r->{content});
is($r->{json}{password}, JSON::PP::true, 'the password shows as true');
unlike($r->{content}, qr/argon2/, 'no hash in the answer');
like($r->{headers}{etag} // '', qr/^"[0-9a-f]{32}"$/, 'create: an ETag');
is_deeply($r->{json}{rules}[1], { path => '/pub', perms => 'list',
    hide => '^\.' }, 'a per-directory rule');
like(stanza('bob'), qr/^password = \$argon2id\$/m,
    'the file has the argon2id hash');

is(req('POST', '', $admin, { name => 'bob', password => 'x' })->{status},
    409, 'create an existing name: 409');

# bad input

$r = req('POST', '', $admin, '{"name": "x",');
is($r->{status}, 400, 'malformed JSON: 400');
like($r->{json}{error} // '', qr/malformed JSON/, 'malformed JSON: reason');
is(req('POST', '', $admin, '[1]')->{status}, 400, 'not an object: 400');
$r = req('POST', '', $admin, { name => 'x1', colour => 'red' });
is($r->{status}, 400, 'unknown field: 400');
is($r->{json}{field}, 'colour', 'unknown field: named');
$r = req('POST', '', $admin, { name => 'x1', quota_bytes => 'lots' });
is($r->{status}, 400, 'wrong type: 400');
is($r->{json}{field}, 'quota_bytes', 'wrong type: the field');
is(req('POST', '', $admin, { name => 7 })->{status}, 400,
    'name not a string: 400');
is(req('POST', '', $admin, { name => 'a/b' })->{status}, 422,
    'name with "/": 422');
is(req('POST', '', $admin, { name => '..' })->{status}, 422,
    'name "..": 422');
is(req('POST', '', $admin, { name => "a\x01b" })->{status}, 422,
    'name with a control byte: 422');
is(req('POST', '', $admin, { name => 'n' x 65 })->{status}, 422,
    'name too long: 422');
$r = req('POST', '', $admin, { name => 'x1', home => '/a/../../etc' });
is($r->{status}, 422, 'home not normalisable: 422');
is($r->{json}{field}, 'home', 'home: the field');
$r = req('POST', '', $admin, { name => 'x1',
    rules => [ { path => '/', perms => 'list,fly' } ] });
is($r->{status}, 422, 'unknown perm: 422');
is(req('POST', '', $admin, { name => 'x1', quota_bytes => -1 })->{status},
    422, 'negative quota: 422');
$r = req('POST', '', $admin, { name => 'x1',
    rules => [ { path => '/', deny => 'a ' } ] });
is($r->{status}, 422, 'a pattern ending in a blank (the file trims): 422');
like($r->{json}{error} // '', qr/begins or ends with a blank/,
    'the reason says so');
$r = req('POST', '', $admin, { name => 'x1',
    rules => [ { path => '/', hide => "a\r" } ] });
is($r->{status}, 422,
    'a pattern ending in a carriage return (the file trims it): 422');
like($r->{json}{error} // '', qr/ends with a carriage return/,
    'the reason says so');
is(req('POST', '', $admin, { name => 'x1', password => 'p' x 70000 })
    ->{status}, 413, 'a body over client_max_body_size: 413');
is(req('PATCH', '/ghost', $admin, { disabled => JSON::PP::true })->{status},
    404, 'change an unknown user: 404');
is(req('DELETE', '/ghost', $admin)->{status}, 404,
    'delete an unknown user: 404');
is(req('GET', '/x1', $admin)->{status}, 404, 'no bad request made a user');
$r = req('POST', '/keeper', $admin, {});
is($r->{status}, 405, 'POST to a user: 405');
is($r->{headers}{allow}, 'GET, HEAD, PUT, PATCH, DELETE',
    'with every method of the route');

# the new user logs in at once, over FTP and SFTP

is(ftp_login('bob', 'bob-pw-1'), 'ok', 'FTP login of the new user');

SKIP: {
    skip 'no sshpass or sftp', 1
        unless -x '/usr/bin/sshpass' && -x '/usr/bin/sftp';

    $t->write_file('batch', "pwd\n");
    my $port = port(8022);
    my $out = `timeout 30 sshpass -p bob-pw-1 sftp -o BatchMode=no -o PubkeyAuthentication=no -o PreferredAuthentications=password -o NumberOfPasswordPrompts=1 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -b $d/batch -P $port bob\@127.0.0.1 2>&1`;
    like($out, qr{Remote working directory: /}m, 'SFTP login of the new user')
        or diag($out);
}

# list and filter

$r = req('GET', '?name=b&limit=10', $reader);
is($r->{status}, 200, 'list with a prefix');
is_deeply([ map { $_->{name} } @{ $r->{json}{users} } ], ['bob'],
    'the prefix filters');
$r = req('GET', '?offset=1&limit=1', $reader);
is($r->{json}{total}, 3, 'total of the list');
is_deeply([ map { $_->{name} } @{ $r->{json}{users} } ], ['keeper'],
    'offset and limit page');
is(req('GET', '?limit=0', $reader)->{status}, 400, 'limit 0: 400');
is(req('GET', '?offset=99999999999999999999', $reader)->{status}, 400,
    'an offset out of range: 400');
is(req('GET', '?colour=red', $reader)->{status}, 400,
    'an unknown query argument: 400');

# a new password refuses the old one at once, in every worker

is(ftp_logins('bob', 'bob-pw-1', 4), 'ok', 'old password cached');
$r = req('GET', '/bob', $reader);
my $etag = $r->{headers}{etag};
ok(!exists $r->{json}{password} || !ref $r->{json}{password}
    || $r->{json}{password} == 1, 'show: password is a flag');
$r = req('PATCH', '/bob', $admin, { password => 'bob-pw-2' },
    'If-Match' => $etag);
is($r->{status}, 200, 'password change: 200') or diag($r->{content});
isnt($r->{headers}{etag}, $etag, 'a new ETag');
is(ftp_logins('bob', 'bob-pw-1', 6), '530',
    'old password refused at once, in every worker');
is(ftp_logins('bob', 'bob-pw-2', 4), 'ok', 'new password accepted');

# If-Match: a change made from a stale read is refused

$r = req('PUT', '/bob', $admin, { quota_files => 5 }, 'If-Match' => $etag);
is($r->{status}, 412, 'stale If-Match: 412');
$etag = req('GET', '/bob', $reader)->{headers}{etag};

# two clients change from the same read: one wins, the other conflicts

my @pids;
for my $q (7, 8) {
    my $pid = fork() // die;
    if ($pid == 0) {
        my $x = req('PATCH', '/bob', $admin, { quota_files => $q,
            password => "bob-pw-$q" }, 'If-Match' => $etag);
        $t->write_file("race$q", $x->{status});
        POSIX::_exit(0);
    }
    push @pids, $pid;
}
waitpid($_, 0) for @pids;
is(join(',', sort map { $t->read_file("race$_") } 7, 8), '200,412',
    'concurrent changes: one wins, one gets 412');
my $q = req('GET', '/bob', $reader)->{json}{quota_files};
ok($q == 7 || $q == 8, 'the winner\'s change is kept');
is(ftp_login('bob', "bob-pw-$q"), 'ok', 'and its password');

# disable and delete

is(req('PATCH', '/bob', $bare, { disabled => JSON::PP::true })->{status},
    200, 'a token without a scope may still change (admin)');
is(ftp_logins('bob', "bob-pw-$q", 3), '530', 'a disabled user is refused');
is(req('PATCH', '/bob', $admin, { disabled => JSON::PP::false })->{status},
    200, 'enabled again');
is(ftp_login('bob', "bob-pw-$q"), 'ok', 'and logs in');
is(req('DELETE', '/bob', $admin)->{status}, 204, 'delete: 204');
is(req('GET', '/bob', $admin)->{status}, 404, 'deleted: 404');
is(ftp_logins('bob', "bob-pw-$q", 3), '530', 'a deleted user is refused');

# the audit log

my $audit = $t->read_file('audit.log');
like($audit, qr/^\S+Z client=127\.0\.0\.1 token=ops method=POST route=\/api\/v1\/users user=bob status=201$/m,
    'audit: create');
like($audit, qr/ token=ops method=PUT route=\/api\/v1\/users\/bob user=bob status=412 reason="the user changed since it was read"$/m,
    'audit: a refused change with its reason');
like($audit, qr/ user=x1 status=422 reason="invalid value '\/a\/..\/..\/etc' of 'home'"$/m,
    'audit: quotes in a reason do not end the field');
like($audit, qr/ token=line 3 method=PATCH route=\/api\/v1\/users\/bob user=bob status=200$/m,
    'audit: the unnamed token by its line');
like($audit, qr/ method=DELETE route=\/api\/v1\/users\/bob user=bob status=204$/m,
    'audit: delete');
unlike($audit, qr/method=GET/, 'audit: reads are not logged');
unlike($audit, qr/bob-pw/, 'audit: no password');
unlike($t->read_file('error.log'), qr/bob-pw/, 'error log: no password');

# the file as "siftpd user" sees it

my ($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", 'user', 'list');
is($rc, 0, 'siftpd user list reads the file');
like($out, qr/keeper/, 'and lists the users');
is(stanza('keeper'), $keeper, 'another user is byte-identical');
is(stanza('zed'), $zed, 'and another');

$t->stop();

# wrong tokens count as failed logins of the address: then 429, and the
# same ban refuses FTP

# (on ports of its own: the first server's may be taken again meanwhile)

$t->write_file_expand('ban.conf', <<'EOF2');
%%TEST_GLOBALS%%
worker_processes 2;
events { worker_connections 64; }
users %%TESTDIR%%/users;
login_max_failures 3;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8121%%; storage local; } }
http {
    server {
        listen 127.0.0.1:%%PORT_8180%%;
        api_token_file tokens;
    }
}
EOF2

$t->run('ban.conf');
$base = 'http://127.0.0.1:' . port(8180) . '/api/v1/users';

is(req('GET', '', 'wrong-token-0123456789abc')->{status}, 401,
    "wrong token $_: 401") for 1 .. 3;
is(req('GET', '', $admin)->{status}, 429,
    'after login_max_failures wrong tokens: 429, even with a good one');
like($t->ftp_login(port(8121), 'keeper', 'keeper-pw'), qr/421/,
    'and FTP is refused too');
ok($t->wait_log(qr/admin API refused: address banned, client: 127\.0\.0\.1/),
    'the ban logged with the client');

$t->stop();

# a scope other than read or admin is a configuration error

$t->write_file('tokens', "$admin write\n");
($rc, $out) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
isnt($rc, 0, 'an unknown scope fails the configuration');
like($out, qr/tokens:1: the scope of a token is "read" or "admin"/,
    'and names the line');

done_testing();
