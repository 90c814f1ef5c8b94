#!/usr/bin/perl

# first_user.t -- "first_user NAME": the first start creates the users file
# with that user and a random password shown once; later starts leave it.

use warnings;
use strict;

use lib 't/lib';
use Test::More;
use Test::Siftpd qw/port/;

my $t = Test::Siftpd->new()->has('http');
my $d = $t->testdir();

$t->write_file_expand('siftpd.conf', <<'EOF');
%%TEST_GLOBALS%%
worker_processes 1;
users %%TESTDIR%%/users;
first_user admin;
http { server { listen 127.0.0.1:%%PORT_8080%%; } }
EOF

my ($rc, $out) = $t->siftpd('-t', '-c', "$d/siftpd.conf");
is($rc, 0, '-t accepts first_user');
ok(!-e "$d/users", '-t creates nothing');

$t->run();
$t->stop();

my $stderr = $t->read_file('stderr');
my ($pw) = $stderr =~ /created the first user "admin" with the password (\S+)/;
ok(defined $pw && length($pw) == 20, 'a 20-character password is printed');

my $users = $t->read_file('users');
like($users, qr/^\[admin\]$/m, 'the users file has the user');
like($users, qr/^password = \$argon2id\$v=19\$m=19456,t=2,p=1\$/m,
    'with an argon2id hash at the configured cost');
unlike($users, qr/\Q$pw\E/, 'and not the password itself') if defined $pw;
my ($notice) = $stderr =~ /^(.*\[notice\] created the first user.*)$/m;
ok(defined $notice, 'the creation is logged');
unlike($stderr . $t->read_file('error.log'), qr/does not exist/,
    'no warning about the users file it is creating');
unlike($notice // '', qr/\Q$pw\E/, 'the password is not') if defined $pw;

# a second start keeps the file as it is

unlink "$d/stderr";
$t->run();
$t->stop();
unlike($t->read_file('stderr'), qr/created the first user/,
    'second start: no new user');
is($t->read_file('users'), $users, 'second start: file unchanged');

($rc, $out) = $t->siftpd('-c', "$d/siftpd.conf", 'user', 'list');
like($out, qr/^admin$/m, 'siftpd user list shows it');

$t->done();
