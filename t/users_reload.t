#!/usr/bin/perl

# users_reload.t -- a running server follows the users file: a changed
# password takes effect without a reload (the verification cache cleared),
# a new user can log in, a deleted or disabled one cannot; the cache serves
# repeat logins without argon2id.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Time::HiRes qw/sleep/;
use JSON::PP;
use Test::Siftpd qw/port http_get/;

my $t = Test::Siftpd->new()->has('ftp');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

mkdir "$d/data";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 2;
users %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

sub user {
    my ($stdin, @args) = @_;
    open my $fh, '|-', $t->binary(), '-p', "$d/", '-c', "$d/siftpd.conf",
        'user', @args or die;
    print $fh $stdin if defined $stdin;
    close $fh;
    return $? >> 8;
}

# logs in with ftplib: "ok" or the server's reply to PASS
sub login { $t->ftp_login(port(8021), @_) }

is(user("first\n", 'add', 'alice'), 0, 'user add alice');

$t->run();

sub auth {
    my ($body) = (http_get(port(8080), '/api/v1/stats') // '')
        =~ /\r\n\r\n(.*)/s;
    return (eval { decode_json($body // '') } || {})->{auth} || {};
}

is(login('alice', 'first'), 'ok', 'login with the first password');
my $runs = auth()->{argon2_runs};
ok($runs >= 1, 'argon2id ran for it');
is(login('alice', 'first'), 'ok', 'and again');
is(auth()->{argon2_runs}, $runs, 'the repeat login ran no argon2id');
ok(auth()->{cache_hits} >= 1, 'it was a cache hit, whichever worker');
is(login('alice', 'wrong'), '530', 'a wrong password is refused');

# the file changes under the running server; the cache must not keep the
# old password alive

is(user("second\n", 'passwd', 'alice'), 0, 'user passwd alice');

ok($t->wait_for(sub { login('alice', 'first') eq '530' }, 10),
    'after passwd: the old password is refused');
is(login('alice', 'second'), 'ok', 'after passwd: the new one works');

is(login('bob', 'bobpw'), '530', 'bob does not exist yet');
is(user("bobpw\n", 'add', 'bob'), 0, 'user add bob');
ok($t->wait_for(sub { login('bob', 'bobpw') eq 'ok' }, 10),
    'a user added while running can log in');

is(user(undef, 'del', 'bob'), 0, 'user del bob');
ok($t->wait_for(sub { login('bob', 'bobpw') eq '530' }, 10),
    'a deleted user cannot');

$t->done();
