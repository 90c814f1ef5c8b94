#!/usr/bin/perl

# user_store.t -- "user_store TYPE ARGUMENT": "file PATH" is the users file
# as "users PATH" names it (the CLI writes it, logins and the admin API
# read it); an unknown type, a second store and "users" beside another
# store are configuration errors naming the problem.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use HTTP::Tiny;
use JSON::PP;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('ftp', 'http');
my $d = $t->testdir();

plan(skip_all => 'no python3') unless system('python3 -c 1') == 0;

sub conf_test {
    my ($conf) = @_;
    $t->write_file_expand('test.conf', "%%TEST_GLOBALS%%\n$conf");
    my ($rc, $out) = $t->siftpd('-t', '-c', "$d/test.conf");
    return ($rc, $out);
}

my ($rc, $out) = conf_test("user_store ldap ldap://x;\n");
isnt($rc, 0, 'an unknown store type is refused');
like($out, qr/test\.conf:\d+: unknown user store "ldap"/,
    'and named, with the line');

($rc, $out) = conf_test("users %%TESTDIR%%/u1;\n"
    . "user_store file %%TESTDIR%%/u2;\n");
isnt($rc, 0, '"users" and "user_store" together are refused');
like($out, qr/"user_store" directive is duplicate/, 'as a duplicate');

($rc, $out) = conf_test("user_store file %%TESTDIR%%/u1;\n"
    . "user_store file %%TESTDIR%%/u2;\n");
like($out, qr/"user_store" directive is duplicate/,
    'two stores are a duplicate');

SKIP: {
    skip 'no pgsql_user module', 4
        unless `${\ $t->binary()} -V 2>&1` =~ /sft_pgsql_user_module/;

    ($rc, $out) = conf_test("user_store postgresql \"colour=blue\";\n");
    isnt($rc, 0, 'a bad connection string is refused');
    like($out, qr/invalid "user_store postgresql" connection string: .*colour/,
        'in libpq\'s words');

    ($rc, $out) = conf_test("user_store postgresql \"host=127.0.0.1\";\n"
        . "users %%TESTDIR%%/u1;\n");
    isnt($rc, 0, '"users" after another store is refused');
    like($out, qr/"users" and "user_store postgresql" exclude each other/,
        'with the reason');
}

mkdir "$d/data";
mkdir "$d/data/alice";

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
user_store file %%TESTDIR%%/users;
storage local { driver posix; root %%TESTDIR%%/data; }
ftp { server { listen 127.0.0.1:%%PORT_8021%%; storage local; } }
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

$t->user_add('alice', 'alice-pw');
like($t->read_file('users'), qr/^\[alice\]$/m,
    'the CLI writes the store\'s file');

$t->run();

is($t->ftp_login(port(8021), 'alice', 'alice-pw'), 'ok', 'alice logs in');
is($t->ftp_login(port(8021), 'alice', 'wrong'), '530',
    'not with a wrong password');

my $r = HTTP::Tiny->new(timeout => 30)->get('http://127.0.0.1:'
    . port(8080) . '/api/v1/users');
is($r->{status}, 200, 'the API lists the store');
is(join(',', map { $_->{name} } @{(eval { decode_json($r->{content}) }
    || {})->{users} // []}), 'alice', 'with alice');

$t->done();
